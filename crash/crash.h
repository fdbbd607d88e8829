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

/* Annotations: written under a mutex by fl_annotate, read lock-free at crash time. */
typedef void (*fl_annotation_fn)(void *ctx, const char *key, const char *value);
void fl_annotations_each(fl_annotation_fn fn, void *ctx); /* AS-SAFE */

/* ---- Alternate signal stacks (altstack_linux.c) ---- */

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
/* Installs/removes the signal handlers (handler_linux.c). NOT AS-SAFE. */
int fl_crash_handlers_install(void);
void fl_crash_handlers_uninstall(void);

/* ---- Other threads (threads_linux.c) ---- */

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
} fl_thread_t;

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
 * stay parked inside the signal handler until fl_threads_release. t[0]'s registers, name and
 * crashed flag are the caller's to fill. AS-SAFE. */
int fl_threads_suspend(fl_thread_list_t *l, unsigned max, uint64_t timeout_ns);
void fl_threads_release(fl_thread_list_t *l); /* AS-SAFE */

/* ---- Capture ---- */

typedef struct fl_capture_request {
    int kind;                 /* 1 crash (faultline.Header.Kind), 2 snapshot */
    int sig;                  /* crash: the signal and its siginfo */
    const siginfo_t *info;
    const fl_regs_t *regs;    /* the calling thread's registers */
    const char *reason;       /* snapshot: the caller's reason */
} fl_capture_request_t;

/* Captures every thread and writes the report; returns 0 or the writer's error. AS-SAFE
 * (capture_linux.c). Callers serialise captures (handler_linux.c's state). */
int fl_crash_capture(const fl_capture_request_t *req);
/* After a recrash: closes and renames the partial report so its complete prefix is kept, and lets
 * parked threads go. AS-SAFE. */
void fl_crash_abandon(void);
/* A thread that crashed while another thread is capturing records its context here before it
 * waits, so the report shows where it crashed. AS-SAFE. */
void fl_crash_publish_waiter(int sig, const void *ucontext);
/* Test hook: FAULTLINE_TEST_FAULT_AFTER=<stage> makes capture fault on purpose: 1 after the signal
 * is written, 3 after the capturing thread is written (the others still parked), 4 before the
 * report is finished (install reads the environment; the crash path only compares an int). */
extern int fl_crash_test_fault_stage;

#endif
