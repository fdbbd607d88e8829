/* SPDX-License-Identifier: MIT */
/* The Linux part of a capture: threads stopped with the capture signal, /proc/self/maps, ELF images. */
#include "crash/crash.h"

const char *fl_crash_os_process_path(void) {
    static char path[FL_IMAGE_PATH_MAX]; /* one capture at a time */
    fl_elf_exe_path(path, sizeof path);
    return path;
}

void fl_crash_os_deadline(uint64_t ns) {
    static int timer = -1; /* one crash capture at a time */
    if (ns) {
        if (timer < 0) timer = fl_sys_kill_timer(ns);
    } else if (timer >= 0) {
        fl_sys_timer_delete(timer);
        timer = -1;
    }
}

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

void fl_crash_os_images(fl_image_list_t *images, fl_maps_t *maps, char *scratch,
                        size_t scratch_len, bool refresh, int *maps_err, int *img_err) {
    *maps_err = fl_maps_read(maps, scratch, scratch_len);
    *img_err = refresh ? fl_elf_images_refresh(fl_memory_reader(), images)
                       : fl_elf_images_collect(fl_memory_reader(), images);
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
    if (l->from_record)
        fl_report_write_note(w, "/proc/self/task could not be read: the threads listed are the "
                                "main thread and those faultline saw start (threads started "
                                "before fl_install, or not by pthread_create, are missing)");
}

long fl_crash_os_thread_self(void) { return fl_sys_gettid(); }

int fl_crash_os_thread_walk(long tid, const fl_selfwalk_t *sw, fl_frame_t *out, unsigned max,
                            fl_walk_result_t *res) {
    static fl_thread_list_t one; /* only t[0] and t[1]; the caller holds the in-line state */
    const fl_crash_config_t *c = &fl_crash_config;
    /* The frames pool is sized for a snapshot's threads, whoever maps it first. */
    fl_threads_suspend_one(&one, (int)tid, c->max_threads, c->thread_timeout_ns, sw);
    const fl_thread_t *t = &one.t[1];
    int e = 0;
    if (t->state == FL_THREAD_CAPTURED && t->walked) {
        unsigned n = t->frame_count < max ? t->frame_count : max;
        fl_memcpy(out, t->frames, n * sizeof *out);
        *res = (fl_walk_result_t){.count = n, .truncated = t->frames_truncated,
                                  .omitted = t->frames_omitted, .omitted_at = t->frames_omitted_at,
                                  .stop_reason = t->unwind_stop};
    } else if (t->state == FL_THREAD_CAPTURED) {
        /* It could not walk itself (too little stack left, memory read through the pipe): it is
         * parked until the release, so its stack holds still while this thread walks it. */
        uint64_t sp = fl_regs_sp(&t->regs);
        const fl_map_t *sm = fl_maps_stack(sw->maps, sp);
        fl_reader_t stack;
        fl_walk_env_t env = {.mem = fl_memory_reader(), .images = sw->images, .concurrent = true,
                             .use_cfi = true, .maps = sw->maps};
        fl_walk_env_stack(&env, sm, sp, &stack, true);
        fl_frames_walk(&env, &t->regs, out, max, res);
    } else {
        e = t->state == FL_THREAD_BLOCKED  ? FL_EBLOCKED
            : t->state == FL_THREAD_EXITED ? FL_ENOTHREAD
            : t->state == FL_THREAD_OMITTED ? FL_ENOSIGNAL
                                            : FL_ETIMEDOUT;
    }
    fl_threads_release(&one);
    return e;
}
