/* SPDX-License-Identifier: MIT */
/* crash: installation, the signal handler and crash-time capture (internal to the library). */
#ifndef FAULTLINE_CRASH_H
#define FAULTLINE_CRASH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/utsname.h>

#include "base/base.h"
#include "elf/elf.h"
#include "frames/frames.h"
#include "report/report.h"

#define FL_CRASH_SIGNAL_COUNT 7
#define FL_ALTSTACK_SIZE (64u * 1024u)
#define FL_CRASH_WAIT_NS (5ull * 1000000000ull) /* a second crashing thread waits at most this */
#define FL_RESERVE_FDS 2 /* descriptors freed at crash time: the report, and one /proc file at a time */

/* Everything the crash path needs, prepared by fl_install (NOT AS-SAFE to change). */
typedef struct fl_crash_config {
    int dirfd;
    int reserve_fd[FL_RESERVE_FDS]; /* closed at crash time so the report can be opened at EMFILE */
    unsigned max_threads, max_frames;
    uint64_t thread_timeout_ns;
    uint64_t install_time_ns;
    char report_dir[1024];
    char app_name[256], app_version[256];
    char process_path[1024];
    struct utsname uts;
    char hostname[256];
} fl_crash_config_t;

extern fl_crash_config_t fl_crash_config;
extern const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT];

/* What fl_install prepares for the platform, after the shared configuration above and the
 * reserved descriptors (install_<platform>.c): the safe reader, the image list (and
 * fl_crash_config.process_path), the unwinder, then the handlers. Undone by
 * fl_crash_platform_uninstall. NOT AS-SAFE. */
int fl_crash_platform_install(void);
void fl_crash_platform_uninstall(void);

/* Annotations: written under a mutex by fl_annotate, read lock-free at crash time. */
typedef void (*fl_annotation_fn)(void *ctx, const char *key, const char *value);
void fl_annotations_each(fl_annotation_fn fn, void *ctx); /* AS-SAFE */

/* ---- Alternate signal stacks (altstack_linux.c; Darwin: fl_thread_init only) ---- */

/* Finds libc's pthread_create (for the library's own pthread_create, which starts every new
 * thread on a trampoline that gives it an alternate stack) and creates the key whose destructor
 * frees a thread's stack when it exits. Idempotent. NOT AS-SAFE. */
void fl_crash_altstacks_prepare(void);
/* Whether threads created from now on get an alternate stack (set by fl_install, cleared by
 * fl_uninstall). NOT AS-SAFE. */
void fl_crash_altstacks_auto(bool on);
/* FL_ALTSTACK_SIZE bytes with a guard page below them, for a thread that is not the caller
 * (NULL if out of memory), and their release. NOT AS-SAFE. */
void *fl_crash_altstack_map(void);
void fl_crash_altstack_unmap(void *stack);

/* A SA_SIGINFO|SA_ONSTACK|flags action for fn that blocks every signal but the crash signals (a
 * fault inside fn must still reach the crash handler). AS-SAFE. */
void fl_crash_sigaction_init(struct sigaction *sa, void (*fn)(int, siginfo_t *, void *), int flags);
/* Installs/removes the signal handlers (handler_<platform>.c). NOT AS-SAFE. */
int fl_crash_handlers_install(void);
void fl_crash_handlers_uninstall(void);

/* ---- Other threads, Linux (threads_linux.c) ---- */

enum { /* values equal faultline.Thread.State */
    FL_THREAD_CAPTURED = 0,
    FL_THREAD_BLOCKED = 1, /* blocks the capture signal */
    FL_THREAD_TIMEOUT = 2, /* did not answer before the deadline */
    FL_THREAD_EXITED = 3,  /* gone before it could answer */
    FL_THREAD_OMITTED = 4  /* not asked (no capture signal available) */
};
#define FL_THREADS_CHECK_NS (20ull * 1000000ull)    /* silent threads are checked after this */
#define FL_THREADS_PARK_MAX_NS (10ull * 1000000000ull) /* a parked thread goes on after this */
#define FL_DEFAULT_THREAD_TIMEOUT_NS (1000ull * 1000000ull)
#define FL_OFFER_WAIT_NS (100ull * 1000000ull) /* fl_install waits this for running threads */

typedef struct fl_thread {
    int tid;
    int state;          /* FL_THREAD_* */
    volatile int token; /* request generation and answer phase (threads_linux.c) */
    bool crashed;
    char name[16];
    fl_regs_t regs;     /* valid when state == FL_THREAD_CAPTURED */
    /* The walk the thread made of its own stack (fl_selfwalk_t), when `walked`: */
    bool walked, frames_truncated;
    unsigned frame_count;
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
    unsigned count;    /* entries in t[]; t[0] is the capturing thread */
    unsigned total;    /* threads found (count stops at max_threads) */
    int enum_error;    /* /proc/self/task could not be read: only t[0] is listed */
    bool signal_taken; /* the application replaced the capture signal's action */
    int generation;
    fl_thread_t t[FL_MAX_THREADS_LIMIT];
} fl_thread_list_t;

/* Picks a free real-time signal and installs the handler that answers capture requests.
 * NOT AS-SAFE. */
int fl_threads_install(void);
void fl_threads_uninstall(void); /* NOT AS-SAFE */
int fl_threads_signal(void);     /* AS-SAFE; 0 if none was free */
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
void fl_threads_release(fl_thread_list_t *l); /* AS-SAFE */

/* ---- Capture ---- */

typedef struct fl_capture_request {
    int kind;                 /* 1 crash (faultline.Header.Kind), 2 snapshot */
    int sig;                  /* crash: the signal and its siginfo */
    const siginfo_t *info;
    const fl_regs_t *regs;    /* the requesting thread's registers (NULL: read them from `thread`) */
    const char *reason;       /* snapshot: the caller's reason */
    /* Darwin: the Mach exception that started a crash capture (NULL for a signal or a snapshot),
     * and the requesting thread (a thread_act_t), which need not be the capturing one: the
     * exception server captures on behalf of the thread that crashed or asked. */
    const fl_report_mach_exception_t *exception;
    uint32_t thread;
} fl_capture_request_t;

/* Captures every thread and writes the report; returns 0 or the writer's error. AS-SAFE
 * (capture_<platform>.c). Callers serialise captures (Linux: handler_linux.c's state; Darwin:
 * the exception server's one thread, exc_server_darwin.c). */
int fl_crash_capture(const fl_capture_request_t *req);
/* After a recrash: closes and renames the partial report so its complete prefix is kept, and lets
 * parked threads go. AS-SAFE. */
void fl_crash_abandon(void);
/* Linux: a thread that crashed while another thread is capturing records its context here
 * before it waits, so the report shows where it crashed (Darwin reads every thread, that one
 * included, with thread_get_state). AS-SAFE. */
void fl_crash_publish_waiter(int sig, const void *ucontext);
/* Test hook: FAULTLINE_TEST_FAULT_AFTER=<stage> makes capture fault on purpose: 1 after the signal
 * is written, 3 after the capturing thread is written (the others still parked), 4 before the
 * report is finished (install reads the environment; the crash path only compares an int). */
extern int fl_crash_test_fault_stage;

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

/* Restores the signal actions in place before fl_install (handler_darwin.c). AS-SAFE. */
void fl_crash_restore_signal_actions(void);
/* The one crash report of the process (handler_darwin.c): claim_once is true for the first
 * caller (waiting, bounded, for a thread's own snapshot to end), claimed whether anyone claimed
 * it, finish marks it written. AS-SAFE. */
bool fl_crash_claim_once(void);
bool fl_crash_claimed(void);
void fl_crash_finish(void);

typedef struct fl_mach_thread {
    uint32_t port;      /* thread_act_t (a send right from task_threads) */
    int tid;            /* low 32 bits of the 64-bit thread id */
    int state;          /* FL_THREAD_* */
    bool crashed;
    bool suspended;     /* thread_suspend succeeded: resume it */
    char name[64];      /* MAXTHREADNAMESIZE */
    fl_regs_t regs;     /* valid when state == FL_THREAD_CAPTURED */
} fl_mach_thread_t;

typedef struct fl_mach_thread_list {
    unsigned count;     /* entries in t[]; t[0] is the requesting thread */
    unsigned total;     /* threads found, faultline's own excluded */
    int enum_error;     /* task_threads failed (a kern_return_t): only t[0] is listed */
    uint64_t ports;     /* task_threads' array (vm_deallocate'd by the release) */
    uint32_t nports;
    fl_mach_thread_t t[FL_MAX_THREADS_LIMIT];
} fl_mach_thread_list_t;

/* Lists the task's threads (task_threads), with `self` (the requesting thread) as t[0] and up to
 * max-1 others, never the exception server's; suspends every listed thread except self and the
 * caller (thread_suspend) and reads each one's registers (thread_get_state), id and name
 * (thread_info). t[0]'s registers come from `self_regs`, or from the thread when NULL (a thread
 * stopped in an exception). AS-SAFE (Mach calls only). */
int fl_mach_threads_suspend(fl_mach_thread_list_t *l, unsigned max, uint32_t self,
                            const fl_regs_t *self_regs);
/* Resumes what was suspended and releases the ports and the array. Idempotent. AS-SAFE. */
void fl_mach_threads_release(fl_mach_thread_list_t *l);
/* A thread's id as reports give it: the low 32 bits of its 64-bit thread id (thread_info
 * THREAD_IDENTIFIER_INFO), 0 if the kernel does not say. AS-SAFE. */
int fl_mach_thread_id(uint32_t thread);

#endif
