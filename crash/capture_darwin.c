/* SPDX-License-Identifier: MIT */
/* Crash-time capture on Darwin: every thread, the images and their frames into one report. */
#include <mach/mach.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "crash/crash.h"
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free

/* Prepared memory for one capture at a time (zero-filled BSS: the kernel supplies the pages on
 * first touch). Captures are serialised: the exception server's primary thread runs them all,
 * except in a process with no server (a fork child), where the handler's state admits one. */
static fl_image_list_t g_images;
static fl_mach_thread_list_t g_threads;
static fl_frame_t g_frames[FL_MAX_FRAMES_LIMIT];
static uint8_t g_scratch[256 * 1024];
static fl_report_writer_t g_writer;
static volatile int g_writer_open;
static volatile int g_threads_parked;

static volatile uintptr_t g_bad_address = 16;
static void test_fault(int stage) {
    if (fl_crash_test_fault_stage == stage) *(volatile int *)g_bad_address = 1;
}

static void make_id(uint8_t id[16]) {
    if (fl_sys_getrandom(id, 16, 0) == 16) return;
    uint64_t t = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &t);
    uint64_t p = (uint64_t)fl_sys_getpid() << 32 | (uint32_t)fl_sys_gettid();
    fl_memcpy(id, &t, 8);
    fl_memcpy(id + 8, &p, 8);
}

static void write_annotation(void *ctx, const char *k, const char *v) {
    fl_report_write_annotation(ctx, k, v);
}

static void note(fl_report_writer_t *w, const char *a, uint64_t n, const char *b) {
    char buf[256];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, buf, sizeof buf);
    fl_strbuf_puts(&sb, a);
    fl_strbuf_putu(&sb, n);
    fl_strbuf_puts(&sb, b);
    fl_report_write_note(w, buf);
}

static void release_threads(void) {
    if (__atomic_exchange_n(&g_threads_parked, 0, __ATOMIC_SEQ_CST))
        fl_mach_threads_release(&g_threads);
}

void fl_crash_abandon(void) {
    release_threads();
    if (__atomic_exchange_n(&g_writer_open, 0, __ATOMIC_SEQ_CST))
        fl_report_writer_abandon(&g_writer);
}

/* The stack holding sp: the VM region [*start, *end) around it when writable. An overflowed
 * stack has sp in the guard page below it (a region without access) or in the unmapped gap under
 * that: then the writable region just above, if it starts within 64 KiB. For a pthread the region
 * also holds the pthread structure above the stack, which only makes the bound generous. It is
 * not found through pthread_from_mach_thread_np and pthread_get_stackaddr_np: the first takes
 * libpthread's thread-list lock, which a suspended thread may hold. */
static bool stack_region(uint64_t sp, uint64_t *start, uint64_t *end, uint32_t *perms) {
    if (fl_memory_region(sp, start, end, perms)) return false;
    if (*start > sp || !(*perms & FL_MAP_W)) {
        if (*start <= sp && fl_memory_region(*end, start, end, perms)) return false;
        if (!(*perms & FL_MAP_W) || *start - sp > 65536) return false;
    }
    return true;
}

/* Walks one thread over its own stack region and writes it. */
static void write_thread(fl_report_writer_t *w, const fl_mach_thread_t *th) {
    fl_report_thread_t t = {.tid = th->tid, .name = th->name, .crashed = th->crashed,
                            .state = th->state};
    if (th->state == FL_THREAD_CAPTURED) {
        fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_images, .use_cfi = true};
        static fl_reader_t stack_reader;
        uint64_t sp = fl_regs_sp(&th->regs), start, end;
        uint32_t perms;
        if (stack_region(sp, &start, &end, &perms)) {
            env.stack_lo = start < sp ? start : sp;
            env.stack_hi = end;
            /* The region was just seen mapped readable, and its thread is suspended (or is the
             * requester, waiting for us): plain copies, not a Mach call per read. */
            if (perms & FL_MAP_R) {
                fl_reader_init_range(&stack_reader, start, end, fl_memory_reader());
                env.mem = &stack_reader;
            }
        }
        fl_walk_result_t res;
        fl_frames_walk(&env, &th->regs, g_frames, fl_crash_config.max_frames, &res);
        t.regs = &th->regs;
        t.frames = g_frames;
        t.frame_count = res.count;
        t.frames_truncated = res.truncated;
        t.unwind_stop = res.stop_reason;
    }
    fl_report_write_thread(w, &t);
}

/* The Signal written with a Mach exception: the one the kernel is expected to raise once every
 * handler has answered KERN_FAILURE, per bsd/uxkern/ux_exception.c's ux_exception() after the
 * machine-dependent machine_exception() (x86_64 maps EXC_I386_GPFLT to SIGSEGV). None for
 * EXC_GUARD, whose fatal cases end the task with SIGKILL. Read from xnu's sources, not observed. */
static void write_exception(fl_report_writer_t *w, const fl_report_mach_exception_t *e, int tid) {
    fl_report_write_mach_exception(w, e);
    uint64_t code0 = e->code_count ? e->codes[0] : 0;
    int sig = 0;
    switch (e->type) {
    case EXC_BAD_ACCESS:
        sig = code0 == KERN_INVALID_ADDRESS ||
                      (fl_regs_arch() == FL_REGS_ARCH_X86_64 && code0 == 13 /* EXC_I386_GPFLT */)
                  ? SIGSEGV
                  : SIGBUS;
        break;
    case EXC_BAD_INSTRUCTION: sig = SIGILL; break;
    case EXC_ARITHMETIC: sig = SIGFPE; break;
    case EXC_BREAKPOINT: sig = SIGTRAP; break;
    case EXC_SOFTWARE:
        sig = code0 == 0x10000 ? SIGSYS : code0 == 0x10001 ? SIGPIPE : code0 == 0x10002 ? SIGABRT : 0;
        break;
    default: break;
    }
    if (!sig) return;
    fl_report_signal_t s = {.number = sig, .crashed_tid = tid};
    if (e->type == EXC_BAD_ACCESS && e->code_count > 1) {
        s.address = e->codes[1];
        s.has_address = true;
    }
    fl_report_write_signal(w, &s);
}

int fl_crash_capture(const fl_capture_request_t *req) {
    const fl_crash_config_t *c = &fl_crash_config;
    fl_report_writer_t *w = &g_writer;
    bool crash = req->kind == 1;
    uint32_t thread = req->thread ? req->thread : pthread_mach_thread_np(pthread_self());

    /* Free the reserved descriptors for the report, unless the process may go on: a snapshot,
     * or EXC_GUARD (see serve_exception), keeps them for the next capture. */
    bool final = crash && !(req->exception && req->exception->type == EXC_GUARD);
    if (final)
        for (int i = 0; i < FL_RESERVE_FDS; i++)
            if (c->reserve_fd[i] >= 0) fl_sys_close(c->reserve_fd[i]);

    uint8_t id[16];
    make_id(id);
    int e = fl_report_writer_open(w, c->dirfd, id, g_scratch, sizeof g_scratch);
    if (e) {
        if (crash) fl_report_writer_log_failure(w, fl_crash_config.report_dir);
        return e;
    }
    __atomic_store_n(&g_writer_open, 1, __ATOMIC_SEQ_CST);

    uint64_t now = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &now);
    fl_report_header_t h = {
        .time_unix_ns = now, .pid = (int32_t)fl_sys_getpid(), .kind = req->kind,
        .arch = fl_regs_arch(), .process_path = c->process_path, .app_name = c->app_name,
        .app_version = c->app_version, .reason = req->reason, .os_name = c->uts.sysname,
        .os_release = c->uts.release, .os_version = c->uts.version, .machine = c->uts.machine,
        .hostname = c->hostname, .process_start_unix_ns = c->install_time_ns};
    fl_memcpy(h.report_id, id, 16);
    fl_report_write_header(w, &h);

    int tid = fl_mach_thread_id(thread);
    if (req->exception) {
        write_exception(w, req->exception, tid);
    } else if (crash && req->info) {
        const siginfo_t *info = req->info;
        fl_report_signal_t s = {.number = req->sig, .code = info->si_code, .crashed_tid = tid,
                                .sender_pid = info->si_pid};
        if (req->sig == SIGSEGV || req->sig == SIGBUS || req->sig == SIGILL ||
            req->sig == SIGFPE || req->sig == SIGTRAP) {
            s.address = (uint64_t)(uintptr_t)info->si_addr;
            s.has_address = true;
        }
        fl_report_write_signal(w, &s);
    }
    test_fault(1);

    /* Stop the other threads first, so that the image list and every stack are read in one
     * consistent state. */
    fl_mach_thread_list_t *tl = &g_threads;
    __atomic_store_n(&g_threads_parked, 1, __ATOMIC_SEQ_CST);
    fl_mach_threads_suspend(tl, c->max_threads, thread, req->regs);
    tl->t[0].crashed = crash;

    /* Images before the threads: frames are only raw addresses until the images explain them. */
    int img_err = fl_macho_images_collect(fl_memory_reader(), &g_images);
    for (unsigned i = 0; i < g_images.count; i++) fl_report_write_image(w, &g_images.image[i]);

    write_thread(w, &tl->t[0]);
    test_fault(3); /* the other threads are suspended */
    for (unsigned i = 1; i < tl->count; i++) write_thread(w, &tl->t[i]);
    release_threads();
    fl_report_write_threads_total(w, tl->total);

    fl_annotations_each(write_annotation, w);

    if (tl->enum_error)
        note(w, "other threads could not be listed (task_threads: kern_return_t ",
             (uint64_t)(uint32_t)tl->enum_error, ")");
    if (tl->total > tl->count)
        note(w, "thread list truncated at max_threads: the process had ", tl->total, " threads");
    if (fl_mach_server_status() != KERN_SUCCESS)
        note(w, "Mach exception ports not installed (kern_return_t ",
             (uint64_t)(uint32_t)fl_mach_server_status(), "): only signals were caught");
    if (req->exception && req->exception->type == EXC_GUARD)
        fl_report_write_note(w, "EXC_GUARD: the kernel decides after this report whether the "
                                "violation ends the process");
    if (img_err) note(w, "image list could not be read (error ", (uint64_t)-img_err, ")");
    if (g_images.truncated) note(w, "image list truncated at ", g_images.count, " images");
    if (g_images.inconsistent)
        fl_report_write_note(w, "dyld was changing its image list (dlopen/dlclose in progress)");
    test_fault(4);

    __atomic_store_n(&g_writer_open, 0, __ATOMIC_SEQ_CST);
    e = fl_report_writer_finish(w);
    if (!crash) return e;
    char msg[256];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, e ? "crash report incomplete (write error), saved as "
                          : "crash report written to ");
    fl_strbuf_puts(&sb, c->report_dir);
    fl_strbuf_puts(&sb, "/");
    fl_strbuf_puts(&sb, w->final_name);
    fl_log_stderr(msg);
    return e;
}
