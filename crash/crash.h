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

/* Everything the crash path needs, prepared by fl_install (NOT AS-SAFE to change). */
typedef struct fl_crash_config {
    int dirfd;
    int reserve_fd; /* closed at crash time so the report can be opened even at EMFILE */
    unsigned max_threads, max_frames;
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

/* Installs/removes the signal handlers (handler_linux.c). NOT AS-SAFE. */
int fl_crash_handlers_install(void);
void fl_crash_handlers_uninstall(void);

/* Captures the crashed thread described by (sig, info, ucontext) and writes the report; returns
 * 0 or the writer's error. AS-SAFE (capture_linux.c). */
int fl_crash_capture(int sig, const siginfo_t *info, const void *ucontext);
/* After a recrash: closes and renames the partial report so its complete prefix is kept. AS-SAFE. */
void fl_crash_abandon(void);
/* Test hook: FAULTLINE_TEST_FAULT_AFTER=<stage> makes capture fault on purpose (install reads
 * the environment; the crash path only compares an int). */
extern int fl_crash_test_fault_stage;

#endif
