/* SPDX-License-Identifier: MIT */
/* The Linux part of a capture: threads stopped with the capture signal, /proc/self/maps, ELF images. */
#include "crash/crash.h"

int fl_crash_os_tid(const fl_capture_request_t *req) {
    (void)req;
    return (int)fl_sys_gettid();
}

bool fl_crash_os_may_continue(const fl_capture_request_t *req) {
    (void)req;
    return false;
}

uint32_t fl_crash_os_self(void) { return 0; }

int fl_crash_os_capture_signal(void) { return fl_threads_signal(); }

int fl_crash_os_submit(const fl_capture_request_t *req) {
    (void)req;
    return FL_ENOSYS;
}

void fl_crash_os_suspend(fl_thread_list_t *l, const fl_capture_request_t *req,
                         const fl_selfwalk_t *selfwalk) {
    const fl_crash_config_t *c = &fl_crash_config;
    fl_threads_suspend(l, c->max_threads, c->thread_timeout_ns, selfwalk);
    l->t[0].regs = *req->regs;
    fl_sys_prctl_get_name(l->t[0].name);
}

void fl_crash_os_release(fl_thread_list_t *l) { fl_threads_release(l); }

int fl_crash_os_blocked(int tid, uint64_t out[3]) { return fl_threads_syscall_regs(tid, out); }

void fl_crash_os_images(fl_image_list_t *images, fl_maps_t *maps, int *maps_err, int *img_err) {
    static char scratch[64 * 1024];
    *maps_err = fl_maps_read(maps, scratch, sizeof scratch);
    *img_err = fl_elf_images_collect(fl_memory_reader(), images);
    if (*maps_err == 0) fl_images_map_tables(images, maps);
}

const fl_map_t *fl_crash_os_stack(const fl_maps_t *maps, uint64_t sp, fl_map_t *tmp) {
    (void)tmp;
    return maps ? fl_maps_stack(maps, sp) : NULL;
}

void fl_crash_os_notes(fl_report_writer_t *w, const fl_thread_list_t *l,
                       const fl_capture_request_t *req) {
    (void)req;
    if (!fl_threads_signal()) fl_report_write_note(w, "no free real-time signal: other threads were not captured");
    if (l->signal_taken) fl_report_write_note(w, "the application replaced faultline's thread-capture signal handler: other threads were not captured");
}
