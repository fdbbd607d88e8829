/* SPDX-License-Identifier: MIT */
/* report: libFuzzer target over the report store on a hostile directory. The input is split into
 * entries written into a fresh directory (reports, temporary files, .state, quarantine/ and its
 * .reason files, names the store must skip, and directories, symbolic links and FIFOs under the
 * names it looks for); then the store is opened, listed, every report read, some quarantined and
 * some removed, the store opened again, fl_last_crash asked twice, fl_last_run asked (twice when
 * it found a run) and fl_list_reports called.
 * Aborts on a broken promise: an error the API does not name, a report read back that does not
 * decode, more reports listed than the cap, a listed report that is not in the directory. A
 * FIFO opened for reading would block: libFuzzer reports that as a timeout.
 *
 * Input: byte 0 picks the options (bits 0-2: max_reports - 1; bit 3: max_bytes 4096; bits 4-5:
 * max_quarantined - 1; bit 6: stale_tmp_seconds 1; bit 7: quarantine rather than remove), then
 * entries of [name index][kind][length, 2 bytes little-endian][length bytes]: kind bits 0-1 a
 * regular file / directory / symbolic link (to the name whose index is the first data byte, all
 * inside the directory) / FIFO; bits 2-3 its age (now, 10 s, 1 h, 2 days). A name given twice
 * appends to the file.
 *
 * Seeds: corpus/fuzz_store/ (scripts/fuzz-seeds.sh). Run: scripts/fuzz.sh BUILD fuzz_store. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "faultline/faultline.h"
#include "report/report.h"
#include "fuzz.h"

static const char *const g_names[] = {
    "faultline-00112233445566778899aabbccddeeff.flr",
    "faultline-0000000000000000000000000000000a.flr",
    "faultline-ffffffffffffffffffffffffffffffff.flr",
    "faultline-x.flr",
    "faultline-.flr",
    ".tmp-faultline-00112233445566778899aabbccddeeff.flr",
    ".tmp-faultline-0000000000000000000000000000000b.flr",
    ".tmp-faultline-.flr",
    ".state",
    ".state.tmp",
    ".state.lock",
    ".store.lock",
    "quarantine",
    "quarantine/faultline-00112233445566778899aabbccddeeff.flr",
    "quarantine/faultline-00112233445566778899aabbccddeeff.flr.reason",
    "quarantine/x.flr",
    "quarantine/x.flr.reason",
    "quarantine/.reason",
    "faultline-\x01\x1b[31m\xff.flr",
    "faultline-0123456789012345678901234567890123456789012345678901234567890123456789012345678901"
    "234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901"
    "2345678901234567890123456789.flr",
    "faultline-00112233445566778899aabbccddeeff.flr.reason",
    "notes.txt",
    ".",
    "missing",
    /* Run markers (fl_last_run, docs/hangs.md): one well named, one not, a temporary one. */
    ".run-0000000000000001-1",
    ".run-x",
    ".tmp.run-0000000000000001-1",
};
#define NNAMES (sizeof g_names / sizeof g_names[0])

static char g_base[] = "/tmp/fuzz_store.XXXXXX";
static char g_dir[sizeof g_base + 8];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_base);
    snprintf(g_dir, sizeof g_dir, "%s/d", g_base);
    return 0;
}

static void set_age(const char *path, unsigned age) {
    static const time_t ago[] = {0, 10, 3600, 2 * 86400};
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= ago[age & 3];
    ts[1] = ts[0];
    utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

/* Creates one entry; what cannot be made (a file under a name that is already a directory, ...)
 * is left out. */
static void make_entry(const char *name, unsigned kind, const uint8_t *data, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (strncmp(name, "quarantine/", 11) == 0) {
        char q[512];
        snprintf(q, sizeof q, "%s/quarantine", g_dir);
        mkdir(q, 0700);
    }
    switch (kind & 3) {
    case 0: {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK, 0600);
        if (fd < 0) return;
        if (len && write(fd, data, len) < 0) { /* (nothing to do) */ }
        close(fd);
        break;
    }
    case 1: mkdir(path, 0700); break;
    case 2: /* relative to the directory, so nothing outside it is ever named */
        if (symlink(len ? g_names[data[0] % NNAMES] : "missing", path) != 0) return;
        break;
    default: mkfifo(path, 0600); break;
    }
    set_age(path, kind >> 2);
}

static bool listed_exists(const fl_store_report *r) {
    struct stat st;
    return lstat(r->path, &st) == 0 && S_ISREG(st.st_mode);
}

static void check_crash_info(int e, const fl_crash_info *ci) {
    CHECK(e == 0 || e == FL_ENOTFOUND || e == FL_EBUSY || e == FL_EIO);
    if (e) return;
    CHECK(strlen(ci->id) == 32 && strspn(ci->id, "0123456789abcdef") == 32);
    CHECK(ci->count >= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
    if (size < 1) return 0;
    if (mkdir(g_dir, 0700) != 0) abort();
    uint8_t opt = in[0];
    for (size_t pos = 1; pos + 4 <= size;) {
        const char *name = g_names[in[pos] % NNAMES];
        unsigned kind = in[pos + 1];
        size_t len = (size_t)in[pos + 2] | (size_t)in[pos + 3] << 8;
        pos += 4;
        if (len > size - pos) len = size - pos;
        if (strcmp(name, ".") != 0) make_entry(name, kind, in + pos, len);
        pos += len;
    }

    fl_store_options o = {.max_reports = 1u + (opt & 7), .max_bytes = (opt & 8) ? 4096 : 0,
                          .max_quarantined = 1u + (opt >> 4 & 3),
                          .stale_tmp_seconds = (opt & 0x40) ? 1 : 0};
    fl_store *s = NULL;
    fl_store_stats st;
    int e = fl_store_open(g_dir, &o, &s, &st);
    CHECK(e == 0 || e == FL_EIO || e == FL_EBUSY);
    CHECK((e == 0) == (s != NULL));
    if (s) {
        size_t n = fl_store_count(s);
        CHECK(n == st.pending && n <= o.max_reports);
        CHECK(fl_store_get(s, n) == NULL);
        for (size_t i = 0; i < n; i++) {
            const fl_store_report *r = fl_store_get(s, i);
            CHECK(r && r->path && listed_exists(r));
            CHECK(strlen(r->id) == 32);
            uint8_t *data = NULL;
            size_t len = 0;
            int re = fl_store_read(s, i, &data, &len);
            CHECK(re == 0 || re == FL_EBADDATA || re == FL_ENOTFOUND || re == FL_EIO);
            if (re == 0) {
                Faultline__Report *rep;
                bool truncated;
                CHECK(fl_report_decode(data, len, &rep, &truncated) == 0);
                CHECK(rep->header != NULL);
                fl_report_free(rep);
            }
            free(data);
        }
        /* The oldest half leaves: uploaded (removed), or quarantined with a reason. */
        for (size_t i = 0; i < n / 2; i++) {
            int qe = (opt & 0x80) ? fl_store_quarantine(s, i, "fuzz\nreason\r\x01") : fl_store_remove(s, i);
            CHECK(qe == 0 || qe == FL_ENOTFOUND || qe == FL_EIO);
            uint8_t *data = NULL;
            size_t len = 0;
            if (qe != FL_EIO) CHECK(fl_store_read(s, i, &data, &len) == FL_ENOTFOUND && !data);
        }
        fl_store_close(s);
        /* Opened again: what the first open left is a valid store. */
        e = fl_store_open(g_dir, &o, &s, &st);
        CHECK(e == 0 || e == FL_EIO);
        fl_store_close(s);
    }

    fl_crash_info ci;
    check_crash_info(fl_last_crash(g_dir, &ci), &ci);
    check_crash_info(fl_last_crash(g_dir, &ci), &ci);

    /* Every ended run is told once: a second call finds none. */
    fl_run_info ri;
    e = fl_last_run(g_dir, &ri);
    CHECK(e == 0 || e == FL_ENOTFOUND || e == FL_EBUSY || e == FL_EIO);
    if (e == 0) {
        CHECK(ri.ending >= FL_RUN_CLEAN && ri.ending <= FL_RUN_KILLED);
        CHECK(ri.runs >= 1 && ri.unclean <= ri.runs);
        size_t n = strlen(ri.report_id);
        CHECK((n == 0 || n == 32) && strspn(ri.report_id, "0123456789abcdef") == n);
        CHECK(fl_last_run(g_dir, &ri) == FL_ENOTFOUND);
    }

    char **paths = NULL;
    size_t count = 0;
    e = fl_list_reports(g_dir, &paths, &count);
    CHECK(e == 0 || e == FL_EIO);
    for (size_t i = 0; i < count; i++) CHECK(paths[i] && paths[i][0] == '/');
    fl_free_report_list(paths, count);

    fuzz_rmtree(g_dir);
    return 0;
}
