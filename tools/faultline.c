/* SPDX-License-Identifier: MIT */
/* The faultline command-line tool: show, list, symbolicate and triage crash reports; inspect and symbolicate binaries; demangle names. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "tools/tool.h"

#define EXIT_USAGE 2

static int usage(const char *msg) { return fl_tool_usage(msg); }

/* `show` and `symbolicate REPORT`: one report in one format. */
static int render_report(int argc, char **argv, fl_tool_format_t format, const char *cmd) {
    const char *path = NULL;
    fl_tool_cli_t c;
    if (!fl_tool_cli_init(&c, argc)) return 1;
    int rc = EXIT_USAGE;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int k = fl_tool_cli_option(&c, argc, argv, &i);
        if (k == 0) k = fl_tool_cli_format(argc, argv, &i, &format);
        if (k < 0) goto usage;
        if (k > 0) continue;
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "faultline: unknown option %s\n", fl_tool_clean(a));
            goto usage;
        } else if (path) {
            fprintf(stderr, "faultline: %s takes one report\n", cmd);
            goto usage;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "faultline: %s needs a report file\n", cmd);
        goto usage;
    }
    rc = fl_tool_render_file(stdout, format, path, &c.sym) == 0 &&
                 fflush(stdout) == 0 && !ferror(stdout)
             ? 0
             : 1;
    fl_tool_cli_free(&c);
    return rc;
usage:
    fl_tool_cli_free(&c);
    return usage(NULL);
}

static int cmd_show(int argc, char **argv) {
    return render_report(argc, argv, FL_TOOL_FMT_TEXT, "show");
}

/* Whether path starts with a report's first bytes: field 1, length 9, "faultline". */
/* `symbolicate REPORT` when the first operand is a report, else `symbolicate FILE ADDR...`. */
static int cmd_symbolicate(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1]) {
            /* Skip option values, so that the first operand is found. */
            if (strcmp(a, "--symbols") == 0 || strcmp(a, "--cache-dir") == 0 ||
                strcmp(a, "--format") == 0 || strcmp(a, "--arch") == 0)
                i++;
            continue;
        }
        if (fl_tool_is_report_file(a)) return render_report(argc, argv, FL_TOOL_FMT_JSON, "symbolicate");
        break;
    }
    return fl_tool_cmd_symbolicate_addrs(argc, argv);
}

static int cmd_list(int argc, char **argv) {
    if (argc != 1)
        return usage("list takes one directory");
    char **paths;
    size_t n;
    /* (fl_list_reports takes a missing directory for an empty one, as an application's first
     * start should; a path typed here names one that must exist) */
    struct stat st;
    int err = stat(argv[0], &st) != 0 ? FL_EIO : !S_ISDIR(st.st_mode) ? FL_ENOTFOUND : 0;
    if (err == FL_ENOTFOUND) errno = ENOTDIR, err = FL_EIO;
    if (!err) err = fl_list_reports(argv[0], &paths, &n);
    if (err) {
        fprintf(stderr, "faultline: cannot list %s: %s\n", fl_tool_clean(argv[0]),
                err == FL_EIO ? strerror(errno) : fl_strerror(err));
        return 1;
    }
    if (!n) fprintf(stderr, "faultline: no reports in %s\n", fl_tool_clean(argv[0]));
    for (size_t i = 0; i < n; i++) {
        Faultline__Report *r;
        bool truncated;
        err = fl_report_read_file(paths[i], &r, &truncated);
        if (err) {
            printf("%s  (%s)\n", fl_tool_clean(paths[i]),
                   err == FL_EIO ? strerror(errno) : fl_strerror(err));
            continue;
        }
        const Faultline__Header *h = r->header;
        const Faultline__Signal *s = r->signal;
        char t[40] = "", sig[80] = "-";
        if (h)
            fl_tool_fmt_time(t, sizeof t, h->time_unix_ns);
        if (s)
            snprintf(sig, sizeof sig, "%s (%s)", s->name[0] ? fl_tool_clean(s->name) : "?",
                     s->code_name[0] ? fl_tool_clean(s->code_name) : "?");
        else if (h && h->kind == FAULTLINE__HEADER__KIND__KIND_SNAPSHOT)
            snprintf(sig, sizeof sig, "snapshot");
        else if (fl_tool_is_hang(r) && r->hang)
            snprintf(sig, sizeof sig, "hang (%" PRIu64 ".%03" PRIu64 " s%s)",
                     r->hang->duration_ns / 1000000000u, r->hang->duration_ns / 1000000u % 1000u,
                     r->hang->recovered ? ", recovered" : "");
        else if (fl_tool_is_hang(r))
            snprintf(sig, sizeof sig, "hang");
        /* sig through the cleaner again: snprintf's cut may have split a sequence. */
        printf("%s  %s  %s  %s [%" PRId32 "]%s\n", fl_tool_clean(paths[i]), t[0] ? t : "-",
               fl_tool_clean(sig), h && h->process_path[0] ? fl_tool_clean(h->process_path) : "?",
               h ? h->pid : 0, truncated ? "  (truncated)" : "");
        fl_report_free(r);
    }
    fl_free_report_list(paths, n);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    fl_file_map_own_sigbus(); /* the files it maps may shrink under it (base/mapfile.c) */
    if (argc < 2)
        return usage(NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fl_tool_usage_print(stdout);
        return 0;
    }
    if (strcmp(cmd, "show") == 0)
        return cmd_show(argc - 2, argv + 2);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 2, argv + 2);
    if (strcmp(cmd, "inspect") == 0)
        return fl_tool_cmd_inspect(argc - 2, argv + 2);
    if (strcmp(cmd, "unwind") == 0)
        return fl_tool_cmd_unwind(argc - 2, argv + 2);
    if (strcmp(cmd, "symbolicate") == 0)
        return cmd_symbolicate(argc - 2, argv + 2);
    if (strcmp(cmd, "triage") == 0)
        return fl_tool_cmd_triage(argc - 2, argv + 2);
    if (strcmp(cmd, "minidump") == 0)
        return fl_tool_cmd_minidump(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return fl_tool_cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "demangle") == 0)
        return fl_tool_cmd_demangle(argc - 2, argv + 2);
    if (strcmp(cmd, "upload") == 0)
        return fl_tool_upload_exec(argv[0], argc - 2, argv + 2);
    fprintf(stderr, "faultline: unknown command %s\n", fl_tool_clean(cmd));
    return usage(NULL);
}
