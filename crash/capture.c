/* SPDX-License-Identifier: MIT */
/* Crash-time capture: registers, frames, images and metadata into one streamed report. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#include "crash/crash.h"

#pragma GCC poison malloc calloc realloc free

/* Prepared memory for one capture at a time (zero-filled BSS: the kernel supplies the pages on
 * first touch, so nothing is allocated here). */
static fl_maps_t g_maps;
static fl_image_list_t g_images;
static fl_thread_list_t g_threads;
static fl_frame_t g_frames[FL_MAX_FRAMES_LIMIT];
static uint8_t g_scratch[256 * 1024];
static char g_maps_scratch[64 * 1024]; /* /proc/self/maps as read */
static uint8_t g_out[256 * 1024]; /* items gathered for one write (fl_report_writer_buffer) */
/* Stack memory to keep: noted as threads are written, read and written last. */
static struct stack {
    int tid;
    uint64_t start;
    size_t len;
} g_stacks[FL_MAX_THREADS_LIMIT];
static unsigned g_nstacks;
static uint8_t g_stack[FL_STACK_BYTES_LIMIT]; /* one thread's stack memory at a time */
static fl_report_writer_t g_writer;
static volatile int g_writer_open;
static volatile int g_threads_parked;
static int g_monitored_tid; /* a hang's monitored thread, marked when written */
static struct utsname g_uts; /* the system's names, read at each capture */

/* Threads that crashed while another was capturing (handler.c publishes them). */
#define FL_WAITERS_MAX 16
static struct waiter {
    volatile int tid; /* claimed slot: nonzero */
    volatile int ready;
    int sig;
    fl_regs_t regs;
} g_waiters[FL_WAITERS_MAX];

static volatile uintptr_t g_bad_address = 16;
static void test_fault(int stage) {
    if (fl_crash_test_fault_stage == stage) *(volatile int *)g_bad_address = 1;
    for (int i = 0; fl_crash_test_hang_stage == stage && i < 3600; i++)
        fl_sys_nanosleep(1000000000ull);
}

static void make_id(uint8_t id[16]) {
    if (fl_sys_getrandom(id, 16, 1 /* GRND_NONBLOCK */) == 16) return;
    /* No entropy yet (early boot): time, pid and tid are unique enough for a file name. */
    uint64_t t = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &t);
    uint64_t p = (uint64_t)fl_sys_getpid() << 32 | (uint32_t)fl_sys_gettid();
    fl_memcpy(id, &t, 8);
    fl_memcpy(id + 8, &p, 8);
}

void fl_crash_signal_from_siginfo(fl_report_signal_t *s, int sig, int code, int pid, uint64_t addr,
                                  int crashed_tid, bool code_tells_origin) {
    *s = (fl_report_signal_t){.number = sig, .code = code, .crashed_tid = crashed_tid};
    bool sent = code_tells_origin ? code <= 0 : true;
    bool fault = code_tells_origin ? code > 0 : true;
    if (sent) s->sender_pid = pid;
    if (fault && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP)) {
        s->address = addr;
        s->has_address = true;
    }
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

void fl_crash_publish_waiter(int sig, const void *ucontext) {
    int tid = (int)fl_sys_gettid();
    for (unsigned i = 0; i < FL_WAITERS_MAX; i++) {
        int expected = 0;
        if (!__atomic_compare_exchange_n(&g_waiters[i].tid, &expected, tid, false, __ATOMIC_SEQ_CST,
                                         __ATOMIC_SEQ_CST))
            continue;
        g_waiters[i].sig = sig;
        fl_regs_from_ucontext(&g_waiters[i].regs, ucontext);
        __atomic_store_n(&g_waiters[i].ready, 1, __ATOMIC_RELEASE);
        return;
    }
}

static const struct waiter *find_waiter(int tid) {
    for (unsigned i = 0; i < FL_WAITERS_MAX; i++)
        if (__atomic_load_n(&g_waiters[i].ready, __ATOMIC_ACQUIRE) && g_waiters[i].tid == tid)
            return &g_waiters[i];
    return NULL;
}

static void release_threads(void) {
    if (__atomic_exchange_n(&g_threads_parked, 0, __ATOMIC_SEQ_CST)) fl_crash_os_release(&g_threads);
}

void fl_crash_abandon(void) {
    release_threads();
    if (__atomic_exchange_n(&g_writer_open, 0, __ATOMIC_SEQ_CST))
        fl_report_writer_abandon(&g_writer);
}

/* The fault a handler of the program's was handling when the crash came (it aborted, or raised
 * the signal again): from the crashed thread's innermost signal frame, read through the safe
 * reader (it lies in a stack the crash may have damaged). Linux's siginfo: signo, errno, code,
 * then at 16 the fault's address. The kernel writes it only for a handler with SA_SIGINFO
 * (Python's faulthandler, zstd and vim have none), so a stale one may lie there: it is taken
 * only for a fault the kernel raised whose address is the one the frame's saved context holds
 * (a memory fault's, or for SIGILL, SIGFPE and SIGTRAP the pc). */
static void write_interrupted(fl_report_writer_t *w, const fl_report_thread_t *t) {
    for (unsigned i = 0; i + 1 < t->frame_count; i++) {
        if (!(t->frames[i].flags & FL_FRAME_TRAMPOLINE)) continue;
        struct {
            int32_t signo, err, code, pad;
            uint64_t addr;
        } si;
        fl_sigframe_t f;
        uint64_t fault, pc;
        const fl_reader_t *mem = fl_memory_reader();
        if (fl_frames_sigframe(t->frames[i].sp, &f) || fl_read(mem, f.info, &si, sizeof si) ||
            fl_read_u64(mem, f.fault_addr, &fault) || fl_read_u64(mem, f.pc, &pc) || si.code <= 0)
            return;
        bool memory = si.signo == SIGSEGV || si.signo == SIGBUS;
        bool at_pc = si.signo == SIGILL || si.signo == SIGFPE || si.signo == SIGTRAP;
        if (!(memory && si.addr == fault) && !(at_pc && si.addr == pc)) return;
        fl_report_signal_t s;
        fl_crash_signal_from_siginfo(&s, si.signo, si.code, 0, si.addr, 0, FL_SIGINFO_TELLS_ORIGIN);
        s.frame = i + 1;
        fl_report_write_interrupted_signal(w, &s);
        return;
    }
}

/* Writes one thread: with the frames it found itself, or walked now over its own stack; a thread
 * that blocks the capture signal from where it sits in a system call, if it does.
 * `running`: other threads run meanwhile (they may unload images). */
static void write_thread(fl_report_writer_t *w, const fl_thread_t *th, bool maps_ok, bool running) {
    fl_report_thread_t t = {.tid = th->tid, .name = th->name, .crashed = th->crashed,
                            .state = th->state,
                            .monitored = g_monitored_tid && th->tid == g_monitored_tid};
    static fl_regs_t blocked;
    uint64_t call[3], again[3];
    int call_err = th->state == FL_THREAD_BLOCKED && maps_ok ? fl_crash_os_blocked(th->tid, call)
                                                             : FL_ENOTFOUND;
    bool from_call = call_err == 0;
    if (call_err == FL_ENOSYS)
        t.unwind_stop = "a worker thread of the kernel's (io_uring): it runs none of the program's code";
    if (from_call) {
        fl_memset(&blocked, 0, sizeof blocked);
        fl_regs_set(&blocked, call[2], call[1], 0);
    }
    const fl_regs_t *regs = from_call ? &blocked : &th->regs;
    if (th->state == FL_THREAD_CAPTURED && th->walked) {
        t.regs = &th->regs;
        t.frames = th->frames;
        t.frame_count = th->frame_count;
        t.frames_truncated = th->frames_truncated;
        t.frames_omitted = th->frames_omitted;
        t.frames_omitted_at = th->frames_omitted_at;
        t.unwind_stop = th->unwind_stop;
    } else if (th->state == FL_THREAD_CAPTURED || from_call) {
        fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_images,
                             .concurrent = running || from_call, .use_cfi = true,
                             .maps = maps_ok ? &g_maps : NULL, .pc_sp_only = from_call};
        static fl_reader_t stack_reader;
        static fl_map_t stack_tmp;
        uint64_t sp = fl_regs_sp(regs);
        const fl_map_t *sm = fl_crash_os_stack(maps_ok ? &g_maps : NULL, sp, &stack_tmp);
        /* The stack was seen mapped readable, and its thread is parked or suspended (or is the
         * requester, waiting): plain copies, not a system call per read. A thread read from its
         * system call is not stopped: the safe reader. */
        fl_walk_env_stack(&env, sm, sp, &stack_reader, !from_call);
        fl_walk_result_t res = {0};
        /* A blocked thread's pc must be code and its sp a stack, or its file said nothing
         * usable (qemu-user shows the emulator's own registers there). */
        if (!from_call || (sm && fl_images_find(&g_images, call[2])))
            fl_frames_walk(&env, regs, g_frames, fl_crash_config.max_frames, &res);
        else
            res.stop_reason = "the pc of its system call is in no known image";
        if (from_call && res.count) {
            /* Trusted only if it sat in the same call at the same place throughout the walk. */
            g_frames[0].method = FL_FRAME_SYSCALL;
            if (fl_crash_os_blocked(th->tid, again) != 0 || again[0] != call[0] ||
                again[1] != call[1] || again[2] != call[2]) {
                res.count = 0;
                res.stop_reason = "the thread left its system call while its stack was read";
            }
        }
        /* Stack memory from sp up, read when the report ends (threads still stopped): of a
         * stopped thread only (one read from its system call runs on), within its mapping. */
        size_t want = th->crashed ? fl_crash_config.crashed_stack_bytes : fl_crash_config.stack_bytes;
        if (want && sm && !from_call && sp < sm->end && g_nstacks < FL_ARRAY_LEN(g_stacks))
            g_stacks[g_nstacks++] = (struct stack){.tid = th->tid, .start = sp,
                                                   .len = want < sm->end - sp ? want : (size_t)(sm->end - sp)};
        t.regs = from_call ? NULL : &th->regs;
        t.frames = g_frames;
        t.frame_count = res.count;
        t.frames_truncated = res.truncated;
        t.frames_omitted = res.omitted;
        t.frames_omitted_at = res.omitted_at;
        t.unwind_stop = res.stop_reason;
    }
    fl_report_write_thread(w, &t);
    if (th->crashed) write_interrupted(w, &t);
}

/* The stack memory noted by write_thread, within the report's budget, after everything else: a
 * report cut short (a full disk) loses it before any frame. The threads are still stopped. */
static void write_stacks(fl_report_writer_t *w) {
    size_t left = fl_crash_config.stack_bytes_total;
    bool capped = false;
    for (unsigned i = 0; i < g_nstacks; i++) {
        size_t len = g_stacks[i].len < left ? g_stacks[i].len : left;
        capped |= len < g_stacks[i].len;
        if (len && fl_read(fl_memory_reader(), g_stacks[i].start, g_stack, len) == 0) {
            fl_report_write_memory(w, g_stacks[i].tid, g_stacks[i].start, g_stack, len);
            left -= len;
        }
    }
    if (capped) note(w, "stack memory cut at the report's budget of ", fl_crash_config.stack_bytes_total, " bytes");
}

/* fl_crash_is_report_dir, with what fstat said in *st. */
static bool is_report_dir(int fd, struct stat *st) {
    return fd >= 0 && fl_sys_fstat(fd, st) == 0 && S_ISDIR(st->st_mode) &&
           (uint64_t)st->st_dev == fl_crash_config.dir_dev &&
           (uint64_t)st->st_ino == fl_crash_config.dir_ino;
}

bool fl_crash_is_report_dir(int fd) {
    struct stat st;
    return is_report_dir(fd, &st);
}

int fl_crash_dirfd(const char **why) {
    fl_crash_config_t *c = &fl_crash_config;
    int old = __atomic_load_n(&c->dirfd, __ATOMIC_SEQ_CST);
    struct stat st;
    if (old < 0) return -1; /* (not installed) */
    bool ours = is_report_dir(old, &st);
    if (ours && st.st_nlink > 0) return old;
    /* The directory as the path names it now: the program may have taken the descriptor, or
     * the directory was deleted (reports written into it would be lost with it). O_NONBLOCK:
     * the path may name a FIFO now. */
    int flags = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int fd = (int)fl_sys_openat(AT_FDCWD, c->report_dir, flags, 0);
    if (fd == -ENOENT && fl_make_dirs(c->report_dir, 0700, NULL) == 0)
        fd = (int)fl_sys_openat(AT_FDCWD, c->report_dir, flags, 0);
    if (fd < 0) return -1;
    /* Another user's directory in its place is not trusted with the process's memory. */
    if (fl_sys_fstat(fd, &st) != 0 ||
        ((uint32_t)st.st_uid != c->dir_uid && (long)st.st_uid != fl_sys_geteuid())) {
        fl_sys_close(fd);
        return -1;
    }
    c->dir_dev = (uint64_t)st.st_dev;
    c->dir_ino = (uint64_t)st.st_ino;
    c->dir_uid = (uint32_t)st.st_uid;
    __atomic_store_n(&c->dirfd, fd, __ATOMIC_SEQ_CST);
    c->marker.dirfd = fd;
    if (ours) fl_sys_close(old); /* (the deleted directory's) */
    *why = ours ? "the report directory had been deleted: made again at its path"
                : "the program had closed or reused faultline's descriptor of the report "
                  "directory: opened again by its path";
    return fd;
}

static int capture(const fl_capture_request_t *req) {
    fl_crash_config_t *c = &fl_crash_config;
    fl_report_writer_t *w = &g_writer;
    bool crash = req->kind == 1;
    const char *reopened = NULL;

    /* Free the reserved descriptors first: the report and one /proc file at a time need them,
     * even when the application has exhausted its descriptors. A snapshot, or a capture after
     * which the process may go on, leaves them for the next. One the program took over is
     * left alone. */
    if (crash && !fl_crash_os_may_continue(req))
        for (int i = 0; i < FL_RESERVE_FDS; i++) {
            if (fl_crash_is_report_dir(c->reserve_fd[i])) fl_sys_close(c->reserve_fd[i]);
            c->reserve_fd[i] = -1;
        }
    int dirfd = fl_crash_dirfd(&reopened);
    /* The process may be a fork of the one that installed; and a crash's handler already did
     * this, but a new pipe for the reader may need the descriptors freed just above. */
    fl_memory_refresh_pid();

    uint8_t id[16];
    make_id(id);
    /* The run ends crashed from here on, whatever becomes of the report (docs/hangs.md). */
    if (crash && !fl_crash_os_may_continue(req))
        fl_run_marker_set_state(&c->marker, FL_RUN_STATE_CRASHED, id);
    g_monitored_tid = req->hang ? req->hang->monitored_tid : 0;
    /* A program in a crash loop whose reports nobody takes: the first ones are kept. */
    int held = dirfd >= 0 ? fl_report_dir_count(dirfd, c->max_pending_reports) : 0;
    if (held >= 0 && (unsigned)held >= c->max_pending_reports) {
        if (crash) {
            char msg[1300];
            fl_strbuf_t sb;
            fl_strbuf_init(&sb, msg, sizeof msg);
            fl_strbuf_puts(&sb, "no crash report written: ");
            fl_strbuf_puts(&sb, c->report_dir);
            fl_strbuf_puts(&sb, " already holds ");
            fl_strbuf_putu(&sb, (uint64_t)held);
            fl_strbuf_puts(&sb, " reports that nobody uploaded or removed (the limit: "
                                "max_pending_reports, FAULTLINE_MAX_REPORTS)");
            fl_log_stderr(msg);
        }
        return FL_ERANGE;
    }
    int e = fl_report_writer_open(w, dirfd, id, g_scratch, sizeof g_scratch);
    /* A file system too full for the report: the run's marker gives up its space (the report
     * says more than the marker would; the next start learns of the crash from the report). */
    if (e == FL_EIO && (w->sys_errno == ENOSPC || w->sys_errno == EDQUOT) &&
        fl_run_marker_remove(&fl_crash_config.marker))
        e = fl_report_writer_open(w, dirfd, id, g_scratch, sizeof g_scratch);
    if (req->id_out) fl_memcpy(req->id_out, id, 16);
    if (req->name_out) fl_strlcpy(req->name_out, w->final_name, FL_REPORT_NAME_MAX);
    if (e) {
        if (crash) fl_report_writer_log_failure(w, fl_crash_config.report_dir);
        return e;
    }
    __atomic_store_n(&g_writer_open, 1, __ATOMIC_SEQ_CST);
    fl_report_writer_buffer(w, g_out, sizeof g_out);
    g_nstacks = 0;

    uint64_t now = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &now);
    /* Read here, not at install: one system call fewer at every start, and the host's name as
     * it is at the crash. The name is gethostname's source. */
    if (fl_sys_uname(&g_uts) != 0) fl_memset(&g_uts, 0, sizeof g_uts);
    fl_report_header_t h = {
        .time_unix_ns = now, .pid = (int32_t)fl_sys_getpid(), .kind = req->kind,
        .arch = fl_regs_arch(), .process_path = fl_crash_os_process_path(), .app_name = c->app_name,
        .app_version = c->app_version, .reason = req->reason, .os_name = g_uts.sysname,
        .os_release = g_uts.release, .os_version = g_uts.version, .machine = g_uts.machine,
        .hostname = g_uts.nodename, .process_start_unix_ns = c->install_time_ns};
    fl_memcpy(h.report_id, id, 16);
    fl_report_write_header(w, &h);
    if (req->hang) fl_report_write_hang(w, req->hang);

    int tid = fl_crash_os_tid(req);
    fl_report_signal_t s;
    if (req->exception) {
        fl_report_write_mach_exception(w, req->exception);
        if (fl_crash_exception_signal(req->exception, fl_regs_arch(), tid, &s))
            fl_report_write_signal(w, &s);
    } else if (crash && req->info) {
        const siginfo_t *info = req->info;
        fl_crash_signal_from_siginfo(&s, req->sig, info->si_code, info->si_pid,
                                     (uint64_t)(uintptr_t)info->si_addr, tid,
                                     FL_SIGINFO_TELLS_ORIGIN);
        fl_report_write_signal(w, &s);
        static char abort_msg[1024]; /* one capture at a time */
        const char *type = fl_crash_terminate_type();
        if (req->sig == SIGABRT && fl_crash_os_abort_message(abort_msg, sizeof abort_msg))
            fl_report_write_abort_message(w, abort_msg);
        if (req->sig == SIGABRT && type) fl_report_write_terminate_type(w, type);
    }
    test_fault(1);

    /* A crash stops the other threads first, so that the memory maps, the image list and every
     * stack are read in one consistent state. A snapshot reads the maps and images first: then
     * each thread can walk its own stack when it answers and go on at once, instead of parking
     * (and being woken again) while this thread walks them all. */
    int maps_err = 0, img_err = 0;
    static fl_selfwalk_t selfwalk; /* static: a late walker may still look at it */
    if (!crash) {
        fl_crash_os_images(&g_images, &g_maps, g_maps_scratch, sizeof g_maps_scratch, false,
                           &maps_err,
                           &img_err);
        selfwalk = (fl_selfwalk_t){.images = &g_images, .maps = &g_maps, .max_frames = c->max_frames};
    }
    fl_thread_list_t *tl = &g_threads;
    __atomic_store_n(&g_threads_parked, 1, __ATOMIC_SEQ_CST);
    /* Threads whose stack memory is kept must stand still until it is read: they park. */
    fl_crash_os_suspend(tl, req, crash || maps_err || c->stack_bytes ? NULL : &selfwalk);
    tl->t[0].crashed = crash;
    /* A thread that crashed while we capture waits in the crash handler; it left its
     * registers. */
    for (unsigned i = 1; i < tl->count; i++) {
        const struct waiter *wt = find_waiter(tl->t[i].tid);
        if (!wt) continue;
        if (tl->t[i].state != FL_THREAD_CAPTURED) {
            tl->t[i].regs = wt->regs;
            tl->t[i].state = FL_THREAD_CAPTURED;
        }
    }

    if (crash) fl_crash_os_images(&g_images, &g_maps, g_maps_scratch, sizeof g_maps_scratch, false,
                           &maps_err,
                           &img_err);
    bool running = false; /* threads that walked themselves went on */
    for (unsigned i = 1; i < tl->count; i++) running |= tl->t[i].walked;
    /* Images before the threads: frames are only raw addresses until the images explain them. */
    for (unsigned i = 0; i < g_images.count; i++) fl_report_write_image(w, &g_images.image[i]);

    write_thread(w, &tl->t[0], maps_err == 0, running);
    fl_report_writer_flush(w); /* the crashed thread is in the file, whatever comes next */
    test_fault(3); /* the other threads are parked */
    for (unsigned i = 1; i < tl->count; i++) write_thread(w, &tl->t[i], maps_err == 0, running);
    fl_report_write_threads_total(w, tl->total);

    fl_annotations_each(write_annotation, w);

    if (tl->enum_error < 0) note(w, "other threads could not be listed (error ", (uint64_t)-tl->enum_error, ")");
    if (tl->enum_error > 0) note(w, "other threads could not be listed (kern_return_t ", (uint64_t)tl->enum_error, ")");
    if (tl->total > tl->count) note(w, "thread list truncated at max_threads: the process had ", tl->total, " threads");
    if (req->note) fl_report_write_note(w, req->note);
    if (reopened) fl_report_write_note(w, reopened);
    fl_crash_os_notes(w, tl, req);
    for (unsigned i = 1; i < tl->count; i++) {
        const struct waiter *wt = find_waiter(tl->t[i].tid);
        if (!wt) continue;
        char buf[128];
        fl_strbuf_t sb;
        fl_strbuf_init(&sb, buf, sizeof buf);
        fl_strbuf_puts(&sb, "thread ");
        fl_strbuf_putu(&sb, (uint64_t)tl->t[i].tid);
        fl_strbuf_puts(&sb, " also crashed (");
        fl_strbuf_puts(&sb, fl_signal_name(wt->sig));
        fl_strbuf_puts(&sb, ") while this report was written");
        fl_report_write_note(w, buf);
    }
    if (img_err) note(w, "image list could not be read (error ", (uint64_t)-img_err, ")");
    if (g_images.truncated) note(w, "image list truncated at ", g_images.count, " images");
    if (g_images.inconsistent) fl_report_write_note(w, "the loader was changing its image list (dlopen/dlclose in progress)");
    if (maps_err) note(w, "memory maps unreadable (error ", (uint64_t)-maps_err, "); stack bounds unknown");
    else if (g_maps.truncated) note(w, "memory maps truncated at ", g_maps.count, " mappings");
    write_stacks(w);
    test_fault(4);

    __atomic_store_n(&g_writer_open, 0, __ATOMIC_SEQ_CST);
    e = fl_report_writer_finish(w);
    /* The other threads go on only now: the report is complete (and its name final) first. */
    release_threads();
    if (!crash) return e;
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

/* A report that meets the file size limit (RLIMIT_FSIZE) must not end the process by SIGXFSZ
 * rather than its own signal, nor end a program that asked for a snapshot: SIGXFSZ is ignored
 * while the capture writes (the write fails with EFBIG instead, and the report is saved cut
 * short), and set to ignored once more before the old action comes back, which discards one
 * raised while the signal was blocked (the crash handler blocks it). */
int fl_crash_capture(const fl_capture_request_t *req) {
    struct sigaction ign, old;
    fl_memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    bool saved = fl_crash_set_action(SIGXFSZ, &ign, &old) == 0;
    int e = capture(req);
    if (saved) {
        fl_crash_set_action(SIGXFSZ, &ign, NULL);
        fl_crash_set_action(SIGXFSZ, &old, NULL);
    }
    return e;
}
