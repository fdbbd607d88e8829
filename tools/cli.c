/* SPDX-License-Identifier: MIT */
/* Command-line plumbing shared by the faultline commands: usage, symbol options, formats. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: faultline show [--format text|apple|tombstone|json|sentry] [--json] [SYMBOL OPTIONS] REPORT\n"
    "       faultline symbolicate [--format FORMAT] [SYMBOL OPTIONS] REPORT\n"
    "       faultline symbolicate [--arch ARCH] [--lines] [--cache-dir DIR | --no-cache] FILE [ADDR...]\n"
    "       faultline triage [--json] [--frames N] [--no-progress] [SYMBOL OPTIONS] DIR|REPORT...\n"
    "       faultline list DIR\n"
    "       faultline inspect [--json] [--unwind] FILE\n"
    "       faultline unwind [--format FORMAT] [--max-frames N] [SYMBOL OPTIONS] STATE\n"
    "       faultline minidump [-o FILE] REPORT\n"
    "       faultline demangle [--simplified] [NAME...]\n"
    "       faultline upload [--gzip] [--token-file FILE] [options] DIR URL\n"
    "       faultline run [--report-dir DIR] [--signals LIST] [--no-inherit] [--preload LIB]\n"
    "                     [--format FORMAT] [SYMBOL OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "  show         print a report: --format text (default; faultline's Apple-like layout),\n"
    "               apple (Apple's crash log layout), tombstone (Android's), json (= --json),\n"
    "               sentry (a Sentry event, docs/interop.md)\n"
    "  symbolicate  REPORT (a file starting with the faultline magic): the report with\n"
    "               symbols, as JSON unless --format says otherwise (docs/symbolication.md).\n"
    "               FILE ADDR...: resolve file addresses (hex; read from stdin, one a line,\n"
    "               when none are given) to `symbol + offset`, one line each (\"??\" when\n"
    "               unknown); --lines appends \" (file:line)\" from DWARF; --arch picks the\n"
    "               slice of a fat file\n"
    "  triage       symbolicate every report of the directories (or the report files) and\n"
    "               group them by crash signature, largest group first (docs/triage.md);\n"
    "               --frames N: frames in a signature (default 3)\n"
    "  list         print the reports waiting in a report directory, oldest first\n"
    "  inspect      print an ELF or Mach-O (thin or fat) file's architecture(s), UUID or\n"
    "               build-id, segments and symbol count; --unwind adds each function's\n"
    "               compact-unwind rule (Mach-O)\n"
    "  unwind       walk a thread state captured elsewhere (registers, memory, images: a\n"
    "               JSON file, docs/unwind-state.md) with the crash path's walker and print\n"
    "               the frames as show does; a build walks states of its own architecture\n"
    "  minidump     convert a report to a Breakpad minidump (to FILE, or to standard output\n"
    "               when it is not a terminal) for minidump backends (docs/interop.md)\n"
    "  run          run PROGRAM with faultline attached (libfaultline-preload.so, no rebuild;\n"
    "               docs/preload.md); stdin, stdout, stderr and signals pass through; when it\n"
    "               dies of a crash, its report is printed to stderr (text unless --format);\n"
    "               exits with its status, or 128 + the signal that killed it. Reports stay\n"
    "               in --report-dir, else $FAULTLINE_REPORT_DIR, else\n"
    "               ~/.local/state/faultline/reports; --signals SEGV,ABRT,...: which signals\n"
    "               are caught (default: SEGV BUS ILL FPE ABRT TRAP SYS); --no-inherit: the\n"
    "               programs it starts run without faultline\n"
    "  demangle     print each NAME (or each line of stdin) demangled: Swift, Rust (as\n"
    "               c++filt prints them; --simplified: without hashes and crate\n"
    "               disambiguators, as text views show them) or C++; others unchanged\n"
    "  upload       POST each pending report of DIR to URL, oldest first; delete it after a\n"
    "               2xx; one line per report, then a summary; exit status 1 if any was kept\n"
    "               or quarantined (run `faultline upload` alone for its options; the bearer\n"
    "               token comes from --token-file or $FAULTLINE_UPLOAD_TOKEN)\n"
    "\n"
    "  SYMBOL OPTIONS\n"
    "    --symbols DIR    also look for symbol files in DIR (repeatable): ELF as\n"
    "                     DIR/.build-id/xx/rest.debug, DIR/<file name> and the\n"
    "                     .gnu_debuglink name; Mach-O as DIR/<file name>, DIR/<file name>.dSYM\n"
    "                     and any DIR/*.dSYM; only files whose build-id or LC_UUID matches are\n"
    "                     used. /usr/lib/debug ($FAULTLINE_DEBUG_DIR) is searched last.\n"
    "    --cache-dir DIR  keep symbol indexes in DIR (default $FAULTLINE_CACHE_DIR, else\n"
    "                     $XDG_CACHE_HOME/faultline, else ~/.cache/faultline)\n"
    "    --no-cache       neither read nor write the index cache\n"
    "    --perf-map FILE  names for frames of code a JIT wrote (in no image) from FILE, in\n"
    "                     perf's format (node --perf-basic-prof, the JVM's perf-map-agent);\n"
    "                     default /tmp/perf-PID.map when it is the crashed process's own\n"
    "                     (same host, this user, written while it ran); \"\" for none\n";

void fl_tool_usage_print(FILE *o) { fputs(usage_text, o); }

int fl_tool_usage(const char *msg) {
    if (msg) fprintf(stderr, "faultline: %s\n", msg);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

void fl_tool_read_error(const char *path, int err) {
    if (err == FL_EIO)
        fprintf(stderr, "faultline: cannot read %s: %s\n", fl_tool_clean(path), strerror(errno));
    else
        fprintf(stderr, "faultline: %s: %s\n", fl_tool_clean(path), fl_strerror(err));
}

bool fl_tool_cli_init(fl_tool_cli_t *c, int argc) {
    memset(c, 0, sizeof *c);
    c->dirs = calloc((size_t)argc + 1, sizeof *c->dirs);
    if (!c->dirs) return false;
    c->sym.dirs = c->dirs;
    c->sym.cache_dir = fl_tool_cache_dir(c->cache_buf, sizeof c->cache_buf);
    const char *sys = getenv("FAULTLINE_DEBUG_DIR");
    c->sym.system_dir = sys ? (sys[0] ? sys : NULL) : "/usr/lib/debug";
    return true;
}

void fl_tool_cli_free(fl_tool_cli_t *c) { free(c->dirs); }

int fl_tool_cli_option(fl_tool_cli_t *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *value = NULL;
    bool symbols = false, cache = false;
    if (strcmp(a, "--symbols") == 0 || strcmp(a, "--cache-dir") == 0) {
        if (*i + 1 == argc) {
            fprintf(stderr, "faultline: %s needs a directory\n", a);
            return -1;
        }
        symbols = a[2] == 's';
        cache = !symbols;
        value = argv[++*i];
    } else if (strncmp(a, "--symbols=", 10) == 0) {
        symbols = true;
        value = a + 10;
    } else if (strncmp(a, "--cache-dir=", 12) == 0) {
        cache = true;
        value = a + 12;
    } else if (strcmp(a, "--no-cache") == 0) {
        c->sym.cache_dir = NULL;
        return 1;
    } else if (strcmp(a, "--perf-map") == 0 || strncmp(a, "--perf-map=", 11) == 0) {
        if (a[10] == '=') {
            c->sym.perf_map = a + 11;
        } else if (*i + 1 == argc) {
            fprintf(stderr, "faultline: --perf-map needs a file (or \"\" for none)\n");
            return -1;
        } else {
            c->sym.perf_map = argv[++*i];
        }
        return 1;
    } else {
        return 0;
    }
    if (symbols) c->dirs[c->sym.ndirs++] = (char *)value;
    if (cache) c->sym.cache_dir = value;
    return 1;
}

int fl_tool_cli_format(int argc, char **argv, int *i, fl_tool_format_t *format) {
    const char *a = argv[*i];
    if (strcmp(a, "--json") == 0) {
        *format = FL_TOOL_FMT_JSON;
        return 1;
    }
    if (strcmp(a, "--format") != 0 && strncmp(a, "--format=", 9) != 0) return 0;
    const char *v = a[8] == '=' ? a + 9 : *i + 1 < argc ? argv[++*i] : NULL;
    if (!v || !fl_tool_format_parse(v, format)) {
        fprintf(stderr, "faultline: --format takes text, apple, tombstone, json or sentry\n");
        return -1;
    }
    return 1;
}

bool fl_tool_format_parse(const char *name, fl_tool_format_t *out) {
    static const struct {
        const char *name;
        fl_tool_format_t f;
    } names[] = {{"text", FL_TOOL_FMT_TEXT},
                 {"apple", FL_TOOL_FMT_APPLE},
                 {"tombstone", FL_TOOL_FMT_TOMBSTONE},
                 {"json", FL_TOOL_FMT_JSON},
                 {"sentry", FL_TOOL_FMT_SENTRY}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].f;
            return true;
        }
    return false;
}

void fl_tool_render(FILE *o, fl_tool_format_t f, const Faultline__Report *r, bool truncated,
                    fl_tool_symbolizer_t *s) {
    switch (f) {
    case FL_TOOL_FMT_APPLE: fl_tool_show_apple(o, r, truncated, s); break;
    case FL_TOOL_FMT_TOMBSTONE: fl_tool_show_tombstone(o, r, truncated, s); break;
    case FL_TOOL_FMT_JSON: fl_tool_show_json(o, r, truncated, s); break;
    case FL_TOOL_FMT_SENTRY: fl_tool_show_sentry(o, r, truncated, s); break;
    default: fl_tool_show_text(o, r, truncated, s); break;
    }
}

int fl_tool_render_file(FILE *o, fl_tool_format_t f, const char *path, const fl_tool_symopts_t *opts) {
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_read_file(path, &r, &truncated);
    if (err) {
        fl_tool_read_error(path, err);
        return err;
    }
    fl_tool_symstore_t *st = fl_tool_symstore_new(opts);
    fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, r) : NULL;
    err = sym ? 0 : FL_ENOMEM;
    if (sym) fl_tool_render(o, f, r, truncated, sym);
    else fprintf(stderr, "faultline: out of memory\n");
    fl_tool_symbolizer_free(sym);
    fl_tool_symstore_free(st);
    fl_report_free(r);
    return err;
}

bool fl_tool_is_report_file(const char *path) {
    static const char magic[11] = "\x0a\x09" "faultline";
    char buf[sizeof magic];
    uint64_t size;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &size);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return false;
    }
    bool yes = fread(buf, 1, sizeof buf, f) == sizeof buf && memcmp(buf, magic, sizeof buf) == 0;
    fclose(f);
    return yes;
}
