/* SPDX-License-Identifier: MIT */
/* Shared by the report tests: a realistic sample report, and running a command. */
#ifndef FAULTLINE_TESTS_REPORT_SAMPLE_H
#define FAULTLINE_TESTS_REPORT_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

#define SAMPLE_THREADS 3u
#define SAMPLE_FRAMES 30u
#define SAMPLE_IMAGES 20u
#define SAMPLE_ITEMS_MAX 128u
#define SAMPLE_TID0 1001
#define SAMPLE_THREADS_TOTAL 5u /* threads_total: the process had more than the report lists */

/* What the caller may change in the sample. */
typedef struct sample_opts {
    uint64_t time_unix_ns;     /* 0: a fixed default */
    uint8_t id_seed;           /* varies the report id (and so the file name) */
    const fl_image_t *images;  /* optional: these images come first, before the generated ones */
    unsigned image_count;
    const fl_frame_t *frames0; /* optional: the crashed thread's frames */
    unsigned frame_count0;
    int last_state;            /* nonzero: the last thread's state, written without registers
                                * and frames (a thread that was not captured) */
} sample_opts_t;

/* One top-level item as written: its field number and the file size after it. */
typedef struct sample_item {
    unsigned field;
    uint64_t end;
} sample_item_t;

typedef struct sample {
    char path[4096]; /* the finished report */
    uint64_t size;
    unsigned item_count;
    sample_item_t item[SAMPLE_ITEMS_MAX];
} sample_t;

/* Writes the sample (header, signal, threads_total, 3 threads x 30 frames with registers,
 * 20 images, annotations, notes) into dir; 0 or an FL_E* code. */
int sample_write(const char *dir, const sample_opts_t *opts, sample_t *out);

/* Image i of the sample: 0 the main executable, 1 the vdso, others /usr/lib/.../libsample<i>.so.1;
 * 20-byte GNU build-ids (5: a text hash, 7: none); 1 MiB of text each, 2 MiB apart from
 * 0x7f0000000000. */
void sample_make_image(fl_image_t *img, unsigned i);

/* The sample's annotation whose value exercises JSON escaping (quotes, backslash, control
 * characters, UTF-8 and an invalid byte). */
#define SAMPLE_TRICKY_KEY "tricky"
#define SAMPLE_TRICKY_VALUE "q\"b\\n\n\x01 caf\xc3\xa9 bad\xff end"

/* Makes a fresh temporary directory (in buf) / removes a tree. */
char *sample_tmpdir(char *buf, size_t cap);
void sample_rmtree(const char *dir);

/* Reads a whole file (malloc'd, NUL-terminated); NULL on failure. */
char *sample_read_file(const char *path, size_t *len);
int sample_write_file(const char *path, const void *data, size_t len);

/* Runs argv with stdin from stdin_path (or /dev/null) and captures stdout and stderr
 * (malloc'd, NUL-terminated). Returns the exit status, or -1 if it did not exit normally. */
int sample_run(char *const argv[], const char *stdin_path, char **out, char **err);

#endif
