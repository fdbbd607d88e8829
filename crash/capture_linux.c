/* SPDX-License-Identifier: MIT */
/* Crash-time capture on Linux: registers, frames, images and metadata into one streamed report. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "crash/crash.h"

/* Prepared memory for the single capture a process makes (zero-filled BSS: the kernel supplies
 * the pages on first touch, so nothing is allocated here). */
static fl_maps_t g_maps;
static fl_image_list_t g_images;
static fl_frame_t g_frames[FL_MAX_FRAMES_LIMIT];
static char g_maps_scratch[64 * 1024];
static uint8_t g_scratch[256 * 1024];
static fl_report_writer_t g_writer;
static volatile int g_writer_open;

static volatile uintptr_t g_bad_address = 16;
static void test_fault(int stage) {
    if (fl_crash_test_fault_stage == stage) *(volatile int *)g_bad_address = 1;
}

static void make_id(uint8_t id[16]) {
    if (fl_sys_getrandom(id, 16, 1 /* GRND_NONBLOCK */) == 16) return;
    /* No entropy yet (early boot): time, pid and tid are unique enough for a file name. */
    uint64_t t = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &t);
    uint64_t p = (uint64_t)fl_sys_getpid() << 32 | (uint64_t)fl_sys_gettid();
    fl_memcpy(id, &t, 8);
    fl_memcpy(id + 8, &p, 8);
}

static bool signal_has_address(int sig) {
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
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

/* The stack mapping holding sp. An overflowed stack has sp in the guard gap below it: then the
 * mapping just above sp is the stack. */
static const fl_map_t *stack_map(uint64_t sp) {
    const fl_map_t *m = fl_maps_find(&g_maps, sp);
    if (m && (m->perms & FL_MAP_W)) return m;
    for (unsigned i = 0; i < g_maps.count; i++) {
        m = &g_maps.map[i];
        if (m->start > sp) return (m->perms & FL_MAP_W) && m->start - sp <= 65536 ? m : NULL;
    }
    return NULL;
}

void fl_crash_abandon(void) {
    if (__atomic_exchange_n(&g_writer_open, 0, __ATOMIC_SEQ_CST))
        fl_report_writer_abandon(&g_writer);
}

int fl_crash_capture(int sig, const siginfo_t *info, const void *ucontext) {
    const fl_crash_config_t *c = &fl_crash_config;
    fl_report_writer_t *w = &g_writer;
    int pid = (int)fl_sys_getpid(), tid = (int)fl_sys_gettid();

    /* Free the reserved descriptor first: the maps file and the report need one each, in turn,
     * even when the application has exhausted its descriptors. */
    if (c->reserve_fd >= 0) fl_sys_close(c->reserve_fd);
    fl_memory_refresh_pid(); /* the process may be a fork of the one that installed */

    static fl_regs_t regs;
    fl_regs_from_ucontext(&regs, ucontext);
    int maps_err = fl_maps_read(&g_maps, g_maps_scratch, sizeof g_maps_scratch);

    uint8_t id[16];
    make_id(id);
    int e = fl_report_writer_open(w, c->dirfd, id, g_scratch, sizeof g_scratch);
    if (e) {
        char msg[256];
        fl_strbuf_t sb;
        fl_strbuf_init(&sb, msg, sizeof msg);
        fl_strbuf_puts(&sb, "cannot create a crash report in ");
        fl_strbuf_puts(&sb, c->report_dir);
        fl_strbuf_puts(&sb, " (error ");
        fl_strbuf_putu(&sb, (uint64_t)(e < 0 ? -e : e));
        fl_strbuf_puts(&sb, ")");
        fl_log_stderr(msg);
        return e;
    }
    __atomic_store_n(&g_writer_open, 1, __ATOMIC_SEQ_CST);

    uint64_t now = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &now);
    fl_report_header_t h = {
        .time_unix_ns = now, .pid = pid, .kind = 1, .arch = fl_regs_arch(),
        .process_path = c->process_path, .app_name = c->app_name, .app_version = c->app_version,
        .os_name = c->uts.sysname, .os_release = c->uts.release, .os_version = c->uts.version,
        .machine = c->uts.machine, .hostname = c->hostname,
        .process_start_unix_ns = c->install_time_ns};
    fl_memcpy(h.report_id, id, 16);
    fl_report_write_header(w, &h);

    fl_report_signal_t s = {.number = sig, .code = info->si_code, .crashed_tid = tid};
    if (info->si_code <= 0) s.sender_pid = info->si_pid;
    if (signal_has_address(sig) && info->si_code > 0) {
        s.address = (uint64_t)(uintptr_t)info->si_addr;
        s.has_address = true;
    }
    fl_report_write_signal(w, &s);
    test_fault(1);

    /* Images before the thread: frames are only raw addresses until the images explain them. */
    int img_err = fl_elf_images_collect(fl_memory_reader(), &g_images);
    for (unsigned i = 0; i < g_images.count; i++) fl_report_write_image(w, &g_images.image[i]);
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_images, .use_cfi = true};
    static fl_reader_t stack_reader;
    const fl_map_t *sm = maps_err ? NULL : stack_map(fl_regs_sp(&regs));
    if (sm) {
        env.stack_lo = sm->start < fl_regs_sp(&regs) ? sm->start : fl_regs_sp(&regs);
        env.stack_hi = sm->end;
        /* The thread's own stack was just seen mapped and readable: read it directly. */
        if (sm->perms & FL_MAP_R) {
            fl_reader_init_range(&stack_reader, sm->start, sm->end, fl_memory_reader());
            env.mem = &stack_reader;
        }
    }
    fl_walk_result_t res;
    fl_frames_walk(&env, &regs, g_frames, c->max_frames, &res);
    test_fault(2);

    char name[16];
    fl_sys_prctl_get_name(name);
    fl_report_thread_t t = {.tid = tid, .name = name, .crashed = true, .state = 0, .regs = &regs,
                            .frames = g_frames, .frame_count = res.count,
                            .frames_truncated = res.truncated, .unwind_stop = res.stop_reason};
    fl_report_write_thread(w, &t);
    test_fault(3);

    fl_annotations_each(write_annotation, w);

    if (img_err) note(w, "image list could not be read (error ", (uint64_t)-img_err, ")");
    if (g_images.truncated) note(w, "image list truncated at ", g_images.count, " images");
    if (g_images.inconsistent) fl_report_write_note(w, "the loader was changing its image list (dlopen/dlclose in progress)");
    if (maps_err) note(w, "memory maps unreadable (error ", (uint64_t)-maps_err, "); stack bounds unknown");
    else if (g_maps.truncated) note(w, "memory maps truncated at ", g_maps.count, " mappings");
    test_fault(4);

    __atomic_store_n(&g_writer_open, 0, __ATOMIC_SEQ_CST);
    e = fl_report_writer_finish(w);
    char msg[256];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, e ? "crash report incomplete (write error), saved as " : "crash report written to ");
    fl_strbuf_puts(&sb, c->report_dir);
    fl_strbuf_puts(&sb, "/");
    fl_strbuf_puts(&sb, w->final_name);
    fl_log_stderr(msg);
    return e;
}
