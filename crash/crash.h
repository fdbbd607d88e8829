/* SPDX-License-Identifier: MIT */
/* crash: installation, the signal handler and crash-time capture (internal to the library). */
#ifndef FAULTLINE_CRASH_H
#define FAULTLINE_CRASH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "base/config.h"
#include "base/mach_layouts.h"
#include "elf/elf.h"
#include "frames/frames.h"
#include "report/report.h"

#define FL_CRASH_SIGNAL_COUNT 7
#define FL_ALTSTACK_SIZE (64u * 1024u)
#define FL_CRASH_WAIT_NS (5ull * 1000000000ull) /* a second crashing thread waits at most this */
#define FL_RESERVE_FDS 2 /* descriptors freed at crash time: the report, and one /proc file at a time */

/* Everything the crash path needs, prepared by fl_install (NOT AS-SAFE to change). */
typedef struct fl_crash_config {
    /* The program owns the descriptor table: it may close ours, or close them and open files
     * of its own under their numbers (a daemon's closefrom). So every descriptor is checked to
     * be still the report directory (dir_dev, dir_ino) before use: fl_crash_dirfd. */
    int dirfd;
    int reserve_fd[FL_RESERVE_FDS]; /* closed at crash time so the report can be opened at EMFILE */
    uint64_t dir_dev, dir_ino;
    uint32_t dir_uid; /* the directory's owner at install: the only one trusted with a new one */
    unsigned max_threads, max_frames;
    unsigned crashed_stack_bytes, stack_bytes, stack_bytes_total; /* resolved: 0 = none */
    unsigned max_pending_reports; /* resolved */
    uint64_t crash_deadline_ns;   /* resolved */
    uint64_t signals; /* the crash signals to catch, as bits (1ull << SIGSEGV) | ... */
    uint64_t thread_timeout_ns;
    uint64_t install_time_ns;
    /* The process that installed. A crashing process with another pid is a child, and one that
     * did not fork through libc (vfork, posix_spawn, clone) may share this memory with that
     * process, which goes on after the child dies: the handler puts back what the child's
     * capture changed (crash/handler.c). */
    long pid;
    char report_dir[1024];
    char app_name[256], app_version[256];
    fl_run_marker_t marker; /* this run's marker (docs/hangs.md); fd -1 if it could not be made */
} fl_crash_config_t;

extern fl_crash_config_t fl_crash_config;
extern const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT];

/* "SEGV,SIGBUS,6": crash signals by name with or without SIG or by number, separated by commas
 * or spaces (FAULTLINE_SIGNALS, `faultline run --signals`): *mask gets their bits. False for
 * anything else. NOT AS-SAFE. */
bool fl_crash_signals_parse(const char *s, uint64_t *mask);

/* What fl_install prepares for the platform, after the shared configuration above and the
 * reserved descriptors (install_<platform>.c): the safe reader, what the image list needs, the
 * alternate stacks, then the handlers. Undone by
 * fl_crash_platform_uninstall. NOT AS-SAFE. */
int fl_crash_platform_install(void);
void fl_crash_platform_uninstall(void);

/* fl_install without the run marker and the exit and fork hooks that keep it (docs/hangs.md):
 * what the preload library calls, since a program built without faultline never asks
 * fl_last_run (docs/preload.md); linked alone, it leaves the marker's code out. NOT AS-SAFE. */
int fl_crash_install(const fl_options *opts);

/* Annotations: written under a mutex by fl_annotate, read lock-free at crash time. */
typedef void (*fl_annotation_fn)(void *ctx, const char *key, const char *value);
void fl_annotations_each(fl_annotation_fn fn, void *ctx); /* AS-SAFE */

/* ---- Alternate signal stacks (altstack.c: fl_thread_init and the stacks, shared;
 * altstack_linux.c: the pthread_create interposition, Linux only) ---- */

/* Gives the calling thread faultline's alternate stack: the one it had before (kept under a
 * pthread key whose destructor frees it when the thread exits, if it is still the thread's
 * alternate stack), or a new mapping of FL_ALTSTACK_SIZE bytes with a guard page below, its top
 * page made resident if `populate` (see map_stack). 0, FL_ENOMEM or FL_EIO. NOT AS-SAFE. */
int fl_crash_altstack_give(bool populate);
/* fl_thread_init, with `populate` as above: fl_install passes false, for its own thread, so
 * that no process start pays for a page its thread touches only at its first signal.
 * NOT AS-SAFE. */
int fl_crash_thread_init(bool populate);
/* Creates that key once; whether it exists (without it stacks are never freed). NOT AS-SAFE. */
bool fl_crash_altstack_keyed(void);
/* Whether threads created from now on get an alternate stack (set by fl_install, cleared by
 * fl_uninstall). Linux only. NOT AS-SAFE. */
void fl_crash_altstacks_auto(bool on);
/* The threads faultline's pthread_create started while installed that have not ended (their
 * ids into out[0..max), the count returned): a thread list where /proc/self/task cannot be
 * read (a chroot or container without /proc). Linux only. AS-SAFE. */
unsigned fl_crash_started_threads(int *out, unsigned max);
/* FL_ALTSTACK_SIZE bytes with a guard page below them, for a thread that is not the caller
 * (NULL if out of memory), and their release. NOT AS-SAFE. */
void *fl_crash_altstack_map(void);
void fl_crash_altstack_unmap(void *stack);

/* A SA_SIGINFO|SA_ONSTACK|flags action for fn that blocks every signal but the crash signals (a
 * fault inside fn must still reach the crash handler). AS-SAFE. */
void fl_crash_sigaction_init(struct sigaction *sa, void (*fn)(int, siginfo_t *, void *), int flags);
/* Installs/removes the crash signals' handler (handler.c). NOT AS-SAFE. */
int fl_crash_handlers_install(void);
void fl_crash_handlers_uninstall(void);

/* For a library that interposes sigaction (the preload, docs/preload.md): the sigaction that
 * faultline's own actions are set with from now on (one the interposition does not reach).
 * Before fl_crash_install. NOT AS-SAFE. */
typedef int (*fl_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
void fl_crash_use_sigaction(fl_sigaction_fn fn);
/* sigaction for faultline's own actions, past an interposed one (fl_crash_use_sigaction).
 * AS-SAFE. */
int fl_crash_set_action(int sig, const struct sigaction *act, struct sigaction *old);
/* Whether faultline's action is installed for `sig` (one of the crash signals it catches). AS-SAFE. */
bool fl_crash_catches(int sig);
/* Whether faultline stands in for the default action of `sig`: one of the crash signals whose
 * action it set, while no crash (or snapshot) is being handled. AS-SAFE. */
bool fl_crash_stands_in(int sig);
/* The application's sigaction, as seen by a program that does not know faultline is there. For
 * a signal faultline stands in for, SIG_DFL keeps faultline's action in place, with the default
 * action (not the one in place before fl_install) following it after the report, and reads back
 * as SIG_DFL until the application sets another action; any other action is set as asked.
 * Otherwise it is the plain sigaction. So a program that resets its crash signals (node), or a
 * handler of its own that puts SIG_DFL back and raises again (zstd, ISO C's idiom), still gets
 * its report, and then dies of the signal as it asked. 0, or -1 with errno. AS-SAFE. */
int fl_crash_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* ---- Other threads, Linux (threads_linux.c) ---- */

enum { /* values equal faultline.Thread.State */
    FL_THREAD_CAPTURED = 0,
    FL_THREAD_BLOCKED = 1, /* blocks the capture signal */
    FL_THREAD_TIMEOUT = 2, /* did not answer before the deadline */
    FL_THREAD_EXITED = 3,  /* gone before it could answer */
    FL_THREAD_OMITTED = 4  /* not asked (no capture signal available) */
};
#define FL_THREADS_ONE_SPIN_NS (200ull * 1000ull) /* fl_threads_suspend_one polls this long */
#define FL_THREADS_CHECK_NS (20ull * 1000000ull)    /* silent threads are checked after this */
#define FL_THREADS_PARK_MAX_NS (10ull * 1000000000ull) /* a parked thread goes on after this */
#define FL_DEFAULT_THREAD_TIMEOUT_NS (1000ull * 1000000ull)
#define FL_OFFER_WAIT_NS (100ull * 1000000ull) /* fl_install waits this for running threads */

/* One thread of a capture (both platforms: the shared capture writes these). */
typedef struct fl_thread {
    int tid;            /* Linux: the tid; Darwin: low 32 bits of the 64-bit thread id */
    int state;          /* FL_THREAD_* */
    volatile int token; /* Linux: request generation and answer phase (threads_linux.c) */
    uint32_t port;      /* Darwin: the thread_act_t (a send right from task_threads) */
    bool crashed;
    bool suspended;     /* Darwin: thread_suspend succeeded, resume it */
    char name[64];      /* Darwin's MAXTHREADNAMESIZE; Linux names have at most 15 bytes */
    fl_regs_t regs;     /* valid when state == FL_THREAD_CAPTURED */
    /* The walk the thread made of its own stack (fl_selfwalk_t), when `walked`: */
    bool walked, frames_truncated;
    unsigned frame_count, frames_omitted, frames_omitted_at; /* fl_walk_result_t's */
    const fl_frame_t *frames;
    const char *unwind_stop;
} fl_thread_t;

/* What a thread needs to walk its own stack in the capture signal's handler: the images and the
 * memory maps, read before the requests and left unchanged until the capture ends. */
typedef struct fl_selfwalk {
    const fl_image_list_t *images;
    const fl_maps_t *maps;
    unsigned max_frames;
} fl_selfwalk_t;

typedef struct fl_thread_list {
    unsigned count;    /* entries in t[]; t[0] is the capturing (Darwin: requesting) thread */
    unsigned total;    /* threads found (count stops at max_threads), faultline's own excluded */
    /* The threads could not be listed (only t[0] is): a negative FL_* error (Linux: reading
     * /proc/self/task) or a positive kern_return_t (Darwin: task_threads). */
    int enum_error;
    bool from_record;  /* Linux: /proc/self/task unreadable, the list is the main thread and
                        * fl_crash_started_threads' (enum_error 0) */
    bool signal_taken; /* Linux: the application replaced the capture signal's action */
    int generation;
    uint64_t ports;    /* Darwin: task_threads' array (vm_deallocate'd by the release) */
    uint32_t nports;
    fl_thread_t t[FL_MAX_THREADS_LIMIT];
} fl_thread_list_t;

/* Picks a free real-time signal and installs the handler that answers capture requests.
 * NOT AS-SAFE. */
int fl_threads_install(void);
void fl_threads_uninstall(void); /* NOT AS-SAFE */
int fl_threads_signal(void);     /* AS-SAFE; 0 if none was free */
/* Whether faultline's responder holds `sig` (the capture signal) for the program: a library
 * that interposes sigaction (the preload) then gives the program's calls for it to
 * fl_threads_app_sigaction. AS-SAFE. */
bool fl_threads_stands_in(int sig);
/* The program's sigaction for the capture signal: its action is recorded and read back (at
 * first what faultline replaced), while the responder stays installed and passes every
 * capture signal that is not faultline's own request to that action, as the kernel would
 * (runtimes that take every signal, Go's, left the other threads of a crash uncaptured).
 * Returns 0. AS-SAFE. */
int fl_threads_app_sigaction(const struct sigaction *act, struct sigaction *old);
/* Offers an alternate signal stack to every other thread that already runs (at install: threads
 * created later get theirs from pthread_create). A thread without one of at least
 * FL_ALTSTACK_SIZE installs it in the capture signal's handler; offers not taken within
 * timeout_ns are unmapped. Returns how many threads took one. NOT AS-SAFE. */
int fl_threads_offer_altstacks(uint64_t timeout_ns);
/* Lists the process's threads (the caller as t[0], then up to max-1 others), asks each other
 * thread for its registers and waits at most timeout_ns for the answers; threads that answered
 * stay parked inside the signal handler until fl_threads_release. With `selfwalk` (a snapshot:
 * the other threads need not stand still), a thread that can walks its own stack before it
 * answers (its entry is then `walked`) and goes on at once instead of parking; one that cannot
 * (too little stack left, its stack not in the maps, memory read through a pipe) parks. t[0]'s
 * registers, name and crashed flag are the caller's to fill. AS-SAFE. */
int fl_threads_suspend(fl_thread_list_t *l, unsigned max, uint64_t timeout_ns,
                       const fl_selfwalk_t *selfwalk);
/* The same request for one thread (fl_thread_backtrace): l gets the caller as t[0] and `tid` as
 * t[1], whatever its state (FL_THREAD_OMITTED without a usable capture signal, signal_taken
 * saying why). The frames pool, if this is its first use, is sized for pool_entries threads, as a
 * snapshot would size it. Release it as fl_threads_suspend's. AS-SAFE. */
int fl_threads_suspend_one(fl_thread_list_t *l, int tid, unsigned pool_entries,
                           uint64_t timeout_ns, const fl_selfwalk_t *selfwalk);
void fl_threads_release(fl_thread_list_t *l); /* AS-SAFE */
/* A thread that blocks the capture signal, read without its cooperation: while it sits in a
 * system call, /proc/self/task/TID/syscall gives the call's number, sp and pc (out[0..2]).
 * FL_ENOTFOUND when it runs or is not in a system call. AS-SAFE. */
int fl_threads_syscall_regs(int tid, uint64_t out[3]);

/* ---- Capture ---- */

typedef struct fl_capture_request {
    int kind;                 /* 1 crash (faultline.Header.Kind), 2 snapshot, 3 hang */
    int sig;                  /* crash: the signal and its siginfo */
    const siginfo_t *info;
    const fl_regs_t *regs;    /* the requesting thread's registers (NULL: read them from `thread`) */
    const char *reason;       /* snapshot: the caller's reason */
    /* Darwin: the Mach exception that started a crash capture (NULL for a signal or a snapshot),
     * and the requesting thread (a thread_act_t), which need not be the capturing one: the
     * exception server captures on behalf of the thread that crashed or asked. */
    const fl_report_mach_exception_t *exception;
    uint32_t thread;
    const char *note; /* a note for the report about the request itself, or NULL */
    /* A hang (kind 3): the watchdog's finding, written after the header; its monitored_tid's
     * thread is marked. */
    const fl_report_hang_t *hang;
    /* Filled in when not NULL: the report's id and file name (FL_REPORT_NAME_MAX bytes). */
    uint8_t *id_out;
    char *name_out;
} fl_capture_request_t;

/* Captures every thread and writes the report; returns 0 or the writer's error. AS-SAFE
 * (capture.c, shared; the platform's part is the fl_crash_os_* below). Callers serialise
 * captures (handler.c's state; on Darwin also the exception server's one thread). The order:
 * free the reserved descriptors (a final crash only), open the report, header, exception and
 * signal, stop the other threads, images (before the threads for a crash; a snapshot reads them
 * first so that threads may walk themselves), the requesting thread, the others, thread count,
 * annotations, notes, finish, release the threads. */
int fl_crash_capture(const fl_capture_request_t *req);

/* Whether fd is still the report directory opened at install (same device and inode: a
 * descriptor the program closed, or reused for a file of its own, is not). AS-SAFE. */
bool fl_crash_is_report_dir(int fd);
/* The report directory's descriptor for a write: fl_crash_config.dirfd if it still is the
 * directory and the directory still exists; else the directory its path names now (absolute
 * since install; made again, 0700, if it was deleted: a cleaner of /tmp or of the user's state
 * may remove it while a program runs), which then replaces it, *why set to the report's note
 * saying so. -1 if neither, or if the new directory is owned by another user than the old one
 * and this process. A descriptor that is no longer ours is never closed. AS-SAFE (one fstat;
 * the path only when the descriptor cannot be used). */
int fl_crash_dirfd(const char **why);
/* After a recrash: closes and renames the partial report so its complete prefix is kept, and lets
 * parked threads go. AS-SAFE. */
void fl_crash_abandon(void);
/* A thread that crashed while another thread is capturing records its context here before it
 * waits, so the report shows where it crashed (and a note says so). AS-SAFE. */
void fl_crash_publish_waiter(int sig, const void *ucontext);
/* ---- The watchdog (watchdog.c) ---- */

/* Called by fl_uninstall (fl_watchdog_stop) and by the exit handler: from now on no new hang is
 * reported (exit handlers that take long are not a hang of the loop). AS-SAFE. */
void fl_crash_watchdog_exiting(void);
/* In a fork child, which has no watchdog thread: forgets the parent's, so
 * that fl_watchdog_stop does not wait for a thread that is not there and fl_watchdog_start may
 * start one. NOT AS-SAFE (a pthread_atfork child handler). */
void fl_crash_watchdog_forget(void);
/* The watchdog thread's tid (0 when none): for benchmarks and tests. AS-SAFE. */
int fl_crash_watchdog_tid(void);

/* Test hook: FAULTLINE_TEST_FAULT_AFTER=<stage> makes capture fault on purpose: 1 after the signal
 * is written, 3 after the capturing thread is written (the others still parked), 4 before the
 * report is finished (install reads the environment; the crash path only compares an int). */
extern int fl_crash_test_fault_stage;
/* Test hook: FAULTLINE_TEST_HANG_AFTER=<stage> makes the capture block at the same stages (an
 * hour at most), as on a file system that stopped answering: the crash deadline must end it. */
extern int fl_crash_test_hang_stage;

/* The Signal a report gives for a signal's siginfo (number, si_code, si_pid, si_addr). With
 * `code_tells_origin` (Linux: si_code > 0 only for a fault the kernel raised) the sender's pid is
 * kept only for a sent signal and the address only for a fault; otherwise (Darwin, whose si_code
 * does not tell them apart) both are kept, the address for SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGTRAP. AS-SAFE. */
void fl_crash_signal_from_siginfo(fl_report_signal_t *s, int sig, int code, int pid, uint64_t addr,
                                  int crashed_tid, bool code_tells_origin);

/* ---- Mach exception messages (mach_exc.c: portable, tested on Linux with messages laid out by
 * Apple's headers) ---- */

typedef struct fl_mach_exc {
    fl_mach_msg_header_t head; /* the request's header (its reply port) */
    uint32_t thread, task;     /* port names of the two descriptors */
    fl_report_mach_exception_t e;
    bool crash;                /* false for EXC_SOFTWARE / EXC_SOFT_SIGNAL (a traced signal) */
} fl_mach_exc_t;
/* Decodes a received mach_exception_raise (EXCEPTION_DEFAULT | MACH_EXCEPTION_CODES) of len
 * bytes (the header's msgh_size; len bytes must be readable): msgh_id 2405, complex, two port
 * descriptors, at most EXCEPTION_CODE_MAX codes, all inside len. 0, or FL_EBADDATA (out zeroed).
 * AS-SAFE. */
int fl_mach_exc_decode(const void *msg, size_t len, fl_mach_exc_t *out);
/* The MIG reply to the request whose header is req: its remote port and disposition, msgh_id +
 * 100, the NDR record of a little-endian host, RetCode `ret`. AS-SAFE. */
void fl_mach_exc_reply_init(fl_mach_exc_reply_t *r, const fl_mach_msg_header_t *req, int32_t ret);
/* The Signal a report gives with a Mach exception: the one the kernel raises once every handler
 * answered KERN_FAILURE (EXC_BAD_ACCESS: SIGSEGV for KERN_INVALID_ADDRESS and x86_64's
 * EXC_I386_GPFLT, else SIGBUS, with the address from code[1]; EXC_BAD_INSTRUCTION SIGILL;
 * EXC_ARITHMETIC SIGFPE; EXC_BREAKPOINT SIGTRAP; EXC_SOFTWARE's EXC_UNIX_* SIGSYS, SIGPIPE,
 * SIGABRT). false (s untouched) when there is none (EXC_GUARD ends a task with SIGKILL).
 * AS-SAFE. */
bool fl_crash_exception_signal(const fl_report_mach_exception_t *e, int arch, int tid,
                               fl_report_signal_t *s);

/* ---- The platform's part of a capture and of the handler (capture_<platform>.c) ---- */

/* The thread id the report gives the requesting thread. AS-SAFE. */
int fl_crash_os_tid(const fl_capture_request_t *req);
/* The executable's path for the report (Linux: read from /proc/self/exe now, fl_elf_exe_path;
 * Darwin: as fl_install found it). AS-SAFE. */
const char *fl_crash_os_process_path(void);
/* The C++ exception std::terminate was called with (terminate.c): fl_install puts a handler of
 * its own ahead of the C++ library's where one is loaded, which keeps the exception's type and
 * calls the one it replaced; fl_uninstall puts that one back unless the program set its own
 * since. NOT AS-SAFE. */
void fl_crash_terminate_install(void);
/* p, the result of a dlsym-like lookup; when NULL, the lookup's error is freed: glibc keeps a
 * failed lookup's message until dlerror has been called twice, and leak checkers count it.
 * NOT AS-SAFE. */
void *fl_crash_dl_found(void *p);
void fl_crash_terminate_uninstall(void);
/* The type kept (mangled without "_Z", as std::type_info::name gives it: "St13runtime_error"),
 * or NULL. AS-SAFE. */
const char *fl_crash_terminate_type(void);
/* What the C library said as it aborted the process, into buf (NUL-terminated, cut to cap - 1
 * bytes, its final newlines dropped): its length, 0 for none. Linux: glibc's __abort_msg, set
 * by a failed assert() and by the fatal checks of its heap, of a stack protector and of
 * fortified calls, read through the safe reader; Darwin: none. AS-SAFE. */
size_t fl_crash_os_abort_message(char *buf, size_t cap);
/* Linux only: where glibc keeps that message (the address of __abort_msg; NULL: not glibc, or
 * a static program), as fl_install finds it. NOT AS-SAFE. */
void fl_crash_os_abort_message_at(const void *at);
/* Whether the process may go on after this capture (Darwin's EXC_GUARD): then the reserved
 * descriptors are kept. AS-SAFE. */
bool fl_crash_os_may_continue(const fl_capture_request_t *req);
/* Stops the other threads and fills l, t[0] being the requesting thread with req's registers
 * (Darwin: read from the thread when req->regs is NULL) and its name; `selfwalk` as for
 * fl_threads_suspend (Linux only). AS-SAFE. */
void fl_crash_os_suspend(fl_thread_list_t *l, const fl_capture_request_t *req,
                         const fl_selfwalk_t *selfwalk);
void fl_crash_os_release(fl_thread_list_t *l); /* AS-SAFE; lets them go */
/* The image list, and the memory maps where the platform has them (*maps_err = 0 with no maps
 * on Darwin), read with the caller's scratch (Linux: /proc/self/maps; at least 4 KiB), so that
 * callers with buffers of their own may run at once. With `refresh` (Linux), images whose
 * loader entries did not change since the previous call on the same list are kept as read then
 * (fl_elf_images_refresh); a capture reads everything. AS-SAFE. */
void fl_crash_os_images(fl_image_list_t *images, fl_maps_t *maps, char *scratch,
                        size_t scratch_len, bool refresh, int *maps_err, int *img_err);
/* The stack holding sp (Linux: from maps, NULL when unreadable; Darwin: vm_region_64) as a map,
 * or NULL when unknown. AS-SAFE. */
const fl_map_t *fl_crash_os_stack(const fl_maps_t *maps, uint64_t sp, fl_map_t *tmp);
/* A thread in state FL_THREAD_BLOCKED read without its cooperation (Linux: its system call's
 * number, sp and pc, fl_threads_syscall_regs, FL_ENOSYS for a worker thread of the kernel's,
 * io_uring's, which runs none of the program's code; Darwin: never blocked, FL_ENOSYS).
 * AS-SAFE. */
int fl_crash_os_blocked(int tid, uint64_t out[3]);
/* fl_thread_backtrace's platform part: the calling thread's id as fl_thread_backtrace takes it
 * (Linux: gettid; Darwin: its thread_t). AS-SAFE. */
long fl_crash_os_thread_self(void);
/* Stops thread `tid` (not the caller) briefly and walks its stack into out[0..max) with the
 * images (and maps) of sw: Linux asks it with the capture signal to walk itself
 * (fl_threads_suspend_one; one that cannot is walked here while it is parked), waiting at most
 * the install's thread_timeout_ms; Darwin suspends it, reads its registers, walks and resumes
 * it. 0 (res filled), or FL_ENOTHREAD, FL_EBLOCKED, FL_ETIMEDOUT, FL_ENOSIGNAL. The caller holds
 * the in-line state (fl_crash_inline_begin). AS-SAFE. */
int fl_crash_os_thread_walk(long tid, const fl_selfwalk_t *sw, fl_frame_t *out, unsigned max,
                            fl_walk_result_t *res);
/* fl_symbolize_local's platform part: the symbol at or below pc in img (Linux: the ELF file at
 * img->path, .symtab else .dynsym, checked against the image's build-id; Darwin: LC_SYMTAB of the
 * loaded image): its name cut into name[cap], its runtime address, and FL_SYMBOL_* in *source.
 * FL_ENOTFOUND when none covers pc, or the file's error. NOT AS-SAFE. */
int fl_crash_os_image_symbol(const fl_image_t *img, uint64_t pc, char *name, size_t cap,
                             uint64_t *sym_addr, int *source);
/* Notes only the platform has (Linux: the capture signal; Darwin: exception ports, EXC_GUARD),
 * written after the thread-list notes. AS-SAFE. */
void fl_crash_os_notes(fl_report_writer_t *w, const fl_thread_list_t *l,
                       const fl_capture_request_t *req);
/* The signal other threads answer a capture with (Linux: fl_threads_signal), 0 when there is
 * none (Darwin suspends threads instead). AS-SAFE. */
int fl_crash_os_capture_signal(void);
/* The calling thread as fl_capture_request_t.thread names it (Darwin's thread_act_t; 0 on
 * Linux). AS-SAFE. */
uint32_t fl_crash_os_self(void);
/* Arms (ns > 0) or disarms (0) the crash deadline: the process is killed (SIGKILL) when the
 * capture has not ended after ns (Linux: a POSIX timer, timer_create; Darwin: nothing yet). Best
 * effort: a timer the kernel refuses leaves the capture unbounded. AS-SAFE. */
void fl_crash_os_deadline(uint64_t ns);
/* Has the platform's capture server run req (Darwin: fl_mach_server_submit). FL_ENOSYS when
 * there is none (Linux always; a Darwin fork child): the caller captures on its own thread.
 * AS-SAFE. */
int fl_crash_os_submit(const fl_capture_request_t *req);

/* Hands a crash signal on once the report is written or abandoned (handler.c). With
 * FL_SIGINFO_TELLS_ORIGIN (Linux) a fault the kernel raised returns to fault again under the
 * action now installed (the previous one when `done`, else the default), anything else is sent
 * again to the thread; otherwise (Darwin) the action in place before fl_install is called
 * directly: SIG_DFL dies of the signal, SIG_IGN returns, a handler is called with info and uc.
 * AS-SAFE. */
void fl_crash_pass_on(int sig, siginfo_t *info, void *uc, bool done, bool code_tells_origin);

/* ---- Darwin: the Mach exception server and thread suspension (*_darwin.c) ---- */

#define FL_MACH_SERVER_WAIT_NS (10ull * 1000000000ull) /* a requester waits at most this */

/* Starts the exception server (exc_server_darwin.c): a receive port set as the task's exception
 * port for EXC_BAD_ACCESS, EXC_BAD_INSTRUCTION, EXC_ARITHMETIC, EXC_SOFTWARE, EXC_BREAKPOINT and
 * EXC_GUARD (EXCEPTION_DEFAULT | MACH_EXCEPTION_CODES; the previous ports saved), a primary
 * thread that serves it and captures, and a secondary thread, the primary's own thread-level
 * exception port, that takes over if the primary faults. NOT AS-SAFE. */
int fl_mach_server_start(void);
/* Restores the saved exception ports and stops both threads. NOT AS-SAFE. */
void fl_mach_server_stop(void);
/* The kern_return_t of the exception-port installation (0 when the server runs). AS-SAFE. */
int fl_mach_server_status(void);
/* Puts the saved exception ports back, once (the first caller wins). AS-SAFE. */
void fl_mach_server_restore_ports(void);
/* Has the primary thread run req (a crash from the signal path, claimed by the caller, or a
 * snapshot) and waits at most FL_MACH_SERVER_WAIT_NS for it. Returns the capture's result;
 * FL_EBUSY for a snapshot while a crash is captured, or when the request could not be queued
 * (every slot taken, the port's queue full); FL_EIO when the capture did not end in time (it may
 * still be writing); FL_ESTATE when the server died (its thread faulted). FL_ENOSYS only when no
 * server runs for this process (never started, or this is a fork child): then, and only then, the
 * caller may capture on its own thread. For a crash the server restores the exception ports and
 * the signal actions and calls fl_crash_finish before it answers. AS-SAFE (mach_msg and semaphore
 * traps only). */
int fl_mach_server_submit(const fl_capture_request_t *req);
/* True on the server's threads (which the capture must neither suspend nor list). AS-SAFE. */
bool fl_mach_server_owns(uint32_t thread);

/* ---- The one crash report of the process (handler.c, shared by the signal handlers and
 * Darwin's exception server) ---- */

/* Restores the signal actions in place before fl_install, once per installation. AS-SAFE. */
void fl_crash_restore_signal_actions(void);
/* claim_once is true for the first caller (waiting, bounded, for a snapshot to end), claimed
 * whether anyone claimed it, finish marks it written and wakes the threads waiting for it.
 * AS-SAFE. */
bool fl_crash_claim_once(void);
bool fl_crash_claimed(void);
void fl_crash_finish(void);
/* The state an in-line capture holds on its own thread (IDLE -> SNAPSHOT -> IDLE): fl_snapshot,
 * and fl_thread_backtrace, which uses the same thread-capture machinery. begin is false while a
 * crash or another in-line capture holds it (the caller's FL_EBUSY); a crash on another thread
 * waits (bounded) for end; a fault of the holder's own is a recrash. AS-SAFE. */
bool fl_crash_inline_begin(void);
void fl_crash_inline_end(void);

/* Lists the task's threads (task_threads), with `self` (the requesting thread) as t[0] and up to
 * max-1 others, never the exception server's; suspends every listed thread except self and the
 * caller (thread_suspend) and reads each one's registers (thread_get_state), id and name
 * (thread_info). t[0]'s registers come from `self_regs`, or from the thread when NULL (a thread
 * stopped in an exception). AS-SAFE (Mach calls only). */
int fl_mach_threads_suspend(fl_thread_list_t *l, unsigned max, uint32_t self,
                            const fl_regs_t *self_regs);
/* Resumes what was suspended and releases the ports and the array. Idempotent. AS-SAFE. */
void fl_mach_threads_release(fl_thread_list_t *l);
/* A thread's id as reports give it: the low 32 bits of its 64-bit thread id (thread_info
 * THREAD_IDENTIFIER_INFO), 0 if the kernel does not say. AS-SAFE. */
int fl_mach_thread_id(uint32_t thread);

#endif
