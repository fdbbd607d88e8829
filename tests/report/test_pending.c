/* SPDX-License-Identifier: MIT */
/* The report store (fl_store_*): lock, quarantine, stale temporary files, caps; fl_last_crash. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "sample.h"
#include "test.h"

#define S_NS 1000000000ull
#define BASE_TIME (1700000000ull * S_NS)

static char g_host[256];

enum { END_FINISH, END_ABANDON, END_TMP };

typedef struct rep {
    uint8_t seed;
    int kind;         /* 1 crash (with a SIGSEGV), 2 snapshot, 3 hang (with its Hang record, and
                       * the recovery record appended after `complete`) */
    uint64_t time;    /* capture time, ns */
    int32_t pid;
    const char *host;
    int end;          /* END_FINISH: complete; END_ABANDON: renamed without `complete`;
                       * END_TMP: left as the writer's temporary file */
} rep_t;

static void id_hex(char out[33], uint8_t seed) {
    for (unsigned i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned)(uint8_t)(i * 13 + seed));
}

/* Writes a small report (header, signal for a crash, a note) as a real writer would; path gets
 * the file it left. */
static int write_report(const char *dir, const rep_t *r, char *path, size_t cap) {
    static uint8_t scratch[4096];
    uint8_t id[16];
    for (unsigned i = 0; i < 16; i++)
        id[i] = (uint8_t)(i * 13 + r->seed);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    fl_report_writer_t w;
    int err = fl_report_writer_open(&w, dfd, id, scratch, sizeof scratch);
    if (err) {
        close(dfd);
        return err;
    }
    fl_report_header_t h = {.time_unix_ns = r->time, .pid = r->pid ? r->pid : 4242,
                            .kind = r->kind, .arch = fl_regs_arch(), .process_path = "/bin/app",
                            .hostname = r->host ? r->host : g_host,
                            .reason = r->kind == 2 ? "watchdog" : NULL};
    memcpy(h.report_id, id, 16);
    fl_report_write_header(&w, &h);
    if (r->kind == 1) {
        fl_report_signal_t s = {.number = SIGSEGV, .code = 1, .crashed_tid = 7};
        fl_report_write_signal(&w, &s);
    }
    fl_report_hang_t hang = {.monitored_tid = 7, .duration_ns = 900000000u, .threshold_ms = 800,
                             .sequence = 1};
    if (r->kind == 3)
        fl_report_write_hang(&w, &hang);
    fl_report_write_note(&w, "a note");
    if (r->end == END_TMP) {
        close(w.fd);
        snprintf(path, cap, "%s/%s", dir, w.tmp_name);
    } else {
        err = r->end == END_FINISH ? fl_report_writer_finish(&w) : fl_report_writer_abandon(&w);
        snprintf(path, cap, "%s/%s", dir, w.final_name);
        hang.duration_ns = 2000000000u;
        hang.recovered = true;
        if (!err && r->kind == 3)
            err = fl_report_append_hang(dfd, w.final_name, &hang);
    }
    close(dfd);
    return err;
}

static void set_age(const char *path, unsigned seconds) {
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Files in dir whose names end with suffix. */
static unsigned count_suffix(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    unsigned n = 0;
    struct dirent *de;
    size_t sl = strlen(suffix);
    while (d && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        n += l > sl && de->d_name[0] != '.' && strcmp(de->d_name + l - sl, suffix) == 0;
    }
    if (d)
        closedir(d);
    return n;
}

static char *quarantine_reason(const char *dir, const char *name) {
    char p[4600];
    snprintf(p, sizeof p, "%s/quarantine/%s.reason", dir, name);
    return sample_read_file(p, NULL);
}

/* A dead process's pid. */
static pid_t dead_pid(void) {
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static void test_open_lock(const char *base) {
    char dir[4200];
    fl_store *s, *s2;
    fl_store_stats st;
    snprintf(dir, sizeof dir, "%s/missing", base);
    CHECK_EQ_U64(fl_store_open(dir, NULL, &s, &st), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_store_open(NULL, NULL, &s, &st), FL_EINVAL);
    snprintf(dir, sizeof dir, "%s/lock", base);
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_EQ_U64(fl_store_open(dir, NULL, &s, &st), 0);
    CHECK_EQ_U64(fl_store_count(s), 0);
    CHECK(fl_store_get(s, 0) == NULL);
    /* One owner at a time, in this process ... */
    CHECK_EQ_U64(fl_store_open(dir, NULL, &s2, NULL), FL_EBUSY);
    /* ... and in another one, which is told at once rather than made to wait. */
    int answer[2];
    CHECK(pipe(answer) == 0);
    fflush(stdout);
    pid_t kid = fork();
    if (kid == 0) { /* answers by a byte: under valgrind, its exit status is valgrind's */
        fl_store *k;
        char c = fl_store_open(dir, NULL, &k, NULL) == FL_EBUSY ? 'B' : '?';
        _exit(write(answer[1], &c, 1) == 1 ? 0 : 1);
    }
    close(answer[1]);
    char c = 0;
    CHECK(read(answer[0], &c, 1) == 1 && c == 'B');
    close(answer[0]);
    CHECK(waitpid(kid, NULL, 0) == kid);
    fl_store_close(s);
    CHECK_EQ_U64(fl_store_open(dir, NULL, &s2, NULL), 0);
    fl_store_close(s2);
    fl_store_close(NULL);
}

static void test_quarantine(const char *base) {
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s/quarantine-test", base);
    CHECK(mkdir(dir, 0700) == 0);
    sample_t s[3];
    for (unsigned i = 0; i < 3; i++) {
        sample_opts_t o = {.id_seed = (uint8_t)(200 + i), .time_unix_ns = BASE_TIME + i * S_NS};
        CHECK_EQ_U64(sample_write(dir, &o, &s[i]), 0);
    }
    /* The newest is cut in its middle: truncated, its prefix decodes, it stays pending. */
    CHECK(truncate(s[2].path, (off_t)(s[2].size / 2)) == 0);
    /* Damaged: not a report; cut before the header; a newer format. */
    snprintf(path, sizeof path, "%s/faultline-garbage.flr", dir);
    CHECK(sample_write_file(path, "hello, world", 12) == 0);
    snprintf(path, sizeof path, "%s/faultline-prefixonly.flr", dir);
    CHECK(sample_write_file(path, "\x0a\x09" "faultline\x10\x02", 13) == 0);
    snprintf(path, sizeof path, "%s/faultline-future.flr", dir);
    CHECK(sample_write_file(path, "\x0a\x09" "faultline\x10\x63\x1a\x00", 15) == 0);

    fl_store *st;
    fl_store_stats stats;
    CHECK_EQ_U64(fl_store_open(dir, NULL, &st, &stats), 0);
    CHECK_EQ_U64(stats.quarantined, 3);
    CHECK_EQ_U64(stats.pending, 3);
    CHECK_EQ_U64(stats.truncated, 1);
    CHECK_EQ_U64(stats.pruned + stats.tmp_recovered + stats.unreadable, 0);
    CHECK_EQ_U64(fl_store_count(st), 3);
    char *r = quarantine_reason(dir, "faultline-garbage.flr");
    CHECK(r && strstr(r, "does not decode: not a faultline report") != NULL);
    free(r);
    r = quarantine_reason(dir, "faultline-prefixonly.flr");
    CHECK(r && strstr(r, "cut short before its header") != NULL);
    free(r);
    r = quarantine_reason(dir, "faultline-future.flr");
    CHECK(r && strstr(r, "newer than this reader") != NULL);
    free(r);
    snprintf(path, sizeof path, "%s/quarantine/faultline-garbage.flr", dir);
    size_t len;
    char *bytes = sample_read_file(path, &len); /* moved, not changed */
    CHECK(bytes && len == 12 && memcmp(bytes, "hello, world", 12) == 0);
    free(bytes);

    for (unsigned i = 0; i < 3 && i < fl_store_count(st); i++) { /* oldest first */
        const fl_store_report *e = fl_store_get(st, i);
        char id[33], *real = realpath(s[i].path, NULL); /* the sample's id: b * 17 + seed */
        for (unsigned b = 0; b < 16; b++)
            snprintf(id + 2 * b, 3, "%02x", (unsigned)(uint8_t)(b * 17 + 200 + i));
        CHECK_STREQ(e->id, id);
        CHECK_STREQ(e->path, real);
        free(real);
        CHECK_EQ_U64(e->time_unix_ns, BASE_TIME + i * S_NS);
        CHECK_EQ_U64(e->kind, 1);
        CHECK_EQ_U64(e->signal, SIGSEGV);
        CHECK(e->truncated == (i == 2));
        CHECK_EQ_U64(e->size, i == 2 ? s[2].size / 2 : s[i].size);
        uint8_t *data;
        CHECK_EQ_U64(fl_store_read(st, i, &data, &len), 0);
        bytes = sample_read_file(s[i].path, NULL);
        CHECK(bytes && len == e->size && memcmp(bytes, data, len) == 0);
        free(bytes);
        free(data);
    }
    /* Damaged after listing: the read finds out and quarantines it. */
    CHECK(sample_write_file(s[0].path, "garbage now", 11) == 0);
    uint8_t *data;
    CHECK_EQ_U64(fl_store_read(st, 0, &data, &len), FL_EBADDATA);
    CHECK(!exists(s[0].path));
    CHECK_EQ_U64(fl_store_read(st, 0, &data, &len), FL_ENOTFOUND);
    /* Removed: gone, and said so the second time. */
    CHECK_EQ_U64(fl_store_remove(st, 1), 0);
    CHECK(!exists(s[1].path));
    CHECK_EQ_U64(fl_store_remove(st, 1), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_store_read(st, 1, &data, &len), FL_ENOTFOUND);
    /* Quarantined by the caller, its reason on one line. */
    CHECK_EQ_U64(fl_store_quarantine(st, 2, "refused:\nHTTP 413"), 0);
    CHECK(!exists(s[2].path));
    r = quarantine_reason(dir, strrchr(s[2].path, '/') + 1);
    CHECK(r && strcmp(r, "refused: HTTP 413\n") == 0);
    free(r);
    CHECK_EQ_U64(fl_store_quarantine(st, 2, "again"), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_store_remove(st, 3), FL_EINVAL);
    fl_store_close(st);
    CHECK_EQ_U64(count_suffix(dir, ".flr"), 0);
    snprintf(path, sizeof path, "%s/quarantine", dir);
    CHECK_EQ_U64(count_suffix(path, ".flr"), 5);
    CHECK_EQ_U64(count_suffix(path, ".reason"), 5);
}

static void test_caps(const char *base) {
    char dir[4200], qdir[4300], path[4400];
    snprintf(dir, sizeof dir, "%s/caps", base);
    CHECK(mkdir(dir, 0700) == 0);
    sample_t s[10];
    for (unsigned i = 0; i < 10; i++) {
        /* Names (ids) in the opposite order to capture times: order comes from the header. */
        sample_opts_t o = {.id_seed = (uint8_t)(100 - i), .time_unix_ns = BASE_TIME + i * S_NS};
        CHECK_EQ_U64(sample_write(dir, &o, &s[i]), 0);
    }
    fl_store *st;
    fl_store_stats stats;
    fl_store_options o = {.max_reports = 4};
    CHECK_EQ_U64(fl_store_open(dir, &o, &st, &stats), 0);
    CHECK_EQ_U64(stats.pruned, 6);
    CHECK_EQ_U64(fl_store_count(st), 4);
    for (unsigned i = 0; i < 10; i++)
        CHECK(exists(s[i].path) == (i >= 6)); /* the oldest went */
    for (unsigned i = 0; i < 4 && i < fl_store_count(st); i++)
        CHECK_EQ_U64(fl_store_get(st, i)->time_unix_ns, BASE_TIME + (6 + i) * S_NS);
    fl_store_close(st);

    o = (fl_store_options){.max_bytes = s[0].size * 5 / 2};
    CHECK_EQ_U64(fl_store_open(dir, &o, &st, &stats), 0);
    CHECK_EQ_U64(stats.pruned, 2);
    CHECK_EQ_U64(stats.pending_bytes, s[8].size + s[9].size);
    CHECK(exists(s[8].path) && exists(s[9].path) && !exists(s[7].path));
    fl_store_close(st);

    /* A cap below one report keeps the newest all the same. */
    o = (fl_store_options){.max_bytes = 1};
    CHECK_EQ_U64(fl_store_open(dir, &o, &st, &stats), 0);
    CHECK_EQ_U64(fl_store_count(st), 1);
    CHECK(exists(s[9].path) && !exists(s[8].path));
    fl_store_close(st);

    /* quarantine/ has caps of its own: five damaged reports, room for two. */
    for (unsigned i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/faultline-bad%u.flr", dir, i);
        CHECK(sample_write_file(path, "junk", 4) == 0);
    }
    o = (fl_store_options){.max_quarantined = 2};
    CHECK_EQ_U64(fl_store_open(dir, &o, &st, &stats), 0);
    CHECK_EQ_U64(stats.quarantined, 5);
    CHECK_EQ_U64(stats.quarantine_pruned, 3);
    fl_store_close(st);
    snprintf(qdir, sizeof qdir, "%s/quarantine", dir);
    CHECK_EQ_U64(count_suffix(qdir, ".flr"), 2);
    CHECK_EQ_U64(count_suffix(qdir, ".reason"), 2); /* no reason left without its report */
    CHECK(exists(s[9].path));
}

static void test_tmp_files(const char *base) {
    char dir[4200], p[8][4400], hex[33], final[4400];
    snprintf(dir, sizeof dir, "%s/tmp", base);
    CHECK(mkdir(dir, 0700) == 0);
    pid_t dead = dead_pid(), alive = getppid();
    /* seed, pid, host, age in seconds */
    struct { uint8_t seed; pid_t pid; const char *host; unsigned age; bool header; } t[8] = {
        {1, dead, NULL, 10, true},      /* 0: writer dead, quiet for 10 s: recovered */
        {2, dead, NULL, 0, true},       /* 1: writer dead, just written: left (grace) */
        {3, alive, NULL, 30, true},     /* 2: writer alive: left */
        {4, alive, NULL, 120, true},    /* 3: untouched past stale_tmp_seconds: recovered */
        {5, dead, "elsewhere", 10, true}, /* 4: another host's pid says nothing: left */
        {6, 0, NULL, 120, false},       /* 5: no header, stale: quarantined */
        {7, 0, NULL, 0, false},         /* 6: no header, fresh: left */
        {8, getpid(), NULL, 10, true},  /* 7: this very process (a snapshot): left */
    };
    for (unsigned i = 0; i < 8; i++) {
        if (t[i].header) {
            rep_t r = {.seed = t[i].seed, .kind = 1, .time = BASE_TIME + i * S_NS,
                       .pid = t[i].pid, .host = t[i].host, .end = END_TMP};
            CHECK_EQ_U64(write_report(dir, &r, p[i], sizeof p[i]), 0);
        } else {
            id_hex(hex, t[i].seed);
            snprintf(p[i], sizeof p[i], "%s/.tmp-faultline-%s.flr", dir, hex);
            CHECK(sample_write_file(p[i], "\x0a\x09" "faultline\x10\x02", 13) == 0);
        }
        if (t[i].age)
            set_age(p[i], t[i].age);
    }
    fl_store *st;
    fl_store_stats stats;
    fl_store_options o = {.stale_tmp_seconds = 60};
    CHECK_EQ_U64(fl_store_open(dir, &o, &st, &stats), 0);
    CHECK_EQ_U64(stats.tmp_recovered, 2);
    CHECK_EQ_U64(stats.tmp_in_progress, 5);
    CHECK_EQ_U64(stats.quarantined, 1);
    for (unsigned i = 0; i < 8; i++) {
        bool moved = i == 0 || i == 3 || i == 5;
        CHECK(exists(p[i]) == !moved);
        snprintf(final, sizeof final, "%s/%s", dir, strrchr(p[i], '/') + 1 + strlen(".tmp-"));
        CHECK(exists(final) == (i == 0 || i == 3));
    }
    /* The recovered ones are pending, cut short (no `complete`): they will be sent. */
    CHECK_EQ_U64(fl_store_count(st), 2);
    for (size_t i = 0; i < fl_store_count(st); i++) {
        CHECK(fl_store_get(st, i)->truncated);
        CHECK_EQ_U64(fl_store_get(st, i)->kind, 1);
    }
    id_hex(hex, 6);
    char name[64];
    snprintf(name, sizeof name, "faultline-%s.flr", hex);
    char *r = quarantine_reason(dir, name);
    CHECK(r && strstr(r, "before writing its header") != NULL);
    free(r);
    fl_store_close(st);
}

static void test_last_crash(const char *base) {
    char dir[4200], path[4400], hex[33];
    fl_crash_info ci;
    snprintf(dir, sizeof dir, "%s/last", base);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND); /* no directory */
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_last_crash(NULL, &ci), FL_EINVAL);

    /* A snapshot is not a crash. */
    rep_t snap = {.seed = 10, .kind = 2, .time = BASE_TIME + 10 * S_NS};
    CHECK_EQ_U64(write_report(dir, &snap, path, sizeof path), 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);
    /* Nor is a hang; it stays a pending report of kind 3, complete, with the appended record's
     * final duration. */
    rep_t hang = {.seed = 11, .kind = 3, .time = BASE_TIME + 11 * S_NS};
    CHECK_EQ_U64(write_report(dir, &hang, path, sizeof path), 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);
    {
        fl_store *st;
        fl_store_stats stats;
        CHECK_EQ_U64(fl_store_open(dir, NULL, &st, &stats), 0);
        CHECK_EQ_U64(fl_store_count(st), 2);
        CHECK_EQ_U64(stats.quarantined, 0);
        const fl_store_report *e = fl_store_get(st, 1);
        CHECK_EQ_U64(e->kind, 3);
        CHECK(!e->truncated);
        Faultline__Report *rep;
        bool trunc = true;
        CHECK_EQ_U64(fl_report_read_file(e->path, &rep, &trunc), 0);
        CHECK(!trunc && rep->complete && rep->hang && rep->hang->recovered);
        CHECK_EQ_U64(rep->hang->duration_ns, 2000000000u);
        CHECK_EQ_U64(rep->hang->threshold_ms, 800);
        fl_report_free(rep);
        fl_store_close(st);
    }

    /* A crash is told once. */
    rep_t a = {.seed = 20, .kind = 1, .time = BASE_TIME + 20 * S_NS};
    CHECK_EQ_U64(write_report(dir, &a, path, sizeof path), 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), 0);
    id_hex(hex, 20);
    CHECK_STREQ(ci.id, hex);
    CHECK_EQ_U64(ci.time_unix_ns, a.time);
    CHECK_EQ_U64(ci.signal, SIGSEGV);
    CHECK_EQ_U64(ci.count, 1);
    CHECK(ci.pending);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);

    /* Two crashes and a later snapshot: the newest crash, and how many there were. */
    rep_t b = {.seed = 30, .kind = 1, .time = BASE_TIME + 30 * S_NS};
    rep_t c = {.seed = 40, .kind = 1, .time = BASE_TIME + 40 * S_NS, .end = END_ABANDON};
    rep_t snap2 = {.seed = 50, .kind = 2, .time = BASE_TIME + 50 * S_NS};
    CHECK_EQ_U64(write_report(dir, &b, path, sizeof path), 0);
    CHECK_EQ_U64(write_report(dir, &c, path, sizeof path), 0); /* cut short: still a crash */
    CHECK_EQ_U64(write_report(dir, &snap2, path, sizeof path), 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), 0);
    id_hex(hex, 40);
    CHECK_STREQ(ci.id, hex);
    CHECK_EQ_U64(ci.count, 2);
    CHECK(ci.pending);

    /* Uploaded (removed by the store) before the app asked: still told. */
    rep_t d = {.seed = 60, .kind = 1, .time = BASE_TIME + 60 * S_NS};
    CHECK_EQ_U64(write_report(dir, &d, path, sizeof path), 0);
    fl_store *st;
    CHECK_EQ_U64(fl_store_open(dir, NULL, &st, NULL), 0);
    id_hex(hex, 60);
    for (size_t i = 0; i < fl_store_count(st); i++)
        if (strcmp(fl_store_get(st, i)->id, hex) == 0)
            CHECK_EQ_U64(fl_store_remove(st, i), 0);
    fl_store_close(st);
    CHECK(!exists(path));
    CHECK_EQ_U64(fl_last_crash(dir, &ci), 0);
    CHECK_STREQ(ci.id, hex);
    CHECK(!ci.pending);
    CHECK_EQ_U64(ci.count, 1);
    CHECK_EQ_U64(ci.signal, SIGSEGV);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);

    /* Pruned by the caps, and quarantined: counted all the same. */
    rep_t e = {.seed = 70, .kind = 1, .time = BASE_TIME + 70 * S_NS};
    rep_t f = {.seed = 80, .kind = 1, .time = BASE_TIME + 80 * S_NS};
    CHECK_EQ_U64(write_report(dir, &e, path, sizeof path), 0);
    CHECK_EQ_U64(write_report(dir, &f, path, sizeof path), 0);
    fl_store_options one = {.max_reports = 1};
    CHECK_EQ_U64(fl_store_open(dir, &one, &st, NULL), 0); /* e and all older ones pruned */
    CHECK_EQ_U64(fl_store_quarantine(st, 0, "test"), 0);  /* f */
    fl_store_close(st);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), 0);
    id_hex(hex, 80);
    CHECK_STREQ(ci.id, hex);
    CHECK_EQ_U64(ci.count, 2);
    CHECK(!ci.pending);

    /* Order is by capture time: a crash stamped before the last one told is not news. */
    rep_t old = {.seed = 90, .kind = 1, .time = BASE_TIME + 65 * S_NS};
    CHECK_EQ_U64(write_report(dir, &old, path, sizeof path), 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);

    /* A damaged state file is an empty one: the newest pending crash is told (again). */
    snprintf(path, sizeof path, "%s/.state", dir);
    CHECK(sample_write_file(path, "junk\n", 5) == 0);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), 0);
    id_hex(hex, 90);
    CHECK_STREQ(ci.id, hex);
    CHECK_EQ_U64(fl_last_crash(dir, &ci), FL_ENOTFOUND);
}

/* Names planted as FIFOs where the store and fl_last_crash read or write: each call returns (an
 * alarm fails the test if one waits), none treats the FIFO as a report. */
static void test_fifos(const char *base) {
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s/fifos", base);
    CHECK(mkdir(dir, 0700) == 0);
    alarm(20);
    /* .state and .state.tmp as FIFOs: fl_last_crash reads and rewrites them. */
    snprintf(path, sizeof path, "%s/.state", dir);
    CHECK(mkfifo(path, 0600) == 0);
    snprintf(path, sizeof path, "%s/.state.tmp", dir);
    CHECK(mkfifo(path, 0600) == 0);
    rep_t a = {.seed = 70, .kind = 1, .time = BASE_TIME + 70 * S_NS};
    char rpath[4400];
    CHECK_EQ_U64(write_report(dir, &a, rpath, sizeof rpath), 0);
    fl_crash_info ci;
    int e = fl_last_crash(dir, &ci);
    CHECK(e == 0 || e == FL_EIO); /* told, or its state could not be saved; never waiting */
    /* A report swapped for a FIFO after the store listed it. */
    fl_store *st;
    CHECK_EQ_U64(fl_store_open(dir, NULL, &st, NULL), 0);
    CHECK_EQ_U64(fl_store_count(st), 1);
    CHECK(unlink(rpath) == 0 && mkfifo(rpath, 0600) == 0);
    uint8_t *data;
    size_t len;
    CHECK_EQ_U64(fl_store_read(st, 0, &data, &len), FL_ENOTFILE);
    fl_store_close(st);
    /* A FIFO as a report when the store opens: not listed as one. */
    CHECK_EQ_U64(fl_store_open(dir, NULL, &st, NULL), 0);
    CHECK_EQ_U64(fl_store_count(st), 0);
    fl_store_close(st);
    /* The reason file of a report being quarantined is a FIFO. */
    unlink(rpath);
    CHECK_EQ_U64(write_report(dir, &a, rpath, sizeof rpath), 0);
    snprintf(path, sizeof path, "%s/quarantine", dir);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/quarantine/%s.reason", dir, strrchr(rpath, '/') + 1);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_EQ_U64(fl_store_open(dir, NULL, &st, NULL), 0);
    CHECK_EQ_U64(fl_store_count(st), 1);
    CHECK_EQ_U64(fl_store_quarantine(st, 0, "test"), 0);
    fl_store_close(st);
    alarm(0);
}

int main(void) {
    char base[4096];
    if (gethostname(g_host, sizeof g_host - 1) != 0)
        strcpy(g_host, "localhost");
    if (!sample_tmpdir(base, sizeof base)) {
        perror("mkdtemp");
        return 1;
    }
    test_open_lock(base);
    test_quarantine(base);
    test_caps(base);
    test_tmp_files(base);
    test_last_crash(base);
    test_fifos(base);
    sample_rmtree(base);
    TEST_END();
}
