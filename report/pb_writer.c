/* SPDX-License-Identifier: MIT */
/* Protobuf wire encoding into a caller's fixed buffer: no allocation, AS-SAFE. */
#include "report/report.h"

/* Crash-time code: no heap, no stdio. */
#pragma GCC poison malloc calloc realloc free printf fprintf snprintf sprintf

enum { WT_VARINT = 0, WT_LEN = 2 };

void fl_pb_init(fl_pb_t *pb, void *buf, size_t cap) {
    fl_memset(pb, 0, sizeof *pb);
    pb->buf = buf;
    pb->cap = cap;
}

static unsigned varint_size(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Encodes v at p (room for varint_size(v) bytes is the caller's concern). */
static void varint_at(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p = (uint8_t)v;
}

/* Claims n bytes at the end of the buffer, or marks the overflow (and stays overflowed, so
 * nothing after a dropped piece can be mistaken for the piece). */
static uint8_t *claim(fl_pb_t *pb, size_t n) {
    if (pb->overflow || n > pb->cap - pb->len) {
        pb->overflow = true;
        return NULL;
    }
    uint8_t *p = pb->buf + pb->len;
    pb->len += n;
    return p;
}

static void put_varint(fl_pb_t *pb, uint64_t v) {
    uint8_t *p = claim(pb, varint_size(v));
    if (p)
        varint_at(p, v);
}

static void put_tag(fl_pb_t *pb, unsigned field, unsigned wire_type) {
    put_varint(pb, (uint64_t)field << 3 | wire_type);
}

void fl_pb_varint(fl_pb_t *pb, unsigned field, uint64_t v) {
    if (v == 0)
        return;
    put_tag(pb, field, WT_VARINT);
    put_varint(pb, v);
}

void fl_pb_sint(fl_pb_t *pb, unsigned field, int64_t v) {
    /* int32/int64 (not sint*): negative values are sign-extended to 64 bits, 10 bytes. */
    fl_pb_varint(pb, field, (uint64_t)v);
}

void fl_pb_bytes(fl_pb_t *pb, unsigned field, const void *p, size_t n) {
    if (n == 0)
        return;
    put_tag(pb, field, WT_LEN);
    put_varint(pb, n);
    uint8_t *dst = claim(pb, n);
    if (dst)
        fl_memcpy(dst, p, n);
}

/* Copies p[0..n) to dst (unless NULL) with each invalid byte as U+FFFD; returns the length. */
static size_t utf8_clean(uint8_t *dst, const uint8_t *p, size_t n) {
    static const uint8_t fffd[3] = {0xef, 0xbf, 0xbd};
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = fl_utf8_seq((const char *)p + i, n - i, &c), m = k ? k : sizeof fffd;
        if (dst)
            fl_memcpy(dst + out, k ? p + i : fffd, m);
        out += m;
        i += k ? k : 1;
    }
    return out;
}

void fl_pb_stringn(fl_pb_t *pb, unsigned field, const char *s, size_t max) {
    if (!s)
        return;
    size_t n = fl_strnlen(s, max), out = utf8_clean(NULL, (const uint8_t *)s, n);
    if (out == n) { /* the common case: already valid */
        fl_pb_bytes(pb, field, s, n);
        return;
    }
    put_tag(pb, field, WT_LEN);
    put_varint(pb, out);
    uint8_t *dst = claim(pb, out);
    if (dst)
        utf8_clean(dst, (const uint8_t *)s, n);
}

void fl_pb_string(fl_pb_t *pb, unsigned field, const char *s) {
    /* Bounded by what could still fit: a longer string overflows anyway, and the bound keeps a
     * damaged string from being scanned far. */
    fl_pb_stringn(pb, field, s, pb->cap - pb->len + 1);
}

void fl_pb_begin(fl_pb_t *pb, unsigned field) {
    /* depth counts past FL_PB_DEPTH_MAX so that begin/end stay paired after an overflow. */
    if (pb->depth >= FL_PB_DEPTH_MAX)
        pb->overflow = true;
    else {
        put_tag(pb, field, WT_LEN);
        claim(pb, 1); /* the length, assumed < 128 until fl_pb_end knows better */
        pb->open[pb->depth] = pb->len;
    }
    pb->depth++;
}

void fl_pb_end(fl_pb_t *pb) {
    if (pb->depth == 0) {
        pb->overflow = true;
        return;
    }
    pb->depth--;
    if (pb->overflow)
        return;
    size_t start = pb->open[pb->depth];
    size_t body = pb->len - start;
    unsigned extra = varint_size(body) - 1;
    if (extra) {
        if (!claim(pb, extra))
            return;
        /* Shift the body forward to make room for the longer length; copy from the end because
         * the ranges overlap. */
        uint8_t *b = pb->buf + start;
        for (size_t i = body; i-- > 0;)
            b[i + extra] = b[i];
    }
    varint_at(pb->buf + start - 1, body);
}

void fl_pb_packed_varint(fl_pb_t *pb, uint64_t v) { put_varint(pb, v); }

uint64_t fl_pb_zigzag(int64_t v) {
    uint64_t u = (uint64_t)v; /* shifts on the unsigned form: no undefined behaviour */
    return u << 1 ^ (0 - (u >> 63));
}

void fl_pb_packed_zigzag(fl_pb_t *pb, int64_t v) { put_varint(pb, fl_pb_zigzag(v)); }

void fl_pb_packed_byte(fl_pb_t *pb, uint8_t b) {
    uint8_t *p = claim(pb, 1);
    if (p)
        *p = b;
}
