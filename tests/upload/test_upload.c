/* SPDX-License-Identifier: MIT */
/* fl_upload_pending and `faultline upload` against a real HTTP server on loopback (server.py). */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultline/upload.h"
#include "report/sample.h"
#include "test.h"

#define MAX_REPORTS 8u
#define MAX_REQS 64u
#define TOKEN "s3cr3t-token"

static const char *g_python, *g_server, *g_cli;
static char g_base[4096]; /* scratch root for this run */
static int g_port;
static char g_logdir[4200];
static pid_t g_server_pid = -1;

/* ---- the server ---- */

static bool server_start(void) {
    int fds[2];
    snprintf(g_logdir, sizeof g_logdir, "%s/log", g_base);
    if (mkdir(g_logdir, 0700) != 0 || pipe(fds) != 0)
        return false;
    fflush(stdout);
    g_server_pid = fork();
    if (g_server_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(g_python, g_python, g_server, g_logdir, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[32] = "";
    FILE *f = fdopen(fds[0], "r");
    bool ok = f && fgets(line, sizeof line, f) != NULL;
    if (f)
        fclose(f);
    g_port = ok ? atoi(line) : 0;
    return g_port > 0;
}

static void server_stop(void) {
    if (g_server_pid > 0) {
        kill(g_server_pid, SIGTERM);
        waitpid(g_server_pid, NULL, 0);
    }
}

static void url(char *buf, size_t cap, const char *path) {
    snprintf(buf, cap, "http://127.0.0.1:%d%s", g_port, path);
}

/* A loopback port nothing listens on (bound, then closed). */
static int dead_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

/* ---- the server's log ---- */

typedef struct req {
    char path[256], status[16], encoding[32], key[80], ctype[80], auth[128];
    double time;
    char *body;
    size_t len;
} req_t;

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void header_value(const char *line, const char *name, char *dst, size_t cap) {
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) == 0 && line[n] == ':')
        snprintf(dst, cap, "%s", line + n + 2);
}

/* The logged requests whose path is exactly `path`, in arrival order. */
static size_t read_log(const char *path, req_t *out, size_t max) {
    DIR *d = opendir(g_logdir);
    char *names[1024];
    size_t n = 0, k = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL && n < 1024) {
        size_t l = strlen(de->d_name);
        if (l > 4 && strcmp(de->d_name + l - 4, ".req") == 0)
            names[n++] = strdup(de->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        char file[4400], *text;
        snprintf(file, sizeof file, "%s/%s", g_logdir, names[i]);
        req_t r;
        memset(&r, 0, sizeof r);
        if (k < max && (text = sample_read_file(file, NULL)) != NULL) {
            for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                if (strncmp(line, "path ", 5) == 0)
                    snprintf(r.path, sizeof r.path, "%s", line + 5);
                else if (strncmp(line, "status ", 7) == 0)
                    snprintf(r.status, sizeof r.status, "%s", line + 7);
                else if (strncmp(line, "time ", 5) == 0)
                    r.time = atof(line + 5);
                else if (strncmp(line, "encoding ", 9) == 0)
                    snprintf(r.encoding, sizeof r.encoding, "%s", line + 9);
                else if (strncmp(line, "header ", 7) == 0) {
                    header_value(line + 7, "Idempotency-Key", r.key, sizeof r.key);
                    header_value(line + 7, "Content-Type", r.ctype, sizeof r.ctype);
                    header_value(line + 7, "Authorization", r.auth, sizeof r.auth);
                }
            }
            free(text);
            if (strcmp(r.path, path) == 0) {
                size_t l = strlen(file);
                strcpy(file + l - 4, ".body");
                r.body = sample_read_file(file, &r.len);
                out[k++] = r;
            }
        }
        free(names[i]);
    }
    return k;
}

static void free_log(req_t *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(r[i].body);
}

/* ---- report directories ---- */

typedef struct reports {
    char dir[4300];
    size_t n;
    char id[MAX_REPORTS][33];
    char path[MAX_REPORTS][4400];
    char *bytes[MAX_REPORTS];
    size_t len[MAX_REPORTS];
} reports_t;

/* n sample reports, oldest first, in a fresh directory; with `cut`, the last one is cut short
 * in its middle (a truncated report, which is sent all the same). */
static bool make_reports(reports_t *rs, const char *name, size_t n, unsigned seed, bool cut) {
    static unsigned serial;
    memset(rs, 0, sizeof *rs);
    snprintf(rs->dir, sizeof rs->dir, "%s/%s-%u", g_base, name, serial++);
    if (mkdir(rs->dir, 0700) != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        sample_opts_t o = {.id_seed = (uint8_t)(seed + i),
                           .time_unix_ns = 1700000000000000000ull + i * 1000000000ull};
        sample_t s;
        if (sample_write(rs->dir, &o, &s) != 0)
            return false;
        if (cut && i + 1 == n)
            if (truncate(s.path, (off_t)(s.size / 2)) != 0)
                return false;
        for (unsigned b = 0; b < 16; b++)
            snprintf(rs->id[i] + 2 * b, 3, "%02x", (unsigned)(uint8_t)(b * 17 + o.id_seed));
        snprintf(rs->path[i], sizeof rs->path[i], "%s", s.path);
        rs->bytes[i] = sample_read_file(s.path, &rs->len[i]);
        if (!rs->bytes[i])
            return false;
    }
    rs->n = n;
    return true;
}

static void free_reports(reports_t *rs) {
    for (size_t i = 0; i < rs->n; i++)
        free(rs->bytes[i]);
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static size_t pending_count(const char *dir) {
    char **paths;
    size_t n;
    if (fl_list_reports(dir, &paths, &n) != 0)
        return 999;
    fl_free_report_list(paths, n);
    return n;
}

/* ---- results ---- */

typedef struct results {
    size_t n;
    int outcome[MAX_REPORTS];
    unsigned attempts[MAX_REPORTS];
    long status[MAX_REPORTS];
    bool gzip[MAX_REPORTS], truncated[MAX_REPORTS];
    char id[MAX_REPORTS][33];
    char detail[MAX_REPORTS][FL_UPLOAD_DETAIL_MAX];
} results_t;

static void collect(const fl_upload_result *r, void *ctx) {
    results_t *rs = ctx;
    if (rs->n >= MAX_REPORTS)
        return;
    size_t i = rs->n++;
    rs->outcome[i] = r->outcome;
    rs->attempts[i] = r->attempts;
    rs->status[i] = r->http_status;
    rs->gzip[i] = r->gzip;
    rs->truncated[i] = r->truncated;
    snprintf(rs->id[i], sizeof rs->id[i], "%s", r->id);
    snprintf(rs->detail[i], sizeof rs->detail[i], "%s", r->detail);
}

static fl_upload_options fast_options(results_t *res) {
    memset(res, 0, sizeof *res);
    return (fl_upload_options){.backoff_ms = 10, .max_backoff_ms = 50,
                               .request_timeout_ms = 10000, .time_budget_ms = 60000,
                               .on_result = collect, .ctx = res};
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every report arrived once with a 2xx, intact, with the expected headers. */
static void check_delivered(const reports_t *rs, const char *path, bool gzip) {
    req_t log[MAX_REQS];
    size_t n = read_log(path, log, MAX_REQS);
    for (size_t i = 0; i < rs->n; i++) {
        size_t ok = 0;
        for (size_t k = 0; k < n; k++) {
            if (strcmp(log[k].key, rs->id[i]) != 0 || strcmp(log[k].status, "200") != 0)
                continue;
            ok++;
            CHECK_STREQ(log[k].ctype, "application/x-protobuf");
            CHECK_STREQ(log[k].encoding, gzip ? "gzip" : "identity");
            CHECK(log[k].len == rs->len[i] && memcmp(log[k].body, rs->bytes[i], log[k].len) == 0);
        }
        CHECK_EQ_U64(ok, 1);
        CHECK(!exists(rs->path[i]));
    }
    free_log(log, n);
}

/* ---- the cases ---- */

static void test_intact(bool gzip) {
    reports_t rs;
    CHECK(make_reports(&rs, gzip ? "intact-gzip" : "intact", 4, gzip ? 10 : 20, true));
    results_t res;
    fl_upload_options o = fast_options(&res);
    o.gzip = gzip;
    o.bearer_token = TOKEN;
    char u[256], path[64];
    snprintf(path, sizeof path, "/ok/intact-%d", gzip);
    url(u, sizeof u, path);
    fl_upload_summary sum;
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, &sum), 0);
    CHECK_EQ_U64(sum.sent, 4);
    CHECK_EQ_U64(sum.kept + sum.quarantined, 0);
    CHECK_EQ_U64(sum.store.truncated, 1);
    CHECK_EQ_U64(res.n, 4);
    for (size_t i = 0; i < res.n && i < rs.n; i++) { /* oldest first */
        CHECK_STREQ(res.id[i], rs.id[i]);
        CHECK_EQ_U64(res.outcome[i], FL_UPLOAD_SENT);
        CHECK_EQ_U64(res.status[i], 200);
        CHECK_EQ_U64(res.attempts[i], 1);
        CHECK(res.gzip[i] == gzip);
        CHECK(res.truncated[i] == (i == 3));
    }
    check_delivered(&rs, path, gzip);
    req_t log[MAX_REQS];
    size_t n = read_log(path, log, MAX_REQS);
    CHECK_EQ_U64(n, 4);
    for (size_t k = 0; k < n; k++) {
        CHECK_STREQ(log[k].auth, "Bearer " TOKEN);
        CHECK_STREQ(log[k].key, rs.id[k]); /* in order, oldest first */
    }
    free_log(log, n);
    CHECK_EQ_U64(pending_count(rs.dir), 0);
    free_reports(&rs);
}

static void test_server_down(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "down", 3, 30, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    o.max_attempts = 3;
    char u[256];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/reports", dead_port());
    fl_upload_summary sum;
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, &sum), FL_EIO);
    CHECK_EQ_U64(sum.kept, 3);
    CHECK_EQ_U64(res.n, 3);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_KEPT);
    CHECK_EQ_U64(res.attempts[0], 3);
    CHECK_EQ_U64(res.status[0], 0);
    CHECK(strstr(res.detail[0], "onnect") != NULL); /* "Failed to connect ...: Connection refused" */
    /* The server is down: the others are not tried, and say so. */
    CHECK_EQ_U64(res.attempts[1], 0);
    CHECK(strncmp(res.detail[1], "not attempted", 13) == 0);
    for (size_t i = 0; i < rs.n; i++) {
        CHECK(exists(rs.path[i]));
        CHECK_EQ_U64(res.outcome[i], FL_UPLOAD_KEPT);
    }
    free_reports(&rs);
}

static void test_500_then_200(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "fail", 1, 40, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    char u[256];
    url(u, sizeof u, "/fail/2/once");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), 0);
    CHECK_EQ_U64(res.n, 1);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_SENT);
    CHECK_EQ_U64(res.attempts[0], 3);
    req_t log[MAX_REQS];
    size_t n = read_log("/fail/2/once", log, MAX_REQS);
    CHECK_EQ_U64(n, 3);
    if (n == 3) {
        CHECK_STREQ(log[0].status, "500");
        CHECK_STREQ(log[1].status, "500");
        CHECK_STREQ(log[2].status, "200");
        for (size_t k = 0; k < n; k++) /* the same report, the same key, every time */
            CHECK_STREQ(log[k].key, rs.id[0]);
    }
    free_log(log, n);
    check_delivered(&rs, "/fail/2/once", false);
    free_reports(&rs);
}

static void test_slow_server(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "slow", 2, 50, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    o.request_timeout_ms = 300;
    o.max_attempts = 10;
    o.time_budget_ms = 1500;
    char u[256];
    url(u, sizeof u, "/slow/5000/budget");
    double t0 = mono_s();
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), FL_EIO);
    double took = mono_s() - t0;
    /* Bounded by the budget (plus set-up): a generous bound, only to catch a hang. */
    CHECK(took < 1.5 + 10.0);
    CHECK_EQ_U64(res.n, 2);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_KEPT);
    CHECK(res.attempts[0] >= 1 && res.attempts[0] < 10);
    CHECK(strstr(res.detail[0], "imeout") != NULL || strstr(res.detail[0], "imed out") != NULL ||
          strstr(res.detail[0], "budget") != NULL);
    CHECK_EQ_U64(res.outcome[1], FL_UPLOAD_KEPT);
    CHECK(exists(rs.path[0]) && exists(rs.path[1]));
    free_reports(&rs);
}

static void test_413(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "refused", 2, 60, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    char u[256];
    url(u, sizeof u, "/status/413/big");
    fl_upload_summary sum;
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, &sum), FL_EIO);
    CHECK_EQ_U64(sum.quarantined, 2); /* a refusal of one report does not stop the others */
    for (size_t i = 0; i < res.n; i++) {
        CHECK_EQ_U64(res.outcome[i], FL_UPLOAD_QUARANTINED);
        CHECK_EQ_U64(res.attempts[i], 1); /* not retried */
        CHECK_EQ_U64(res.status[i], 413);
    }
    for (size_t i = 0; i < rs.n; i++) {
        CHECK(!exists(rs.path[i]));
        char q[4500], r[4600];
        snprintf(q, sizeof q, "%s/quarantine/%s", rs.dir, strrchr(rs.path[i], '/') + 1);
        snprintf(r, sizeof r, "%s.reason", q);
        size_t len;
        char *bytes = sample_read_file(q, &len), *reason = sample_read_file(r, NULL);
        CHECK(bytes && len == rs.len[i] && memcmp(bytes, rs.bytes[i], len) == 0);
        CHECK(reason && strstr(reason, "HTTP 413: status 413 from the test server") != NULL);
        free(bytes);
        free(reason);
    }
    free_reports(&rs);
}

static void test_retry_after(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "retry-after", 1, 70, false));
    results_t res;
    fl_upload_options o = fast_options(&res); /* backoff 10-50 ms: far below Retry-After */
    char u[256];
    url(u, sizeof u, "/retry-after/1/1/wait");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), 0);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_SENT);
    CHECK_EQ_U64(res.attempts[0], 2);
    req_t log[MAX_REQS];
    size_t n = read_log("/retry-after/1/1/wait", log, MAX_REQS);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STREQ(log[0].status, "429");
        CHECK_STREQ(log[1].status, "200");
        /* The second request came at least Retry-After (1 s) after the first arrived (the
         * server's clock; a lower bound only). */
        CHECK(log[1].time - log[0].time >= 0.99);
    }
    free_log(log, n);
    check_delivered(&rs, "/retry-after/1/1/wait", false);
    free_reports(&rs);

    /* A Retry-After beyond the time budget: kept at once, not waited for. */
    CHECK(make_reports(&rs, "retry-after-long", 2, 75, false));
    o = fast_options(&res);
    o.time_budget_ms = 3000;
    url(u, sizeof u, "/unavailable/3600/long");
    double t0 = mono_s();
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), FL_EIO);
    CHECK(mono_s() - t0 < 3.0 + 10.0);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_KEPT);
    CHECK_EQ_U64(res.attempts[0], 1);
    CHECK_EQ_U64(res.status[0], 503);
    CHECK(strstr(res.detail[0], "time budget") != NULL);
    CHECK(strncmp(res.detail[1], "not attempted", 13) == 0);
    CHECK(exists(rs.path[0]) && exists(rs.path[1]));
    free_reports(&rs);
}

static void test_dropped(void) {
    /* Always dropped mid-body: kept; a later upload delivers it, once and intact. */
    reports_t rs;
    CHECK(make_reports(&rs, "drop", 1, 80, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    o.max_attempts = 2;
    char u[256];
    url(u, sizeof u, "/drop/1000/always");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), FL_EIO);
    CHECK_EQ_U64(res.outcome[0], FL_UPLOAD_KEPT);
    CHECK_EQ_U64(res.attempts[0], 2);
    CHECK(exists(rs.path[0]));
    req_t log[MAX_REQS];
    size_t n = read_log("/drop/1000/always", log, MAX_REQS);
    CHECK_EQ_U64(n, 2);
    for (size_t k = 0; k < n; k++) {
        CHECK_STREQ(log[k].status, "dropped");
        CHECK(log[k].len < rs.len[0]); /* the connection really was cut mid-body */
    }
    free_log(log, n);
    o = fast_options(&res);
    url(u, sizeof u, "/ok/after-drop");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), 0);
    check_delivered(&rs, "/ok/after-drop", false);
    free_reports(&rs);

    /* Dropped once: retried within the same call. */
    CHECK(make_reports(&rs, "drop-once", 1, 85, false));
    o = fast_options(&res);
    url(u, sizeof u, "/drop/1/once");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), 0);
    CHECK_EQ_U64(res.attempts[0], 2);
    check_delivered(&rs, "/drop/1/once", false);
    free_reports(&rs);
}

static void test_gzip_refused(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "no-gzip", 3, 90, false));
    results_t res;
    fl_upload_options o = fast_options(&res);
    o.gzip = true;
    char u[256];
    url(u, sizeof u, "/no-gzip/fallback");
    CHECK_EQ_U64(fl_upload_pending(rs.dir, u, &o, NULL), 0);
    CHECK_EQ_U64(res.attempts[0], 2); /* gzip refused with 415, then plain */
    CHECK_EQ_U64(res.attempts[1], 1); /* plain from then on */
    CHECK(!res.gzip[0] && !res.gzip[1]);
    req_t log[MAX_REQS];
    size_t n = read_log("/no-gzip/fallback", log, MAX_REQS);
    CHECK_EQ_U64(n, 4);
    if (n == 4) {
        CHECK_STREQ(log[0].status, "415");
        CHECK_STREQ(log[0].encoding, "gzip");
    }
    free_log(log, n);
    check_delivered(&rs, "/no-gzip/fallback", false);
    free_reports(&rs);
}

/* Two processes of the same app start together and both upload: every report arrives exactly
 * once, none is lost. */
static void test_two_processes(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "two", 6, 100, false));
    char u[256];
    url(u, sizeof u, "/slow/150/two");
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t kid[2];
    for (int k = 0; k < 2; k++) {
        fflush(stdout);
        kid[k] = fork();
        if (kid[k] == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) != 0) /* EOF: the parent let both go at once */
                _exit(99);
            fl_upload_options o = {.backoff_ms = 10, .time_budget_ms = 60000};
            fl_upload_summary sum;
            int err = fl_upload_pending(rs.dir, u, &o, &sum);
            /* exit status: 100 + reports sent, or 1 when the other process had the store */
            _exit(err == 0 ? 100 + (int)sum.sent : err == FL_EBUSY ? 1 : 2);
        }
    }
    close(go[0]);
    close(go[1]);
    int sent = 0, busy = 0;
    for (int k = 0; k < 2; k++) {
        int st;
        CHECK(waitpid(kid[k], &st, 0) == kid[k] && WIFEXITED(st));
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        CHECK(code == 1 || code >= 100);
        if (code >= 100)
            sent += code - 100;
        busy += code == 1;
    }
    CHECK_EQ_U64(sent, 6);
    printf("two processes: %d sent, %d found the store busy\n", sent, busy);
    check_delivered(&rs, "/slow/150/two", false);
    req_t log[MAX_REQS];
    size_t n = read_log("/slow/150/two", log, MAX_REQS);
    CHECK_EQ_U64(n, 6); /* nothing sent twice */
    free_log(log, n);
    free_reports(&rs);
}

static void test_cli(void) {
    reports_t rs;
    CHECK(make_reports(&rs, "cli", 2, 110, false));
    char u[256], tokfile[4400];
    url(u, sizeof u, "/ok/cli");
    snprintf(tokfile, sizeof tokfile, "%s/token", g_base);
    CHECK(sample_write_file(tokfile, TOKEN "\n", strlen(TOKEN) + 1) == 0);
    char *out, *err;
    char *argv1[] = {(char *)g_cli, "upload", "--gzip", "--token-file", tokfile, rs.dir, u, NULL};
    int st = sample_run(argv1, NULL, &out, &err);
    CHECK_EQ_U64(st, 0);
    CHECK(out && strstr(out, "upload: 2 sent, 0 kept, 0 quarantined") != NULL);
    for (size_t i = 0; out && i < rs.n; i++) {
        char line[200];
        snprintf(line, sizeof line, "sent        %s  %s  HTTP 200", rs.id[i], rs.path[i]);
        CHECK(strstr(out, line) != NULL);
    }
    if (st != 0)
        fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    free(out);
    free(err);
    check_delivered(&rs, "/ok/cli", true);
    req_t log[MAX_REQS];
    size_t n = read_log("/ok/cli", log, MAX_REQS);
    for (size_t k = 0; k < n; k++)
        CHECK_STREQ(log[k].auth, "Bearer " TOKEN);
    free_log(log, n);
    free_reports(&rs);

    /* Server down: one "kept" line per report, exit status 1. */
    CHECK(make_reports(&rs, "cli-down", 2, 120, false));
    snprintf(u, sizeof u, "http://127.0.0.1:%d/", dead_port());
    char *argv2[] = {(char *)g_cli, "upload", "--attempts", "1", "--budget", "20", rs.dir, u, NULL};
    st = sample_run(argv2, NULL, &out, &err);
    CHECK_EQ_U64(st, 1);
    CHECK(out && strstr(out, "upload: 0 sent, 2 kept, 0 quarantined") != NULL);
    CHECK(out && strstr(out, rs.id[0]) != NULL && strstr(out, rs.id[1]) != NULL);
    free(out);
    free(err);
    CHECK_EQ_U64(pending_count(rs.dir), 2);
    free_reports(&rs);

    /* Usage errors: exit status 2 and a message. */
    char *argv3[] = {(char *)g_cli, "upload", "--attempts", "0", "d", "http://x/", NULL};
    st = sample_run(argv3, NULL, &out, &err);
    CHECK_EQ_U64(st, 2);
    CHECK(err && strstr(err, "--attempts") != NULL);
    free(out);
    free(err);
    char *argv4[] = {(char *)g_cli, "upload", "only-a-dir", NULL};
    CHECK_EQ_U64(sample_run(argv4, NULL, &out, &err), 2);
    free(out);
    free(err);

    /* faultline-upload, which `faultline upload` runs, works alone too. */
    char exe[4400];
    snprintf(exe, sizeof exe, "%.*s/faultline-upload", (int)(strrchr(g_cli, '/') - g_cli), g_cli);
    CHECK(make_reports(&rs, "cli-direct", 1, 130, false));
    url(u, sizeof u, "/ok/cli-direct");
    char *argv5[] = {exe, rs.dir, u, NULL};
    CHECK_EQ_U64(sample_run(argv5, NULL, &out, &err), 0);
    CHECK(out && strstr(out, "upload: 1 sent, 0 kept, 0 quarantined") != NULL);
    free(out);
    free(err);
    check_delivered(&rs, "/ok/cli-direct", false);
    free_reports(&rs);

    /* A faultline without faultline-upload beside it or on PATH says what is missing. */
    char alone[4400];
    snprintf(alone, sizeof alone, "%s/alone", g_base);
    CHECK(mkdir(alone, 0700) == 0);
    snprintf(alone + strlen(alone), sizeof alone - strlen(alone), "/faultline");
    CHECK(link(g_cli, alone) == 0 || symlink(g_cli, alone) == 0);
    const char *path = getenv("PATH");
    char *saved = path ? strdup(path) : NULL;
    setenv("PATH", g_base, 1);
    char *argv6[] = {alone, "upload", "d", "http://127.0.0.1:9/", NULL};
    CHECK_EQ_U64(sample_run(argv6, NULL, &out, &err), 1);
    CHECK(err && strstr(err, "cannot run faultline-upload") != NULL &&
          strstr(err, "FL_BUILD_UPLOAD") != NULL);
    if (saved) setenv("PATH", saved, 1);
    free(saved);
    free(out);
    free(err);
}

static void test_arguments(void) {
    char missing[4400];
    snprintf(missing, sizeof missing, "%s/no-such-dir", g_base);
    fl_upload_summary sum;
    CHECK_EQ_U64(fl_upload_pending(missing, "http://127.0.0.1:9/", NULL, &sum), 0);
    CHECK_EQ_U64(sum.sent + sum.kept + sum.quarantined, 0);
    CHECK_EQ_U64(fl_upload_pending(g_base, "ftp://127.0.0.1/", NULL, NULL), FL_EINVAL);
    CHECK_EQ_U64(fl_upload_pending(g_base, NULL, NULL, NULL), FL_EINVAL);
    fl_upload_options o = {.bearer_token = "a\r\nX-Injected: 1"};
    CHECK_EQ_U64(fl_upload_pending(g_base, "http://127.0.0.1:9/", &o, NULL), FL_EINVAL);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PYTHON SERVER.PY FAULTLINE_CLI\n", argv[0]);
        return 2;
    }
    g_python = argv[1];
    g_server = argv[2];
    g_cli = argv[3];
    /* Loopback only: no proxy from the environment. */
    const char *proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                             "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++)
        unsetenv(proxies[i]);
    unsetenv("FAULTLINE_UPLOAD_TOKEN");
    if (!sample_tmpdir(g_base, sizeof g_base) || !server_start()) {
        fprintf(stderr, "cannot start the test server (%s %s)\n", g_python, g_server);
        return 1;
    }
    test_arguments();
    test_intact(false);
    test_intact(true);
    test_server_down();
    test_500_then_200();
    test_slow_server();
    test_413();
    test_retry_after();
    test_dropped();
    test_gzip_refused();
    test_two_processes();
    test_cli();
    server_stop();
    sample_rmtree(g_base);
    TEST_END();
}
