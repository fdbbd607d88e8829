/* SPDX-License-Identifier: MIT */
/* String, memory and number helpers that never call into libc's locale or stdio. */
#include "base/base.h"

size_t fl_strlen(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

size_t fl_strnlen(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n]) n++;
    return n;
}

size_t fl_utf8_seq(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *p = (const unsigned char *)s;
    if (!n) return 0;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    /* Length and lead bits of the sequence a lead byte announces. */
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (!len || len > n) return 0;
    uint32_t v = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80) return 0;
        v = v << 6 | (p[k] & 0x3f);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
        (len == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *cp = v;
    return len;
}

size_t fl_clean_term(char *dst, size_t cap, const char *s) {
    size_t i = 0;
    for (const char *p = s; p && *p;) {
        uint32_t c = 0;
        size_t n = fl_utf8_seq(p, fl_strnlen(p, 4), &c);
        /* A sequence is kept whole or not at all, so that the cut cannot leave half of one. */
        if (i + (n ? n : 1) >= cap) break;
        /* C0, DEL and C1 (U+0080..U+009F; U+009B is CSI) drive terminals, and so does a byte
         * of invalid UTF-8 on one that does not decode UTF-8 (a raw 0x9b is CSI there too). */
        if (!n || c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
            dst[i++] = '?';
        } else {
            fl_memcpy(dst + i, p, n);
            i += n;
        }
        p += n ? n : 1;
    }
    if (cap) dst[i] = '\0';
    return i;
}

int fl_strcmp(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return (unsigned char)*a - (unsigned char)*b;
}

size_t fl_strlcpy(char *dst, const char *src, size_t cap) {
    size_t n = fl_strlen(src);
    if (cap) {
        size_t c = n < cap - 1 ? n : cap - 1;
        fl_memcpy(dst, src, c);
        dst[c] = 0;
    }
    return n;
}

/* libc's memcpy and memset, which are async-signal-safe (POSIX.1-2008 TC2) and fast; byte loops
 * here cost the walker more than the rest of a compact-unwind step (emulated on Darwin code). */
void *fl_memcpy(void *dst, const void *src, size_t n) { return __builtin_memcpy(dst, src, n); }

void *fl_memset(void *dst, int c, size_t n) { return __builtin_memset(dst, c, n); }

int fl_memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] - y[i];
    return 0;
}

static size_t fmt_base(char *buf, size_t cap, uint64_t v, unsigned base) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (n + 1 > cap) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return n;
}

size_t fl_fmt_u64(char *buf, size_t cap, uint64_t v) { return fmt_base(buf, cap, v, 10); }
size_t fl_fmt_hex(char *buf, size_t cap, uint64_t v) { return fmt_base(buf, cap, v, 16); }

size_t fl_fmt_i64(char *buf, size_t cap, int64_t v) {
    if (v >= 0) return fl_fmt_u64(buf, cap, (uint64_t)v);
    if (cap < 2) return 0;
    buf[0] = '-';
    size_t n = fl_fmt_u64(buf + 1, cap - 1, (uint64_t)0 - (uint64_t)v);
    return n ? n + 1 : 0;
}

bool fl_parse_hex(const char **s, const char *end, uint64_t *out) {
    const char *p = *s;
    uint64_t v = 0;
    unsigned digits = 0;
    for (; p < end && digits < 16; p++, digits++) {
        char c = *p;
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else break;
        v = v << 4 | d;
    }
    if (!digits) return false;
    *s = p;
    *out = v;
    return true;
}

void fl_strbuf_init(fl_strbuf_t *sb, char *buf, size_t cap) {
    sb->buf = buf;
    sb->cap = cap;
    sb->len = 0;
    if (cap) buf[0] = 0;
}

void fl_strbuf_puts(fl_strbuf_t *sb, const char *s) {
    if (!sb->cap) return;
    while (*s && sb->len + 1 < sb->cap) sb->buf[sb->len++] = *s++;
    sb->buf[sb->len] = 0;
}

void fl_strbuf_putu(fl_strbuf_t *sb, uint64_t v) {
    char tmp[24];
    fl_fmt_u64(tmp, sizeof tmp, v);
    fl_strbuf_puts(sb, tmp);
}

void fl_strbuf_putx(fl_strbuf_t *sb, uint64_t v) {
    char tmp[24];
    fl_fmt_hex(tmp, sizeof tmp, v);
    fl_strbuf_puts(sb, "0x");
    fl_strbuf_puts(sb, tmp);
}
