/* SPDX-License-Identifier: MIT */
/* faultline: async-signal-safe crash reporter. The public API. */
#ifndef FAULTLINE_FAULTLINE_H
#define FAULTLINE_FAULTLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FL_BUILDING_LIBRARY)
#define FL_API __attribute__((visibility("default")))
#else
#define FL_API
#endif

/* Error codes: every function returning int gives 0 or one of these (negative). */
enum {
    FL_OK = 0,
    FL_EINVAL = -1,      /* invalid argument */
    FL_ENOMEM = -2,      /* out of memory (install time only; the crash path never allocates) */
    FL_EFAULT = -3,      /* memory could not be read */
    FL_EBADDATA = -4,    /* malformed input (image, unwind info, report) */
    FL_ENOTFOUND = -5,   /* nothing matched */
    FL_ERANGE = -6,      /* a limit was reached */
    FL_EIO = -7,         /* an I/O call failed; errno has details where the caller can see it */
    FL_EBUSY = -8,       /* already installed, or another capture is in progress */
    FL_ENOSYS = -9,      /* not supported on this platform or by this build */
    FL_ETRUNCATED = -10, /* a report was cut short; its complete prefix was decoded */
    FL_ENOTREPORT = -11, /* the file is not a faultline report (bad magic) */
    FL_EVERSION = -12,   /* the report's format version is newer than this reader */
    FL_ESTATE = -13,     /* not installed / wrong state for this call */
    FL_ENOTFILE = -14,   /* a path names a directory, FIFO, device or socket, not a regular file */
    /* ---- fl_thread_backtrace (docs/stacks.md) ---- */
    FL_EBLOCKED = -15,   /* the thread blocks faultline's capture signal */
    FL_ENOTHREAD = -16,  /* no such thread in this process (it exited, or belongs to another) */
    FL_ETIMEDOUT = -17,  /* the thread did not answer within the install's thread_timeout_ms */
    FL_ENOSIGNAL = -18   /* no capture signal: none was free at install, or the application
                          * replaced faultline's handler for it */
};

typedef struct fl_options {
    const char *report_dir;  /* required; created 0700 if missing */
    const char *app_name;    /* optional, copied at install */
    const char *app_version; /* optional, copied at install */
    unsigned max_threads;    /* 0 = default (FL_DEFAULT_MAX_THREADS) */
    unsigned max_frames;     /* 0 = default (FL_DEFAULT_MAX_FRAMES), per thread */
    unsigned thread_timeout_ms; /* 0 = default 1000: how long a capture waits for other threads */
    uint64_t signals;        /* 0 = every signal fl_install catches (below); else those to catch,
                              * as bits (1ull << SIGSEGV) | ...: any other bit is FL_EINVAL, and
                              * the signals left out keep their actions */
    /* Stack memory kept in reports, from each thread's sp upwards (within its stack mapping):
     * what `faultline unwind REPORT` re-walks offline and what a minidump's stack walkers need
     * (docs/interop.md). Each at most FL_STACK_BYTES_LIMIT, the total at most
     * FL_STACK_BYTES_TOTAL_LIMIT, else FL_EINVAL. */
    unsigned crashed_stack_bytes; /* the crashed thread; 0 = FL_DEFAULT_CRASHED_STACK_BYTES,
                                   * FL_STACK_BYTES_NONE = none */
    unsigned stack_bytes;         /* every other thread (and all threads of a snapshot);
                                   * 0 = none (the default) */
    unsigned stack_bytes_total;   /* all threads of one report together (threads past it keep
                                   * none, and a note says so); 0 = FL_DEFAULT_STACK_BYTES_TOTAL */
    /* A capture writes no report while the report directory already holds this many (a
     * program in a crash loop, whose reports nobody uploads or removes, must not fill the disk;
     * the first ones are kept, and stderr says so). 0 = FL_DEFAULT_MAX_PENDING_REPORTS. Linux
     * only: Darwin does not count (no crash-safe directory listing). */
    unsigned max_pending_reports;
    /* A crash's capture that has not ended after this long ends the process with SIGKILL: one
     * blocked in the kernel (a report directory on a network or FUSE file system that stopped
     * answering) would otherwise never die, nor restart. Ample for any capture (seconds at
     * most, even under emulation). 0 = FL_DEFAULT_CRASH_DEADLINE_MS. Linux only (Darwin's
     * capture runs on the exception thread, which has no such bound yet). */
    unsigned crash_deadline_ms;
} fl_options;

#define FL_DEFAULT_MAX_THREADS 1024u
#define FL_DEFAULT_MAX_FRAMES 256u
#define FL_MAX_THREADS_LIMIT 4096u
#define FL_MAX_FRAMES_LIMIT 4096u
#define FL_DEFAULT_CRASHED_STACK_BYTES 8192u /* about 40 frames of typical C; 8 KiB per report */
#define FL_DEFAULT_STACK_BYTES_TOTAL (1u << 20)
#define FL_STACK_BYTES_NONE UINT32_MAX
#define FL_DEFAULT_CRASH_DEADLINE_MS 60000u
#define FL_DEFAULT_MAX_PENDING_REPORTS 256u /* 4x the store's default cap (FL_STORE_DEFAULT_MAX_REPORTS) */
#define FL_STACK_BYTES_LIMIT (64u << 10)
#define FL_STACK_BYTES_TOTAL_LIMIT (8u << 20)
#define FL_MAX_ANNOTATIONS 64u
#define FL_MAX_ANNOTATION_BYTES 256u /* key and value each, including the terminating NUL */

/* Installs the crash handlers (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, or the
 * ones of opts->signals), gives
 * the calling thread an alternate signal stack and prepares everything the crash path needs.
 * Where a C++ library is loaded, it also puts a std::terminate handler ahead of the one in place:
 * it keeps the type of the exception terminate is called with, for the report of the abort that
 * follows (Report.terminate_type), then calls the one it replaced; a handler the program sets
 * later replaces it (fl_uninstall puts the replaced one back unless the program set its own).
 * Returns 0 or a negative FL_E* code; FL_EBUSY if already installed.
 * Call it before starting a runtime that takes faults as part of its work (a JVM, V8, Mono, a
 * WebAssembly runtime's bounds checks): installed after them, faultline's handler runs first and
 * takes their first such fault for the process's crash (a report, and none for a later real
 * crash). Installed before, the runtime's handler runs first and passes on what it does not
 * handle (docs/preload.md says how such runtimes end a crash).
 * NOT AS-SAFE. Not thread-safe against concurrent fl_install/fl_uninstall. */
FL_API int fl_install(const fl_options *opts);

/* Restores the signal actions that were in place before fl_install and releases its resources.
 * Alternate stacks given to threads stay in place (a thread may still be running on one).
 * NOT AS-SAFE. */
FL_API void fl_uninstall(void);

/* Gives the calling thread an alternate signal stack (unless it already has one of at least
 * 64 KiB, which is kept) so that a stack overflow on it can still be reported. fl_install gives
 * one to the threads already running, and threads started with pthread_create afterwards get one
 * automatically (see docs/async-safety.md); call this only in a thread that blocked all signals
 * during fl_install or was made without pthread_create. The stack is freed when the thread exits.
 * Returns 0 or a negative FL_E* code. NOT AS-SAFE. */
FL_API int fl_thread_init(void);

/* Records key=value in every later report; a second call with the same key replaces the value,
 * a NULL value removes the key. Keys and values longer than FL_MAX_ANNOTATION_BYTES-1 are
 * truncated; at most FL_MAX_ANNOTATIONS keys (FL_ERANGE past that). Thread-safe.
 * NOT AS-SAFE (may not be called from a signal handler). */
FL_API int fl_annotate(const char *key, const char *value);

/* Writes a report of every thread of the running process without disturbing it further, for
 * hangs and watchdogs: the same capture as a crash (Header.kind = KIND_SNAPSHOT, Header.reason =
 * reason, no Signal), after which the process goes on. Callable from any thread, and from a
 * signal handler (AS-SAFE). Other threads are paused for the capture (at most the install's
 * thread_timeout_ms waiting for them, then the time to walk their stacks); each sees one
 * real-time signal, which can make some system calls return EINTR (see docs/threads.md).
 * Returns 0, FL_ESTATE if not installed, FL_EBUSY while another snapshot or a crash is being
 * captured, FL_ERANGE while the report directory holds max_pending_reports reports, or the
 * report writer's error (FL_EIO). */
FL_API int fl_snapshot(const char *reason);

/* ---- Stacks on demand: in-app backtraces (docs/stacks.md) ---- */

/* The calling thread's call stack: pcs[0] is the return address into the function that called
 * fl_backtrace, then its caller's, and so on outwards (an entry after a signal handler's frame is
 * the exact pc the signal interrupted, not a return address). The same walker as a crash report
 * (unwind tables first, then frame pointers), over the images and memory map read at the call, so
 * libraries loaded after fl_install are seen. No allocation; usable from a signal handler (also on
 * an alternate stack: the walk crosses the signal frame onto the interrupted stack).
 * Returns the number of entries written (at most max; max when the stack is deeper), or
 * FL_ESTATE before fl_install, FL_EINVAL (pcs NULL with max > 0), FL_EBUSY when more calls than
 * faultline has buffers for (FL_BACKTRACE_CONCURRENCY) run at once, FL_EIO when the memory map
 * could not be read. Deep stacks: max is capped at FL_MAX_FRAMES_LIMIT. AS-SAFE. */
#define FL_BACKTRACE_CONCURRENCY 4u
FL_API int fl_backtrace(uintptr_t *pcs, size_t max);

/* Another thread's call stack, stopping only that thread, briefly: Linux sends it faultline's
 * capture signal (the one fl_snapshot uses), whose handler walks the thread's own stack from
 * where the signal found it and returns at once (docs/stacks.md). tid is a Linux thread id
 * (gettid()); on Darwin a thread_t (mach_port_t, pthread_mach_thread_np), which is suspended,
 * read and walked, then always resumed. pcs[0] is the pc where the thread was stopped (exact), the
 * others return addresses. The calling thread's own tid gives what fl_backtrace gives.
 * Waits at most the install's thread_timeout_ms for the thread. Returns the number of entries
 * written (as fl_backtrace), or FL_ESTATE before fl_install, FL_EINVAL (tid <= 0, or pcs NULL
 * with max > 0), FL_ENOTHREAD (no such thread in this process: exited, or another process's),
 * FL_EBLOCKED (it blocks the capture signal), FL_ETIMEDOUT (it did not answer in time: it may be
 * stopped by a debugger or SIGSTOP), FL_ENOSIGNAL (no capture signal), FL_EBUSY while a snapshot,
 * a crash capture or another fl_thread_backtrace runs, FL_EIO (the memory map could not be read).
 * The thread sees one real-time signal (SA_RESTART: most interrupted calls resume; see
 * docs/threads.md for those that return EINTR). AS-SAFE. */
FL_API int fl_thread_backtrace(long tid, uintptr_t *pcs, size_t max);

/* What fl_symbolize_local finds for one address. Strings are NUL-terminated, cut to fit. */
typedef struct fl_symbol_info {
    char image_path[512];   /* the file the image was loaded from ("" for the vdso) */
    uintptr_t image_base;   /* where the image's first segment is loaded (dladdr's dli_fbase) */
    uintptr_t image_slide;  /* its load bias: runtime address = file address + slide */
    char symbol[512];       /* "" when no symbol covers the address (offset is then 0) */
    uintptr_t symbol_addr;  /* the symbol's runtime address */
    uintptr_t offset;       /* pc - symbol_addr */
    int source;             /* where the symbol came from: FL_SYMBOL_* */
} fl_symbol_info;
enum { FL_SYMBOL_NONE = 0, FL_SYMBOL_SYMTAB = 1 /* ELF .symtab (local symbols too) */,
       FL_SYMBOL_DYNSYM = 2 /* ELF .dynsym (exported only: the file is stripped) */,
       FL_SYMBOL_MACHO = 3 /* Mach-O LC_SYMTAB */ };

/* Symbolizes an address of this process on the device, for logs in development builds: the image
 * holding pc (path, base, slide) and the nearest symbol at or below it, from the image file's
 * .symtab when it has one (static functions too, unlike dladdr), else .dynsym (ELF), or LC_SYMTAB
 * (Mach-O). Reads the file from disk at each call (no cache); names are raw (mangled). Returns 0
 * (also when no symbol covers pc: info->symbol is then ""), FL_ENOTFOUND (pc in no image),
 * FL_ESTATE before fl_install, FL_EINVAL, or the file's error (FL_EIO, FL_ENOTFILE, FL_EBADDATA,
 * FL_ENOMEM). Thread-safe. NOT AS-SAFE (allocates, maps files). */
FL_API int fl_symbolize_local(uintptr_t pc, fl_symbol_info *info);

/* A static English description of an FL_E* code. AS-SAFE. */
FL_API const char *fl_strerror(int err);

/* ---- Reading reports on the next start (all NOT AS-SAFE) ---- */

/* Lists complete report files in `report_dir`, oldest first. On success *paths is a
 * malloc'd array of *count malloc'd absolute paths; free it with fl_free_report_list().
 * A missing directory is not an error (count 0). */
FL_API int fl_list_reports(const char *report_dir, char ***paths, size_t *count);
FL_API void fl_free_report_list(char **paths, size_t count);

/* Reads and decodes one report. *out is the protobuf-c message of proto/faultline.proto
 * (installed as <faultline/faultline.pb-c.h> and <faultline/faultline.proto>); free it with
 * fl_report_free(). A report cut short decodes its complete prefix and sets *truncated.
 * Errors: FL_EIO (cannot read; errno says why), FL_ENOTREPORT (not a faultline report),
 * FL_EVERSION (newer format), FL_EBADDATA (damaged beyond its first bytes), FL_ENOTFILE (not a
 * regular file). A report past the reader's caps (more than 16 MiB, 4,096 threads, 2,048 images,
 * 262,144 frames in all: docs/report-format.md) decodes up to the cap, truncated, with a note. */
struct Faultline__Report;
FL_API int fl_report_read_file(const char *path, struct Faultline__Report **out, bool *truncated);
FL_API void fl_report_free(struct Faultline__Report *report);

/* ---- The report store: pending reports on the next start (all NOT AS-SAFE) ----
 * Layout, rules and the concurrency guarantee: docs/next-start.md. */

#define FL_STORE_DEFAULT_MAX_REPORTS 64u
#define FL_STORE_DEFAULT_MAX_BYTES ((uint64_t)32 << 20)
#define FL_STORE_DEFAULT_MAX_QUARANTINED 32u
#define FL_STORE_DEFAULT_STALE_TMP_SECONDS 300u
#define FL_STORE_REASON_MAX 256u /* bytes of a quarantine reason, including the NUL */

typedef struct fl_store_options {
    unsigned max_reports;       /* pending reports kept; 0 = FL_STORE_DEFAULT_MAX_REPORTS */
    uint64_t max_bytes;         /* their total size; 0 = FL_STORE_DEFAULT_MAX_BYTES. The newest
                                 * report is kept even when it alone is larger. */
    unsigned max_quarantined;   /* files kept in quarantine/ (also within max_bytes);
                                 * 0 = FL_STORE_DEFAULT_MAX_QUARANTINED */
    unsigned stale_tmp_seconds; /* a writer's temporary file untouched this long is stale
                                 * whoever wrote it; 0 = FL_STORE_DEFAULT_STALE_TMP_SECONDS */
} fl_store_options;

/* What fl_store_open did to the directory, and what it holds. */
typedef struct fl_store_stats {
    size_t pending;        /* reports listed (fl_store_count) */
    uint64_t pending_bytes;
    size_t truncated;      /* of those, reports cut short whose complete prefix decodes */
    size_t quarantined;    /* reports moved to quarantine/ by this open */
    size_t pruned;         /* oldest reports deleted to respect max_reports / max_bytes */
    size_t tmp_recovered;  /* stale temporary files renamed into pending reports */
    size_t tmp_in_progress; /* temporary files left alone: their writer may still be writing */
    size_t unreadable;     /* reports left in place because they could not be read (errno) */
    size_t quarantine_pruned; /* oldest quarantined files deleted to respect the caps */
} fl_store_stats;

typedef struct fl_store_report {
    const char *path;       /* absolute path of the file */
    char id[33];            /* the header's report id, 32 lowercase hex digits */
    uint64_t time_unix_ns;  /* capture time (Header.time_unix_ns) */
    uint64_t size;          /* bytes */
    int kind;               /* Header.kind: 1 crash, 2 snapshot, 3 hang, 0 unknown */
    int signal;             /* Signal.number, 0 if none */
    bool truncated;         /* cut short; its complete prefix decodes (it is uploaded as is) */
} fl_store_report;

typedef struct fl_store fl_store;

/* Opens the store in report_dir for exclusive maintenance and upload, without ever waiting:
 * takes the directory's lock (<dir>/.store.lock, flock, non-blocking), then
 *  1. renames temporary files whose writer is gone (same host and its pid is dead and the file
 *     untouched for 5 s, or untouched for stale_tmp_seconds) into pending reports; those cut
 *     before their header go to quarantine/;
 *  2. lists the reports newest first, reads and decodes each: a report that does not decode, or
 *     has no header, is moved to <dir>/quarantine/ with a <name>.reason file; a truncated report
 *     whose header decodes stays pending (its prefix is what the crash left: it is sent);
 *  3. deletes the oldest reports beyond max_reports / max_bytes, and the oldest quarantined
 *     files beyond max_quarantined / max_bytes.
 * Crash reports it deletes are remembered for fl_last_crash. The directory is not created.
 * Returns 0 (*out holds the lock until fl_store_close), FL_EBUSY when another fl_store (in this
 * or another process) holds it, FL_ENOTFOUND when report_dir does not exist, FL_EIO (errno),
 * FL_ENOMEM, FL_EINVAL. stats (optional) is filled in on success. */
FL_API int fl_store_open(const char *report_dir, const fl_store_options *opts, fl_store **out,
                         fl_store_stats *stats);
/* Pending reports, oldest first; index i < fl_store_count. Entries stay valid until close. */
FL_API size_t fl_store_count(const fl_store *s);
FL_API const fl_store_report *fl_store_get(const fl_store *s, size_t i);
/* Reads report i's bytes as on disk (malloc'd; free()) and checks again that they decode; if
 * they no longer do, the report is quarantined and FL_EBADDATA returned. FL_ENOTFOUND if it was
 * removed (by fl_store_remove, or by hand), FL_EIO, FL_ERANGE (> 64 MiB), FL_ENOMEM. */
FL_API int fl_store_read(fl_store *s, size_t i, uint8_t **data, size_t *len);
/* Deletes report i (delivered). 0, FL_ENOTFOUND if already gone, FL_EIO. */
FL_API int fl_store_remove(fl_store *s, size_t i);
/* Moves report i to quarantine/ with reason (one line, cut to FL_STORE_REASON_MAX-1 bytes). */
FL_API int fl_store_quarantine(fl_store *s, size_t i, const char *reason);
/* Releases the lock and frees s (NULL is fine). */
FL_API void fl_store_close(fl_store *s);

/* The newest crash recorded in report_dir since the previous call: what an app asks at start
 * to tell its user "the app crashed last time". Snapshot and hang reports never count. */
typedef struct fl_crash_info {
    char id[33];            /* its report id, 32 lowercase hex digits */
    uint64_t time_unix_ns;  /* when it crashed */
    int signal;             /* Signal.number, 0 if the report has none */
    unsigned count;         /* crash reports recorded since the previous call (1 or more) */
    bool pending;           /* the report is still in the directory (not uploaded or pruned) */
} fl_crash_info;

/* Fills *out with the newest crash report captured after the one the previous call returned
 * (whether it is still pending or was uploaded or pruned in between) and remembers it in
 * <dir>/.state, so each crash is told once: by the first call after it, in whichever process of
 * the app. Returns 0, FL_ENOTFOUND when no crash happened since (or report_dir does not exist),
 * FL_EBUSY when another process kept the state locked for 1 s, FL_EIO, FL_EINVAL. */
FL_API int fl_last_crash(const char *report_dir, fl_crash_info *out);

/* ---- Hangs: the main-loop watchdog (issue 16; docs/hangs.md) ---- */

#define FL_WATCHDOG_DEFAULT_THRESHOLD_MS 2000u
#define FL_WATCHDOG_MIN_THRESHOLD_MS 50u
#define FL_WATCHDOG_MAX_REPORTS 16u /* hang reports per fl_watchdog_start; later hangs are not */

typedef struct fl_watchdog_options {
    unsigned threshold_ms; /* a hang: no fl_heartbeat for this long; 0 = 2000, at least 50 */
    unsigned check_ms;     /* how often the watchdog wakes; 0 = threshold_ms (at least 25), at
                            * most threshold_ms. A hang is found between threshold_ms and
                            * threshold_ms + check_ms after the last beat; each wake costs CPU
                            * (docs/hangs.md) */
} fl_watchdog_options;

/* Starts the watchdog thread, which monitors the CALLING thread: when that thread has not called
 * fl_heartbeat for threshold_ms (as the watchdog's on-time wakes measure it: a stopped or
 * suspended process does not count), the watchdog writes a report of kind hang (every thread, the
 * monitored one marked, how long it had been stuck), once per hang, and marks the run as hung
 * until the thread beats again; then it appends the final duration to that report. opts may be
 * NULL (defaults). Requires fl_install. Returns 0, FL_ESTATE (not installed), FL_EBUSY (already
 * running), FL_EINVAL (threshold below 50 ms, check above threshold), FL_EIO (no thread).
 * NOT AS-SAFE. Not thread-safe against concurrent fl_watchdog_start/stop, fl_uninstall. */
FL_API int fl_watchdog_start(const fl_watchdog_options *opts);
/* Stops and joins the watchdog thread (a hang in progress is closed as it stands, its report
 * keeping the duration seen at detection). fl_uninstall calls it. NOT AS-SAFE. */
FL_API void fl_watchdog_stop(void);
/* The monitored loop is alive: one relaxed store (a few ns). Call it from the monitored thread
 * at least once per threshold_ms while it works, and before and after anything that may block
 * longer on purpose (a loop waiting for events must wake to beat, or it reads as hung). Beats
 * from other threads count as well: do not call it elsewhere. Does nothing without a watchdog.
 * AS-SAFE. */
FL_API void fl_heartbeat(void);

/* ---- How the previous run ended (all NOT AS-SAFE; docs/hangs.md) ----
 * fl_install writes a small marker per process (<report_dir>/.run-*), which a clean exit (exit,
 * return from main, fl_uninstall), a crash and a hang update in place. */
enum {
    FL_RUN_CLEAN = 1,   /* exit, return from main or fl_uninstall */
    FL_RUN_CRASHED = 2, /* a crash report was begun (report_id) */
    FL_RUN_HUNG = 3,    /* ended while a hang was in progress (report_id: the hang report) */
    FL_RUN_KILLED = 4   /* ended without a clean exit and without a report: SIGKILL (OOM killer,
                         * supervisor), an uncaught fatal signal, _exit, exec, power loss */
};

typedef struct fl_run_info {
    int ending;                /* FL_RUN_* of the newest run that ended */
    int pid;
    uint64_t start_unix_ns;    /* its fl_install */
    char report_id[33];        /* CRASHED, HUNG: the report's id (32 hex digits), else "" */
    uint64_t hang_duration_ns; /* HUNG: how long it had been stuck at the watchdog's last check */
    bool boot_known;           /* both boot ids are known (Linux: /proc/sys/kernel/random/boot_id) */
    bool rebooted;             /* the machine booted since that run started */
    unsigned runs;             /* runs that ended since the previous call, this one included */
    unsigned unclean;          /* of those, the ones that crashed, hung or were killed */
} fl_run_info;

/* How the newest run of a process that used report_dir, among those that ended since the
 * previous call (in any process), ended; the runs read are forgotten (each is told once). Runs
 * still going (other processes of the app, this one) are left alone. Returns 0, FL_ENOTFOUND
 * when no run ended since (or report_dir does not exist), FL_EBUSY (the state lock was held for
 * 1 s), FL_EIO, FL_EINVAL. */
FL_API int fl_last_run(const char *report_dir, fl_run_info *out);

#ifdef __cplusplus
}
#endif
#endif
