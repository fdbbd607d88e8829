/* SPDX-License-Identifier: MIT */
/* `faultline upload DIR URL`: fl_upload_pending, one line per report and a summary. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultline/upload.h"
#include "tools/tool.h"

#define TOKEN_MAX 4000u

static const char upload_usage[] =
    "usage: faultline upload [--gzip] [--token-file FILE] [--attempts N] [--timeout SECONDS]\n"
    "                        [--budget SECONDS] [--max-reports N] [--max-bytes N] DIR URL\n"
    "       faultline upload --sentry DSN [options] DIR   (each report as a Sentry envelope)\n";

static int bad(const char *msg, const char *arg) {
    fprintf(stderr, "faultline upload: %s%s%s\n%s", msg, arg ? " " : "",
            arg ? fl_tool_clean(arg) : "", upload_usage);
    return 2;
}

static bool parse_u32(const char *s, unsigned long max, unsigned *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return false;
    *out = (unsigned)v;
    return true;
}

/* The token's first line (a trailing newline is how files end). */
static bool read_token(const char *path, char *buf, size_t cap) {
    uint64_t size;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &size);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return false;
    }
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return ok && buf[0];
}

/* fl_upload_options.make_body for --sentry: the report as an envelope (ctx: the DSN). */
static int sentry_body(const uint8_t *report, size_t len, void *ctx, uint8_t **body, size_t *body_len) {
    return fl_tool_sentry_envelope(report, len, ctx, body, body_len);
}

static void print_result(const fl_upload_result *r, void *ctx) {
    (void)ctx;
    const char *what = r->outcome == FL_UPLOAD_SENT          ? "sent"
                       : r->outcome == FL_UPLOAD_QUARANTINED ? "quarantined"
                                                             : "kept";
    printf("%-11s %s  %s  %s", what, fl_tool_clean(r->id), fl_tool_clean(r->path),
           fl_tool_clean(r->detail));
    if (r->attempts)
        printf(" (%u request%s%s)", r->attempts, r->attempts == 1 ? "" : "s",
               r->gzip ? ", gzip" : "");
    printf("%s\n", r->truncated ? " [truncated report]" : "");
    fflush(stdout);
}

int fl_tool_cmd_upload(int argc, char **argv) {
    fl_upload_options o = {.on_result = print_result};
    fl_store_options so = {0};
    const char *pos[2];
    int npos = 0;
    unsigned secs;
    static char token[TOKEN_MAX];
    const char *dsn = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--gzip") == 0) {
            o.gzip = true;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            if (!v)
                return bad("missing value after", a);
            i++;
            if (strcmp(a, "--sentry") == 0) {
                dsn = v;
            } else if (strcmp(a, "--token-file") == 0) {
                if (!read_token(v, token, sizeof token))
                    return bad("cannot read a token from", v);
                o.bearer_token = token;
            } else if (strcmp(a, "--attempts") == 0) {
                if (!parse_u32(v, FL_UPLOAD_MAX_ATTEMPTS_LIMIT, &o.max_attempts) || !o.max_attempts)
                    return bad("--attempts takes 1 to 20, not", v);
            } else if (strcmp(a, "--timeout") == 0) {
                if (!parse_u32(v, 3600, &secs) || !secs)
                    return bad("--timeout takes 1 to 3600 seconds, not", v);
                o.request_timeout_ms = secs * 1000u;
            } else if (strcmp(a, "--budget") == 0) {
                if (!parse_u32(v, 86400, &secs) || !secs)
                    return bad("--budget takes 1 to 86400 seconds, not", v);
                o.time_budget_ms = secs * 1000u;
            } else if (strcmp(a, "--max-reports") == 0) {
                if (!parse_u32(v, 1000000, &so.max_reports) || !so.max_reports)
                    return bad("--max-reports takes a positive count, not", v);
            } else if (strcmp(a, "--max-bytes") == 0) {
                unsigned long long b;
                char *end;
                errno = 0;
                b = strtoull(v, &end, 10);
                if (errno || end == v || *end || v[0] == '-' || !b)
                    return bad("--max-bytes takes a positive byte count, not", v);
                so.max_bytes = b;
            } else {
                return bad("unknown option", a);
            }
            continue;
        }
        if (npos == 2)
            return bad("too many arguments:", a);
        pos[npos++] = a;
    }
    /* Sentry: the URL and the authentication come from the DSN; the body is an envelope. */
    static char url[4096], auth[4096];
    if (dsn) {
        if (npos != 1) return bad("--sentry DSN takes the report directory alone", NULL);
        if (o.bearer_token) return bad("--sentry authenticates with the DSN's key, not", "--token-file");
        if (fl_tool_sentry_dsn(dsn, url, sizeof url, auth, sizeof auth) != 0)
            return bad("not a Sentry DSN (http[s]://KEY@HOST[/PATH]/PROJECT):", dsn);
        pos[npos++] = url;
        o.make_body = sentry_body;
        o.ctx = (void *)dsn;
        o.content_type = "application/x-sentry-envelope";
        o.header = auth;
    }
    if (npos != 2)
        return bad("needs a report directory and a URL", NULL);
    if (!o.bearer_token && !dsn) {
        const char *env = getenv("FAULTLINE_UPLOAD_TOKEN");
        if (env && env[0])
            o.bearer_token = env;
    }
    o.store = &so;

    fl_upload_summary sum;
    int err = fl_upload_pending(pos[0], pos[1], &o, &sum);
    const fl_store_stats *st = &sum.store;
    bool ran = sum.sent + sum.kept + sum.quarantined > 0;
    if (err && !(err == FL_EIO && ran)) {
        if (err == FL_EBUSY)
            fprintf(stderr, "faultline upload: another process is using %s; nothing sent\n",
                    fl_tool_clean(pos[0]));
        else if (err == FL_EINVAL)
            fprintf(stderr, "faultline upload: %s is not an http:// or https:// URL, or the "
                            "token has control characters\n", fl_tool_clean(pos[1]));
        else
            fprintf(stderr, "faultline upload: %s: %s%s%s\n", fl_tool_clean(pos[0]),
                    fl_strerror(err), err == FL_EIO ? ": " : "",
                    err == FL_EIO ? strerror(errno) : "");
        return 1;
    }
    printf("upload: %zu sent, %zu kept, %zu quarantined", sum.sent, sum.kept, sum.quarantined);
    printf(" (store: %zu damaged report%s quarantined, %zu pruned by the caps, %zu temporary "
           "file%s recovered, %zu being written, %zu unreadable)\n",
           st->quarantined, st->quarantined == 1 ? "" : "s", st->pruned, st->tmp_recovered,
           st->tmp_recovered == 1 ? "" : "s", st->tmp_in_progress, st->unreadable);
    return fflush(stdout) == 0 && err == 0 ? 0 : 1;
}
