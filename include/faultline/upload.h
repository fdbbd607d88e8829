/* SPDX-License-Identifier: MIT */
/* faultline upload: pending reports sent over HTTP(S) (libfaultline-upload, which needs libcurl). */
#ifndef FAULTLINE_UPLOAD_H
#define FAULTLINE_UPLOAD_H

#include <faultline/faultline.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything here is NOT AS-SAFE. The protocol, retries and what is deleted when:
 * docs/next-start.md. */

#define FL_UPLOAD_DEFAULT_MAX_ATTEMPTS 4u
#define FL_UPLOAD_DEFAULT_BACKOFF_MS 500u
#define FL_UPLOAD_DEFAULT_MAX_BACKOFF_MS 30000u
#define FL_UPLOAD_DEFAULT_REQUEST_TIMEOUT_MS 30000u
#define FL_UPLOAD_DEFAULT_CONNECT_TIMEOUT_MS 10000u
#define FL_UPLOAD_DEFAULT_TIME_BUDGET_MS 120000u
#define FL_UPLOAD_MAX_ATTEMPTS_LIMIT 20u
#define FL_UPLOAD_DETAIL_MAX 256u /* bytes of fl_upload_result.detail, including the NUL */

enum {
    FL_UPLOAD_SENT = 1,        /* a 2xx answer: the report was deleted */
    FL_UPLOAD_KEPT = 2,        /* not delivered; still pending, tried again next time */
    FL_UPLOAD_QUARANTINED = 3  /* refused for good (4xx other than 408/429) or damaged: moved
                                * to <dir>/quarantine/ with the reason */
};

/* One report's outcome; the pointers are valid during the callback only. */
typedef struct fl_upload_result {
    const char *path;      /* the report file (gone when SENT, moved when QUARANTINED) */
    const char *id;        /* its report id, 32 hex digits: the Idempotency-Key sent */
    int outcome;           /* FL_UPLOAD_* */
    int error;             /* 0 when SENT; FL_EIO (network or server), FL_EBADDATA (damaged),
                            * or the store's error */
    long http_status;      /* the last answer's status code, 0 if none came */
    unsigned attempts;     /* requests made for this report */
    bool gzip;             /* the last request's body was gzip-encoded */
    bool truncated;        /* the report was cut short (sent all the same) */
    const char *detail;    /* one line: "HTTP 201", "HTTP 413: <start of the body>",
                            * "Failed to connect to ...", "not attempted: ..." */
} fl_upload_result;

typedef struct fl_upload_options {
    const char *bearer_token;      /* optional: sent as "Authorization: Bearer <token>" */
    /* Send bodies gzip-compressed (Content-Encoding: gzip). Off by default, because a server
     * that ignores Content-Encoding would store the compressed bytes and answer 2xx; on, a 415
     * answer makes this call resend that report, and all later ones, uncompressed. */
    bool gzip;
    unsigned max_attempts;         /* requests per report; 0 = default, at most the _LIMIT */
    unsigned backoff_ms;           /* wait before the 2nd request, doubled for each later one
                                    * (randomly 50-100% of it); 0 = default */
    unsigned max_backoff_ms;       /* 0 = default */
    unsigned request_timeout_ms;   /* one request, connecting included; 0 = default */
    unsigned connect_timeout_ms;   /* 0 = default */
    unsigned time_budget_ms;       /* the whole call, waits included; 0 = default */
    const char *user_agent;        /* NULL: "faultline/<version>" */
    const fl_store_options *store; /* caps and staleness for fl_store_open; NULL = defaults */
    /* Called once per pending report, in order (oldest first), as soon as its outcome is known. */
    void (*on_result)(const fl_upload_result *result, void *ctx);
    void *ctx;
    /* Optional: what to send for a report instead of its bytes (`faultline upload --sentry`
     * sends a Sentry envelope made from it). Gets the report's bytes and ctx; returns 0 with a
     * malloc'd body (freed by the caller), or a negative FL_E* code: FL_EBADDATA quarantines the
     * report, any other keeps it. */
    int (*make_body)(const uint8_t *report, size_t len, void *ctx, uint8_t **body, size_t *body_len);
    const char *content_type;      /* of the body; NULL: "application/x-protobuf" */
    const char *header;            /* one more header line, "Name: value" (no control
                                    * characters, else FL_EINVAL), or NULL */
} fl_upload_options;

typedef struct fl_upload_summary {
    size_t sent, kept, quarantined; /* outcomes of the pending reports */
    fl_store_stats store;           /* what opening the store did (stale files, damage, caps) */
} fl_upload_summary;

/* Opens the store in report_dir (fl_store_open: one uploader per directory, never waiting) and
 * POSTs each pending report, oldest first, to url (http or https): body the report's bytes,
 * Content-Type: application/x-protobuf, Idempotency-Key: <report id>. A report is deleted only
 * after a 2xx answer; on 408, 429, 5xx or a network error it is retried with exponential backoff
 * (at least Retry-After on 429 and 503) up to max_attempts, then kept, and the reports after it
 * are kept untried (the server is unwell; next start tries again); on any other 4xx it is
 * quarantined with the status and the start of the answer as reason. Nothing waits past the
 * time budget: what is left is kept. opts and summary may be NULL.
 * Returns 0 when every pending report was delivered (none: also 0; a missing report_dir too),
 * FL_EIO when at least one was kept or quarantined (the callback and summary say which; with
 * all of summary's counts 0 it is fl_store_open's: report_dir could not be read, errno says why),
 * FL_EBUSY when another process (or thread) holds the store, FL_EINVAL (a bad url or token),
 * FL_ENOSYS when libcurl cannot start, FL_ENOMEM, or fl_store_open's error. */
FL_API int fl_upload_pending(const char *report_dir, const char *url,
                             const fl_upload_options *opts, fl_upload_summary *summary);

#ifdef __cplusplus
}
#endif
#endif
