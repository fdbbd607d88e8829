/* SPDX-License-Identifier: MIT */
/* The wire encoder and the report writer, checked against protobuf-c's decoder. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "sample.h"
#include "test.h"

static uint8_t buf[1 << 17];

static bool bytes_are(const fl_pb_t *pb, const uint8_t *want, size_t n) {
    return !pb->overflow && pb->len == n && (n == 0 || memcmp(pb->buf, want, n) == 0);
}

static void test_varints(void) {
    fl_pb_t pb;
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_varint(&pb, 1, 0);
    fl_pb_sint(&pb, 1, 0);
    fl_pb_string(&pb, 1, "");
    fl_pb_string(&pb, 1, NULL);
    fl_pb_bytes(&pb, 1, "x", 0);
    CHECK(bytes_are(&pb, NULL, 0)); /* proto3 defaults are not written */

    static const struct {
        uint64_t v;
        uint8_t n;
        uint8_t bytes[11];
    } cases[] = {
        {1, 2, {0x08, 0x01}},
        {127, 2, {0x08, 0x7f}},
        {128, 3, {0x08, 0x80, 0x01}},
        {16383, 3, {0x08, 0xff, 0x7f}},
        {16384, 4, {0x08, 0x80, 0x80, 0x01}},
        {1ull << 32, 6, {0x08, 0x80, 0x80, 0x80, 0x80, 0x10}},
        {UINT64_MAX, 11, {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cases); i++) {
        fl_pb_init(&pb, buf, sizeof buf);
        fl_pb_varint(&pb, 1, cases[i].v);
        CHECK(bytes_are(&pb, cases[i].bytes, cases[i].n));
    }
    /* int32 -1: sign-extended to 64 bits, 10 bytes (what protobuf requires for int32). */
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_sint(&pb, 1, -1);
    CHECK(bytes_are(&pb, cases[FL_ARRAY_LEN(cases) - 1].bytes, 11));
    /* Field numbers >= 16 need a two-byte tag. */
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_varint(&pb, 16, 1);
    CHECK(bytes_are(&pb, (const uint8_t[]){0x80, 0x01, 0x01}, 3));

    /* Round trip through protobuf-c: int32 extremes and uint64 extremes in a Signal. */
    static const int32_t ints[] = {-1, INT32_MIN, INT32_MAX, 1, -128};
    static const uint64_t u64s[] = {1, 127, 128, 1ull << 32, UINT64_MAX};
    for (size_t i = 0; i < FL_ARRAY_LEN(ints); i++) {
        fl_pb_init(&pb, buf, sizeof buf);
        fl_pb_sint(&pb, 1, ints[i]);
        fl_pb_sint(&pb, 3, ints[i]);
        fl_pb_varint(&pb, 5, u64s[i]);
        CHECK(!pb.overflow);
        Faultline__Signal *s = faultline__signal__unpack(NULL, pb.len, buf);
        CHECK(s != NULL);
        if (s) {
            CHECK_EQ_U64(s->number, ints[i]);
            CHECK_EQ_U64(s->code, ints[i]);
            CHECK_EQ_U64(s->address, u64s[i]);
            faultline__signal__free_unpacked(s, NULL);
        }
    }
}

/* proto3 strings must be UTF-8: invalid bytes become U+FFFD, valid sequences pass unchanged. */
static void test_utf8(void) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9", "\xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9"},
        {"a\xff" "b", "a\xef\xbf\xbd" "b"},
        {"\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd"},                    /* overlong NUL */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},      /* surrogate */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
        {"x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd"},                  /* cut short */
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(cases); i++) {
        fl_pb_t pb;
        fl_pb_init(&pb, buf, sizeof buf);
        fl_pb_string(&pb, 1, cases[i].in);
        size_t n = strlen(cases[i].out);
        CHECK(!pb.overflow && pb.len == 2 + n && buf[0] == 0x0a && buf[1] == n &&
              memcmp(buf + 2, cases[i].out, n) == 0);
    }
    /* At most max bytes are read; a sequence cut by the bound is replaced too. */
    fl_pb_t pb;
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_stringn(&pb, 1, "ab\xc3\xa9", 3);
    CHECK(bytes_are(&pb, (const uint8_t *)"\x0a\x05" "ab\xef\xbf\xbd", 7));
    /* The replacement can make a string that fits as bytes overflow. */
    uint8_t small[8];
    fl_pb_init(&pb, small, sizeof small);
    fl_pb_string(&pb, 1, "\xff\xff\xff");
    CHECK(pb.overflow);
}

/* A Note nested in a Report, its body of every size around the 1/2/3-byte length boundaries
 * (the memmove path in fl_pb_end). */
static void test_nested_lengths(void) {
    static char text[40000];
    static const size_t sizes[][2] = {{1, 140}, {16350, 16400}, {39990, 39999}};
    for (size_t r = 0; r < FL_ARRAY_LEN(sizes); r++) {
        for (size_t n = sizes[r][0]; n <= sizes[r][1]; n++) {
            for (size_t i = 0; i < n; i++)
                text[i] = (char)('a' + (i * 7 + n) % 26);
            text[n] = '\0';
            fl_pb_t pb;
            fl_pb_init(&pb, buf, sizeof buf);
            fl_pb_varint(&pb, 2, 1);
            fl_pb_begin(&pb, 8);
            fl_pb_string(&pb, 1, text);
            fl_pb_end(&pb);
            fl_pb_varint(&pb, 15, 1);
            size_t body = 1 + (n < 128 ? 1 : n < 16384 ? 2 : 3) + n;
            size_t lenbytes = body < 128 ? 1 : body < 16384 ? 2 : 3;
            CHECK_EQ_U64(pb.len, 2 + 1 + lenbytes + body + 2);
            CHECK_EQ_U64(pb.depth, 0);
            Faultline__Report *rep = faultline__report__unpack(NULL, pb.len, buf);
            CHECK(rep && rep->n_notes == 1 && rep->complete && rep->format_version == 1 &&
                  strcmp(rep->notes[0]->text, text) == 0);
            if (rep)
                faultline__report__free_unpacked(rep, NULL);
        }
    }
    /* Two levels, both long: a Thread of 2000 frames (body > 16384), each frame nested. */
    fl_pb_t pb;
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_begin(&pb, 5);
    fl_pb_sint(&pb, 1, 7);
    for (unsigned k = 0; k < 2000; k++) {
        fl_pb_begin(&pb, 5);
        fl_pb_varint(&pb, 1, 0x7f0000000000ull + k);
        fl_pb_varint(&pb, 2, 0x7ffd00000000ull + 16 * k);
        fl_pb_varint(&pb, 3, k % 6);
        fl_pb_end(&pb);
    }
    fl_pb_end(&pb);
    CHECK(!pb.overflow && pb.len > 16384);
    Faultline__Report *rep = faultline__report__unpack(NULL, pb.len, buf);
    CHECK(rep && rep->n_threads == 1 && rep->threads[0]->n_frames == 2000);
    bool same = rep && rep->n_threads == 1;
    for (unsigned k = 0; same && k < rep->threads[0]->n_frames; k++) {
        const Faultline__Frame *f = rep->threads[0]->frames[k];
        same = f->pc == 0x7f0000000000ull + k && f->sp == 0x7ffd00000000ull + 16 * k &&
               (unsigned)f->method == k % 6;
    }
    CHECK(same);
    if (rep)
        faultline__report__free_unpacked(rep, NULL);
}

/* Packed repeated fields through fl_pb_begin/end and the fl_pb_packed_* elements: exact bytes,
 * zigzag, and a round trip through protobuf-c with bodies past the 1- and 2-byte lengths. */
static void test_packed(void) {
    static const struct {
        int64_t v;
        uint64_t z;
    } zz[] = {{0, 0}, {-1, 1}, {1, 2}, {-2, 3}, {2, 4}, {-64, 127}, {64, 128},
              {INT64_MAX, UINT64_MAX - 1}, {INT64_MIN, UINT64_MAX}};
    for (size_t i = 0; i < FL_ARRAY_LEN(zz); i++)
        CHECK_EQ_U64(fl_pb_zigzag(zz[i].v), zz[i].z);

    fl_pb_t pb;
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_begin(&pb, 9); /* uint64 1, 0, 300 */
    fl_pb_packed_varint(&pb, 1);
    fl_pb_packed_varint(&pb, 0);
    fl_pb_packed_varint(&pb, 300);
    fl_pb_end(&pb);
    fl_pb_begin(&pb, 10); /* sint64 -1, 1, -65 */
    fl_pb_packed_zigzag(&pb, -1);
    fl_pb_packed_zigzag(&pb, 1);
    fl_pb_packed_zigzag(&pb, -65);
    fl_pb_end(&pb);
    fl_pb_begin(&pb, 12); /* bytes 05 00 */
    fl_pb_packed_byte(&pb, 5);
    fl_pb_packed_byte(&pb, 0);
    fl_pb_end(&pb);
    static const uint8_t want[] = {0x4a, 4, 0x01, 0x00, 0xac, 0x02, 0x52, 4, 0x01, 0x02, 0x81,
                                   0x01, 0x62, 2, 0x05, 0x00};
    CHECK(bytes_are(&pb, want, sizeof want));

    /* 3000 elements each (bodies of 1 to ~30000 bytes), read back by protobuf-c. */
    static const size_t counts[] = {1, 20, 130, 3000};
    for (size_t c = 0; c < FL_ARRAY_LEN(counts); c++) {
        size_t n = counts[c];
        uint64_t x = 88172645463325252ull;
        fl_pb_init(&pb, buf, sizeof buf);
        fl_pb_sint(&pb, 1, 7);
        fl_pb_begin(&pb, 9);
        for (size_t i = 0; i < n; i++)
            fl_pb_packed_varint(&pb, i % 3 == 0 ? UINT64_MAX - i : i * i * i);
        fl_pb_end(&pb);
        fl_pb_begin(&pb, 10);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            fl_pb_packed_zigzag(&pb, (int64_t)(x >> (i % 63 + 1)) * (i % 2 ? -1 : 1));
        }
        fl_pb_end(&pb);
        fl_pb_begin(&pb, 12);
        for (size_t i = 0; i < n; i++)
            fl_pb_packed_byte(&pb, (uint8_t)i);
        fl_pb_end(&pb);
        CHECK(!pb.overflow && pb.depth == 0);
        Faultline__Thread *t = faultline__thread__unpack(NULL, pb.len, buf);
        CHECK(t && t->tid == 7 && t->n_register_values == n && t->n_frame_pc_deltas == n &&
              t->frame_methods.len == n);
        bool same = t && t->n_register_values == n && t->n_frame_pc_deltas == n &&
                    t->frame_methods.len == n;
        x = 88172645463325252ull;
        for (size_t i = 0; same && i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            same = t->register_values[i] == (i % 3 == 0 ? UINT64_MAX - i : i * i * i) &&
                   t->frame_pc_deltas[i] == (int64_t)(x >> (i % 63 + 1)) * (i % 2 ? -1 : 1) &&
                   t->frame_methods.data[i] == (uint8_t)i;
        }
        CHECK(same);
        if (t)
            faultline__thread__free_unpacked(t, NULL);
    }

    /* An element that does not fit overflows, like any other write. */
    uint8_t small[4];
    fl_pb_init(&pb, small, sizeof small);
    fl_pb_begin(&pb, 12);
    fl_pb_packed_byte(&pb, 1);
    fl_pb_packed_byte(&pb, 2);
    CHECK(!pb.overflow);
    fl_pb_packed_varint(&pb, 300);
    CHECK(pb.overflow);
    fl_pb_end(&pb);
    CHECK(pb.overflow && pb.depth == 0);
}

static void test_overflow(void) {
    fl_pb_t pb;
    uint8_t small[16];
    fl_pb_init(&pb, small, 10);
    fl_pb_varint(&pb, 1, 5);
    fl_pb_string(&pb, 2, "0123456789abcdef");
    CHECK(pb.overflow && pb.len <= 10);
    size_t len = pb.len;
    fl_pb_varint(&pb, 3, 1); /* would fit, but nothing after a drop may be written */
    CHECK_EQ_U64(pb.len, len);

    /* The body fits with a one-byte length but not with the two bytes it needs. */
    static char text[200];
    memset(text, 'x', 125);
    text[125] = '\0'; /* note body: 1 tag + 1 length + 125 = 127 bytes */
    memset(text, 'x', 126);
    text[126] = '\0'; /* now 128: needs a two-byte length */
    fl_pb_init(&pb, buf, 1 + 1 + 128);
    fl_pb_begin(&pb, 8);
    fl_pb_string(&pb, 1, text);
    CHECK(!pb.overflow);
    fl_pb_end(&pb);
    CHECK(pb.overflow && pb.depth == 0);
    fl_pb_init(&pb, buf, 1 + 2 + 128);
    fl_pb_begin(&pb, 8);
    fl_pb_string(&pb, 1, text);
    fl_pb_end(&pb);
    CHECK(!pb.overflow && pb.len == 131);

    /* Nesting deeper than FL_PB_DEPTH_MAX overflows; begin/end stay paired. */
    fl_pb_init(&pb, buf, sizeof buf);
    for (unsigned i = 0; i < FL_PB_DEPTH_MAX + 2; i++)
        fl_pb_begin(&pb, 1);
    CHECK(pb.overflow);
    for (unsigned i = 0; i < FL_PB_DEPTH_MAX + 2; i++)
        fl_pb_end(&pb);
    CHECK_EQ_U64(pb.depth, 0);
    /* An unpaired end is an error too. */
    fl_pb_init(&pb, buf, sizeof buf);
    fl_pb_end(&pb);
    CHECK(pb.overflow);
}

static void test_signal_names(void) {
    CHECK_STREQ(fl_signal_name(SIGSEGV), "SIGSEGV");
    CHECK_STREQ(fl_signal_name(SIGBUS), "SIGBUS");
    CHECK_STREQ(fl_signal_name(SIGABRT), "SIGABRT");
    CHECK_STREQ(fl_signal_name(SIGSYS), "SIGSYS");
    CHECK_STREQ(fl_signal_name(SIGSTKFLT), "SIGSTKFLT");
    CHECK_STREQ(fl_signal_name(0), "");
    CHECK_STREQ(fl_signal_name(SIGRTMIN + 1), "");
    for (int s = 1; s < 32; s++)
        CHECK(fl_signal_name(s)[0] != '\0');
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, SEGV_MAPERR), "SEGV_MAPERR");
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, SEGV_ACCERR), "SEGV_ACCERR");
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, 10), "SEGV_CPERR");
    CHECK_STREQ(fl_signal_code_name(SIGBUS, BUS_ADRALN), "BUS_ADRALN");
    CHECK_STREQ(fl_signal_code_name(SIGBUS, BUS_MCEERR_AO), "BUS_MCEERR_AO");
    CHECK_STREQ(fl_signal_code_name(SIGILL, ILL_ILLOPC), "ILL_ILLOPC");
    CHECK_STREQ(fl_signal_code_name(SIGILL, ILL_BADSTK), "ILL_BADSTK");
    CHECK_STREQ(fl_signal_code_name(SIGFPE, FPE_INTDIV), "FPE_INTDIV");
    CHECK_STREQ(fl_signal_code_name(SIGFPE, FPE_FLTSUB), "FPE_FLTSUB");
    CHECK_STREQ(fl_signal_code_name(SIGFPE, 14), "FPE_FLTUNK");
    CHECK_STREQ(fl_signal_code_name(SIGTRAP, TRAP_BRKPT), "TRAP_BRKPT");
    CHECK_STREQ(fl_signal_code_name(SIGSYS, 1), "SYS_SECCOMP");
    CHECK_STREQ(fl_signal_code_name(SIGABRT, SI_USER), "SI_USER");
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, SI_KERNEL), "SI_KERNEL");
    CHECK_STREQ(fl_signal_code_name(SIGUSR1, SI_QUEUE), "SI_QUEUE");
    CHECK_STREQ(fl_signal_code_name(SIGALRM, SI_TIMER), "SI_TIMER");
    CHECK_STREQ(fl_signal_code_name(SIGIO, SI_MESGQ), "SI_MESGQ");
    CHECK_STREQ(fl_signal_code_name(SIGIO, SI_ASYNCIO), "SI_ASYNCIO");
    CHECK_STREQ(fl_signal_code_name(SIGIO, SI_SIGIO), "SI_SIGIO");
    CHECK_STREQ(fl_signal_code_name(SIGABRT, SI_TKILL), "SI_TKILL");
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, 99), "");
    CHECK_STREQ(fl_signal_code_name(SIGABRT, 1), "");
    CHECK_STREQ(fl_signal_code_name(SIGSEGV, -99), "");
}

static uint8_t scratch[64 * 1024];

/* Every field of every message, written through the writer API and read back. */
static void test_writer_roundtrip(const char *dir) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    uint8_t id[16];
    for (unsigned i = 0; i < 16; i++)
        id[i] = (uint8_t)(0xa0 + i);
    fl_report_writer_t w;
    CHECK_EQ_U64(fl_report_writer_open(&w, dfd, id, scratch, sizeof scratch), 0);
    CHECK_STREQ(w.tmp_name, ".tmp-faultline-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf.flr");
    CHECK_STREQ(w.final_name, "faultline-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf.flr");
    struct stat st;
    CHECK(fstatat(dfd, w.tmp_name, &st, 0) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_EQ_U64(w.bytes, 13);
    /* O_EXCL: the same id cannot be opened twice. */
    fl_report_writer_t w2;
    CHECK_EQ_U64(fl_report_writer_open(&w2, dfd, id, scratch, sizeof scratch), FL_EIO);
    CHECK_EQ_U64(w2.sys_errno, EEXIST);

    fl_report_header_t h = {
        .time_unix_ns = 1714564800123456789ull, .pid = 123456, .kind = 2, .arch = 2,
        .process_path = "/usr/bin/app", .app_name = "App", .app_version = "9.8.7",
        .reason = "user asked", .os_name = "Linux", .os_release = "6.1.0", .os_version = "#1 SMP",
        .machine = "aarch64", .hostname = "host", .process_start_unix_ns = 1714564700000000000ull};
    memcpy(h.report_id, id, 16);
    fl_report_write_header(&w, &h);
    fl_report_signal_t s = {.number = SIGABRT, .code = SI_TKILL, .sender_pid = 77,
                            .crashed_tid = 123457, .address = 0xfffffffffffff000ull,
                            .has_address = true};
    fl_report_write_signal(&w, &s);
    fl_regs_t regs;
    for (unsigned i = 0; i < FL_REGS_MAX; i++)
        regs.r[i] = i == 3 ? 0 : UINT64_MAX - i;
    fl_frame_t frames[6];
    for (unsigned k = 0; k < 6; k++)
        frames[k] = (fl_frame_t){.pc = 0x400000 + 0x10 * k, .sp = 0x7ffd0000 + 0x40 * k,
                                 .method = k};
    fl_report_thread_t t = {.tid = 123457, .name = "worker", .crashed = true, .state = 2,
                            .regs = &regs, .frames = frames, .frame_count = 6,
                            .frames_truncated = true, .unwind_stop = "no unwind info"};
    fl_report_write_thread(&w, &t);
    fl_report_write_threads_total(&w, 77);
    fl_image_t img;
    memset(&img, 0, sizeof img);
    strcpy(img.path, "/lib/libc.so.6");
    img.build_id_len = 20;
    for (unsigned i = 0; i < 20; i++)
        img.build_id[i] = (uint8_t)(0xf0 ^ i);
    img.build_id_kind = FL_BUILD_ID_GNU;
    img.slide = 0x7f1200000000ull;
    img.start = 0x7f1200001000ull;
    img.end = 0x7f1200200000ull;
    img.text_start = 0x7f1200020000ull;
    img.text_end = 0x7f1200150000ull;
    img.is_main = true;
    img.is_vdso = true;
    img.path_truncated = true;
    fl_report_write_image(&w, &img);
    fl_report_write_annotation(&w, "key", "value");
    fl_report_write_note(&w, "a note");
    uint64_t before_finish = w.bytes;
    CHECK_EQ_U64(fl_report_writer_finish(&w), 0);
    CHECK_EQ_U64(w.bytes, before_finish + 2);

    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, w.final_name);
    CHECK(faccessat(dfd, w.tmp_name, F_OK, 0) != 0);
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == w.bytes && (st.st_mode & 0777) == 0600);
    size_t len;
    char *data = sample_read_file(path, &len);
    CHECK(data && len >= 13 && memcmp(data, "\x0a\x09" "faultline\x10\x02", 13) == 0);
    free(data);

    Faultline__Report *r;
    bool truncated = true;
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
    CHECK(!truncated);
    if (!r)
        return;
    CHECK_STREQ(r->magic, "faultline");
    CHECK_EQ_U64(r->format_version, FL_REPORT_FORMAT_VERSION);
    CHECK(r->complete);
    CHECK_EQ_U64(r->threads_total, 77);
    const Faultline__Header *rh = r->header;
    CHECK(rh != NULL);
    if (rh) {
        CHECK(rh->report_id.len == 16 && memcmp(rh->report_id.data, id, 16) == 0);
        CHECK_EQ_U64(rh->time_unix_ns, h.time_unix_ns);
        CHECK_EQ_U64(rh->pid, h.pid);
        CHECK_STREQ(rh->process_path, h.process_path);
        CHECK_STREQ(rh->app_name, h.app_name);
        CHECK_STREQ(rh->app_version, h.app_version);
        CHECK_STREQ(rh->os_name, h.os_name);
        CHECK_STREQ(rh->os_release, h.os_release);
        CHECK_STREQ(rh->os_version, h.os_version);
        CHECK_STREQ(rh->machine, h.machine);
        CHECK_EQ_U64(rh->arch, h.arch);
        CHECK_STREQ(rh->hostname, h.hostname);
        CHECK_EQ_U64(rh->kind, h.kind);
        CHECK_STREQ(rh->reason, h.reason);
        CHECK_EQ_U64(rh->process_start_unix_ns, h.process_start_unix_ns);
    }
    const Faultline__Signal *rs = r->signal;
    CHECK(rs != NULL);
    if (rs) {
        CHECK_EQ_U64(rs->number, SIGABRT);
        CHECK_STREQ(rs->name, "SIGABRT");
        CHECK_EQ_U64(rs->code, SI_TKILL);
        CHECK_STREQ(rs->code_name, "SI_TKILL");
        CHECK_EQ_U64(rs->address, s.address);
        CHECK(rs->has_address);
        CHECK_EQ_U64(rs->sender_pid, 77);
        CHECK_EQ_U64(rs->crashed_tid, 123457);
    }
    CHECK_EQ_U64(r->n_threads, 1);
    if (r->n_threads == 1) {
        const Faultline__Thread *rt = r->threads[0];
        CHECK_EQ_U64(rt->tid, 123457);
        CHECK_STREQ(rt->name, "worker");
        CHECK(rt->crashed);
        CHECK_EQ_U64(rt->state, 2);
        CHECK(rt->frames_truncated);
        CHECK_STREQ(rt->unwind_stop, "no unwind info");
        /* Written compact; the names come from the header's arch (arm64 here), not the
         * build's. */
        CHECK_EQ_U64(rt->n_register_values, fl_regs_count());
        CHECK_EQ_U64(rt->n_frame_pc_deltas, 6);
        CHECK_EQ_U64(rt->n_registers, fl_regs_count());
        for (size_t i = 0; i < rt->n_registers && i < fl_regs_count(); i++) {
            CHECK_STREQ(rt->registers[i]->name, fl_regs_arch_name(h.arch, (unsigned)i));
            CHECK_EQ_U64(rt->registers[i]->value, regs.r[i]);
        }
        CHECK_EQ_U64(rt->n_frames, 6);
        for (size_t k = 0; k < rt->n_frames && k < 6; k++) {
            CHECK_EQ_U64(rt->frames[k]->pc, frames[k].pc);
            CHECK_EQ_U64(rt->frames[k]->sp, frames[k].sp);
            CHECK_EQ_U64(rt->frames[k]->method, frames[k].method);
        }
    }
    CHECK_EQ_U64(r->n_images, 1);
    if (r->n_images == 1) {
        const Faultline__Image *ri = r->images[0];
        CHECK_STREQ(ri->path, img.path);
        CHECK(ri->build_id.len == 20 && memcmp(ri->build_id.data, img.build_id, 20) == 0);
        CHECK_EQ_U64(ri->build_id_kind, FL_BUILD_ID_GNU);
        CHECK_EQ_U64(ri->slide, img.slide);
        CHECK_EQ_U64(ri->start, img.start);
        CHECK_EQ_U64(ri->end, img.end);
        CHECK_EQ_U64(ri->text_start, img.text_start);
        CHECK_EQ_U64(ri->text_end, img.text_end);
        CHECK(ri->is_main && ri->is_vdso && ri->path_truncated);
    }
    CHECK(r->n_annotations == 1 && strcmp(r->annotations[0]->key, "key") == 0 &&
          strcmp(r->annotations[0]->value, "value") == 0);
    CHECK(r->n_notes == 1 && strcmp(r->notes[0]->text, "a note") == 0);
    fl_report_free(r);
    close(dfd);
}

/* Items larger than the scratch buffer: a thread keeps the frames that fit, others become a
 * note. */
static void test_writer_limits(const char *dir) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    uint8_t id[16] = {1, 2, 3};
    fl_report_writer_t w;
    CHECK_EQ_U64(fl_report_writer_open(&w, dfd, id, scratch, 100), FL_EINVAL);
    CHECK_EQ_U64(fl_report_writer_finish(&w), FL_EINVAL);
    CHECK_EQ_U64(fl_report_writer_open(&w, dfd, id, scratch, 1024), 0);
    fl_regs_t regs = {{0}};
    /* About 7 bytes a frame (pcs 3 MiB apart, alternating): 200 do not fit 1024 bytes. */
    static fl_frame_t frames[200];
    for (unsigned k = 0; k < 200; k++)
        frames[k] = (fl_frame_t){.pc = 0x7f0000000000ull + (k % 2 ? 0x300000 : 0) + 16 * k,
                                 .sp = 0x7ffd00000000ull + 0x1000 * k, .method = 2};
    fl_report_thread_t t = {.tid = 9, .name = "big", .regs = &regs, .frames = frames,
                            .frame_count = 200, .unwind_stop = "max frames reached"};
    fl_report_write_thread(&w, &t);
    static char big[2000];
    memset(big, 'n', sizeof big - 1);
    fl_report_write_note(&w, big);
    fl_report_write_annotation(&w, "k", big);
    CHECK_EQ_U64(fl_report_writer_finish(&w), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, w.final_name);
    Faultline__Report *r;
    bool truncated;
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
    CHECK(r && !truncated);
    size_t kept = 0;
    if (r) {
        CHECK_EQ_U64(r->n_threads, 1);
        if (r->n_threads) {
            const Faultline__Thread *rt = r->threads[0];
            kept = rt->n_frames;
            CHECK(rt->n_frames > 10 && rt->n_frames < 200 && rt->frames_truncated);
            CHECK_STREQ(rt->unwind_stop, "max frames reached");
            CHECK_EQ_U64(rt->n_registers, fl_regs_count());
            bool same = true;
            for (size_t k = 0; k < rt->n_frames; k++)
                same = same && rt->frames[k]->pc == frames[k].pc &&
                       rt->frames[k]->sp == frames[k].sp && rt->frames[k]->method == 2;
            CHECK(same); /* the innermost frames are the ones kept */
        }
        CHECK_EQ_U64(r->n_notes, 3);
        if (r->n_notes == 3) {
            CHECK(strstr(r->notes[0]->text, "thread 9: kept ") != NULL);
            CHECK_STREQ(r->notes[1]->text,
                        "note dropped: larger than the 1024-byte scratch buffer");
            CHECK_STREQ(r->notes[2]->text,
                        "annotation dropped: larger than the 1024-byte scratch buffer");
        }
        fl_report_free(r);
    }
    /* As many as fit: `kept` frames fit whole (no note), one more is cut back to `kept`. */
    for (unsigned more = 0; more < 2; more++) {
        id[3] = (uint8_t)(1 + more);
        CHECK_EQ_U64(fl_report_writer_open(&w, dfd, id, scratch, 1024), 0);
        t.frame_count = (unsigned)kept + more;
        t.frames_truncated = true;
        fl_report_write_thread(&w, &t);
        CHECK_EQ_U64(fl_report_writer_finish(&w), 0);
        snprintf(path, sizeof path, "%s/%s", dir, w.final_name);
        CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
        CHECK(r && r->n_threads == 1 && r->threads[0]->n_frames == kept &&
              r->n_notes == more);
        fl_report_free(r);
    }
    close(dfd);
}

/* A write error stops the writer; finish still renames the partial file, whose prefix decodes. */
static void test_writer_error(const char *dir) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    uint8_t id[16] = {9, 9, 9};
    fl_report_writer_t w;
    CHECK_EQ_U64(fl_report_writer_open(&w, dfd, id, scratch, sizeof scratch), 0);
    fl_report_write_note(&w, "before");
    uint64_t bytes = w.bytes;
    int fd = w.fd;
    close(fd);
    CHECK(open("/dev/null", O_RDONLY) == fd); /* keep the number taken, as a read-only file */
    fl_report_write_note(&w, "fails");
    CHECK_EQ_U64(w.err, FL_EIO);
    CHECK_EQ_U64(w.sys_errno, EBADF);
    fl_report_write_note(&w, "skipped");
    CHECK_EQ_U64(w.bytes, bytes);
    CHECK_EQ_U64(fl_report_writer_finish(&w), FL_EIO);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, w.final_name);
    Faultline__Report *r;
    bool truncated = false;
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
    CHECK(r && truncated && !r->complete && r->n_notes == 1);
    fl_report_free(r);
    close(dfd);
}

int main(void) {
    char dir[4096];
    if (!sample_tmpdir(dir, sizeof dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_varints();
    test_utf8();
    test_nested_lengths();
    test_packed();
    test_overflow();
    test_signal_names();
    test_writer_roundtrip(dir);
    test_writer_limits(dir);
    test_writer_error(dir);
    sample_rmtree(dir);
    TEST_END();
}
