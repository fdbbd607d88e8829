/* SPDX-License-Identifier: MIT */
/* The Linux part of a capture: threads stopped with the capture signal, /proc/self/maps, ELF images. */
#include "crash/crash.h"

const char *fl_crash_os_process_path(void) {
    static char path[FL_IMAGE_PATH_MAX]; /* one capture at a time */
    fl_elf_exe_path(path, sizeof path);
    return path;
}

/* glibc's `struct abort_msg_s { unsigned int size; char msg[]; } *__abort_msg` (GLIBC_PRIVATE):
 * __libc_message and __assert_fail put the message they print in a mapping of `size` bytes of
 * its own just before they abort. Where the pointer lies: found at install (dlvsym). */
static uint64_t g_abort_msg_at;

void fl_crash_os_abort_message_at(const void *at) { g_abort_msg_at = (uint64_t)(uintptr_t)at; }

size_t fl_crash_os_abort_message(char *buf, size_t cap) {
    const fl_reader_t *mem = fl_memory_reader();
    uint64_t p;
    uint32_t size;
    if (cap < 2 || !g_abort_msg_at || fl_read_u64(mem, g_abort_msg_at, &p) || !p ||
        fl_read(mem, p, &size, sizeof size) || size <= sizeof size)
        return 0;
    size_t n = size - sizeof size < cap - 1 ? size - sizeof size : cap - 1;
    if (fl_read(mem, p + sizeof size, buf, n)) return 0;
    buf[n] = 0;
    n = fl_strlen(buf);
    while (n && buf[n - 1] == '\n') buf[--n] = 0;
    return n;
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
