/* SPDX-License-Identifier: MIT */
/* The faultline command-line tool: show and list crash reports. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "tools/tool.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: faultline show [--json] [--symbols DIR]... REPORT\n"
    "       faultline list DIR\n"
    "\n"
    "  show     print a report (text in the style of Apple's crash logs, or JSON)\n"
    "           --symbols DIR  also look for symbol files in DIR: DIR/.build-id/xx/rest.debug\n"
    "                          and DIR/<file name>; only files whose build-id matches are used\n"
    "  list     print the reports waiting in a report directory, oldest first\n";

static int usage(const char *msg) {
    if (msg)
        fprintf(stderr, "faultline: %s\n", msg);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

/* Prints why a report could not be read; errno explains FL_EIO. */
static void read_error(const char *path, int err) {
    if (err == FL_EIO)
        fprintf(stderr, "faultline: cannot read %s: %s\n", path, strerror(errno));
    else
        fprintf(stderr, "faultline: %s: %s\n", path, fl_strerror(err));
}

static int cmd_show(int argc, char **argv) {
    bool json = false;
    const char *path = NULL;
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    size_t ndirs = 0;
    if (!dirs)
        return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--symbols") == 0) {
            if (++i == argc) {
                free(dirs);
                return usage("--symbols needs a directory");
            }
            dirs[ndirs++] = argv[i];
        } else if (strncmp(a, "--symbols=", 10) == 0) {
            dirs[ndirs++] = (char *)a + 10;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "faultline: unknown option %s\n", a);
            free(dirs);
            return usage(NULL);
        } else if (path) {
            free(dirs);
            return usage("show takes one report");
        } else {
            path = a;
        }
    }
    if (!path) {
        free(dirs);
        return usage("show needs a report file");
    }
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_read_file(path, &r, &truncated);
    if (err) {
        read_error(path, err);
        free(dirs);
        return 1;
    }
    fl_tool_symbolizer_t *sym = fl_tool_symbolizer_new(r, dirs, ndirs);
    int rc = 1;
    if (!sym) {
        fprintf(stderr, "faultline: out of memory\n");
    } else {
        if (json)
            fl_tool_show_json(stdout, r, truncated, sym);
        else
            fl_tool_show_text(stdout, r, truncated, sym);
        rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
        fl_tool_symbolizer_free(sym);
    }
    fl_report_free(r);
    free(dirs);
    return rc;
}

static int cmd_list(int argc, char **argv) {
    if (argc != 1)
        return usage("list takes one directory");
    char **paths;
    size_t n;
    int err = fl_list_reports(argv[0], &paths, &n);
    if (err) {
        fprintf(stderr, "faultline: cannot list %s: %s\n", argv[0],
                err == FL_EIO ? strerror(errno) : fl_strerror(err));
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        Faultline__Report *r;
        bool truncated;
        err = fl_report_read_file(paths[i], &r, &truncated);
        if (err) {
            printf("%s  (%s)\n", paths[i], err == FL_EIO ? strerror(errno) : fl_strerror(err));
            continue;
        }
        const Faultline__Header *h = r->header;
        const Faultline__Signal *s = r->signal;
        char t[40] = "", sig[80] = "-";
        if (h)
            fl_tool_fmt_time(t, sizeof t, h->time_unix_ns);
        if (s)
            snprintf(sig, sizeof sig, "%s (%s)", s->name[0] ? s->name : "?",
                     s->code_name[0] ? s->code_name : "?");
        else if (h && h->kind == FAULTLINE__HEADER__KIND__KIND_SNAPSHOT)
            snprintf(sig, sizeof sig, "snapshot");
        printf("%s  %s  %s  %s [%" PRId32 "]%s\n", paths[i], t[0] ? t : "-", sig,
               h && h->process_path[0] ? h->process_path : "?", h ? h->pid : 0,
               truncated ? "  (truncated)" : "");
        fl_report_free(r);
    }
    fl_free_report_list(paths, n);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return usage(NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "show") == 0)
        return cmd_show(argc - 2, argv + 2);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 2, argv + 2);
    fprintf(stderr, "faultline: unknown command %s\n", cmd);
    return usage(NULL);
}
