/* SPDX-License-Identifier: MIT */
/* Which demangler a symbol's name goes to: Swift, Rust, else Itanium C++. */
#include <stdio.h>
#include <string.h>

#include "tools/tool.h"

bool fl_tool_demangle(const char *name, unsigned flags, char *buf, size_t cap) {
    if (cap == 0) return false;
    /* Each declines what is not of its scheme; legacy Rust names are also valid C++ (_ZN...E),
     * and Rust's reading, which requires the 17h<hash> segment, is the one meant. */
    if (fl_demangle_swift(name, buf, cap, flags) >= 0) return true;
    if (fl_demangle_rust(name, buf, cap, flags) >= 0) return true;
    return fl_tool_demangle_cxx(name, buf, cap);
}

const char *fl_tool_terminate_type(const Faultline__Report *r, char *buf, size_t cap) {
    const char *t = r->terminate_type;
    if (!t || !t[0] || cap == 0) return NULL;
    /* A type's mangled name is a typeinfo name's symbol without "_ZTS": demangled as one, the
     * demangler's words for it taken off. */
    static const char k_prefix[] = "typeinfo name for ";
    char sym[FL_TOOL_NAME_MAX], out[FL_TOOL_NAME_MAX];
    snprintf(sym, sizeof sym, "_ZTS%s", t);
    if (fl_tool_demangle_cxx(sym, out, sizeof out) &&
        strncmp(out, k_prefix, sizeof k_prefix - 1) == 0)
        snprintf(buf, cap, "%s", out + sizeof k_prefix - 1);
    else
        snprintf(buf, cap, "%s", t);
    return buf;
}

static void print_name(const char *name, unsigned flags) {
    char buf[FL_TOOL_NAME_MAX];
    puts(fl_tool_clean(fl_tool_symbol_display(name, flags, buf, sizeof buf)));
}

int fl_tool_cmd_demangle(int argc, char **argv) {
    unsigned flags = FL_DEMANGLE_FULL;
    int i = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (strcmp(argv[i], "--simplified") == 0) flags = FL_DEMANGLE_SIMPLIFIED;
        else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else return fl_tool_usage("demangle: unknown option");
    }
    if (i < argc) {
        for (; i < argc; i++) print_name(argv[i], flags);
    } else {
        /* One name a line; a line longer than the buffer is shown in pieces, unchanged. */
        static char line[1 << 16];
        while (fgets(line, sizeof line, stdin)) {
            size_t n = strlen(line);
            if (n && line[n - 1] == '\n') line[--n] = 0;
            if (n && line[n - 1] == '\r') line[--n] = 0;
            print_name(line, flags);
        }
        if (ferror(stdin)) {
            fprintf(stderr, "faultline: demangle: cannot read stdin\n");
            return 1;
        }
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
