/* SPDX-License-Identifier: MIT */
/* Per-image symbol index (address ranges, display names, DWARF lines) in one flat buffer that is also the on-disk cache entry. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/tool.h"

/* The flat layout, native byte order (a cache never leaves its machine):
 * header | ranges[nranges] | lines[nlines] | files[nfiles] (u32, padded to 8) | strings.
 * Ranges and lines are sorted by address. The check hash covers everything after the header. */
#define IX_MAGIC "FLSYMIDX"
#define LINE_END UINT32_MAX /* file index of an end-of-sequence row: no line from here */

typedef struct ix_hdr {
    char magic[8];
    uint32_t version, quality;
    uint64_t fingerprint; /* CRC-32 of the symbols it was built from: tells strip levels apart */
    uint64_t nranges, nlines, nfiles, strbytes;
    uint32_t id_len, reserved;
    uint64_t check; /* ix_check of everything after the header */
    uint8_t id[FL_BUILD_ID_MAX];
} ix_hdr_t;

typedef struct ix_range {
    uint64_t start, end; /* [start, end) resolves to the name */
    uint32_t name;       /* offset into strings */
    uint32_t delta;      /* start - symbol address */
} ix_range_t;

typedef struct ix_line {
    uint64_t addr;
    uint32_t file; /* index into files, or LINE_END */
    uint32_t line;
} ix_line_t;

struct fl_tool_symindex {
    void *mem; /* the whole flat buffer */
    size_t size;
    bool mapped; /* mmap'd cache file, else malloc'd */
    bool from_cache;
    const ix_hdr_t *h;
    const ix_range_t *ranges;
    const ix_line_t *lines;
    const uint32_t *files;
    const char *strings;
};

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Checks that sizes in the header describe exactly `size` bytes; fills the section pointers. */
static bool ix_layout(fl_tool_symindex_t *ix) {
    if (ix->size < sizeof(ix_hdr_t)) return false;
    const ix_hdr_t *h = ix->mem;
    if (memcmp(h->magic, IX_MAGIC, 8) != 0 || h->version != FL_TOOL_SYMINDEX_VERSION ||
        h->id_len > FL_BUILD_ID_MAX || h->quality > FL_TOOL_Q_LINES)
        return false;
    /* Each count is bounded by the size, so the sums cannot overflow. */
    if (h->nranges > ix->size / sizeof(ix_range_t) || h->nlines > ix->size / sizeof(ix_line_t) ||
        h->nfiles > ix->size / 4 || h->strbytes > ix->size)
        return false;
    size_t off = sizeof(ix_hdr_t);
    size_t ro = off;
    off += (size_t)h->nranges * sizeof(ix_range_t);
    size_t lo = off;
    off += (size_t)h->nlines * sizeof(ix_line_t);
    size_t fo = off;
    off += pad8((size_t)h->nfiles * 4);
    size_t so = off;
    off += (size_t)h->strbytes;
    if (off != ix->size) return false;
    const char *strings = (const char *)ix->mem + so;
    /* Every string offset below strbytes then reads a terminated string. */
    if (h->strbytes == 0 || strings[h->strbytes - 1] != 0) return false;
    ix->h = h;
    ix->ranges = (const ix_range_t *)((const char *)ix->mem + ro);
    ix->lines = (const ix_line_t *)((const char *)ix->mem + lo);
    ix->files = (const uint32_t *)((const char *)ix->mem + fo);
    ix->strings = strings;
    return true;
}

/* A checksum that finds damage (not an adversary) at memory speed: four independent
 * multiply-xorshift lanes over 8-byte words, so that checking a large entry on every load costs
 * far less than the CRC-32 would (about 1 byte a cycle). Every step is a bijection of the lane
 * for a fixed word, so one changed word changes its lane's result. */
static uint64_t ix_check(const fl_tool_symindex_t *ix) {
    const uint8_t *p = (const uint8_t *)ix->mem + sizeof(ix_hdr_t);
    size_t n = ix->size - sizeof(ix_hdr_t);
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h[4] = {1, 2, 3, 4};
    for (; n >= 32; n -= 32, p += 32)
        for (int i = 0; i < 4; i++) {
            uint64_t w;
            memcpy(&w, p + 8 * i, 8);
            h[i] = (h[i] ^ w) * k;
            h[i] ^= h[i] >> 29;
        }
    uint64_t r = (uint64_t)n;
    for (size_t i = 0; i < n; i++) r = (r ^ p[i]) * k;
    for (int i = 0; i < 4; i++) r = (r ^ h[i]) * k, r ^= r >> 31;
    return r;
}

void fl_tool_symindex_free(fl_tool_symindex_t *ix) {
    if (!ix) return;
    if (ix->mapped) fl_file_unmap(ix->mem, ix->size);
    else free(ix->mem);
    free(ix);
}

int fl_tool_symindex_quality(const fl_tool_symindex_t *ix) { return (int)ix->h->quality; }
size_t fl_tool_symindex_count(const fl_tool_symindex_t *ix) { return ix->h->nranges; }
size_t fl_tool_symindex_lines(const fl_tool_symindex_t *ix) { return ix->h->nlines; }
bool fl_tool_symindex_from_cache(const fl_tool_symindex_t *ix) { return ix->from_cache; }

bool fl_tool_symindex_lookup(const fl_tool_symindex_t *ix, uint64_t addr, bool lines,
                             fl_tool_loc_t *out) {
    *out = (fl_tool_loc_t){0};
    const ix_hdr_t *h = ix->h;
    size_t lo = 0, hi = h->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->ranges[mid].start <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0) {
        const ix_range_t *r = &ix->ranges[lo - 1];
        if (addr < r->end && r->name < h->strbytes) {
            out->name = ix->strings + r->name;
            out->sym_addr = r->start - r->delta;
        }
    }
    lo = 0, hi = lines ? h->nlines : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->lines[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0) {
        const ix_line_t *l = &ix->lines[lo - 1];
        if (l->file < h->nfiles && ix->files[l->file] < h->strbytes) {
            out->file = ix->strings + ix->files[l->file];
            out->line = l->line;
        }
    }
    return out->name != NULL;
}

/* ---- Building ---- */

typedef struct strtab {
    char *p;
    size_t n, cap;
} strtab_t;

/* Appends s (cut to FL_TOOL_NAME_MAX - 1 bytes) and its NUL; the offset, or UINT32_MAX. */
static uint32_t str_add(strtab_t *t, const char *s) {
    size_t len = strnlen(s, FL_TOOL_NAME_MAX - 1);
    if (t->n + len + 1 > UINT32_MAX) return UINT32_MAX;
    if (t->n + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->n + len + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) return UINT32_MAX;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, len);
    t->p[t->n + len] = 0;
    uint32_t off = (uint32_t)t->n;
    t->n += len + 1;
    return off;
}

typedef struct builder {
    ix_range_t *ranges;
    size_t nranges, ranges_cap;
    ix_line_t *lines;
    size_t nlines, lines_cap;
    uint32_t *files; /* string offsets */
    size_t nfiles, files_cap;
    /* Interning of file names: open addressing over files[] indexes, keyed by content. */
    uint32_t *fmap;
    size_t fmap_cap;
    strtab_t str;
    bool drop_seq;   /* the current line sequence starts at 0: code the linker discarded */
    bool seq_open;
} builder_t;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t cap2 = *cap ? *cap * 2 : 1024;
    while (cap2 < need) cap2 *= 2;
    void *q = realloc(*p, cap2 * elem);
    if (!q) return false;
    *p = q;
    *cap = cap2;
    return true;
}

static int add_range(builder_t *b, uint64_t start, uint64_t end, uint64_t sym, const char *name) {
    if (start >= end || start - sym > UINT32_MAX) return 0;
    if (b->nranges) {
        ix_range_t *last = &b->ranges[b->nranges - 1];
        /* Neighbouring pieces of one symbol (the Mach-O walk splits at every boundary). */
        if (last->end == start && last->start - last->delta == sym &&
            strcmp(b->str.p + last->name, name) == 0) {
            last->end = end;
            return 0;
        }
    }
    if (!grow((void **)&b->ranges, &b->ranges_cap, b->nranges + 1, sizeof *b->ranges))
        return FL_ENOMEM;
    uint32_t off = str_add(&b->str, name);
    if (off == UINT32_MAX) return FL_ENOMEM;
    b->ranges[b->nranges++] = (ix_range_t){start, end, off, (uint32_t)(start - sym)};
    return 0;
}

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The index of file name s in b->files, added if new; UINT32_MAX on allocation failure. */
static uint32_t file_index(builder_t *b, const char *s) {
    if (b->nfiles * 2 >= b->fmap_cap) {
        size_t cap = b->fmap_cap ? b->fmap_cap * 2 : 256;
        uint32_t *m = malloc(cap * sizeof *m);
        if (!m) return UINT32_MAX;
        memset(m, 0xff, cap * sizeof *m);
        for (size_t i = 0; i < b->nfiles; i++) {
            size_t k = str_hash(b->str.p + b->files[i]) & (cap - 1);
            while (m[k] != UINT32_MAX) k = (k + 1) & (cap - 1);
            m[k] = (uint32_t)i;
        }
        free(b->fmap);
        b->fmap = m;
        b->fmap_cap = cap;
    }
    size_t k = str_hash(s) & (b->fmap_cap - 1);
    for (; b->fmap[k] != UINT32_MAX; k = (k + 1) & (b->fmap_cap - 1))
        if (strcmp(b->str.p + b->files[b->fmap[k]], s) == 0) return b->fmap[k];
    if (!grow((void **)&b->files, &b->files_cap, b->nfiles + 1, sizeof *b->files)) return UINT32_MAX;
    uint32_t off = str_add(&b->str, s);
    if (off == UINT32_MAX) return UINT32_MAX;
    b->files[b->nfiles] = off;
    b->fmap[k] = (uint32_t)b->nfiles;
    return (uint32_t)b->nfiles++;
}

static int add_line(void *ctx, uint64_t addr, const char *file, uint32_t line, bool end_seq) {
    builder_t *b = ctx;
    if (!b->seq_open) {
        b->seq_open = true;
        b->drop_seq = addr == 0;
    }
    if (end_seq) b->seq_open = false;
    if (b->drop_seq) return 0;
    uint32_t fi = end_seq ? LINE_END : file_index(b, file && file[0] ? file : "??");
    if (fi == UINT32_MAX && !end_seq) return FL_ENOMEM;
    if (!grow((void **)&b->lines, &b->lines_cap, b->nlines + 1, sizeof *b->lines)) return FL_ENOMEM;
    b->lines[b->nlines++] = (ix_line_t){addr, fi, line};
    return 0;
}

/* Rows by address; at one address an end of sequence sorts first, so that a sequence starting
 * where another ends is the one in force there. */
static int line_cmp(const ix_line_t *x, const ix_line_t *y) {
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    bool xe = x->file == LINE_END, ye = y->file == LINE_END;
    return xe != ye ? (xe ? -1 : 1) : 0;
}

/* Sorts the rows (stably: of the rows at one address the one read last governs it, as in the
 * line-table state machine), keeps that one per address, then drops rows that repeat the
 * file and line of the row before them. With no memory for the sort, no lines at all rather
 * than wrong ones. */
static void finish_lines(builder_t *b) {
    size_t n = b->nlines;
    if (n < 2) return;
    ix_line_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        b->nlines = 0;
        return;
    }
    ix_line_t *src = b->lines, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) { /* bottom-up merge sort */
        for (size_t l = 0; l < n; l += 2 * width) {
            size_t m = l + width < n ? l + width : n, r = l + 2 * width < n ? l + 2 * width : n;
            size_t a = l, c = m, k = l;
            while (a < m && c < r) dst[k++] = line_cmp(&src[c], &src[a]) < 0 ? src[c++] : src[a++];
            while (a < m) dst[k++] = src[a++];
            while (c < r) dst[k++] = src[c++];
        }
        ix_line_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != b->lines) memcpy(b->lines, src, n * sizeof *src);
    free(tmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && b->lines[w - 1].addr == b->lines[i].addr) w--;
        b->lines[w++] = b->lines[i];
    }
    size_t k = 0;
    for (size_t i = 0; i < w; i++) {
        if (k && b->lines[k - 1].file == b->lines[i].file && b->lines[k - 1].line == b->lines[i].line)
            continue;
        b->lines[k++] = b->lines[i];
    }
    b->nlines = k;
}

static void builder_free(builder_t *b) {
    free(b->ranges);
    free(b->lines);
    free(b->files);
    free(b->fmap);
    free(b->str.p);
}

static int elf_ranges(builder_t *b, fl_tool_bin_t *bin) {
    fl_elf_file_t *f = fl_tool_bin_elf(bin);
    long n = fl_elf_file_symbol_count(f);
    if (n < 0) return (int)n;
    for (size_t i = 0; i < (size_t)n; i++) {
        uint64_t addr, size, next = UINT64_MAX, nsize;
        const char *name, *nname;
        if (fl_elf_file_symbol(f, i, &addr, &size, &name) != 0) break;
        if (i + 1 < (size_t)n) fl_elf_file_symbol(f, i + 1, &next, &nsize, &nname);
        /* fl_elf_file_symbolize's rule: the last symbol at or below an address, bounded by its
         * size when it has one. */
        uint64_t end = next;
        if (size && addr + size > addr && addr + size < end) end = addr + size;
        /* Symbol versions ("__libc_start_main@@GLIBC_2.34") are not part of the name shown. */
        char plain[FL_TOOL_NAME_MAX];
        const char *at = strchr(name, '@');
        if (at && at > name) {
            snprintf(plain, sizeof plain, "%.*s", (int)(at - name), name);
            name = plain;
        }
        int e = add_range(b, addr, end, addr, fl_tool_symbol_link_name(name, FL_TOOL_BIN_ELF));
        if (e) return e;
    }
    return 0;
}

/* ---- Mach-O: the answers of fl_tool_bin_symbolize (macho/'s index) as ranges. They can only
 * change at a section bound, a symbol's address or a function start, so asking at each of
 * those addresses gives every range without restating macho/'s rules. ---- */

typedef struct bounds {
    uint64_t *v;
    size_t n, cap;
    int err;
} bounds_t;

static void bound_add(bounds_t *bd, uint64_t v) {
    if (bd->err) return;
    if (!grow((void **)&bd->v, &bd->cap, bd->n + 1, sizeof *bd->v)) {
        bd->err = FL_ENOMEM;
        return;
    }
    bd->v[bd->n++] = v;
}

static int sect_bound(void *ctx, const fl_macho_section_t *s) {
    bound_add(ctx, s->vmaddr);
    bound_add(ctx, s->vmaddr + s->size);
    return 0;
}

static int start_bound(void *ctx, uint64_t vmaddr) {
    bound_add(ctx, vmaddr);
    return 0;
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int macho_ranges(builder_t *b, fl_tool_bin_t *bin, unsigned slice) {
    const fl_macho_image_t *m = fl_tool_bin_macho(bin, slice);
    if (!m) return fl_tool_bin_error(bin, slice);
    long count = fl_tool_bin_symbol_count(bin, slice);
    if (count < 0) return (int)count;
    if (count == 0) return 0;
    bounds_t bd = {0};
    fl_macho_image_sections(m, sect_bound, &bd);
    fl_macho_function_starts(m, start_bound, &bd);
    uint64_t addr;
    if (fl_macho_symtab_locate(m, &addr) == 0) {
        uint64_t len = (uint64_t)m->nsyms * FL_MACHO_NLIST_SIZE;
        uint8_t *table = malloc(len);
        if (!table) bd.err = FL_ENOMEM;
        else if (fl_read(m->r, addr, table, len) == 0)
            for (uint32_t i = 0; i < m->nsyms; i++) {
                const uint8_t *s = table + (size_t)i * FL_MACHO_NLIST_SIZE;
                if (!fl_macho_nlist_defined(s[4])) continue;
                uint64_t value = 0;
                for (int k = 7; k >= 0; k--) value = value << 8 | s[8 + k];
                bound_add(&bd, value);
            }
        free(table);
    }
    int e = bd.err;
    if (!e && bd.n) {
        qsort(bd.v, bd.n, sizeof *bd.v, u64_cmp);
        for (size_t i = 0; i + 1 < bd.n && !e; i++) {
            if (bd.v[i] == bd.v[i + 1]) continue;
            const char *name;
            uint64_t off;
            if (fl_tool_bin_symbolize(bin, slice, bd.v[i], &name, &off) != 0 || !name[0]) continue;
            e = add_range(b, bd.v[i], bd.v[i + 1], bd.v[i] - off,
                          fl_tool_symbol_link_name(name, FL_TOOL_BIN_MACHO));
        }
    }
    free(bd.v);
    return e;
}

int fl_tool_bin_quality(fl_tool_bin_t *b, unsigned i) {
    if (fl_tool_bin_kind(b) == FL_TOOL_BIN_MACHO) {
        const fl_macho_image_t *m = fl_tool_bin_macho(b, i);
        if (!m) return FL_TOOL_Q_NONE;
        if (m->has_local_symbols) return FL_TOOL_Q_SYMTAB;
        return m->has_symtab && m->nsyms ? FL_TOOL_Q_EXPORTS : FL_TOOL_Q_NONE;
    }
    /* From the section table alone (building the symbol index costs a sort). */
    fl_elf_file_t *f = fl_tool_bin_elf(b);
    if (!fl_elf_file_has_section(f, ".symtab"))
        return fl_elf_file_has_section(f, ".dynsym") ? FL_TOOL_Q_EXPORTS : FL_TOOL_Q_NONE;
    return fl_tool_have_dwarf() && fl_elf_file_has_section(f, ".debug_line") ? FL_TOOL_Q_LINES
                                                                            : FL_TOOL_Q_SYMTAB;
}

/* memcpy of n bytes, where an empty table's pointer may be NULL (the builder allocates on the
 * first element): memcpy's arguments must be valid pointers even for n == 0. */
static void copy_table(char *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
}

/* Lays the builder's tables out in one buffer. */
static int flatten(builder_t *b, int quality, uint64_t fingerprint, const uint8_t *id,
                   unsigned id_len, fl_tool_symindex_t **out) {
    if (b->str.n == 0 && str_add(&b->str, "") == UINT32_MAX) return FL_ENOMEM;
    size_t size = sizeof(ix_hdr_t) + b->nranges * sizeof(ix_range_t) +
                  b->nlines * sizeof(ix_line_t) + pad8(b->nfiles * 4) + b->str.n;
    fl_tool_symindex_t *ix = calloc(1, sizeof *ix);
    char *mem = calloc(1, size);
    if (!ix || !mem) {
        free(ix);
        free(mem);
        return FL_ENOMEM;
    }
    ix_hdr_t h = {.version = FL_TOOL_SYMINDEX_VERSION, .quality = (uint32_t)quality,
                  .fingerprint = fingerprint, .nranges = b->nranges, .nlines = b->nlines,
                  .nfiles = b->nfiles, .strbytes = b->str.n, .id_len = id_len};
    memcpy(h.magic, IX_MAGIC, 8);
    memcpy(h.id, id, id_len);
    size_t off = sizeof h;
    copy_table(mem + off, b->ranges, b->nranges * sizeof(ix_range_t));
    off += b->nranges * sizeof(ix_range_t);
    copy_table(mem + off, b->lines, b->nlines * sizeof(ix_line_t));
    off += b->nlines * sizeof(ix_line_t);
    copy_table(mem + off, b->files, b->nfiles * 4);
    off += pad8(b->nfiles * 4);
    copy_table(mem + off, b->str.p, b->str.n);
    memcpy(mem, &h, sizeof h);
    ix->mem = mem;
    ix->size = size;
    if (!ix_layout(ix)) {
        fl_tool_symindex_free(ix);
        return FL_EBADDATA;
    }
    ((ix_hdr_t *)mem)->check = ix_check(ix);
    *out = ix;
    return 0;
}

static int build(fl_tool_bin_t *bin, unsigned slice, const char *path, int quality,
                 uint64_t fingerprint, const uint8_t *id, unsigned id_len,
                 fl_tool_symindex_t **out) {
    builder_t b = {0};
    int e = fl_tool_bin_kind(bin) == FL_TOOL_BIN_ELF ? elf_ranges(&b, bin)
                                                     : macho_ranges(&b, bin, slice);
    if (!e && quality == FL_TOOL_Q_LINES) {
        int le = fl_tool_dwarf_lines(path, add_line, &b);
        if (le == FL_ENOMEM) e = le;
        else if (le) quality = FL_TOOL_Q_SYMTAB; /* unreadable DWARF: names only */
        finish_lines(&b);
    }
    if (!e) e = flatten(&b, quality, fingerprint, id, id_len, out);
    builder_free(&b);
    return e;
}

/* ---- The on-disk cache ---- */

const char *fl_tool_cache_dir(char *buf, size_t cap) {
    const char *env = getenv("FAULTLINE_CACHE_DIR");
    if (env) {
        if (!env[0] || strcmp(env, "off") == 0) return NULL;
        snprintf(buf, cap, "%s", env);
        return buf;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') snprintf(buf, cap, "%s/faultline", xdg);
    else if (home && home[0] == '/') snprintf(buf, cap, "%s/.cache/faultline", home);
    else return NULL;
    return buf;
}

/* mkdir -p, mode 0700 for what it creates. */
static int mkdirs(const char *path) {
    char tmp[4400];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static bool entry_path(char *buf, size_t cap, const char *dir, const uint8_t *id, unsigned id_len,
                       int quality, uint32_t fingerprint) {
    char hex[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(hex, id, id_len);
    return snprintf(buf, cap, "%s/symbols-v%u/%s-q%d-%08x.fsi", dir, FL_TOOL_SYMINDEX_VERSION, hex,
                    quality, fingerprint) < (int)cap;
}

static fl_tool_symindex_t *cache_load(const char *path, const uint8_t *id, unsigned id_len,
                                      int quality, uint32_t fingerprint) {
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return NULL;
    const void *map = NULL;
    if (fsize >= sizeof(ix_hdr_t) && fl_file_map(fd, fsize, path, &map) == 0)
        futimens(fd, NULL); /* recently used: pruned last */
    close(fd);
    if (!map) return NULL;
    fl_tool_symindex_t *ix = calloc(1, sizeof *ix);
    if (!ix) {
        fl_file_unmap(map, fsize);
        return NULL;
    }
    ix->mem = (void *)(uintptr_t)map;
    ix->size = (size_t)fsize;
    ix->mapped = true;
    ix->from_cache = true;
    if (!ix_layout(ix) || ix->h->id_len != id_len || memcmp(ix->h->id, id, id_len) != 0 ||
        ix->h->quality != (uint32_t)quality || ix->h->fingerprint != fingerprint ||
        ix->h->check != ix_check(ix)) {
        fl_tool_symindex_free(ix);
        return NULL;
    }
    return ix;
}

typedef struct cache_ent {
    char name[256];
    off_t size;
    time_t mtime; /* seconds: st_mtim is spelt st_mtimespec on Darwin */
} cache_ent_t;

static int ent_cmp(const void *a, const void *b) {
    const cache_ent_t *x = a, *y = b;
    return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Removes the least recently used entries while the directory holds more than the cap. */
static void cache_prune(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    cache_ent_t *ents = NULL;
    size_t n = 0, cap = 0;
    unsigned long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 100000) {
        size_t len = strlen(e->d_name);
        if (len < 5 || len >= sizeof ents->name || strcmp(e->d_name + len - 4, ".fsi") != 0) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (!grow((void **)&ents, &cap, n + 1, sizeof *ents)) break;
        memcpy(ents[n].name, e->d_name, len + 1);
        ents[n].size = st.st_size;
        ents[n].mtime = st.st_mtime;
        total += (unsigned long long)st.st_size;
        n++;
    }
    if (total > FL_TOOL_CACHE_MAX_BYTES) {
        qsort(ents, n, sizeof *ents, ent_cmp);
        for (size_t i = 0; i < n && total > FL_TOOL_CACHE_MAX_BYTES; i++)
            if (unlinkat(dirfd(d), ents[i].name, 0) == 0) total -= (unsigned long long)ents[i].size;
    }
    free(ents);
    closedir(d);
}

/* Writes to a temporary file in the same directory, then renames: readers see a whole entry
 * or none, and two writers of one entry both leave a valid one. */
static void cache_store(const char *path, const fl_tool_symindex_t *ix) {
    char dir[4400], tmp[4500];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return;
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    if (mkdirs(dir) != 0) return;
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    const char *p = ix->mem;
    size_t left = ix->size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0 || left || rename(tmp, path) != 0) {
        unlink(tmp);
        return;
    }
    cache_prune(dir);
}

/* What tells apart files of one identity that carry different symbols (stripped, strip -x,
 * debug file), cheaply, without reading the symbol tables: for ELF the CRC-32 of the section
 * header table (stripping removes or resizes sections), for Mach-O of the symbol table's
 * placement and counts (LC_SYMTAB, LC_FUNCTION_STARTS). Sizes alone do not do: Mach-O pads
 * to pages. */
static uint32_t fingerprint(fl_tool_bin_t *b, unsigned slice, const char *path) {
    if (fl_tool_bin_kind(b) == FL_TOOL_BIN_MACHO) {
        const fl_macho_image_t *m = fl_tool_bin_macho(b, slice);
        if (!m) return 0;
        const uint32_t v[] = {m->has_symtab, m->symoff, m->nsyms, m->stroff, m->strsize,
                              m->has_local_symbols, m->function_starts_off,
                              m->function_starts_size, m->ncmds, m->sizeofcmds};
        return fl_tool_crc32(0, v, sizeof v);
    }
    uint8_t eh[64];
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return 0;
    uint32_t crc = 0;
    if (pread(fd, eh, sizeof eh, 0) == (ssize_t)sizeof eh) {
        uint64_t shoff;
        uint16_t shentsize, shnum;
        memcpy(&shoff, eh + 0x28, 8);
        memcpy(&shentsize, eh + 0x3a, 2);
        memcpy(&shnum, eh + 0x3c, 2);
        /* The table as the header declares it (up to 4 GiB: 65535 entries of up to 65535
         * bytes), read only if the file holds it and it is no larger than ELF's own entries
         * allow (65535 of 64 bytes): a hostile header must not size an allocation. */
        uint64_t len = (uint64_t)shentsize * shnum;
        bool fits = len && len <= 65535u * 64u && len <= fsize && shoff <= fsize - len;
        uint8_t *sh = fits ? malloc((size_t)len) : NULL;
        crc = fl_tool_crc32(0, eh, sizeof eh);
        if (sh && pread(fd, sh, (size_t)len, (off_t)shoff) == (ssize_t)len)
            crc = fl_tool_crc32(crc, sh, (size_t)len);
        free(sh);
    }
    close(fd);
    return crc;
}

int fl_tool_symindex_get(fl_tool_bin_t *b, unsigned i, const char *path, const char *cache_dir,
                         fl_tool_symindex_t **out) {
    *out = NULL;
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned id_len = 0;
    int quality = fl_tool_bin_quality(b, i);
    uint32_t fp = fingerprint(b, i, path);
    char entry[4400];
    bool cacheable = cache_dir && fl_tool_bin_id(b, i, id, sizeof id, &id_len) == 0 &&
                     id_len > 0 && entry_path(entry, sizeof entry, cache_dir, id, id_len, quality, fp);
    if (cacheable && (*out = cache_load(entry, id, id_len, quality, fp))) return 0;
    int e = build(b, i, path, quality, fp, id, cacheable ? id_len : 0, out);
    if (e == 0 && cacheable) cache_store(entry, *out);
    return e;
}
