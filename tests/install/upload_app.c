/* SPDX-License-Identifier: MIT */
/* An app built against an installed libfaultline-upload: a snapshot, an upload that fails, kept. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <faultline/upload.h>

#include <stdio.h>
#include <stdlib.h>

/* usage: upload_app SCRATCH_DIR (a fresh report directory is made inside it) */
int main(int argc, char **argv) {
    char dir[4096];
    if (argc != 2 || snprintf(dir, sizeof dir, "%s/upload-XXXXXX", argv[1]) >= (int)sizeof dir ||
        mkdtemp(dir) == NULL) {
        fprintf(stderr, "usage: %s SCRATCH_DIR (an existing directory)\n", argv[0]);
        return 1;
    }
    fl_options opts = {.report_dir = dir, .app_name = "upload-app"};
    int err = fl_install(&opts);
    if (err == FL_OK)
        err = fl_snapshot("install test");
    fl_uninstall();
    if (err != FL_OK) {
        fprintf(stderr, "fl_install/fl_snapshot: %s\n", fl_strerror(err));
        return 1;
    }
    /* Port 1 on loopback: nothing listens, so the report must be kept. */
    fl_upload_options o = {.max_attempts = 1, .time_budget_ms = 10000};
    fl_upload_summary sum;
    err = fl_upload_pending(dir, "http://127.0.0.1:1/reports", &o, &sum);
    if (err != FL_EIO || sum.kept != 1 || sum.sent != 0) {
        fprintf(stderr, "fl_upload_pending: %s, %zu sent, %zu kept\n", fl_strerror(err), sum.sent,
                sum.kept);
        return 1;
    }
    fl_store *s;
    err = fl_store_open(dir, NULL, &s, NULL);
    size_t n = err == FL_OK ? fl_store_count(s) : 0;
    fl_store_close(s);
    if (n != 1) {
        fprintf(stderr, "fl_store_open: %s, %zu pending (1 expected)\n", fl_strerror(err), n);
        return 1;
    }
    printf("upload-app: ok (the report was kept)\n");
    return 0;
}
