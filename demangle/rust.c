/* SPDX-License-Identifier: MIT */
/* Rust symbol names: the legacy scheme (_ZN...17h<hash>E) and v0 (_R..., RFC 2603), printed as c++filt prints them. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "demangle/demangle.h"
#include "faultline/faultline.h"

/* Limits. Real names nest a few dozen levels and take a few hundred steps; a hostile one stops at
 * these (the depth is binutils' own, so that both decline the same deep names). */
#define DEPTH_MAX 1024u      /* nested paths, types and generic arguments */
#define STEPS_MAX 200000u    /* grammar elements visited in all, backrefs followed included */
#define PUNY_MAX 256u        /* code points of one punycode identifier */
#define NAME_MAX_LEN 65536u  /* longer symbols are not demangled */

typedef struct dm {
    const char *s; /* the name after its prefix */
    size_t len;    /* ... up to its '.' suffix */
    size_t pos;
    char *out;
    size_t cap, n;
    bool full;     /* c++filt's verbose form: legacy hash, crate disambiguators, const types */
    bool err;
    int skip;      /* > 0: parse without printing (an impl's own path, the instantiating crate) */
    unsigned depth, steps;
    uint64_t lt_depth; /* lifetimes bound by enclosing for<...> */
} dm_t;

static void put(dm_t *d, const char *s, size_t len) {
    if (d->skip || d->err) return;
    for (size_t i = 0; i < len && d->n + 1 < d->cap; i++) d->out[d->n++] = s[i];
}

static void puts_(dm_t *d, const char *s) { put(d, s, strlen(s)); }

static void put_u64(dm_t *d, uint64_t v, unsigned base) {
    char b[24];
    size_t i = sizeof b;
    do {
        b[--i] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    put(d, b + i, sizeof b - i);
}

static char peek(const dm_t *d) { return d->pos < d->len ? d->s[d->pos] : 0; }

static char next(dm_t *d) {
    if (d->pos >= d->len) {
        d->err = true;
        return 0;
    }
    return d->s[d->pos++];
}

static bool eat(dm_t *d, char c) {
    if (peek(d) != c) return false;
    d->pos++;
    return true;
}

static bool enter(dm_t *d) {
    if (d->err) return false;
    if (++d->depth > DEPTH_MAX || ++d->steps > STEPS_MAX) {
        d->err = true;
        return false;
    }
    return true;
}

static int b62(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') return c - 'A' + 36;
    return -1;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* <base-62-number>: "_" is 0, "<digits>_" is their value + 1. Modulo 2^64, as binutils
 * computes it: a disambiguator is a 64-bit hash whose value only shows; backrefs, lifetimes and
 * binders are checked against what they index. */
static uint64_t int62(dm_t *d) {
    if (eat(d, '_')) return 0;
    uint64_t x = 0;
    for (;;) {
        int v = b62(peek(d));
        if (v < 0) break;
        d->pos++;
        x = x * 62 + (uint64_t)v;
    }
    if (!eat(d, '_')) {
        d->err = true;
        return 0;
    }
    return x + 1;
}

/* An optional tagged number ('s' disambiguator, 'G' binder): 0 when absent, else value + 1. */
static uint64_t opt_int62(dm_t *d, char tag) {
    if (!eat(d, tag)) return 0;
    return int62(d) + 1;
}

typedef struct ident {
    const char *ascii; /* NULL when empty */
    size_t alen;
    const char *puny;  /* NULL unless punycode */
    size_t plen;
} ident_t;

/* <identifier> without its disambiguator: ["u"] <decimal> ["_"] <bytes> (v0); <decimal>
 * <bytes> (legacy). */
static ident_t ident(dm_t *d, bool v0) {
    ident_t id = {0};
    bool puny = v0 && eat(d, 'u');
    char c = next(d);
    if (c < '0' || c > '9') {
        d->err = true;
        return id;
    }
    size_t len = (size_t)(c - '0');
    if (c != '0')
        while (peek(d) >= '0' && peek(d) <= '9') {
            len = len * 10 + (size_t)(next(d) - '0');
            if (len > d->len) { /* also keeps the sum below from overflowing */
                d->err = true;
                return id;
            }
        }
    if (v0) eat(d, '_');
    if (len > d->len - d->pos) {
        d->err = true;
        return id;
    }
    id.ascii = d->s + d->pos;
    id.alen = len;
    d->pos += len;
    if (puny) {
        /* The last '_' separates the ASCII part from the punycode deltas. */
        size_t k = len;
        while (k > 0 && id.ascii[k - 1] != '_') k--;
        id.puny = id.ascii + k;
        id.plen = len - k;
        id.alen = k ? k - 1 : 0;
        if (!id.plen) d->err = true;
    }
    if (!id.alen) id.ascii = NULL;
    return id;
}

static void put_utf8(dm_t *d, uint32_t cp) {
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    put(d, b, n);
}

/* RFC 3492 (Bootstring with punycode's parameters), '_' instead of '-' as the delimiter. */
static bool punycode(dm_t *d, const ident_t *id) {
    uint32_t cp[PUNY_MAX];
    size_t n = 0;
    for (size_t i = 0; i < id->alen; i++) {
        if (n == PUNY_MAX) return false;
        cp[n++] = (unsigned char)id->ascii[i];
    }
    uint64_t code = 128, i = 0, bias = 72;
    size_t p = 0;
    while (p < id->plen) {
        uint64_t old = i, w = 1;
        for (uint64_t k = 36;; k += 36) {
            if (p >= id->plen) return false;
            char c = id->puny[p++];
            uint64_t dg;
            if (c >= 'a' && c <= 'z') dg = (uint64_t)(c - 'a');
            else if (c >= '0' && c <= '9') dg = (uint64_t)(c - '0') + 26;
            else return false;
            if (dg > (UINT32_MAX - i) / w) return false;
            i += dg * w;
            uint64_t t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
            if (dg < t) break;
            if (w > UINT32_MAX / (36 - t)) return false;
            w *= 36 - t;
        }
        if (n == PUNY_MAX) return false;
        uint64_t delta = i - old, np = n + 1;
        delta = old == 0 ? delta / 700 : delta / 2;
        delta += delta / np;
        uint64_t k = 0;
        while (delta > 35 * 26 / 2) {
            delta /= 35;
            k += 36;
        }
        bias = k + 36 * delta / (delta + 38);
        code += i / np;
        i %= np;
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
        memmove(cp + i + 1, cp + i, (n - i) * sizeof cp[0]);
        cp[i++] = (uint32_t)code;
        n++;
    }
    for (size_t k = 0; k < n; k++) put_utf8(d, cp[k]);
    return true;
}

/* "$LT$" and the others of the legacy scheme; 0 if e does not start one. */
static char legacy_escape(const char *e, size_t len, size_t *used) {
    static const struct { const char *code; char c; } tab[] = {
        {"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'},
        {"GT", '>'}, {"LP", '('}, {"RP", ')'}, {"C", ','}};
    if (len < 3 || e[0] != '$') return 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        size_t k = strlen(tab[i].code);
        if (len >= k + 2 && memcmp(e + 1, tab[i].code, k) == 0 && e[1 + k] == '$') {
            *used = k + 2;
            return tab[i].c;
        }
    }
    /* $uXX$: printable ASCII only (what legacy names escape: {, }, ', ~, space, ...). */
    if (len >= 5 && e[1] == 'u' && e[4] == '$') {
        int hi = hexval(e[2]), lo = hexval(e[3]);
        if (hi < 0 || lo < 0 || hi > 7) return 0;
        char c = (char)(hi << 4 | lo);
        if (c < 0x20) return 0;
        *used = 5;
        return c;
    }
    return 0;
}

static void print_ident(dm_t *d, const ident_t *id, bool v0) {
    if (d->skip || d->err) return;
    if (v0) {
        if (!id->puny) {
            if (id->ascii) put(d, id->ascii, id->alen);
            return;
        }
        if (!punycode(d, id)) d->err = true; /* (binutils declines these names too) */
        return;
    }
    const char *p = id->ascii;
    size_t len = id->alen;
    /* The mangler puts '_' before a leading escape (identifiers start with XID_Start). */
    if (len >= 2 && p[0] == '_' && p[1] == '$') p++, len--;
    while (len > 0) {
        size_t k;
        if (p[0] == '$') {
            char c = legacy_escape(p, len, &k);
            if (!c) { /* not an escape: the rest as it is */
                put(d, p, len);
                return;
            }
            put(d, &c, 1);
        } else if (p[0] == '.') {
            k = len >= 2 && p[1] == '.' ? 2 : 1;
            put(d, k == 2 ? "::" : ".", k);
        } else {
            for (k = 0; k < len && p[k] != '$' && p[k] != '.'; k++) {}
            put(d, p, k);
        }
        p += k;
        len -= k;
    }
}

static void path(dm_t *d, bool in_value);
static void type(dm_t *d);
static void konst(dm_t *d);

static void lifetime(dm_t *d, uint64_t lt) {
    puts_(d, "'");
    if (lt == 0) {
        puts_(d, "_");
        return;
    }
    /* An index past the binders wraps around, as binutils computes it ('_18446744073709551615). */
    uint64_t depth = d->lt_depth - lt;
    if (depth < 26) {
        char c = (char)('a' + depth);
        put(d, &c, 1);
    } else {
        puts_(d, "_");
        put_u64(d, depth, 10);
    }
}

/* [<binder>]: "for<'a, 'b> ". */
static void binder(dm_t *d) {
    uint64_t n = opt_int62(d, 'G');
    if (d->err || n == 0) return;
    if (n > d->len) { /* more lifetimes than bytes: hostile */
        d->err = true;
        return;
    }
    puts_(d, "for<");
    for (uint64_t i = 0; i < n; i++) {
        if (i) puts_(d, ", ");
        d->lt_depth++;
        lifetime(d, 1);
    }
    puts_(d, "> ");
}

/* B<base-62-number>: runs fn at an earlier position (strictly before the tag) and returns. */
static bool backref(dm_t *d, size_t *saved) {
    size_t at = d->pos - 1; /* of the 'B' */
    uint64_t target = int62(d);
    /* Neither followed nor checked where nothing is printed (binutils does the same); followed
     * even once the output is full, so that whether a name is valid does not depend on cap
     * (STEPS_MAX bounds the work of names whose backrefs expand exponentially). */
    if (d->err || d->skip) return false;
    if (target >= at) {
        d->err = true;
        return false;
    }
    *saved = d->pos;
    d->pos = (size_t)target;
    return true;
}

static void generic_arg(dm_t *d) {
    if (eat(d, 'L')) {
        uint64_t lt = int62(d);
        if (!d->err) lifetime(d, lt);
    } else if (eat(d, 'K')) {
        konst(d);
    } else {
        type(d);
    }
}

static void generic_args(dm_t *d) {
    for (size_t i = 0; !d->err && !eat(d, 'E'); i++) {
        if (i) puts_(d, ", ");
        generic_arg(d);
    }
}

static void path(dm_t *d, bool in_value) {
    if (!enter(d)) return;
    char tag = next(d);
    switch (tag) {
    case 'C': { /* crate root */
        uint64_t dis = opt_int62(d, 's');
        ident_t id = ident(d, true);
        print_ident(d, &id, true);
        if (d->full && !d->err) {
            puts_(d, "[");
            put_u64(d, dis, 16);
            puts_(d, "]");
        }
        break;
    }
    case 'M':   /* <T> (inherent impl) */
    case 'X':   /* <T as Trait> (trait impl) */
    case 'Y': { /* <T as Trait> (trait definition) */
        if (tag != 'Y') {
            opt_int62(d, 's');
            d->skip++; /* the impl's own path is not shown */
            path(d, false);
            d->skip--;
        }
        puts_(d, "<");
        type(d);
        if (tag != 'M') {
            puts_(d, " as ");
            path(d, false);
        }
        puts_(d, ">");
        break;
    }
    case 'N': { /* nested: <path>::<name>, or a closure or shim */
        char ns = next(d);
        if (!((ns >= 'a' && ns <= 'z') || (ns >= 'A' && ns <= 'Z'))) {
            d->err = true;
            break;
        }
        path(d, in_value);
        uint64_t dis = opt_int62(d, 's');
        ident_t id = ident(d, true);
        if (d->err) break;
        if (ns >= 'A' && ns <= 'Z') {
            puts_(d, "::{");
            if (ns == 'C') puts_(d, "closure");
            else if (ns == 'S') puts_(d, "shim");
            else put(d, &ns, 1);
            if (id.ascii || id.puny) {
                puts_(d, ":");
                print_ident(d, &id, true);
            }
            puts_(d, "#");
            put_u64(d, dis, 10);
            puts_(d, "}");
        } else if (id.ascii || id.puny) {
            puts_(d, "::");
            print_ident(d, &id, true);
        }
        break;
    }
    case 'I': /* generic arguments */
        path(d, in_value);
        if (in_value) puts_(d, "::");
        puts_(d, "<");
        generic_args(d);
        puts_(d, ">");
        break;
    case 'B': {
        size_t saved;
        if (backref(d, &saved)) {
            path(d, in_value);
            d->pos = saved;
        }
        break;
    }
    default:
        d->err = true;
    }
    d->depth--;
}

static const char *basic_type(char c) {
    switch (c) {
    case 'a': return "i8";
    case 'b': return "bool";
    case 'c': return "char";
    case 'd': return "f64";
    case 'e': return "str";
    case 'f': return "f32";
    case 'h': return "u8";
    case 'i': return "isize";
    case 'j': return "usize";
    case 'l': return "i32";
    case 'm': return "u32";
    case 'n': return "i128";
    case 'o': return "u128";
    case 's': return "i16";
    case 't': return "u16";
    case 'u': return "()";
    case 'v': return "...";
    case 'x': return "i64";
    case 'y': return "u64";
    case 'z': return "!";
    case 'p': return "_";
    default: return NULL;
    }
}

/* fn(...) -> R with its binder, unsafe and ABI. */
static void fn_sig(dm_t *d) {
    uint64_t old = d->lt_depth;
    binder(d);
    if (eat(d, 'U')) puts_(d, "unsafe ");
    if (eat(d, 'K')) {
        ident_t abi = {0};
        if (eat(d, 'C')) {
            abi.ascii = "C";
            abi.alen = 1;
        } else {
            abi = ident(d, true);
            if (!d->err && (!abi.ascii || abi.puny)) d->err = true;
        }
        if (d->err) return;
        puts_(d, "extern \"");
        /* The mangler wrote '-' as '_' ("C-unwind" is C_unwind); the byte right after a '_'
         * is taken as it is, as binutils does. */
        bool after = false;
        for (size_t i = 0; i < abi.alen; i++) {
            bool sep = abi.ascii[i] == '_' && !after;
            put(d, sep ? "-" : abi.ascii + i, 1);
            after = sep;
        }
        puts_(d, "\" ");
    }
    puts_(d, "fn(");
    for (size_t i = 0; !d->err && !eat(d, 'E'); i++) {
        if (i) puts_(d, ", ");
        type(d);
    }
    puts_(d, ")");
    if (!eat(d, 'u')) {
        puts_(d, " -> ");
        type(d);
    }
    d->lt_depth = old;
}

/* One trait of a dyn type: the path, its generic arguments and associated type bindings inside
 * one pair of angle brackets. Returns whether the brackets are open. */
static bool path_open_generics(dm_t *d) {
    bool open = false;
    if (!enter(d)) return false;
    if (eat(d, 'B')) {
        size_t saved;
        if (backref(d, &saved)) {
            open = path_open_generics(d);
            d->pos = saved;
        }
    } else if (eat(d, 'I')) {
        path(d, false);
        puts_(d, "<");
        open = true;
        generic_args(d);
    } else {
        path(d, false);
    }
    d->depth--;
    return open;
}

static void dyn_trait(dm_t *d) {
    bool open = path_open_generics(d);
    while (!d->err && eat(d, 'p')) {
        puts_(d, open ? ", " : "<");
        open = true;
        ident_t id = ident(d, true);
        print_ident(d, &id, true);
        puts_(d, " = ");
        type(d);
    }
    if (open) puts_(d, ">");
}

static void type(dm_t *d) {
    if (!enter(d)) return;
    char tag = next(d);
    const char *basic = basic_type(tag);
    if (basic) {
        puts_(d, basic);
        d->depth--;
        return;
    }
    switch (tag) {
    case 'R': /* &T, &'a T */
    case 'Q': /* &mut T */
        puts_(d, "&");
        if (eat(d, 'L')) {
            uint64_t lt = int62(d);
            if (lt && !d->err) {
                lifetime(d, lt);
                puts_(d, " ");
            }
        }
        if (tag == 'Q') puts_(d, "mut ");
        type(d);
        break;
    case 'P':
    case 'O':
        puts_(d, tag == 'P' ? "*const " : "*mut ");
        type(d);
        break;
    case 'A': /* [T; N] */
    case 'S': /* [T] */
        puts_(d, "[");
        type(d);
        if (tag == 'A') {
            puts_(d, "; ");
            konst(d);
        }
        puts_(d, "]");
        break;
    case 'T': { /* tuple */
        puts_(d, "(");
        size_t i;
        for (i = 0; !d->err && !eat(d, 'E'); i++) {
            if (i) puts_(d, ", ");
            type(d);
        }
        if (i == 1) puts_(d, ",");
        puts_(d, ")");
        break;
    }
    case 'F':
        fn_sig(d);
        break;
    case 'D': { /* dyn Trait + Send + 'a */
        puts_(d, "dyn ");
        uint64_t old = d->lt_depth;
        binder(d);
        for (size_t i = 0; !d->err && !eat(d, 'E'); i++) {
            if (i) puts_(d, " + ");
            dyn_trait(d);
        }
        if (!eat(d, 'L')) {
            d->err = true;
            break;
        }
        uint64_t lt = int62(d);
        if (lt && !d->err) {
            puts_(d, " + ");
            lifetime(d, lt);
        }
        d->lt_depth = old;
        break;
    }
    case 'B': {
        size_t saved;
        if (backref(d, &saved)) {
            type(d);
            d->pos = saved;
        }
        break;
    }
    default: /* a path names the type */
        d->pos--;
        path(d, false);
    }
    d->depth--;
}

/* <hex-digits> "_" of a const: how many digits, and their value (its low 64 bits). */
static size_t hex_digits(dm_t *d, uint64_t *value, size_t *start) {
    *start = d->pos;
    *value = 0;
    size_t n = 0;
    for (;;) {
        char c = next(d);
        if (d->err) return 0;
        if (c == '_') break;
        int v = hexval(c);
        if (v < 0) {
            d->err = true;
            return 0;
        }
        *value = *value << 4 | (uint64_t)v;
        n++;
    }
    return n;
}

static void const_uint(dm_t *d) {
    uint64_t v;
    size_t start, n = hex_digits(d, &v, &start);
    if (d->err) return;
    if (n == 0) { /* zero is "0_" */
        d->err = true;
        return;
    }
    if (n > 16) {
        /* binutils prints these from the second digit on, '_' included; so do we. */
        puts_(d, "0x");
        put(d, d->s + start + 1, n);
    } else {
        put_u64(d, v, 10);
    }
}

static void konst(dm_t *d) {
    if (!enter(d)) return;
    if (eat(d, 'B')) {
        size_t saved;
        if (backref(d, &saved)) {
            konst(d);
            d->pos = saved;
        }
        d->depth--;
        return;
    }
    char tag = next(d);
    switch (tag) {
    case 'p':
        puts_(d, "_");
        d->depth--;
        return;
    case 'h': case 't': case 'm': case 'y': case 'o': case 'j':
        const_uint(d);
        break;
    case 'a': case 's': case 'l': case 'x': case 'n': case 'i':
        if (eat(d, 'n')) puts_(d, "-");
        const_uint(d);
        break;
    case 'b': {
        uint64_t v;
        size_t start, n = hex_digits(d, &v, &start);
        if (d->err) break;
        if (n != 1 || v > 1) d->err = true;
        else puts_(d, v ? "true" : "false");
        break;
    }
    case 'c': {
        uint64_t v;
        size_t start, n = hex_digits(d, &v, &start);
        if (d->err) break;
        if (n == 0 || n > 8) {
            d->err = true;
            break;
        }
        puts_(d, "'");
        if (v == '\t') puts_(d, "\\t");
        else if (v == '\r') puts_(d, "\\r");
        else if (v == '\n') puts_(d, "\\n");
        else if (v > ' ' && v < '~') {
            char c = (char)v;
            put(d, &c, 1);
        } else {
            puts_(d, "\\u{");
            put_u64(d, v, 16);
            puts_(d, "}");
        }
        puts_(d, "'");
        break;
    }
    default:
        d->err = true;
    }
    if (d->full && !d->err) {
        puts_(d, ": ");
        puts_(d, basic_type(tag));
    }
    d->depth--;
}

static bool legacy_hash(const ident_t *id) {
    if (id->alen != 17 || id->ascii[0] != 'h') return false;
    unsigned seen = 0;
    for (size_t i = 1; i < 17; i++) {
        int v = hexval(id->ascii[i]);
        if (v < 0) return false;
        seen |= 1u << v;
    }
    /* Real hashes use many digits; fewer than five distinct ones is more likely C++ (binutils' rule). */
    return __builtin_popcount(seen) >= 5;
}

static bool legacy(dm_t *d) {
    /* Ends in E, optionally followed by '.' suffixes ("E.llvm.123"). */
    size_t len = d->len;
    bool dot = true;
    while (len > 0 && !(dot && d->s[len - 1] == 'E')) {
        dot = d->s[len - 1] == '.';
        len--;
    }
    if (len == 0) return false;
    d->len = len - 1;
    if (d->len <= 19 || memcmp(d->s + d->len - 19, "17h", 3) != 0) return false;
    ident_t id;
    do {
        id = ident(d, false);
        if (d->err || !id.ascii) return false;
    } while (d->pos < d->len);
    if (!legacy_hash(&id)) return false;
    d->pos = 0;
    if (!d->full) d->len -= 19;
    do {
        if (d->pos > 0) puts_(d, "::");
        id = ident(d, false);
        print_ident(d, &id, false);
    } while (!d->err && d->pos < d->len);
    return !d->err;
}

int fl_demangle_rust(const char *sym, char *out, size_t cap, unsigned flags) {
    if (cap == 0) return FL_EINVAL;
    out[0] = 0;
    dm_t d = {.out = out, .cap = cap, .full = !(flags & FL_DEMANGLE_SIMPLIFIED)};
    bool v0;
    /* (Mach-O's extra '_' is the caller's to drop: fl_tool_symbol_link_name.) */
    if (strncmp(sym, "_R", 2) == 0) v0 = true, d.s = sym + 2;
    else if (strncmp(sym, "_ZN", 3) == 0) v0 = false, d.s = sym + 3;
    else return FL_ENOTFOUND;
    /* Rust names are ASCII: [A-Za-z0-9_], legacy also $ . : and @ in the suffix; a v0 name
     * ends at its first '.' (".llvm.123" and the like are not shown, as c++filt does). */
    size_t len = 0;
    for (const char *p = d.s; *p; p++) {
        if (len >= NAME_MAX_LEN) return FL_ENOTFOUND;
        if (v0 && *p == '.') break;
        len++;
        char c = *p;
        if (c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            continue;
        if (!v0 && (c == '$' || c == '.' || c == ':' || c == '@')) continue;
        return FL_ENOTFOUND;
    }
    d.len = len;
    if (v0) {
        /* Paths start with an uppercase tag; a decimal encoding version is not supported. */
        if (!(d.len > 0 && d.s[0] >= 'A' && d.s[0] <= 'Z')) return FL_ENOTFOUND;
        path(&d, true);
        if (!d.err && d.pos < d.len) { /* the instantiating crate: not shown */
            d.skip++;
            path(&d, false);
            d.skip--;
        }
        if (d.pos != d.len) d.err = true;
    } else if (!legacy(&d)) {
        d.err = true;
    }
    if (d.err) {
        out[0] = 0;
        return FL_ENOTFOUND;
    }
    out[d.n] = 0;
    return (int)d.n;
}
