/* SPDX-License-Identifier: MIT */
/* Swift symbol names: the prefix decides the scheme; the parse and the printer do the rest. */
#include "demangle/demangle.h"
#include "demangle/swift_int.h"
#include "faultline/faultline.h"

#include <string.h>

/* The prefixes of Swift's schemes, longest first; old = the Swift 1-3 scheme. */
static const struct {
    const char *p;
    int old_fn; /* _T0: labels inside the argument tuple */
    int old;
} prefixes[] = {
    {"@__swiftmacro_", 0, 0}, {"_$s", 0, 0}, {"_$S", 0, 0}, {"_$e", 0, 0}, {"_T0", 1, 0},
    {"$s", 0, 0},             {"$S", 0, 0},  {"$e", 0, 0},  {"_T", 0, 1},
};

static int demangle(const char *sym, char *out, size_t cap, unsigned flags, int nested);

static long nested(const char *sym, char *out, size_t cap, int simplified) {
    return demangle(sym, out, cap, simplified ? FL_DEMANGLE_SIMPLIFIED : FL_DEMANGLE_FULL, 1);
}

int fl_demangle_swift(const char *sym, char *out, size_t cap, unsigned flags) {
    return demangle(sym, out, cap, flags, 0);
}

/* Parses and prints one name of a known scheme. Separate (and never inlined) so that names of
 * no Swift scheme do not pay for its large frame: the context (the node arena) lives on this
 * call's stack, so calls on different threads share nothing. */
static __attribute__((noinline)) int run(const char *body, size_t n, int old, int old_fn, char *out,
                                         size_t cap, unsigned flags, int is_nested) {
    sw_ctx c;
    c.s = body;
    c.n = n;
    c.pos = 0;
    c.fail = 0;
    c.old_fn_mangling = old_fn;
    c.nn = c.nc = c.sp = c.nsubst = c.nwords = c.npool = 0;
    int root = old ? sw_parse_old(&c) : sw_parse_new(&c);
    if (root < 0 || c.fail) return FL_ENOTFOUND;
    sw_opts o = {.simplified = (flags & FL_DEMANGLE_SIMPLIFIED) != 0, .nested = is_nested ? NULL : nested};
    /* all of out[] is written, so that out[w] below is the first byte cut */
    long len = sw_print(&c, root, out, cap, &o);
    if (len <= 0) {
        out[0] = 0;
        return FL_ENOTFOUND;
    }
    size_t w = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
    /* A cut never leaves half a UTF-8 sequence behind. */
    if (w < (size_t)len)
        while (w > 0 && ((unsigned char)out[w] & 0xC0) == 0x80) w--;
    out[w] = 0;
    return (int)w;
}

static int demangle(const char *sym, char *out, size_t cap, unsigned flags, int is_nested) {
    if (!cap) return FL_EINVAL;
    out[0] = 0;
    if (!sym) return FL_ENOTFOUND;
    size_t n = strnlen(sym, 4097);
    if (n > 4096) return FL_ENOTFOUND; /* no real symbol is that long; keeps the work bounded */
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i].p);
        if (n <= pl || strncmp(sym, prefixes[i].p, pl) != 0) continue;
        return run(sym + pl, n - pl, prefixes[i].old, prefixes[i].old_fn, out, cap, flags, is_nested);
    }
    return FL_ENOTFOUND;
}
