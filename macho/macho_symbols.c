/* SPDX-License-Identifier: MIT */
/* macho: symbol lookup by linear scan of the nlist table, and LC_FUNCTION_STARTS (AS-safe). */
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free printf fprintf snprintf

#define NLIST_BATCH 64u  /* nlist_64 entries read per call (1 KiB of stack) */
#define STARTS_CHUNK 256u /* function-starts bytes read per call */
#define NAME_CHUNK 64u

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* A table outside the image is as malformed as one that is garbled. */
static int table_error(int e) { return e == FL_ERANGE ? FL_EBADDATA : e; }

int fl_macho_function_starts(const fl_macho_image_t *img, int (*fn)(void *ctx, uint64_t vmaddr),
                             void *ctx) {
    if (img->function_starts_size == 0) return FL_ENOTFOUND;
    uint64_t addr;
    int e = fl_macho_image_file_to_reader(img, img->function_starts_off, img->function_starts_size,
                                          &addr);
    if (e) return table_error(e);
    return fl_macho_function_starts_at(img->r, addr, img->function_starts_size, img->text_vmaddr,
                                       fn, ctx);
}

/* The starts of the table's `size` bytes at reader address addr, counted from cur: each one to
 * fn, or with fn NULL the search of fl_macho_function_start_find (the last start <= target into
 * *best; 1 once a start lies beyond it). Inlined into both, so that the search is a tight loop. */
static inline __attribute__((always_inline)) int
starts_scan(const fl_reader_t *r, uint64_t addr, uint32_t size, uint64_t cur,
            int (*fn)(void *ctx, uint64_t vmaddr), void *ctx, uint64_t target, uint64_t *best) {
    uint64_t delta = 0;
    unsigned shift = 0;
    uint8_t buf[STARTS_CHUNK];
    /* In place where the reader holds the table, else read in chunks. */
    const uint8_t *whole = fl_reader_direct(r, addr, size);
    for (uint32_t done = 0; done < size;) {
        uint32_t n = size - done;
        const uint8_t *b = whole ? whole + done : buf;
        if (!whole) {
            if (n > sizeof buf) n = sizeof buf;
            if (fl_read(r, addr + done, buf, n)) return FL_EFAULT;
        }
        done += n;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t bits = b[i] & 0x7fu;
            if (shift == 0 && !(b[i] & 0x80u)) { /* most deltas: one byte */
                delta = bits;
            } else if (shift == 0 && i + 1 < n && !(b[i + 1] & 0x80u)) { /* the rest: two */
                delta = bits | (uint64_t)b[++i] << 7;
            } else {
                if (shift >= 64 || (shift > 57 && bits >> (64 - shift))) return FL_EBADDATA;
                delta |= bits << shift;
                shift += 7;
                if (b[i] & 0x80u) continue;
            }
            if (delta == 0) return 0; /* the table's terminator; padding may follow */
            if (!fl_add_u64(cur, delta, &cur)) return FL_EBADDATA;
            if (!fn) {
                if (cur > target) return 1; /* ascending: nothing later can hold it */
                *best = cur;
            } else {
                int rc = fn(ctx, cur);
                if (rc) return rc;
            }
            delta = 0;
            shift = 0;
        }
    }
    return shift ? FL_EBADDATA : 0; /* a number cut by the end of the table */
}

int fl_macho_function_starts_at(const fl_reader_t *r, uint64_t addr, uint32_t size,
                                uint64_t text_vmaddr, int (*fn)(void *ctx, uint64_t vmaddr),
                                void *ctx) {
    if (!fn) return FL_EINVAL;
    return starts_scan(r, addr, size, text_vmaddr, fn, ctx, 0, NULL);
}

int fl_macho_function_start_find(const fl_reader_t *r, uint64_t addr, uint32_t size,
                                 uint64_t text_vmaddr, uint64_t vmaddr, uint64_t *start) {
    uint64_t best = 0;
    int e = starts_scan(r, addr, size, text_vmaddr, NULL, NULL, vmaddr, &best);
    if (e < 0) return e;
    if (!best) return FL_ENOTFOUND; /* (every start lies past text_vmaddr) */
    *start = best;
    return 0;
}

typedef struct {
    uint64_t vmaddr, lo;
    unsigned ordinal, found;
} sect_find_t;

static int sect_find_fn(void *ctx, const fl_macho_section_t *s) {
    sect_find_t *c = ctx;
    c->ordinal++;
    if (c->vmaddr >= s->vmaddr && c->vmaddr - s->vmaddr < s->size) {
        c->found = c->ordinal;
        c->lo = s->vmaddr;
        return 1;
    }
    return 0;
}

int fl_macho_symbol_section(const fl_macho_image_t *img, uint64_t vmaddr, unsigned *ordinal,
                            uint64_t *sect_vmaddr) {
    sect_find_t c = {vmaddr, 0, 0, 0};
    int e = fl_macho_image_sections(img, sect_find_fn, &c);
    if (e < 0) return e;
    if (!c.found) return FL_ENOTFOUND;
    *ordinal = c.found;
    *sect_vmaddr = c.lo;
    return 0;
}

typedef struct {
    uint64_t after, upto;
    bool hit;
} start_between_t;

static int start_between_fn(void *ctx, uint64_t start) {
    start_between_t *c = ctx;
    if (start > c->upto) return 1;
    if (start > c->after) {
        c->hit = true;
        return 1;
    }
    return 0;
}

int fl_macho_symtab_locate(const fl_macho_image_t *img, uint64_t *addr) {
    if (!img->has_symtab || img->nsyms == 0) return FL_ENOTFOUND;
    if (img->nsyms > FL_MACHO_NSYMS_MAX) return FL_EBADDATA;
    return table_error(fl_macho_image_file_to_reader(
        img, img->symoff, (uint64_t)img->nsyms * FL_MACHO_NLIST_SIZE, addr));
}

/* Copies the string at strx of the string table into name[cap]; FL_EBADDATA if it is outside the
 * table or runs off its end unterminated. */
static int read_name(const fl_macho_image_t *img, uint32_t strx, char *name, size_t cap) {
    if (strx >= img->strsize) return FL_EBADDATA;
    uint32_t left = img->strsize - strx;
    uint64_t addr;
    int e = fl_macho_image_file_to_reader(img, (uint64_t)img->stroff + strx, left, &addr);
    if (e) return table_error(e);
    size_t copied = 0;
    char buf[NAME_CHUNK];
    for (uint32_t done = 0; done < left;) {
        uint32_t n = left - done < sizeof buf ? left - done : (uint32_t)sizeof buf;
        if (fl_read(img->r, addr + done, buf, n)) return FL_EFAULT;
        done += n;
        for (uint32_t i = 0; i < n; i++) {
            if (buf[i] == 0) {
                if (cap) name[copied] = 0; /* copied < cap */
                return 0;
            }
            if (copied + 1 < cap) name[copied++] = buf[i];
        }
    }
    if (cap) name[copied] = 0;
    return FL_EBADDATA;
}

int fl_macho_symbol_find(const fl_macho_image_t *img, uint64_t vmaddr, char *name, size_t cap,
                         uint64_t *sym_vmaddr) {
    if (cap) name[0] = 0;
    /* The table first: an empty one has no symbol, whatever else is wrong (the index's rule). */
    uint64_t syms;
    int e = fl_macho_symtab_locate(img, &syms);
    if (e) return e;
    unsigned ordinal;
    uint64_t lo;
    if ((e = fl_macho_symbol_section(img, vmaddr, &ordinal, &lo))) return e;
    bool found = false;
    uint64_t best = 0;
    uint32_t best_strx = 0;
    uint8_t batch[NLIST_BATCH * FL_MACHO_NLIST_SIZE];
    for (uint32_t i = 0; i < img->nsyms;) {
        uint32_t n = img->nsyms - i < NLIST_BATCH ? img->nsyms - i : NLIST_BATCH;
        if (fl_read(img->r, syms + (uint64_t)i * FL_MACHO_NLIST_SIZE, batch,
                    n * FL_MACHO_NLIST_SIZE))
            return FL_EFAULT;
        for (uint32_t k = 0; k < n; k++) {
            const uint8_t *s = batch + k * FL_MACHO_NLIST_SIZE;
            uint64_t value = le64(s + 8);
            /* Ties go to the first entry in table order (the index keeps this rule). */
            if (fl_macho_nlist_defined(s[4]) && s[5] == ordinal && value >= lo && value <= vmaddr &&
                (!found || value > best)) {
                found = true;
                best = value;
                best_strx = le32(s);
            }
        }
        i += n;
    }
    if (!found) return FL_ENOTFOUND;
    start_between_t sb = {best, vmaddr, false};
    e = fl_macho_function_starts(img, start_between_fn, &sb);
    if (e < 0 && e != FL_ENOTFOUND) return e;
    if (sb.hit) return FL_ENOTFOUND;
    e = read_name(img, best_strx, name, cap);
    if (e) return e;
    *sym_vmaddr = best;
    return 0;
}
