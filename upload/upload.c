/* SPDX-License-Identifier: MIT */
/* fl_upload_pending: each pending report POSTed with libcurl, retried within bounds. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zlib.h>

#include "faultline/upload.h"

#define RESPONSE_KEEP 160u          /* bytes of an answer's body kept for the reason */
#define RETRY_AFTER_MAX_S 86400     /* a larger Retry-After is taken as this (a day) */
#define MS_PER_S 1000ull
#define NS_PER_MS 1000000ull

#ifndef FL_VERSION_STRING
#define FL_VERSION_STRING "0"
#endif

typedef struct response {
    char body[RESPONSE_KEEP + 1];
    size_t body_len;
    long retry_after_ms; /* -1: no Retry-After header */
} response_t;

typedef struct upload {
    CURL *curl;
    const char *url;
    fl_upload_options o;
    uint64_t deadline_ms; /* CLOCK_MONOTONIC */
    bool gzip;            /* still compressing (cleared by a 415) */
    uint64_t rng;
    char errbuf[CURL_ERROR_SIZE];
    char auth[64 + 4096];
    char content_type[128];
} upload_t;

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init;

/* libcurl's global set-up is not reference counted: done once, never undone. */
static void curl_init_once(void) { g_curl_init = curl_global_init(CURL_GLOBAL_DEFAULT); }

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * MS_PER_S + (uint64_t)ts.tv_nsec / NS_PER_MS;
}

static uint64_t remaining_ms(const upload_t *u) {
    uint64_t now = now_ms();
    return now < u->deadline_ms ? u->deadline_ms - now : 0;
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / MS_PER_S), (long)(ms % MS_PER_S * NS_PER_MS)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static uint64_t next_random(upload_t *u) { /* xorshift64: jitter only */
    u->rng ^= u->rng << 13;
    u->rng ^= u->rng >> 7;
    u->rng ^= u->rng << 17;
    return u->rng;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx) {
    response_t *r = ctx;
    size_t len = size * n, room = RESPONSE_KEEP - r->body_len;
    memcpy(r->body + r->body_len, p, len < room ? len : room);
    r->body_len += len < room ? len : room;
    return len; /* the rest is read and dropped: the connection stays reusable */
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3). */
static size_t on_header(char *p, size_t size, size_t n, void *ctx) {
    response_t *r = ctx;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len <= sizeof name - 1 || strncasecmp(p, name, sizeof name - 1) != 0)
        return len;
    char v[128];
    size_t i = sizeof name - 1, k = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    while (i < len && p[i] != '\r' && p[i] != '\n' && k + 1 < sizeof v)
        v[k++] = p[i++];
    v[k] = '\0';
    long s = -1;
    if (k && isdigit((unsigned char)v[0])) {
        char *end;
        unsigned long x = strtoul(v, &end, 10);
        if (*end == '\0')
            s = x > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (long)x;
    } else if (k) {
        time_t t = curl_getdate(v, NULL);
        if (t != -1) {
            time_t now = time(NULL);
            s = t <= now ? 0 : t - now > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (long)(t - now);
        }
    }
    if (s >= 0)
        r->retry_after_ms = s * (long)MS_PER_S;
    return len;
}

static int gzip_bytes(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16 /* gzip wrapper */, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return FL_ENOMEM;
    uLong cap = deflateBound(&z, (uLong)n);
    uint8_t *buf = malloc(cap);
    int r = Z_MEM_ERROR;
    if (buf) {
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)n; /* n <= 64 MiB (the store's limit) */
        z.next_out = buf;
        z.avail_out = (uInt)cap;
        r = deflate(&z, Z_FINISH);
    }
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(buf);
        return r == Z_MEM_ERROR ? FL_ENOMEM : FL_EIO;
    }
    *out = buf;
    *out_len = z.total_out;
    return 0;
}

/* One POST. Returns the HTTP status, or 0 with u->errbuf saying why no answer came. */
static long post(upload_t *u, const char *id, const uint8_t *body, size_t len, bool gzip,
                 response_t *resp) {
    memset(resp, 0, sizeof *resp);
    resp->retry_after_ms = -1;
    u->errbuf[0] = '\0';
    char key[64];
    snprintf(key, sizeof key, "Idempotency-Key: %s", id);
    struct curl_slist *h = NULL, *t;
    const char *lines[] = {u->content_type, key,
                           "Expect:", /* no 100-continue round trip */
                           gzip ? "Content-Encoding: gzip" : NULL,
                           u->auth[0] ? u->auth : NULL, u->o.header};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        if (!lines[i])
            continue;
        if (!(t = curl_slist_append(h, lines[i]))) {
            curl_slist_free_all(h);
            snprintf(u->errbuf, sizeof u->errbuf, "out of memory");
            return 0;
        }
        h = t;
    }
    uint64_t left = remaining_ms(u);
    uint64_t timeout = u->o.request_timeout_ms < left ? u->o.request_timeout_ms : left;
    uint64_t connect = u->o.connect_timeout_ms < timeout ? u->o.connect_timeout_ms : timeout;
    CURL *c = u->curl;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout ? timeout : 1));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect ? connect : 1));
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status == 0) {
        if (!u->errbuf[0])
            snprintf(u->errbuf, sizeof u->errbuf, "%s", curl_easy_strerror(rc));
        return 0;
    }
    return status;
}

/* "HTTP 413: <first line of the body>" */
static void describe(char *out, size_t cap, long status, const response_t *resp) {
    char text[RESPONSE_KEEP + 1];
    size_t k = 0;
    for (size_t i = 0; i < resp->body_len && resp->body[i] != '\n' && resp->body[i] != '\r'; i++)
        text[k++] = isprint((unsigned char)resp->body[i]) ? resp->body[i] : '?';
    text[k] = '\0';
    snprintf(out, cap, "HTTP %ld%s%s", status, k ? ": " : "", text);
}

/* dst = a + b + c, cut to cap: details and reasons are one bounded line. */
static void join(char *dst, size_t cap, const char *a, const char *b, const char *c) {
    size_t n = 0;
    for (const char *parts[] = {a, b, c}, **p = parts; p < parts + 3; p++)
        for (const char *q = *p; *q && n + 1 < cap; q++)
            dst[n++] = *q;
    dst[n] = '\0';
}

static bool retryable(long status) {
    return status == 0 || status == 408 || status == 429 || (status >= 500 && status <= 599);
}

/* The wait before request attempt+1: backoff_ms * 2^(attempt-1), capped, 50-100% of it at
 * random (clients started together do not retry together), and at least Retry-After. */
static uint64_t wait_ms(upload_t *u, unsigned attempt, long status, const response_t *resp) {
    uint64_t base = u->o.backoff_ms;
    for (unsigned i = 1; i < attempt && base < u->o.max_backoff_ms; i++)
        base *= 2;
    if (base > u->o.max_backoff_ms)
        base = u->o.max_backoff_ms;
    uint64_t w = base / 2 + (base ? next_random(u) % (base - base / 2 + 1) : 0);
    if ((status == 429 || status == 503) && resp->retry_after_ms >= 0 &&
        (uint64_t)resp->retry_after_ms > w)
        w = (uint64_t)resp->retry_after_ms;
    return w;
}

/* Sends report i; fills r (detail in detail) and returns whether the reports after it may be
 * tried (false: the server failed this one for good, or time is up). */
static bool send_one(upload_t *u, fl_store *s, size_t i, fl_upload_result *r, char *detail,
                     size_t cap) {
    const fl_store_report *rep = fl_store_get(s, i);
    uint8_t *raw, *packed = NULL;
    size_t raw_len, packed_len = 0;
    int err = fl_store_read(s, i, &raw, &raw_len);
    if (err) {
        r->outcome = err == FL_EBADDATA ? FL_UPLOAD_QUARANTINED : FL_UPLOAD_KEPT;
        r->error = err;
        snprintf(detail, cap, "%s: %s", err == FL_EBADDATA ? "damaged, quarantined"
                                                           : "cannot read", fl_strerror(err));
        return true;
    }
    r->truncated = rep->truncated;
    if (u->o.make_body) {
        uint8_t *body = NULL;
        size_t body_len = 0;
        err = u->o.make_body(raw, raw_len, u->o.ctx, &body, &body_len);
        free(raw);
        if (err) {
            r->error = err;
            r->outcome = FL_UPLOAD_KEPT;
            snprintf(detail, cap, "cannot make the request's body: %s", fl_strerror(err));
            if (err == FL_EBADDATA && fl_store_quarantine(s, i, detail) == 0)
                r->outcome = FL_UPLOAD_QUARANTINED;
            return true;
        }
        raw = body;
        raw_len = body_len;
    }
    bool go_on = true;
    response_t resp;
    /* failures: answers that count against max_attempts (a 415 to gzip does not). */
    for (unsigned failures = 0;;) {
        if (u->gzip && !packed && gzip_bytes(raw, raw_len, &packed, &packed_len) != 0)
            u->gzip = false; /* cannot compress here: send it as it is */
        bool gz = u->gzip && packed;
        r->attempts++;
        r->gzip = gz;
        long status = post(u, rep->id, gz ? packed : raw, gz ? packed_len : raw_len, gz, &resp);
        r->http_status = status;
        if (status)
            describe(detail, cap, status, &resp);
        else
            snprintf(detail, cap, "%s", u->errbuf);
        if (status >= 200 && status <= 299) {
            err = fl_store_remove(s, i);
            r->outcome = FL_UPLOAD_SENT;
            r->error = 0;
            if (err && err != FL_ENOTFOUND) /* delivered; the server dedups a resend by its key */
                snprintf(detail + strlen(detail), cap - strlen(detail),
                         " (delivered, but not deleted: %s)", fl_strerror(err));
            break;
        }
        r->outcome = FL_UPLOAD_KEPT;
        r->error = FL_EIO;
        if (status == 415 && gz) { /* the server does not take gzip: the same again, plain */
            u->gzip = false;
            if (remaining_ms(u) > 0)
                continue;
            go_on = false;
            break;
        }
        if (status >= 400 && status <= 499 && !retryable(status)) {
            char reason[FL_STORE_REASON_MAX];
            char by[FL_STORE_REASON_MAX];
            join(by, sizeof by, "refused by ", u->url, ": ");
            join(reason, sizeof reason, by, detail, "");
            err = fl_store_quarantine(s, i, reason);
            if (err == 0)
                r->outcome = FL_UPLOAD_QUARANTINED;
            else
                snprintf(detail + strlen(detail), cap - strlen(detail),
                         " (could not be quarantined: %s)", fl_strerror(err));
            break;
        }
        /* 1xx and 3xx (redirects are not followed: a POST must not silently change its
         * target) are not retried either. */
        if (!retryable(status) || ++failures >= u->o.max_attempts) {
            go_on = false;
            break;
        }
        uint64_t w = wait_ms(u, failures, status, &resp);
        if (w >= remaining_ms(u)) {
            size_t l = strlen(detail);
            snprintf(detail + l, cap - l, "; retry in %llu ms would pass the time budget",
                     (unsigned long long)w);
            go_on = false;
            break;
        }
        sleep_ms(w);
    }
    free(raw);
    free(packed);
    return go_on;
}

static bool token_ok(const char *t) {
    for (; *t; t++)
        if (*t == '\r' || *t == '\n' || (unsigned char)*t < 0x20)
            return false;
    return true;
}

int fl_upload_pending(const char *report_dir, const char *url, const fl_upload_options *opts,
                      fl_upload_summary *summary) {
    fl_upload_summary sum;
    memset(&sum, 0, sizeof sum);
    if (summary)
        *summary = sum;
    if (!report_dir || !url ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return FL_EINVAL;
    upload_t u;
    memset(&u, 0, sizeof u);
    u.url = url;
    if (opts)
        u.o = *opts;
    if (u.o.bearer_token && (!token_ok(u.o.bearer_token) ||
                             strlen(u.o.bearer_token) + 32 > sizeof u.auth))
        return FL_EINVAL;
    if ((u.o.header && !token_ok(u.o.header)) ||
        (u.o.content_type && (!token_ok(u.o.content_type) ||
                              strlen(u.o.content_type) + 16 > sizeof u.content_type)))
        return FL_EINVAL;
    snprintf(u.content_type, sizeof u.content_type, "Content-Type: %s",
             u.o.content_type ? u.o.content_type : "application/x-protobuf");
    if (!u.o.max_attempts)
        u.o.max_attempts = FL_UPLOAD_DEFAULT_MAX_ATTEMPTS;
    if (u.o.max_attempts > FL_UPLOAD_MAX_ATTEMPTS_LIMIT)
        u.o.max_attempts = FL_UPLOAD_MAX_ATTEMPTS_LIMIT;
    if (!u.o.backoff_ms)
        u.o.backoff_ms = FL_UPLOAD_DEFAULT_BACKOFF_MS;
    if (!u.o.max_backoff_ms)
        u.o.max_backoff_ms = FL_UPLOAD_DEFAULT_MAX_BACKOFF_MS;
    if (!u.o.request_timeout_ms)
        u.o.request_timeout_ms = FL_UPLOAD_DEFAULT_REQUEST_TIMEOUT_MS;
    if (!u.o.connect_timeout_ms)
        u.o.connect_timeout_ms = FL_UPLOAD_DEFAULT_CONNECT_TIMEOUT_MS;
    if (!u.o.time_budget_ms)
        u.o.time_budget_ms = FL_UPLOAD_DEFAULT_TIME_BUDGET_MS;
    u.deadline_ms = now_ms() + u.o.time_budget_ms;
    u.gzip = u.o.gzip;
    u.rng = now_ms() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
    if (u.o.bearer_token)
        snprintf(u.auth, sizeof u.auth, "Authorization: Bearer %s", u.o.bearer_token);

    fl_store *s;
    int err = fl_store_open(report_dir, u.o.store, &s, &sum.store);
    if (err == FL_ENOTFOUND)
        return 0;
    if (err)
        return err;
    if (summary)
        summary->store = sum.store;
    if (fl_store_count(s) == 0) {
        fl_store_close(s);
        return 0;
    }
    pthread_once(&g_curl_once, curl_init_once);
    if (g_curl_init != CURLE_OK || !(u.curl = curl_easy_init())) {
        fl_store_close(s);
        return FL_ENOSYS;
    }
    CURL *c = u.curl;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_USERAGENT,
                     u.o.user_agent ? u.o.user_agent : "faultline/" FL_VERSION_STRING);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, u.errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);

    bool go_on = true;
    char stop[FL_UPLOAD_DETAIL_MAX] = "";
    for (size_t i = 0; i < fl_store_count(s); i++) {
        const fl_store_report *rep = fl_store_get(s, i);
        char detail[FL_UPLOAD_DETAIL_MAX] = "";
        fl_upload_result r = {.path = rep->path, .id = rep->id, .detail = detail,
                              .truncated = rep->truncated};
        if (go_on && remaining_ms(&u) == 0) {
            go_on = false;
            snprintf(stop, sizeof stop, "the time budget (%u ms) is used up", u.o.time_budget_ms);
        }
        if (go_on) {
            go_on = send_one(&u, s, i, &r, detail, sizeof detail);
            if (!go_on)
                join(stop, sizeof stop, "an earlier report failed (", detail, ")");
        } else {
            r.outcome = FL_UPLOAD_KEPT;
            r.error = FL_EIO;
            join(detail, sizeof detail, "not attempted: ", stop, "");
        }
        sum.sent += r.outcome == FL_UPLOAD_SENT;
        sum.kept += r.outcome == FL_UPLOAD_KEPT;
        sum.quarantined += r.outcome == FL_UPLOAD_QUARANTINED;
        if (u.o.on_result)
            u.o.on_result(&r, u.o.ctx);
    }
    curl_easy_cleanup(c);
    fl_store_close(s);
    if (summary)
        *summary = sum;
    return sum.kept || sum.quarantined ? FL_EIO : 0;
}
