/* SPDX-License-Identifier: MIT */
/* Decoding a report cut at every byte, damaged reports, and reading report files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "sample.h"
#include "test.h"

static bool has_note(const Faultline__Report *r, const char *text) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i]->text, text)) return true;
    return false;
}

/* Items of `field` wholly inside the first `len` bytes, from the offsets the writer reported. */
static size_t complete_items(const sample_t *s, unsigned field, uint64_t len) {
    size_t n = 0;
    for (unsigned i = 0; i < s->item_count; i++)
        n += s->item[i].field == field && s->item[i].end <= len;
    return n;
}

/* Every prefix of the report, placed right before an inaccessible page so that any read past
 * the given length faults. */
static void test_every_prefix(const sample_t *s, const uint8_t *data, size_t len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (len + page - 1) / page * page;
    uint8_t *map =
        mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED && mprotect(map + span, page, PROT_NONE) == 0);
    if (map == MAP_FAILED)
        return;
    unsigned bad = 0; /* failures are counted, and only the first few printed */
    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t *p = map + span - cut;
        memcpy(p, data, cut);
        Faultline__Report *r = NULL;
        bool truncated = false;
        int rc = fl_report_decode(p, cut, &r, &truncated);
        bool ok;
        if (cut < 13) {
            ok = rc == FL_ENOTREPORT && r == NULL;
        } else {
            ok = rc == 0 && r && truncated == (cut != len) && r->complete == (cut == len) &&
                 r->n_threads == complete_items(s, 5, cut) &&
                 r->n_images == complete_items(s, 6, cut) &&
                 r->n_annotations == complete_items(s, 7, cut) &&
                 r->n_notes == complete_items(s, 8, cut) &&
                 (r->header != NULL) == (complete_items(s, 3, cut) == 1) &&
                 (r->signal != NULL) == (complete_items(s, 4, cut) == 1);
            /* Whatever decoded is intact: the last complete thread has all its frames. */
            if (ok && r->n_threads)
                ok = r->threads[r->n_threads - 1]->n_frames == SAMPLE_FRAMES;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "prefix of %zu bytes: rc %d, %zu threads, %zu images\n", cut, rc,
                    r ? r->n_threads : 0, r ? r->n_images : 0);
        fl_report_free(r);
    }
    CHECK_EQ_U64(bad, 0);
    munmap(map, span + page);
}

static int decode_copy(const uint8_t *data, size_t len, void (*edit)(uint8_t *, size_t),
                       Faultline__Report **r, bool *truncated) {
    uint8_t *copy = malloc(len);
    memcpy(copy, data, len);
    edit(copy, len);
    int rc = fl_report_decode(copy, len, r, truncated);
    free(copy);
    return rc;
}

static void version_3(uint8_t *p, size_t n) { (void)n, p[12] = FL_REPORT_FORMAT_VERSION + 1; }
static void version_0(uint8_t *p, size_t n) { (void)n, p[12] = 0; }
static void version_129(uint8_t *p, size_t n) { (void)n, p[12] = 0x81, p[13] = 0x01; }
static void bad_magic(uint8_t *p, size_t n) { (void)n, p[5] ^= 0x20; }

static const sample_t *g_sample;

static size_t item_start(unsigned field, unsigned nth) {
    for (unsigned i = 1; i < g_sample->item_count; i++)
        if (g_sample->item[i].field == field && nth-- == 0)
            return (size_t)g_sample->item[i - 1].end;
    return 0;
}
/* The second thread's first inner field gets an impossible wire type: the thread is a
 * complete top-level field whose content does not decode. */
static void damage_thread_1(uint8_t *p, size_t n) {
    size_t at = item_start(5, 1);
    (void)n;
    at += 1;                /* tag */
    while (p[at++] & 0x80)  /* length */
        ;
    p[at] = 0x0f;           /* field 1, wire type 7 */
}
/* The first image's top-level tag gets an impossible wire type. */
static void damage_image_tag(uint8_t *p, size_t n) { (void)n, p[item_start(6, 0)] = 0x37; }

static void test_damage(const sample_t *s, const uint8_t *data, size_t len) {
    Faultline__Report *r;
    bool truncated;
    g_sample = s;
    CHECK_EQ_U64(decode_copy(data, len, version_3, &r, &truncated), FL_EVERSION);
    CHECK_EQ_U64(decode_copy(data, len, version_129, &r, &truncated), FL_EVERSION);
    CHECK_EQ_U64(decode_copy(data, len, version_0, &r, &truncated), FL_ENOTREPORT);
    CHECK_EQ_U64(decode_copy(data, len, bad_magic, &r, &truncated), FL_ENOTREPORT);
    CHECK_EQ_U64(fl_report_decode(NULL, 0, &r, &truncated), FL_ENOTREPORT);
    CHECK_EQ_U64(fl_report_decode((const uint8_t *)"hello, world!\n", 14, &r, &truncated),
                 FL_ENOTREPORT);

    CHECK_EQ_U64(decode_copy(data, len, damage_thread_1, &r, &truncated), 0);
    CHECK(r && truncated && r->header && r->signal && r->n_threads == 1 && r->n_images == 0 &&
          !r->complete);
    fl_report_free(r);
    CHECK_EQ_U64(decode_copy(data, len, damage_image_tag, &r, &truncated), 0);
    CHECK(r && truncated && r->n_threads == SAMPLE_THREADS && r->n_images == 0 && !r->complete);
    fl_report_free(r);

    /* Random damage after the prefix: an answer, never a crash. */
    uint8_t *copy = malloc(len);
    uint32_t seed = 12345;
    unsigned answered = 0;
    for (unsigned iter = 0; iter < 3000; iter++) {
        memcpy(copy, data, len);
        for (unsigned k = 0; k < 1 + iter % 8; k++) {
            seed = seed * 1103515245u + 12345u;
            copy[13 + (seed >> 8) % (len - 13)] = (uint8_t)(seed >> 24);
        }
        size_t cut = iter % 2 ? len : 13 + (seed >> 4) % (len - 13);
        int rc = fl_report_decode(copy, cut, &r, &truncated);
        answered += rc == 0 ? r != NULL : rc == FL_EBADDATA && r == NULL;
        fl_report_free(r);
    }
    CHECK_EQ_U64(answered, 3000);
    free(copy);
}

static void test_read_file(const char *dir, const uint8_t *data, size_t len) {
    char path[4200];
    Faultline__Report *r;
    bool truncated;
    snprintf(path, sizeof path, "%s/missing.flr", dir);
    errno = 0;
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), FL_EIO);
    CHECK_EQ_U64(errno, ENOENT);
    CHECK(r == NULL);

    snprintf(path, sizeof path, "%s/cut.flr", dir);
    CHECK(sample_write_file(path, data, len / 2) == 0);
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
    CHECK(r && truncated && !r->complete);
    fl_report_free(r);

    snprintf(path, sizeof path, "%s/empty.flr", dir);
    CHECK(sample_write_file(path, "", 0) == 0);
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), FL_ENOTREPORT);

    /* Larger than the 16 MiB the reader reads (sparse, so cheap to make): the report in its
     * first bytes decodes, marked truncated, with a note. */
    snprintf(path, sizeof path, "%s/huge.flr", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len && ftruncate(fd, (65 << 20)) == 0);
    close(fd);
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), 0);
    CHECK(r && truncated && r->n_threads == SAMPLE_THREADS &&
          has_note(r, "reader limit reached: the file is larger than 16 MiB"));
    fl_report_free(r);
}

/* The sample report followed by n copies of one top-level field (tag, then a body of body_len
 * bytes, each byte fill; the length is written as a varint); malloc'd, *out_len set. */
static uint8_t *with_fields(const uint8_t *data, size_t len, uint8_t tag, size_t body_len,
                            uint8_t fill, size_t n, size_t *out_len) {
    size_t one = 1 + 10 + body_len;
    uint8_t *buf = malloc(len + n * one), *p = buf;
    if (!buf) return NULL;
    memcpy(p, data, len);
    p += len;
    for (size_t i = 0; i < n; i++) {
        *p++ = tag;
        for (size_t v = body_len; ; v >>= 7) {
            *p++ = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
            if (v < 0x80) break;
        }
        memset(p, fill, body_len);
        p += body_len;
    }
    *out_len = (size_t)(p - buf);
    return buf;
}

/* A thread whose only field is packed field `field` (9 registers, 10 pc deltas) of n one-byte
 * elements. */
static uint8_t *with_packed_thread(const uint8_t *data, size_t len, unsigned field, size_t n,
                                   size_t *out_len) {
    uint8_t head[16], *p = head;
    *p++ = (uint8_t)(field << 3 | 2);
    for (size_t v = n; ; v >>= 7) {
        *p++ = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
        if (v < 0x80) break;
    }
    size_t hl = (size_t)(p - head), body = hl + n, total;
    uint8_t *buf = with_fields(data, len, 5u << 3 | 2, body, 2, 1, &total);
    if (buf) memcpy(buf + total - body, head, hl);
    *out_len = total;
    return buf;
}

/* The reader's caps (report/reader.c): past one, the report decodes up to the top-level field
 * that would pass it, marked truncated, with a note naming the limit. */
static void test_caps(const uint8_t *data, size_t len) {
    static const struct {
        const char *note;
        uint8_t tag;   /* a field appended many times, or 0: one thread of packed elements */
        size_t count;  /* copies, or packed elements */
        unsigned packed_field;
        size_t threads, images; /* what decodes */
    } cases[] = {
        {"more than 4096 threads", 5u << 3 | 2, 5000, 0, 4096, SAMPLE_IMAGES},
        {"more than 2048 images", 6u << 3 | 2, 3000, 0, SAMPLE_THREADS, 2048},
        {"more than 65536 top-level fields", 7u << 3 | 2, 70000, 0, SAMPLE_THREADS,
         SAMPLE_IMAGES}, /* (empty annotations) */
        {"more than 262144 frames in all threads", 0, 300000, 10, SAMPLE_THREADS,
         SAMPLE_IMAGES},
        {"decoding would allocate more than 48 MiB", 0, 7u << 20, 9, SAMPLE_THREADS,
         SAMPLE_IMAGES},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t blen = 0;
        uint8_t *buf = cases[i].tag
                           ? with_fields(data, len, cases[i].tag, 0, 0, cases[i].count, &blen)
                           : with_packed_thread(data, len, cases[i].packed_field,
                                                cases[i].count, &blen);
        Faultline__Report *r = NULL;
        bool truncated = false;
        CHECK(buf != NULL);
        if (!buf) continue;
        CHECK_EQ_U64(fl_report_decode(buf, blen, &r, &truncated), 0);
        CHECK(r && truncated && has_note(r, cases[i].note));
        if (r) {
            CHECK_EQ_U64(r->n_threads, cases[i].threads);
            CHECK_EQ_U64(r->n_images, cases[i].images);
            if (cases[i].tag == (7u << 3 | 2))
                CHECK(r->n_annotations > 65000 && r->n_annotations < 65536);
        }
        fl_report_free(r);
        free(buf);
    }
}

int main(void) {
    char dir[4096];
    if (!sample_tmpdir(dir, sizeof dir)) {
        perror("mkdtemp");
        return 1;
    }
    sample_t s;
    CHECK_EQ_U64(sample_write(dir, NULL, &s), 0);
    size_t len = 0;
    uint8_t *data = (uint8_t *)sample_read_file(s.path, &len);
    CHECK(data && len == s.size && len > 2048);
    CHECK_EQ_U64(complete_items(&s, 5, len), SAMPLE_THREADS);
    CHECK_EQ_U64(complete_items(&s, 6, len), SAMPLE_IMAGES);
    if (data && len == s.size) {
        test_every_prefix(&s, data, len);
        test_damage(&s, data, len);
        test_read_file(dir, data, len);
        test_caps(data, len);
    }
    free(data);
    sample_rmtree(dir);
    TEST_END();
}
