/* SPDX-License-Identifier: MIT */
/* The Darwin part of a capture: threads stopped with thread_suspend, VM regions, dyld's images. */
#include <mach/mach.h>
#include <pthread.h>

#include "crash/crash.h"
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free

uint32_t fl_crash_os_self(void) { return pthread_mach_thread_np(pthread_self()); }

int fl_crash_os_capture_signal(void) { return 0; }

const char *fl_crash_os_process_path(void) { return fl_macho_exe_path(); }

size_t fl_crash_os_abort_message(char *buf, size_t cap) {
    (void)buf, (void)cap;
    return 0;
}

void fl_crash_os_deadline(uint64_t ns) { (void)ns; }

int fl_crash_os_tid(const fl_capture_request_t *req) {
    return fl_mach_thread_id(req->thread ? req->thread : fl_crash_os_self());
}

/* EXC_GUARD: the kernel decides after the report whether the process goes on (serve_exception). */
bool fl_crash_os_may_continue(const fl_capture_request_t *req) {
    return req->exception && req->exception->type == FL_EXC_GUARD;
}

int fl_crash_os_submit(const fl_capture_request_t *req) { return fl_mach_server_submit(req); }

void fl_crash_os_suspend(fl_thread_list_t *l, const fl_capture_request_t *req,
                         const fl_selfwalk_t *selfwalk) {
    (void)selfwalk;
    fl_mach_threads_suspend(l, fl_crash_config.max_threads,
                            req->thread ? req->thread : fl_crash_os_self(), req->regs);
}

void fl_crash_os_release(fl_thread_list_t *l) { fl_mach_threads_release(l); }

void fl_crash_os_images(fl_image_list_t *images, fl_maps_t *maps, char *scratch,
                        size_t scratch_len, bool refresh, int *maps_err, int *img_err) {
    (void)scratch;
    (void)scratch_len;
    (void)refresh; /* dyld's list is read whole each time */
    maps->count = 0;
    *maps_err = 0;
    /* fl_macho_images_collect reads load commands into one static buffer: one collector at a
     * time (fl_backtrace may run on several threads). Another collection ends within
     * milliseconds; waited for at most 100 ms, then this one fails rather than hang. */
    static volatile int busy;
    for (int i = 0; __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE); i++) {
        if (i >= 1000) {
            *img_err = FL_EBUSY;
            return;
        }
        fl_sys_nanosleep(100000);
    }
    *img_err = fl_macho_images_collect(fl_memory_reader(), images);
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

/* The VM region around sp when writable. An overflowed stack has sp in the guard page below it
 * (a region without access) or in the unmapped gap under that: then the writable region just
 * above, if it starts within 64 KiB. For a pthread the region also holds the pthread structure
 * above the stack, which only makes the bound generous. Not pthread_get_stackaddr_np: finding
 * the pthread takes libpthread's thread-list lock, which a suspended thread may hold. */
int fl_crash_os_blocked(int tid, uint64_t out[3]) {
    (void)tid;
    (void)out;
    return FL_ENOSYS;
}

const fl_map_t *fl_crash_os_stack(const fl_maps_t *maps, uint64_t sp, fl_map_t *m) {
    (void)maps;
    if (fl_memory_region(sp, &m->start, &m->end, &m->perms)) return NULL;
    if (m->start > sp || !(m->perms & FL_MAP_W)) {
        if (m->start <= sp && fl_memory_region(m->end, &m->start, &m->end, &m->perms)) return NULL;
        if (!(m->perms & FL_MAP_W) || m->start - sp > 65536) return NULL;
    }
    return m;
}

void fl_crash_os_notes(fl_report_writer_t *w, const fl_thread_list_t *l,
                       const fl_capture_request_t *req) {
    (void)l;
    char buf[160];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, buf, sizeof buf);
    fl_strbuf_puts(&sb, "Mach exception ports not installed (kern_return_t ");
    fl_strbuf_putu(&sb, (uint32_t)fl_mach_server_status());
    fl_strbuf_puts(&sb, "): only signals were caught");
    if (fl_mach_server_status() != KERN_SUCCESS) fl_report_write_note(w, buf);
    if (fl_crash_os_may_continue(req))
        fl_report_write_note(w, "EXC_GUARD: the kernel decides after this report whether the "
                                "violation ends the process");
}

long fl_crash_os_thread_self(void) { return (long)fl_crash_os_self(); }

/* Never run here: compiled with zig only (docs/stacks.md). The thread is always resumed; nothing
 * between suspend and resume takes a lock (a suspended thread may hold malloc's or dyld's). */
int fl_crash_os_thread_walk(long tid, const fl_selfwalk_t *sw, fl_frame_t *out, unsigned max,
                            fl_walk_result_t *res) {
    thread_act_t th = (thread_act_t)tid;
    if ((long)th != tid || fl_mach_server_owns(th)) return FL_ENOTHREAD;
    if (thread_suspend(th) != KERN_SUCCESS) return FL_ENOTHREAD; /* not a thread of this task */
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    int e = fl_regs_from_mach_thread(&regs, th) == 0 ? 0 : FL_ENOTHREAD;
    if (!e) {
        uint64_t sp = fl_regs_sp(&regs);
        fl_map_t tmp;
        const fl_map_t *sm = fl_crash_os_stack(NULL, sp, &tmp);
        fl_reader_t stack;
        fl_walk_env_t env = {.mem = fl_memory_reader(), .images = sw->images, .concurrent = true,
                             .use_cfi = true};
        if (sm) {
            env.stack_lo = sm->start < sp ? sm->start : sp;
            env.stack_hi = sm->end;
            fl_reader_init_range(&stack, sm->start, sm->end, fl_memory_reader());
            env.mem = &stack; /* suspended: its stack holds still */
        }
        fl_frames_walk(&env, &regs, out, max, res);
    }
    thread_resume(th);
    return e;
}
