/* SPDX-License-Identifier: MIT */
/* The memory-reader abstraction: typed reads and the buffer reader used for files and tests. */
#include "base/base.h"

int fl_read_cstr(const fl_reader_t *r, uint64_t addr, char *dst, size_t cap) {
    if (!cap) return FL_EINVAL;
    /* Read in small chunks that never cross a page boundary, so a string ending just before an
     * unmapped page is still read in full. */
    size_t n = 0;
    while (n + 1 < cap) {
        uint64_t a;
        if (!fl_add_u64(addr, n, &a)) break;
        size_t chunk = 64 - (size_t)(a & 63);
        if (chunk > cap - 1 - n) chunk = cap - 1 - n;
        int e = fl_read(r, a, dst + n, chunk);
        if (e) {
            dst[n] = 0;
            return n ? FL_ERANGE : e;
        }
        for (size_t i = 0; i < chunk; i++)
            if (dst[n + i] == 0) return 0;
        n += chunk;
    }
    dst[n] = 0;
    return FL_ERANGE;
}

static int buffer_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    if (addr < r->origin) return FL_EFAULT;
    uint64_t off = addr - r->origin;
    if (!fl_range_ok(off, len, r->size)) return FL_EFAULT;
    fl_memcpy(dst, (const char *)r->base + off, len);
    return 0;
}

void fl_reader_init_buffer(fl_reader_t *r, const void *buf, uint64_t size, uint64_t origin) {
    r->read = buffer_read;
    r->base = buf;
    r->size = size;
    r->origin = origin;
}

static int range_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    uint64_t end;
    if (addr >= r->origin && fl_add_u64(addr, len, &end) && end <= r->origin + r->size) {
        __builtin_memcpy(dst, (const void *)(uintptr_t)addr, len); /* libc memcpy: AS-safe */
        return 0;
    }
    return fl_read(r->fallback, addr, dst, len);
}

void fl_reader_init_range(fl_reader_t *r, uint64_t lo, uint64_t hi, const fl_reader_t *fallback) {
    r->read = range_read;
    r->base = (const void *)(uintptr_t)lo;
    r->origin = lo;
    r->size = hi > lo ? hi - lo : 0;
    r->fallback = fallback;
}
