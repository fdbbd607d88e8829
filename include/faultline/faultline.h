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
    FL_ESTATE = -13      /* not installed / wrong state for this call */
};

typedef struct fl_options {
    const char *report_dir;  /* required; created 0700 if missing */
    const char *app_name;    /* optional, copied at install */
    const char *app_version; /* optional, copied at install */
    unsigned max_threads;    /* 0 = default (FL_DEFAULT_MAX_THREADS) */
    unsigned max_frames;     /* 0 = default (FL_DEFAULT_MAX_FRAMES), per thread */
    unsigned thread_timeout_ms; /* 0 = default 1000: how long a capture waits for other threads */
} fl_options;

#define FL_DEFAULT_MAX_THREADS 1024u
#define FL_DEFAULT_MAX_FRAMES 256u
#define FL_MAX_THREADS_LIMIT 4096u
#define FL_MAX_FRAMES_LIMIT 4096u
#define FL_MAX_ANNOTATIONS 64u
#define FL_MAX_ANNOTATION_BYTES 256u /* key and value each, including the terminating NUL */

/* Installs the crash handlers (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS), gives
 * the calling thread an alternate signal stack and prepares everything the crash path needs.
 * Returns 0 or a negative FL_E* code; FL_EBUSY if already installed.
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
 * captured, or the report writer's error (FL_EIO). */
FL_API int fl_snapshot(const char *reason);

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
 * FL_EVERSION (newer format), FL_EBADDATA (damaged beyond its first bytes), FL_ERANGE (> 64 MiB). */
struct Faultline__Report;
FL_API int fl_report_read_file(const char *path, struct Faultline__Report **out, bool *truncated);
FL_API void fl_report_free(struct Faultline__Report *report);

#ifdef __cplusplus
}
#endif
#endif
