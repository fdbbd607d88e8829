/* SPDX-License-Identifier: MIT */
/* macho: a sorted symbol index: fl_macho_symbol_find's answers by binary search (allocates). */
#include <stdlib.h>

#include "macho/macho.h"

typedef struct {
    uint64_t addr;
    uint32_t sect; /* n_sect */
    uint32_t idx;  /* position in the nlist table: ties go to the first, as in the scan */
    const char *name;
} ix_sym_t;

typedef struct {
    uint64_t vmaddr, size;
} ix_sect_t;

struct fl_macho_symindex {
    ix_sym_t *syms; /* sorted; of the symbols at one address only the first in the table */
    size_t nsyms, count;
    ix_sect_t *sects; /* in load-command order: sects[i] has ordinal i + 1 */
    size_t nsects, sects_cap;
    uint64_t *starts; /* LC_FUNCTION_STARTS, ascending */
    size_t nstarts, starts_cap;
    char *strtab; /* a copy of the string table when the reader is not a buffer holding it */
};

static int cmp_sym(const void *a, const void *b) {
    const ix_sym_t *x = a, *y = b;
    if (x->sect != y->sect) return x->sect < y->sect ? -1 : 1;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int add_sect(void *ctx, const fl_macho_section_t *s) {
    fl_macho_symindex_t *ix = ctx;
    if (ix->nsects == ix->sects_cap) {
        size_t cap = ix->sects_cap ? ix->sects_cap * 2 : 32;
        ix_sect_t *p = realloc(ix->sects, cap * sizeof *p);
        if (!p) return FL_ENOMEM;
        ix->sects = p;
        ix->sects_cap = cap;
    }
    ix->sects[ix->nsects++] = (ix_sect_t){s->vmaddr, s->size};
    return 0;
}

static int add_start(void *ctx, uint64_t vmaddr) {
    fl_macho_symindex_t *ix = ctx;
    if (ix->nstarts == ix->starts_cap) {
        size_t cap = ix->starts_cap ? ix->starts_cap * 2 : 256;
        uint64_t *p = realloc(ix->starts, cap * sizeof *p);
        if (!p) return FL_ENOMEM;
        ix->starts = p;
        ix->starts_cap = cap;
    }
    ix->starts[ix->nstarts++] = vmaddr;
    return 0;
}

/* Points at the string table's bytes: inside a buffer reader, else a copy. */
static int map_strtab(const fl_macho_image_t *img, fl_macho_symindex_t *ix, const char **out) {
    uint64_t addr;
    int e = fl_macho_image_file_to_reader(img, img->stroff, img->strsize, &addr);
    if (e) return e == FL_ERANGE ? FL_EBADDATA : e;
    const fl_reader_t *r = img->r;
    if (r->base && addr >= r->origin && fl_range_ok(addr - r->origin, img->strsize, r->size)) {
        *out = (const char *)r->base + (addr - r->origin);
        return 0;
    }
    if (!(ix->strtab = malloc(img->strsize ? img->strsize : 1))) return FL_ENOMEM;
    if (fl_read(r, addr, ix->strtab, img->strsize)) return FL_EFAULT;
    *out = ix->strtab;
    return 0;
}

static int build(const fl_macho_image_t *img, fl_macho_symindex_t *ix) {
    int e = fl_macho_image_sections(img, add_sect, ix);
    if (e) return e;
    e = fl_macho_function_starts(img, add_start, ix);
    if (e && e != FL_ENOTFOUND) return e;
    uint64_t addr;
    if ((e = fl_macho_symtab_locate(img, &addr))) return e == FL_ENOTFOUND ? 0 : e;
    const char *strtab;
    if ((e = map_strtab(img, ix, &strtab))) return e;
    /* A name is terminated when a NUL follows its start: one look for the last NUL, rather than
     * one per symbol, keeps a table of long unterminated names linear. */
    uint64_t terminated = 0; /* names starting below this end in the table */
    for (uint32_t k = img->strsize; k > 0 && !terminated; k--)
        if (strtab[k - 1] == 0) terminated = k;
    uint64_t len = (uint64_t)img->nsyms * FL_MACHO_NLIST_SIZE;
    uint8_t *table = malloc(len);
    if (!table) return FL_ENOMEM;
    ix->syms = malloc(img->nsyms * sizeof *ix->syms);
    if (!ix->syms || fl_read(img->r, addr, table, len)) {
        free(table);
        return ix->syms ? FL_EFAULT : FL_ENOMEM;
    }
    for (uint32_t i = 0; i < img->nsyms; i++) {
        const uint8_t *s = table + (size_t)i * FL_MACHO_NLIST_SIZE;
        if (!fl_macho_nlist_defined(s[4]) || s[5] == 0 || s[5] > ix->nsects) continue;
        uint32_t strx = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
                        (uint32_t)s[3] << 24;
        uint64_t value = 0;
        for (int b = 7; b >= 0; b--) value = value << 8 | s[8 + b];
        const ix_sect_t *sect = &ix->sects[s[5] - 1];
        /* Symbols outside their section can never be the scan's answer. */
        if (value < sect->vmaddr || value - sect->vmaddr >= sect->size) continue;
        /* Every kept name must be a string of the table, so no answer can be malformed. */
        if (strx >= terminated) {
            free(table);
            return FL_EBADDATA;
        }
        ix->syms[ix->nsyms++] = (ix_sym_t){value, s[5], i, strtab + strx};
    }
    free(table);
    qsort(ix->syms, ix->nsyms, sizeof *ix->syms, cmp_sym);
    /* Only the first symbol at an address can be an answer: one binary search finds it. */
    ix->count = ix->nsyms;
    size_t kept = 0;
    for (size_t i = 0; i < ix->nsyms; i++)
        if (!kept || ix->syms[i].sect != ix->syms[kept - 1].sect ||
            ix->syms[i].addr != ix->syms[kept - 1].addr)
            ix->syms[kept++] = ix->syms[i];
    ix->nsyms = kept;
    return 0;
}

int fl_macho_symindex_build(const fl_macho_image_t *img, fl_macho_symindex_t **out) {
    *out = NULL;
    fl_macho_symindex_t *ix = calloc(1, sizeof *ix);
    if (!ix) return FL_ENOMEM;
    int e = build(img, ix);
    if (e) {
        fl_macho_symindex_free(ix);
        return e;
    }
    *out = ix;
    return 0;
}

size_t fl_macho_symindex_count(const fl_macho_symindex_t *ix) { return ix->count; }

/* The first symbol ordered after (sect, addr). */
static size_t upper_bound(const fl_macho_symindex_t *ix, uint32_t sect, uint64_t addr) {
    size_t lo = 0, hi = ix->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ix_sym_t *s = &ix->syms[mid];
        if (s->sect < sect || (s->sect == sect && s->addr <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int fl_macho_symindex_find(const fl_macho_symindex_t *ix, uint64_t vmaddr, const char **name,
                           uint64_t *sym_vmaddr) {
    uint32_t sect = 0;
    for (size_t i = 0; i < ix->nsects; i++) {
        if (vmaddr >= ix->sects[i].vmaddr && vmaddr - ix->sects[i].vmaddr < ix->sects[i].size) {
            sect = (uint32_t)i + 1;
            break;
        }
    }
    if (!sect) return FL_ENOTFOUND;
    size_t i = upper_bound(ix, sect, vmaddr);
    if (i == 0 || ix->syms[i - 1].sect != sect) return FL_ENOTFOUND;
    uint64_t best = ix->syms[i - 1].addr;
    /* A function start in (best, vmaddr] means vmaddr is in an unnamed function. */
    size_t lo = 0, hi = ix->nstarts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->starts[mid] <= best)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ix->nstarts && ix->starts[lo] <= vmaddr) return FL_ENOTFOUND;
    *name = ix->syms[i - 1].name;
    *sym_vmaddr = best;
    return 0;
}

void fl_macho_symindex_free(fl_macho_symindex_t *ix) {
    if (!ix) return;
    free(ix->syms);
    free(ix->sects);
    free(ix->starts);
    free(ix->strtab);
    free(ix);
}
