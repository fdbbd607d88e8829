/* SPDX-License-Identifier: MIT */
/* Decoding a report cut at every byte, damaged reports, and reading report files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "sample.h"
#include "test.h"

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

    /* Larger than the 64 MiB cap (sparse, so cheap to make). */
    snprintf(path, sizeof path, "%s/huge.flr", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len && ftruncate(fd, (65 << 20)) == 0);
    close(fd);
    CHECK_EQ_U64(fl_report_read_file(path, &r, &truncated), FL_ERANGE);
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
    }
    free(data);
    sample_rmtree(dir);
    TEST_END();
}
