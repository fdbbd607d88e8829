/* SPDX-License-Identifier: MIT */
/* A minimal app built against an installed faultline: install, annotate, list, uninstall. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <faultline/faultline.h>

#include <stdio.h>
#include <stdlib.h>

/* usage: app SCRATCH_DIR (a fresh report directory is made inside it) */
int main(int argc, char **argv) {
    char dir[4096];
    if (argc != 2 || snprintf(dir, sizeof dir, "%s/reports-XXXXXX", argv[1]) >= (int)sizeof dir ||
        mkdtemp(dir) == NULL) {
        fprintf(stderr, "usage: %s SCRATCH_DIR (an existing directory)\n", argv[0]);
        return 1;
    }
    fl_options opts = {.report_dir = dir, .app_name = "install-app", .app_version = "1.0"};
    int err = fl_install(&opts);
    if (err != FL_OK) {
        fprintf(stderr, "fl_install: %s\n", fl_strerror(err));
        return 1;
    }
    const char *msg = fl_strerror(FL_EINVAL);
    if (msg == NULL || msg[0] == '\0') {
        fprintf(stderr, "fl_strerror gave no text\n");
        return 1;
    }
    err = fl_annotate("phase", "install-test");
    if (err != FL_OK) {
        fprintf(stderr, "fl_annotate: %s\n", fl_strerror(err));
        return 1;
    }
    char **paths = NULL;
    size_t count = 1;
    err = fl_list_reports(dir, &paths, &count);
    if (err != FL_OK || count != 0) {
        fprintf(stderr, "fl_list_reports: %s, %zu reports\n", fl_strerror(err), count);
        return 1;
    }
    fl_free_report_list(paths, count);
    fl_uninstall();
    printf("install-app: ok (%s)\n", msg);
    return 0;
}
