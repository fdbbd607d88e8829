/* SPDX-License-Identifier: MIT */
/* Benchmarks: report directories, waiting for a report to appear, and what a report holds. */
#ifndef FAULTLINE_BENCH_REPORTS_H
#define FAULTLINE_BENCH_REPORTS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bench_report {
    long long bytes;        /* file size */
    unsigned threads;       /* Thread entries */
    unsigned threads_total; /* threads the process had */
    unsigned captured;      /* entries in state CAPTURED */
    unsigned min_frames;    /* over captured threads */
    unsigned max_frames;
    bool complete;          /* decoded without truncation, `complete` set */
} bench_report_t;

/* The file system holding path: "ext2/3/4", "tmpfs", ... */
const char *bench_fs_name(const char *path);

/* Counts the files in dir (temporary ones too); -1 if it cannot be read. */
int bench_dir_count(const char *dir);
/* Removes every file in dir, and dir itself if `rmdir_too`. */
void bench_dir_clear(const char *dir, bool rmdir_too);

/* Finds the complete reports in dir (fl_list_reports); the first one's path goes to path.
 * Returns how many there are, -1 on error. */
int bench_report_find(const char *dir, char *path, size_t cap);
/* Reads the report at path with fl_report_read_file. Returns 0 or -1 (message on stderr). */
int bench_report_read(const char *path, bench_report_t *r);

/* An inotify descriptor watching dir for files renamed into it (a report is written under a
 * temporary name and renamed when finished); -1 on error. */
int bench_watch_dir(const char *dir);
/* Waits until a file is renamed into the watched directory; returns the time it was seen
 * (bench_now_ns), or 0 after timeout_ms. */
unsigned long long bench_wait_renamed(int fd, int timeout_ms);

#endif
