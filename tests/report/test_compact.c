/* SPDX-License-Identifier: MIT */
/* Format version 2's compact threads: exact wire bytes, exact expansion by the reader, malformed
 * compact threads, version 1 reports, and the size of a 64 x 64 report. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "sample.h"
#include "test.h"

static char g_dir[4096];
static uint8_t g_scratch[64 * 1024];
static uint8_t g_buf[1 << 20];

/* Writes a report (header if h, threads_total, images, threads), returns the file's bytes
 * (malloc'd) or NULL. */
static uint8_t *write_report(uint8_t seed, const fl_report_header_t *h,
                             const fl_report_thread_t *threads, unsigned n,
                             const fl_image_t *images, unsigned nimg, size_t *len) {
    int dfd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint8_t id[16] = {seed, 0xc0};
    fl_report_writer_t w;
    int err = fl_report_writer_open(&w, dfd, id, g_scratch, sizeof g_scratch);
    CHECK_EQ_U64(err, 0);
    if (h)
        fl_report_write_header(&w, h);
    fl_report_write_threads_total(&w, n);
    for (unsigned i = 0; i < nimg; i++)
        fl_report_write_image(&w, &images[i]);
    for (unsigned i = 0; i < n; i++)
        fl_report_write_thread(&w, &threads[i]);
    CHECK_EQ_U64(fl_report_writer_finish(&w), 0);
    close(dfd);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", g_dir, w.final_name);
    uint8_t *data = (uint8_t *)sample_read_file(path, len);
    unlink(path);
    CHECK(data != NULL);
    return data;
}

/* The start of a report in format `version`, with a header giving `arch` unless it is -1. */
static void begin_report(fl_pb_t *pb, unsigned version, int arch) {
    fl_pb_init(pb, g_buf, sizeof g_buf);
    fl_pb_string(pb, 1, FL_REPORT_MAGIC);
    fl_pb_varint(pb, 2, version);
    if (arch >= 0) {
        fl_pb_begin(pb, 3);
        fl_pb_sint(pb, 11, arch);
        fl_pb_end(pb);
    }
}

/* A compact thread with the given element counts (nmethods in bytes, two frames a byte):
 * register i = 1000 + i, frame i at pc 0x400000 + 16 i, sp 0x7000 + 32 i, method i % 6. */
static void put_compact_thread(fl_pb_t *pb, int tid, unsigned nregs, unsigned npc, unsigned nsp,
                               unsigned nmethods) {
    fl_pb_begin(pb, 5);
    fl_pb_sint(pb, 1, tid);
    if (nregs) {
        fl_pb_begin(pb, 9);
        for (unsigned i = 0; i < nregs; i++)
            fl_pb_packed_varint(pb, 1000 + i);
        fl_pb_end(pb);
    }
    const unsigned counts[3] = {npc, nsp, nmethods};
    for (unsigned f = 0; f < 3; f++) {
        if (!counts[f])
            continue;
        fl_pb_begin(pb, 10 + f);
        for (unsigned i = 0; i < counts[f]; i++) {
            if (f == 2)
                fl_pb_packed_byte(pb, (uint8_t)(2 * i % 6 | (2 * i + 1) % 6 << 4));
            else
                fl_pb_packed_zigzag(pb, i == 0 ? (f ? 0x7000 : 0x400000) : (f ? 32 : 16));
        }
        fl_pb_end(pb);
    }
    fl_pb_end(pb);
}

static Faultline__Report *decode(const fl_pb_t *pb, int *rc, bool *truncated) {
    Faultline__Report *r = NULL;
    CHECK(!pb->overflow);
    *rc = fl_report_decode(pb->buf, pb->len, &r, truncated);
    return r;
}

/* ---- the writer's bytes, exactly ---- */

static void test_wire_bytes(void) {
    fl_frame_t frames[3] = {{0x10, 0x100, FL_FRAME_CONTEXT, 0}, {0x8, 0x130, FL_FRAME_CFI, 0},
                            {0x20, 0x1a8, FL_FRAME_FP, 0}};
    fl_report_thread_t t = {.tid = 5, .frames = frames, .frame_count = 3};
    size_t len = 0;
    uint8_t *data = write_report(1, NULL, &t, 1, NULL, 0, &len);
    static const uint8_t want[] = {
        0x0a, 9, 'f', 'a', 'u', 'l', 't', 'l', 'i', 'n', 'e', 0x10, 0x02, /* magic, version 2 */
        0x48, 0x01,                   /* threads_total = 1 */
        0x2a, 18,                     /* threads, 18 bytes: */
        0x08, 0x05,                   /*   tid = 5 */
        0x52, 3, 0x20, 0x0f, 0x30,    /*   frame_pc_deltas = [16, -8, 24] */
        0x5a, 3, 0x40, 0x0c, 0x1e,    /*   frame_sp_deltas = [0x100, 0x30, 0x78] / 8 */
        0x62, 2, 0x21, 0x03,          /*   frame_methods = [context | cfi << 4, fp] */
        0x68, 0x03,                   /*   frame_sp_shift = 3 (every sp a multiple of 8) */
        0x78, 0x01};                  /* complete = true */
    CHECK(data && len == sizeof want && memcmp(data, want, len) == 0);
    if (data && (len != sizeof want || memcmp(data, want, len) != 0)) {
        for (size_t i = 0; i < len; i++)
            fprintf(stderr, "%02x%s", data[i], i + 1 == len ? "\n" : " ");
    }
    Faultline__Report *r = NULL;
    bool truncated = true;
    CHECK_EQ_U64(data ? fl_report_decode(data, len, &r, &truncated) : -1, 0);
    CHECK(r && !truncated && r->n_threads == 1 && r->threads[0]->n_frames == 3);
    for (size_t k = 0; r && r->n_threads == 1 && k < r->threads[0]->n_frames && k < 3; k++) {
        const Faultline__Frame *f = r->threads[0]->frames[k];
        CHECK(f->pc == frames[k].pc && f->sp == frames[k].sp && f->method == frames[k].method);
    }
    fl_report_free(r);
    free(data);
}

/* ---- the reader's expansion, exactly ---- */

static void test_expand_exact(void) {
    fl_regs_t regs;
    for (unsigned i = 0; i < FL_REGS_MAX; i++)
        regs.r[i] = i % 4 == 0 ? 0 : i % 4 == 1 ? UINT64_MAX - i : i % 4 == 2 ? i : 0x7ffd0000ull + i;
    /* Frame 0 at pc 0 (a call through NULL); positive, negative and wrapping deltas. */
    fl_frame_t frames[] = {
        {0, 0x7ffd00001000ull, FL_FRAME_CONTEXT, 0},
        {0x7f0000012345ull, 0x7ffd00001008ull, FL_FRAME_CFI, 0},
        {0x555555554000ull, 0x7ffd00001100ull, FL_FRAME_FP, 0},
        {UINT64_MAX, 0x7ffd00000f00ull, FL_FRAME_SCAN, 0},
        {1, 0, FL_FRAME_LR, 0},
        {0x400000, UINT64_MAX, 200, 0},
    };
    const unsigned n = FL_ARRAY_LEN(frames);
    fl_report_header_t h = {.arch = fl_regs_arch(), .pid = 1};
    fl_report_thread_t t = {.tid = 77, .name = "exact", .regs = &regs, .frames = frames,
                            .frame_count = n, .unwind_stop = "end of stack"};
    size_t len = 0;
    uint8_t *data = write_report(2, &h, &t, 1, NULL, 0, &len);
    Faultline__Report *r = NULL;
    bool truncated = true;
    CHECK_EQ_U64(data ? fl_report_decode(data, len, &r, &truncated) : -1, 0);
    free(data);
    CHECK(r && !truncated && r->n_threads == 1);
    if (!r || r->n_threads != 1) {
        fl_report_free(r);
        return;
    }
    const Faultline__Thread *rt = r->threads[0];
    CHECK_EQ_U64(rt->n_register_values, fl_regs_count());
    CHECK_EQ_U64(rt->n_registers, fl_regs_count());
    for (size_t i = 0; i < rt->n_registers && i < fl_regs_count(); i++) {
        CHECK_STREQ(rt->registers[i]->name, fl_regs_name((unsigned)i));
        CHECK_EQ_U64(rt->registers[i]->value, regs.r[i]);
    }
    CHECK_EQ_U64(rt->n_frame_pc_deltas, n);
    if (rt->n_frame_pc_deltas == n && rt->n_frame_sp_deltas == n) {
        CHECK_EQ_U64(rt->frame_pc_deltas[0], 0);
        CHECK(rt->frame_pc_deltas[2] == -(int64_t)(0x7f0000012345ull - 0x555555554000ull));
        CHECK(rt->frame_pc_deltas[4] == 2); /* UINT64_MAX to 1, modulo 2^64 */
        CHECK(rt->frame_sp_deltas[3] == -0x200);
        CHECK(rt->frame_sp_deltas[5] == -1); /* 0 to UINT64_MAX */
    }
    CHECK_EQ_U64(rt->n_frames, n);
    for (size_t k = 0; k < rt->n_frames && k < n; k++) {
        CHECK_EQ_U64(rt->frames[k]->pc, frames[k].pc);
        CHECK_EQ_U64(rt->frames[k]->sp, frames[k].sp);
        /* Methods take 4 bits: larger values (none exist) are written as 0, unknown. */
        CHECK_EQ_U64(rt->frames[k]->method, frames[k].method <= 15 ? frames[k].method : 0);
    }
    CHECK(!rt->frames_truncated);
    CHECK_STREQ(rt->name, "exact");
    CHECK_STREQ(rt->unwind_stop, "end of stack");
    fl_report_free(r);
}

/* Names follow Header.arch, whatever the reader's build; past the table and without an arch
 * they are "reg<i>". */
static void test_register_names(void) {
    static const struct {
        int arch; /* -1: no header */
        unsigned i;
        const char *name;
    } cases[] = {
        {FL_REGS_ARCH_ARM64, 0, "x0"},       {FL_REGS_ARCH_ARM64, 28, "x28"},
        {FL_REGS_ARCH_ARM64, 29, "fp"},      {FL_REGS_ARCH_ARM64, 30, "lr"},
        {FL_REGS_ARCH_ARM64, 31, "sp"},      {FL_REGS_ARCH_ARM64, 32, "pc"},
        {FL_REGS_ARCH_ARM64, 33, "pstate"},  {FL_REGS_ARCH_ARM64, 34, "reg34"},
        {FL_REGS_ARCH_X86_64, 0, "rax"},     {FL_REGS_ARCH_X86_64, 16, "rip"},
        {FL_REGS_ARCH_X86_64, 23, "cr2"},    {FL_REGS_ARCH_X86_64, 24, "reg24"},
        {FL_REGS_ARCH_UNKNOWN, 3, "reg3"},   {-1, 0, "reg0"},
        {-1, 39, "reg39"},                   {7, 5, "reg5"},
    };
    for (size_t c = 0; c < FL_ARRAY_LEN(cases); c++) {
        fl_pb_t pb;
        begin_report(&pb, 2, cases[c].arch);
        put_compact_thread(&pb, 1, 40, 0, 0, 0);
        int rc;
        bool truncated;
        Faultline__Report *r = decode(&pb, &rc, &truncated);
        CHECK_EQ_U64(rc, 0);
        bool ok = r && r->n_threads == 1 && r->threads[0]->n_registers == 40;
        CHECK(ok);
        if (ok) {
            CHECK_STREQ(r->threads[0]->registers[cases[c].i]->name, cases[c].name);
            CHECK_EQ_U64(r->threads[0]->registers[cases[c].i]->value, 1000 + cases[c].i);
            CHECK_EQ_U64(r->threads[0]->n_frames, 0);
        }
        fl_report_free(r);
    }
    CHECK_EQ_U64(fl_regs_arch_count(FL_REGS_ARCH_ARM64), 34);
    CHECK_EQ_U64(fl_regs_arch_count(fl_regs_arch()), fl_regs_count());
    CHECK_STREQ(fl_regs_arch_name(FL_REGS_ARCH_ARM64, 34), "");
}

/* ---- malformed compact threads: the report up to them, never a crash ---- */

static void test_malformed(void) {
    static const struct {
        unsigned nregs, npc, nsp, nmethods;
        const char *what;
    } bad[] = {
        {0, 3, 2, 2, "sp deltas short"},
        {0, 3, 3, 3, "methods long"},
        {0, 3, 3, 1, "methods short"},
        {0, 3, 0, 0, "pc deltas only"},
        {0, 0, 5, 3, "no pc deltas"},
        {FL_REPORT_REGS_MAX + 1, 0, 0, 0, "too many registers"},
        {0, 0, 0, 0, "sp shift of 64"},
    };
    for (size_t c = 0; c < FL_ARRAY_LEN(bad); c++) {
        fl_pb_t pb;
        begin_report(&pb, 2, FL_REGS_ARCH_X86_64);
        put_compact_thread(&pb, 1, 24, 10, 10, 5);
        if (bad[c].npc + bad[c].nsp + bad[c].nregs) {
            put_compact_thread(&pb, 2, bad[c].nregs, bad[c].npc, bad[c].nsp, bad[c].nmethods);
        } else {
            fl_pb_begin(&pb, 5);
            fl_pb_varint(&pb, 13, 64);
            fl_pb_end(&pb);
        }
        put_compact_thread(&pb, 3, 24, 10, 10, 5);
        fl_pb_varint(&pb, 15, 1);
        int rc;
        bool truncated = false;
        Faultline__Report *r = decode(&pb, &rc, &truncated);
        bool ok = rc == 0 && r && truncated && r->n_threads == 1 && r->threads[0]->tid == 1 &&
                  r->threads[0]->n_frames == 10 && r->header && !r->complete;
        if (!ok)
            fprintf(stderr, "malformed thread (%s): rc %d\n", bad[c].what, rc);
        CHECK(ok);
        fl_report_free(r);
    }
    /* As the only thread, right after the prefix: still the prefix. */
    fl_pb_t pb;
    begin_report(&pb, 2, -1);
    put_compact_thread(&pb, 2, 0, 3, 2, 2);
    int rc;
    bool truncated = false;
    Faultline__Report *r = decode(&pb, &rc, &truncated);
    CHECK(rc == 0 && r && truncated && r->n_threads == 0);
    fl_report_free(r);

    /* More frames than a reader takes: the first FL_REPORT_FRAMES_MAX, marked truncated. */
    begin_report(&pb, 2, -1);
    put_compact_thread(&pb, 1, 0, 5000, 5000, 2500);
    fl_pb_varint(&pb, 15, 1);
    r = decode(&pb, &rc, &truncated);
    CHECK(rc == 0 && r && !truncated && r->n_threads == 1);
    if (r && r->n_threads == 1) {
        const Faultline__Thread *t = r->threads[0];
        CHECK_EQ_U64(t->n_frames, FL_REPORT_FRAMES_MAX);
        CHECK(t->frames_truncated);
        if (t->n_frames == FL_REPORT_FRAMES_MAX) {
            const Faultline__Frame *last = t->frames[FL_REPORT_FRAMES_MAX - 1];
            CHECK_EQ_U64(last->pc, 0x400000 + 16 * (FL_REPORT_FRAMES_MAX - 1));
            CHECK_EQ_U64(last->sp, 0x7000 + 32 * (FL_REPORT_FRAMES_MAX - 1));
            CHECK_EQ_U64(last->method, (FL_REPORT_FRAMES_MAX - 1) % 6);
        }
    }
    fl_report_free(r);
}

/* Version 1's form of registers and frames, into an open thread: Register i = {k_v1_names[i],
 * 0x100 + i}, Frame k = {0x400000 - 8 k, 0x7000 + 0x40 k, k % 6}. */
static const char *const k_v1_names[] = {"rax", "rbx", "rip"};

static void put_v1_fields(fl_pb_t *pb, unsigned nregs, unsigned nframes) {
    for (unsigned i = 0; i < nregs && i < FL_ARRAY_LEN(k_v1_names); i++) {
        fl_pb_begin(pb, 4);
        fl_pb_string(pb, 1, k_v1_names[i]);
        fl_pb_varint(pb, 2, 0x100 + i);
        fl_pb_end(pb);
    }
    for (unsigned k = 0; k < nframes; k++) {
        fl_pb_begin(pb, 5);
        fl_pb_varint(pb, 1, 0x400000 - 8 * k);
        fl_pb_varint(pb, 2, 0x7000 + 0x40 * k);
        fl_pb_varint(pb, 3, k % 6);
        fl_pb_end(pb);
    }
}

static bool is_v1_thread(const Faultline__Thread *t, unsigned nregs, unsigned nframes) {
    bool ok = t->n_registers == nregs && t->n_frames == nframes && t->n_register_values == 0;
    for (unsigned i = 0; ok && i < nregs; i++)
        ok = strcmp(t->registers[i]->name, k_v1_names[i]) == 0 &&
             t->registers[i]->value == 0x100 + i;
    for (unsigned k = 0; ok && k < nframes; k++)
        ok = t->frames[k]->pc == 0x400000 - 8 * k && t->frames[k]->sp == 0x7000 + 0x40 * k &&
             (unsigned)t->frames[k]->method == k % 6;
    return ok;
}

/* Version 1 reports (Register and Frame messages) still read as they did. */
static void test_version_1(void) {
    fl_pb_t pb;
    begin_report(&pb, 1, FL_REGS_ARCH_X86_64);
    fl_pb_begin(&pb, 5);
    fl_pb_sint(&pb, 1, 4);
    put_v1_fields(&pb, 3, 5);
    fl_pb_end(&pb);
    fl_pb_varint(&pb, 15, 1);
    int rc;
    bool truncated = true;
    Faultline__Report *r = decode(&pb, &rc, &truncated);
    CHECK(rc == 0 && r && !truncated && r->format_version == 1 && r->n_threads == 1);
    CHECK(r && r->n_threads == 1 && is_v1_thread(r->threads[0], 3, 5));
    fl_report_free(r);
}

/* Both forms in one report (no writer of ours does that). */
static void test_both_forms(void) {
    /* An old-form thread next to a compact one: each reads as written. */
    fl_pb_t pb;
    begin_report(&pb, 2, FL_REGS_ARCH_X86_64);
    fl_pb_begin(&pb, 5);
    put_v1_fields(&pb, 3, 3);
    fl_pb_end(&pb);
    put_compact_thread(&pb, 9, 2, 4, 4, 2);
    int rc;
    bool truncated;
    Faultline__Report *r = decode(&pb, &rc, &truncated);
    CHECK(rc == 0 && r && r->n_threads == 2);
    if (r && r->n_threads == 2) {
        CHECK(is_v1_thread(r->threads[0], 3, 3));
        CHECK(r->threads[1]->n_registers == 2 && r->threads[1]->n_frames == 4);
    }
    fl_report_free(r);

    /* Both in one thread, the fields in any order: the compact ones win, and what protobuf-c
     * had decoded into `registers` and `frames` is freed (valgrind checks the frees). */
    begin_report(&pb, 2, FL_REGS_ARCH_X86_64);
    fl_pb_begin(&pb, 5);
    put_v1_fields(&pb, 2, 3);
    fl_pb_begin(&pb, 9);
    fl_pb_packed_varint(&pb, 42);
    fl_pb_end(&pb);
    fl_pb_begin(&pb, 10);
    fl_pb_packed_zigzag(&pb, 0x1234);
    fl_pb_packed_zigzag(&pb, -0x34);
    fl_pb_end(&pb);
    fl_pb_begin(&pb, 11);
    fl_pb_packed_zigzag(&pb, 0x100);
    fl_pb_packed_zigzag(&pb, 0x10);
    fl_pb_end(&pb);
    fl_pb_bytes(&pb, 12, "\x21", 1);
    fl_pb_end(&pb);
    r = decode(&pb, &rc, &truncated);
    CHECK(rc == 0 && r && r->n_threads == 1);
    if (r && r->n_threads == 1) {
        const Faultline__Thread *t = r->threads[0];
        CHECK(t->n_registers == 1 && strcmp(t->registers[0]->name, "rax") == 0 &&
              t->registers[0]->value == 42);
        CHECK(t->n_frames == 2 && t->frames[0]->pc == 0x1234 && t->frames[1]->pc == 0x1200 &&
              t->frames[1]->sp == 0x110 && t->frames[1]->method == 2);
    }
    fl_report_free(r);
}

/* ---- size: 64 threads x 64 frames and 30 images in at most 32 KiB ---- */

#define SIZE_THREADS 64u
#define SIZE_FRAMES 64u
#define SIZE_IMAGES 30u
#define SIZE_LIMIT (32u * 1024)
/* The 32 KiB goal was set with x86_64's 24 registers; arm64 has 34 and does not meet it (34,709
 * bytes measured): this bound only catches regressions there. */
#define SIZE_LIMIT_ARM64 (35u * 1024)

static uint64_t next_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A plausible blocked thread: two libc frames on top (a futex wait), application code below in
 * runs through the main executable and one library, libc's start_thread and clone at the
 * bottom. pcs fall anywhere in their image's 1 MiB of text (images 0, 2 and 3: 7 MiB from the
 * first to the last); each caller's sp is 48..400 bytes above its callee's (16-byte aligned,
 * frame 0's only 8-byte aligned). */
static void realistic_thread(unsigned t, const fl_image_t *img, fl_regs_t *regs,
                             fl_frame_t *frames) {
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (t + 1) * 0x100000001b3ull;
    const fl_image_t *libc = &img[2], *app = &img[0], *lib = &img[3];
    uint64_t sp = 0x7f8000000000ull - t * 0x800000ull - 0x1000 - 16 * (next_rand(&x) % 64);
    uint64_t sp0 = sp + 8; /* frame 0, in a syscall wrapper: only 8-byte aligned */
    const fl_image_t *cur = app;
    unsigned run = 0;
    for (unsigned k = 0; k < SIZE_FRAMES; k++) {
        const fl_image_t *im;
        if (k < 2 || k >= SIZE_FRAMES - 2) {
            im = libc;
        } else {
            if (run == 0) {
                cur = cur == app ? lib : app;
                run = 3 + (unsigned)(next_rand(&x) % 8);
            }
            run--;
            im = cur;
        }
        uint64_t text = im->text_end - im->text_start;
        frames[k] = (fl_frame_t){.pc = im->text_start + next_rand(&x) % text,
                                 .sp = k ? sp : sp0,
                                 .method = k == 0 ? FL_FRAME_CONTEXT
                                           : k % 11 == 0 ? FL_FRAME_FP : FL_FRAME_CFI};
        sp += 48 + 16 * (next_rand(&x) % 23); /* 48..400 */
    }
    /* x86_64-like values: syscall results, heap and stack pointers, code addresses, small
     * numbers, flags and segment selectors. */
    uint64_t heap = 0x555555a00000ull + (next_rand(&x) % 0x200000) * 8;
    const uint64_t values[] = {
        (uint64_t)-512, heap, frames[0].pc + 2, 2, heap + 0x40, 0x80, frames[2].sp - 16,
        frames[0].sp, 0, 0xffffffff, 8, 0x246, heap + 0x1000, frames[5].sp, 0x7f0000003a40ull,
        0, frames[0].pc, 0x246, 0x33, 0, 0, 0, 0, 0};
    /* arm64-like values, as a captured thread shows them (x0..x28, fp, lr, sp, pc, pstate):
     * arguments and results, scratch counts, a few heap, stack, code and loader pointers, and
     * zeros in unused callee-saved registers. */
    const uint64_t arm64[] = {
        0, 1, 0, 1, 0, heap + 0x10a0, 0x48000004, heap + 0x5400, 0x62, 8, 0, 0, 0x2a, 0x1f75eaa,
        1, 3, frames[1].pc + 0x40, heap + 0x298, 0x19c000, 0, frames[3].sp - 0x20, heap + 0x2fcd0,
        frames[2].pc - 8, frames[4].sp - 0x88, 0x7f0000003a40ull, 0, heap + 0x4028, heap + 0x2f708,
        0, frames[1].sp - 16, frames[1].pc, frames[0].sp, frames[0].pc, 0x40000000};
    bool a64 = fl_regs_arch() == FL_REGS_ARCH_ARM64;
    for (unsigned i = 0; i < FL_REGS_MAX; i++)
        regs->r[i] = a64 ? arm64[i % FL_ARRAY_LEN(arm64)] : values[i % FL_ARRAY_LEN(values)];
}

static void test_size(void) {
    static fl_image_t images[SIZE_IMAGES];
    static fl_regs_t regs[SIZE_THREADS];
    static fl_frame_t frames[SIZE_THREADS][SIZE_FRAMES];
    static char names[SIZE_THREADS][16];
    fl_report_thread_t threads[SIZE_THREADS];
    for (unsigned i = 0; i < SIZE_IMAGES; i++)
        sample_make_image(&images[i], i);
    for (unsigned t = 0; t < SIZE_THREADS; t++) {
        realistic_thread(t, images, &regs[t], frames[t]);
        snprintf(names[t], sizeof names[t], t ? "worker-%u" : "main", t);
        threads[t] = (fl_report_thread_t){.tid = 31000 + (int)t, .name = names[t],
                                          .crashed = t == 0, .regs = &regs[t],
                                          .frames = frames[t], .frame_count = SIZE_FRAMES,
                                          .unwind_stop = "end of stack"};
    }
    fl_report_header_t h = {
        .time_unix_ns = 1714564800123456789ull, .pid = 31000, .kind = 1, .arch = fl_regs_arch(),
        .process_path = "/opt/sample/bin/sample-app", .app_name = "sample-app",
        .app_version = "1.2.3 (45)", .os_name = "Linux", .os_release = "6.1.0-18-amd64",
        .os_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
        .machine = fl_regs_arch() == FL_REGS_ARCH_ARM64 ? "aarch64" : "x86_64",
        .hostname = "build-host"};

    size_t full = 0, no_threads = 0, no_frames = 0;
    uint8_t *data = write_report(3, &h, threads, SIZE_THREADS, images, SIZE_IMAGES, &full);
    free(write_report(4, &h, threads, 0, images, SIZE_IMAGES, &no_threads));
    for (unsigned t = 0; t < SIZE_THREADS; t++)
        threads[t].frame_count = 0;
    free(write_report(5, &h, threads, SIZE_THREADS, images, SIZE_IMAGES, &no_frames));

    size_t thread_bytes = full - no_threads, frame_bytes = full - no_frames;
    unsigned limit = fl_regs_arch() == FL_REGS_ARCH_ARM64 ? SIZE_LIMIT_ARM64 : SIZE_LIMIT;
    printf("size: %zu bytes (limit %u) for %u threads x %u frames + %u images: "
           "%.1f bytes/thread (with %u registers), %.2f bytes/frame, rest %zu bytes\n",
           full, limit, SIZE_THREADS, SIZE_FRAMES, SIZE_IMAGES,
           (double)thread_bytes / SIZE_THREADS, fl_regs_count(),
           (double)frame_bytes / (SIZE_THREADS * SIZE_FRAMES), no_threads);
    CHECK(full <= limit);

    /* And it reads back whole. */
    Faultline__Report *r = NULL;
    bool truncated = true;
    CHECK_EQ_U64(data ? fl_report_decode(data, full, &r, &truncated) : -1, 0);
    CHECK(r && !truncated && r->n_threads == SIZE_THREADS && r->n_images == SIZE_IMAGES &&
          r->threads_total == SIZE_THREADS);
    bool same = r && r->n_threads == SIZE_THREADS;
    for (unsigned t = 0; same && t < SIZE_THREADS; t++) {
        const Faultline__Thread *rt = r->threads[t];
        same = rt->n_frames == SIZE_FRAMES && rt->n_registers == fl_regs_count();
        for (unsigned k = 0; same && k < SIZE_FRAMES; k++)
            same = rt->frames[k]->pc == frames[t][k].pc && rt->frames[k]->sp == frames[t][k].sp &&
                   rt->frames[k]->method == frames[t][k].method;
        for (unsigned i = 0; same && i < fl_regs_count(); i++)
            same = rt->registers[i]->value == regs[t].r[i];
    }
    CHECK(same);
    fl_report_free(r);
    free(data);
}

int main(void) {
    if (!sample_tmpdir(g_dir, sizeof g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_wire_bytes();
    test_expand_exact();
    test_register_names();
    test_malformed();
    test_version_1();
    test_both_forms();
    test_size();
    sample_rmtree(g_dir);
    TEST_END();
}
