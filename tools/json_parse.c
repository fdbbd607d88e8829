/* SPDX-License-Identifier: MIT */
/* A bounded JSON reader for the CLI's input files (`faultline unwind STATE`): a tree of values. */
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"

typedef struct parser {
    const char *p, *end, *start;
    size_t nodes;
    char *err;
    size_t errcap;
    bool failed;
    const char *mark; /* where() last counted to, and the line and column there */
    unsigned mark_line, mark_col;
} parser_t;

/* Values are met in document order, so the count goes on from the last position asked for:
 * from the start each time, a document of n values cost n times its length (minutes for a
 * hostile file of a few MB). */
static void where(parser_t *ps, const char *at, unsigned *line, unsigned *col) {
    if (!ps->mark || at < ps->mark) ps->mark = ps->start, ps->mark_line = 1, ps->mark_col = 1;
    for (; ps->mark < at && ps->mark < ps->end; ps->mark++) {
        if (*ps->mark == '\n') ps->mark_line++, ps->mark_col = 1;
        else ps->mark_col++;
    }
    *line = ps->mark_line, *col = ps->mark_col;
}

static fl_tool_jv_t *fail(parser_t *ps, const char *at, const char *msg) {
    if (!ps->failed) {
        unsigned line, col;
        where(ps, at, &line, &col);
        snprintf(ps->err, ps->errcap, "line %u, column %u: %s", line, col, msg);
        ps->failed = true;
    }
    return NULL;
}

static void skip_ws(parser_t *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static fl_tool_jv_t *node(parser_t *ps, int kind, const char *at) {
    if (++ps->nodes > FL_TOOL_JSON_NODES_MAX) return fail(ps, at, "too many values");
    fl_tool_jv_t *v = calloc(1, sizeof *v);
    if (!v) return fail(ps, at, "out of memory");
    v->kind = kind;
    where(ps, at, &v->line, &v->col);
    return v;
}

int fl_tool_hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string literal at ps->p (the opening quote) into a new NUL-terminated buffer; \u escapes
 * become UTF-8 (a NUL escape is refused: strings are used as C strings). */
static char *string(parser_t *ps, size_t *len_out) {
    const char *at = ps->p++;
    size_t cap = 0;
    for (const char *q = ps->p; q < ps->end && *q != '"'; q++) {
        cap += *q == '\\' ? 4 : 1; /* an escape makes at most 3 bytes of its 2..6 */
        if (*q == '\\' && q + 1 < ps->end) q++;
    }
    char *out = malloc(cap + 1), *o = out;
    if (!out) return fail(ps, at, "out of memory"), NULL;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) return free(out), fail(ps, ps->p - 1, "control character in a string"), NULL;
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        if (ps->p >= ps->end) break;
        char e = *ps->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            *o++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        if (e != 'u' || ps->end - ps->p < 4)
            return free(out), fail(ps, ps->p - 2, "bad escape in a string"), NULL;
        unsigned u = 0;
        for (int i = 0; i < 4; i++) {
            int h = fl_tool_hex_digit(*ps->p++);
            if (h < 0) return free(out), fail(ps, ps->p - 1, "bad \\u escape"), NULL;
            u = u << 4 | (unsigned)h;
        }
        if (u == 0 || (u >= 0xd800 && u < 0xe000)) /* NUL; surrogates: not needed here */
            return free(out), fail(ps, ps->p - 6, "unsupported \\u escape"), NULL;
        if (u < 0x80) *o++ = (char)u;
        else if (u < 0x800) *o++ = (char)(0xc0 | u >> 6), *o++ = (char)(0x80 | (u & 0x3f));
        else *o++ = (char)(0xe0 | u >> 12), *o++ = (char)(0x80 | (u >> 6 & 0x3f)),
             *o++ = (char)(0x80 | (u & 0x3f));
    }
    if (ps->p >= ps->end) return free(out), fail(ps, at, "unterminated string"), NULL;
    ps->p++;
    *o = 0;
    *len_out = (size_t)(o - out);
    return out;
}

static fl_tool_jv_t *value(parser_t *ps, unsigned depth);

static bool push(parser_t *ps, fl_tool_jv_t *v, fl_tool_jv_t *item, char *key) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        fl_tool_jv_t **items = realloc(v->items, cap * sizeof *items);
        char **keys = items && v->kind == FL_TOOL_JSON_OBJECT ? realloc(v->keys, cap * sizeof *keys) : v->keys;
        if (items) v->items = items;
        if (keys) v->keys = keys;
        if (!items || (v->kind == FL_TOOL_JSON_OBJECT && !keys)) return fail(ps, ps->p, "out of memory"), false;
        v->cap = cap;
    }
    if (key) v->keys[v->n] = key;
    v->items[v->n++] = item;
    return true;
}

static fl_tool_jv_t *container(parser_t *ps, unsigned depth, bool object) {
    const char *at = ps->p++;
    if (depth >= FL_TOOL_JSON_DEPTH_MAX) return fail(ps, at, "nested too deeply");
    fl_tool_jv_t *v = node(ps, object ? FL_TOOL_JSON_OBJECT : FL_TOOL_JSON_ARRAY, at);
    if (!v) return NULL;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (object) {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"') goto bad;
            if (!(key = string(ps, &klen))) goto out;
            for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->keys[i], key) == 0) {
                    free(key);
                    fail(ps, ps->p, "duplicate key");
                    goto out;
                }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                goto bad;
            }
            ps->p++;
        }
        fl_tool_jv_t *item = value(ps, depth + 1);
        if (!item) {
            free(key);
            goto out;
        }
        if (!push(ps, v, item, key)) {
            free(key);
            fl_tool_json_free(item);
            goto out;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
            ps->p++;
            return v;
        }
        goto bad;
    }
bad:
    fail(ps, ps->p, object ? "expected a string key, ':', ',' or '}'" : "expected ',' or ']'");
out:
    fl_tool_json_free(v);
    return NULL;
}

static fl_tool_jv_t *value(parser_t *ps, unsigned depth) {
    skip_ws(ps);
    const char *at = ps->p;
    if (ps->p >= ps->end) return fail(ps, at, "expected a value");
    char c = *ps->p;
    if (c == '{' || c == '[') return container(ps, depth, c == '{');
    if (c == '"') {
        fl_tool_jv_t *v = node(ps, FL_TOOL_JSON_STRING, at);
        if (v && !(v->str = string(ps, &v->len))) {
            fl_tool_json_free(v);
            return NULL;
        }
        return v;
    }
    static const struct { const char *word; int kind; bool b; } words[] = {
        {"true", FL_TOOL_JSON_BOOL, true}, {"false", FL_TOOL_JSON_BOOL, false},
        {"null", FL_TOOL_JSON_NULL, false}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].word, n) == 0) {
            ps->p += n;
            fl_tool_jv_t *v = node(ps, words[i].kind, at);
            if (v) v->b = words[i].b;
            return v;
        }
    }
    /* A number: kept as its text (callers want exact 64-bit integers, not doubles). */
    const char *q = ps->p;
    if (q < ps->end && *q == '-') q++;
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
                           *q == '+' || *q == '-'))
        q++;
    if (q == ps->p || (q == ps->p + 1 && *ps->p == '-')) return fail(ps, at, "expected a value");
    fl_tool_jv_t *v = node(ps, FL_TOOL_JSON_NUMBER, at);
    if (!v) return NULL;
    v->len = (size_t)(q - ps->p);
    if (!(v->str = malloc(v->len + 1))) {
        fl_tool_json_free(v);
        return fail(ps, at, "out of memory");
    }
    memcpy(v->str, ps->p, v->len);
    v->str[v->len] = 0;
    ps->p = q;
    return v;
}

fl_tool_jv_t *fl_tool_json_parse(const char *text, size_t len, char *err, size_t errcap) {
    parser_t ps = {.p = text, .end = text + len, .start = text, .err = err, .errcap = errcap};
    if (errcap) err[0] = 0;
    fl_tool_jv_t *v = value(&ps, 0);
    if (!v) return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fl_tool_json_free(v);
        return fail(&ps, ps.p, "text after the document");
    }
    return v;
}

void fl_tool_json_free(fl_tool_jv_t *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) { /* depth is bounded by FL_TOOL_JSON_DEPTH_MAX */
        fl_tool_json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const fl_tool_jv_t *fl_tool_json_get(const fl_tool_jv_t *obj, const char *key) {
    if (!obj || obj->kind != FL_TOOL_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

int fl_tool_json_u64(const fl_tool_jv_t *v, uint64_t *out) {
    if (!v || (v->kind != FL_TOOL_JSON_STRING && v->kind != FL_TOOL_JSON_NUMBER)) return FL_EINVAL;
    const char *s = v->str;
    bool hex = v->kind == FL_TOOL_JSON_STRING;
    if (hex && (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])) return FL_EINVAL;
    if (hex) s += 2;
    if (!*s) return FL_EINVAL;
    uint64_t x = 0;
    for (; *s; s++) {
        int d = hex ? fl_tool_hex_digit(*s) : (*s >= '0' && *s <= '9' ? *s - '0' : -1);
        unsigned base = hex ? 16u : 10u;
        if (d < 0 || x > (UINT64_MAX - (uint64_t)d) / base) return FL_EINVAL;
        x = x * base + (uint64_t)d;
    }
    *out = x;
    return 0;
}
