/* SPDX-License-Identifier: MIT */
/* Shared by the report tests: a realistic sample report, and running a command. */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample.h"

static void record(sample_t *s, const fl_report_writer_t *w, unsigned field) {
    if (s->item_count < SAMPLE_ITEMS_MAX)
        s->item[s->item_count++] = (sample_item_t){field, w->bytes};
}

void sample_make_image(fl_image_t *img, unsigned i) {
    memset(img, 0, sizeof *img);
    img->slide = 0x7f0000000000ull + (uint64_t)i * 0x200000;
    img->start = img->slide;
    img->end = img->start + 0x180000;
    img->text_start = img->start + 0x1000;
    img->text_end = img->start + 0x100000;
    img->is_main = i == 0;
    img->is_vdso = i == 1;
    if (i == 0)
        snprintf(img->path, sizeof img->path, "/opt/sample/bin/sample-app");
    else if (i == 1)
        snprintf(img->path, sizeof img->path, "[vdso]");
    else
        snprintf(img->path, sizeof img->path, "/usr/lib/x86_64-linux-gnu/libsample%u.so.1", i);
    img->build_id_kind = i == 5   ? FL_BUILD_ID_TEXT_HASH
                         : i == 7 ? FL_BUILD_ID_NONE
                                  : FL_BUILD_ID_GNU;
    img->build_id_len = i == 5 ? 16 : i == 7 ? 0 : 20;
    for (unsigned k = 0; k < img->build_id_len; k++)
        img->build_id[k] = (uint8_t)(i * 31 + k * 7 + 1);
}

int sample_write(const char *dir, const sample_opts_t *opts, sample_t *out) {
    static const sample_opts_t none;
    static uint8_t scratch[64 * 1024];
    static fl_image_t images[SAMPLE_IMAGES + 16];
    if (!opts)
        opts = &none;
    memset(out, 0, sizeof *out);
    unsigned nimg = 0;
    for (unsigned i = 0; i < opts->image_count && nimg < FL_ARRAY_LEN(images); i++)
        images[nimg++] = opts->images[i];
    for (unsigned i = 0; i < SAMPLE_IMAGES && nimg < FL_ARRAY_LEN(images); i++) {
        sample_make_image(&images[nimg], i);
        images[nimg++].is_main = i == 0 && !opts->image_count;
    }

    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return FL_EIO;
    uint8_t id[16];
    for (unsigned i = 0; i < 16; i++)
        id[i] = (uint8_t)(i * 17 + opts->id_seed);
    fl_report_writer_t w;
    int err = fl_report_writer_open(&w, dfd, id, scratch, sizeof scratch);
    if (err) {
        close(dfd);
        return err;
    }
    record(out, &w, 2);

    uint64_t now = opts->time_unix_ns ? opts->time_unix_ns : 1714564800123456789ull;
    fl_report_header_t h = {
        .time_unix_ns = now, .pid = 4242, .kind = 1, .arch = fl_regs_arch(),
        .process_path = "/opt/sample/bin/sample-app", .app_name = "sample-app",
        .app_version = "1.2.3 (45)", .os_name = "Linux", .os_release = "6.1.0-18-amd64",
        .os_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
        .machine = "x86_64", .hostname = "build-host",
        .process_start_unix_ns = now - 60000000000ull};
    memcpy(h.report_id, id, 16);
    fl_report_write_header(&w, &h);
    record(out, &w, 3);

    fl_report_signal_t s = {.number = SIGSEGV, .code = 1 /* SEGV_MAPERR */, .address = 0x10,
                            .has_address = true, .crashed_tid = SAMPLE_TID0};
    fl_report_write_signal(&w, &s);
    record(out, &w, 4);
    fl_report_write_threads_total(&w, SAMPLE_THREADS_TOTAL);
    record(out, &w, 9);

    static const char *const names[SAMPLE_THREADS] = {"main", "worker-1", "io"};
    for (unsigned t = 0; t < SAMPLE_THREADS; t++) {
        fl_regs_t regs;
        for (unsigned i = 0; i < FL_REGS_MAX; i++)
            regs.r[i] = i % 5 == 0 ? 0 : 0x7ffd00000000ull + (uint64_t)t * 0x10000 + i * 8;
        fl_frame_t frames[SAMPLE_FRAMES];
        for (unsigned k = 0; k < SAMPLE_FRAMES; k++) {
            const fl_image_t *img = &images[opts->image_count + (k + t) % SAMPLE_IMAGES];
            frames[k] = (fl_frame_t){.pc = img->text_start + 0x100 + 4 * k,
                                     .sp = 0x7ffd00001000ull + t * 0x100000ull + 0x40 * k,
                                     .method = k == 0 ? FL_FRAME_CONTEXT
                                               : k % 7 == 0 ? FL_FRAME_SCAN
                                               : k % 3 == 0 ? FL_FRAME_FP : FL_FRAME_CFI};
        }
        fl_report_thread_t th = {.tid = SAMPLE_TID0 + (int)t, .name = names[t], .crashed = t == 0,
                                 .regs = &regs, .frames = frames, .frame_count = SAMPLE_FRAMES,
                                 .frames_truncated = t == 1,
                                 .unwind_stop = t == 1 ? "max frames reached" : "end of stack"};
        if (t == 0 && opts->frames0) {
            th.frames = opts->frames0;
            th.frame_count = opts->frame_count0;
        }
        if (t + 1 == SAMPLE_THREADS && opts->last_state) {
            th.state = opts->last_state;
            th.regs = NULL;
            th.frames = NULL;
            th.unwind_stop = NULL;
        }
        fl_report_write_thread(&w, &th);
        record(out, &w, 5);
    }
    for (unsigned i = 0; i < nimg; i++) {
        fl_report_write_image(&w, &images[i]);
        record(out, &w, 6);
    }
    fl_report_write_annotation(&w, "scenario", "sample");
    record(out, &w, 7);
    fl_report_write_annotation(&w, "build", "20240501.1");
    record(out, &w, 7);
    fl_report_write_annotation(&w, SAMPLE_TRICKY_KEY, SAMPLE_TRICKY_VALUE);
    record(out, &w, 7);
    fl_report_write_note(&w, "image list truncated at 20 images");
    record(out, &w, 8);
    fl_report_write_note(&w, "memory maps truncated at 8192 mappings");
    record(out, &w, 8);
    err = fl_report_writer_finish(&w);
    record(out, &w, 15);
    out->size = w.bytes;
    snprintf(out->path, sizeof out->path, "%s/%s", dir, w.final_name);
    close(dfd);
    return err;
}

char *sample_tmpdir(char *buf, size_t cap) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, cap, "%s/fl-report-test-XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(buf);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

void sample_rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

char *sample_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int sample_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -1;
}

static char *slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    rewind(f);
    size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    if (buf)
        buf[got] = '\0';
    fclose(f);
    return buf;
}

int sample_run(char *const argv[], const char *stdin_path, char **out, char **err) {
    FILE *o = tmpfile(), *e = tmpfile();
    if (!o || !e)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(fileno(o), 1) < 0 || dup2(fileno(e), 2) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = -1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    fseek(o, 0, SEEK_END);
    fseek(e, 0, SEEK_END);
    *out = slurp(o);
    *err = slurp(e);
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
