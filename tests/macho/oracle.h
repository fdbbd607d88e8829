/* SPDX-License-Identifier: MIT */
/* macho tests: files, and what llvm-objdump/llvm-lipo say about them (the independent oracle). */
#ifndef FAULTLINE_TESTS_MACHO_ORACLE_H
#define FAULTLINE_TESTS_MACHO_ORACLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"

/* The whole file in a malloc'd buffer (NULL if unreadable). */
static inline uint8_t *or_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* A tool's standard output as lines (lines[i] malloc'd); returns the count. */
typedef struct {
    char **line;
    size_t n, cap;
} or_lines_t;

static inline void or_lines_free(or_lines_t *l) {
    for (size_t i = 0; i < l->n; i++) free(l->line[i]);
    free(l->line);
    memset(l, 0, sizeof *l);
}

static inline size_t or_run(const char *cmd, or_lines_t *l) {
    memset(l, 0, sizeof *l);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    char buf[8192];
    while (fgets(buf, sizeof buf, p)) {
        buf[strcspn(buf, "\n")] = 0;
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 256;
            l->line = realloc(l->line, l->cap * sizeof *l->line);
        }
        l->line[l->n++] = strdup(buf);
    }
    pclose(p);
    return l->n;
}

/* "  key value..." -> key and the rest (both pointing into a copy the caller frees). */
static inline int or_kv(const char *line, char *key, size_t kcap, const char **rest) {
    while (*line == ' ') line++;
    size_t k = strcspn(line, " ");
    if (!k || k >= kcap) return 0;
    memcpy(key, line, k);
    key[k] = 0;
    line += k;
    while (*line == ' ') line++;
    *rest = line;
    return 1;
}

/* ---- llvm-objdump --macho --private-headers ---- */

typedef struct {
    char name[17];
    uint64_t vmaddr, vmsize, fileoff, filesize;
    char maxprot[4], initprot[4];
    uint32_t nsects;
} or_segment_t;

typedef struct {
    char sectname[17], segname[17];
    uint64_t addr, size;
    uint32_t offset;
    char type[40];
} or_section_t;

typedef struct {
    uint32_t ncmds, sizeofcmds;
    int has_uuid;
    uint8_t uuid[16];
    or_segment_t seg[64];
    unsigned nseg;
    or_section_t sect[256];
    unsigned nsect;
    int has_symtab;
    uint32_t symoff, nsyms, stroff, strsize;
    int has_dysymtab;
    uint32_t nlocalsym;
    int has_starts;
    uint32_t starts_off, starts_size;
} or_headers_t;

static inline int or_hex_uuid(const char *s, uint8_t out[16]) {
    unsigned n = 0;
    for (; *s && n < 32; s++) {
        if (*s == '-') continue;
        unsigned v;
        if (sscanf(s, "%1x", &v) != 1) return 0;
        out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
        n++;
    }
    return n == 32;
}

/* Parses the private headers of `path` (for a fat file, of the slice `arch`). 0 on failure. */
static inline int or_headers(const char *objdump, const char *path, const char *arch,
                             or_headers_t *h) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --macho %s%s --private-headers '%s' 2>/dev/null", objdump,
             arch ? "--arch=" : "", arch ? arch : "", path);
    or_lines_t l;
    or_run(cmd, &l);
    memset(h, 0, sizeof *h);
    enum { NONE, SEG, SECT, SYMTAB, DYSYMTAB, STARTS, UUID } in = NONE;
    int ok = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *line = l.line[i], *v;
        char key[64];
        if (strncmp(line, "MH_MAGIC_64", 11) == 0) {
            char f[8][32];
            if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s", f[0], f[1], f[2], f[3], f[4],
                       f[5], f[6]) == 7) {
                h->ncmds = (uint32_t)strtoul(f[5], NULL, 10);
                h->sizeofcmds = (uint32_t)strtoul(f[6], NULL, 10);
                ok = 1;
            }
            continue;
        }
        if (strncmp(line, "Load command", 12) == 0) {
            in = NONE;
            continue;
        }
        if (strcmp(line, "Section") == 0) {
            if (h->nsect < 256) h->nsect++;
            in = SECT;
            continue;
        }
        if (!or_kv(line, key, sizeof key, &v)) continue;
        if (strcmp(key, "cmd") == 0) {
            in = strcmp(v, "LC_SEGMENT_64") == 0      ? (h->nseg < 64 ? h->nseg++ : 0, SEG)
                 : strcmp(v, "LC_SYMTAB") == 0          ? (h->has_symtab = 1, SYMTAB)
                 : strcmp(v, "LC_DYSYMTAB") == 0        ? (h->has_dysymtab = 1, DYSYMTAB)
                 : strcmp(v, "LC_FUNCTION_STARTS") == 0 ? (h->has_starts = 1, STARTS)
                 : strcmp(v, "LC_UUID") == 0            ? UUID
                                                        : NONE;
            continue;
        }
        uint64_t num = strtoull(v, NULL, 0);
        if (in == SEG && h->nseg) {
            or_segment_t *s = &h->seg[h->nseg - 1];
            if (!strcmp(key, "segname")) snprintf(s->name, sizeof s->name, "%s", v);
            if (!strcmp(key, "vmaddr")) s->vmaddr = num;
            if (!strcmp(key, "vmsize")) s->vmsize = num;
            if (!strcmp(key, "fileoff")) s->fileoff = num;
            if (!strcmp(key, "filesize")) s->filesize = num;
            if (!strcmp(key, "maxprot")) snprintf(s->maxprot, sizeof s->maxprot, "%s", v);
            if (!strcmp(key, "initprot")) snprintf(s->initprot, sizeof s->initprot, "%s", v);
            if (!strcmp(key, "nsects")) s->nsects = (uint32_t)num;
        } else if (in == SECT && h->nsect) {
            or_section_t *s = &h->sect[h->nsect - 1];
            if (!strcmp(key, "sectname")) snprintf(s->sectname, sizeof s->sectname, "%s", v);
            if (!strcmp(key, "segname")) snprintf(s->segname, sizeof s->segname, "%s", v);
            if (!strcmp(key, "addr")) s->addr = num;
            if (!strcmp(key, "size")) s->size = num;
            if (!strcmp(key, "offset")) s->offset = (uint32_t)num;
            if (!strcmp(key, "type")) snprintf(s->type, sizeof s->type, "%s", v);
        } else if (in == SYMTAB) {
            if (!strcmp(key, "symoff")) h->symoff = (uint32_t)num;
            if (!strcmp(key, "nsyms")) h->nsyms = (uint32_t)num;
            if (!strcmp(key, "stroff")) h->stroff = (uint32_t)num;
            if (!strcmp(key, "strsize")) h->strsize = (uint32_t)num;
        } else if (in == DYSYMTAB) {
            if (!strcmp(key, "nlocalsym")) h->nlocalsym = (uint32_t)num;
        } else if (in == STARTS) {
            if (!strcmp(key, "dataoff")) h->starts_off = (uint32_t)num;
            if (!strcmp(key, "datasize")) h->starts_size = (uint32_t)num;
        } else if (in == UUID && !strcmp(key, "uuid")) {
            h->has_uuid = or_hex_uuid(v, h->uuid);
        }
    }
    or_lines_free(&l);
    return ok;
}

/* ---- llvm-objdump --macho --syms and --function-starts ---- */

typedef struct {
    uint64_t addr;
    char sect[40]; /* "SEG,sect" */
    char name[256];
} or_sym_t;

/* Symbols defined in a section ("SEG,sect"; stabs, undefined and absolute ones are left out), in
 * llvm-objdump's order (the nlist table's). Returns the count (*out malloc'd). */
static inline size_t or_syms(const char *objdump, const char *path, const char *arch,
                             or_sym_t **out) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --macho %s%s --syms '%s' 2>/dev/null", objdump,
             arch ? "--arch=" : "", arch ? arch : "", path);
    or_lines_t l;
    or_run(cmd, &l);
    *out = calloc(l.n + 1, sizeof **out);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *line = l.line[i];
        /* "%016llx" then 9 columns of flags, then the section and the name. */
        if (strlen(line) < 26 || line[16] != ' ') continue;
        char *end;
        uint64_t addr = strtoull(line, &end, 16);
        if (end != line + 16) continue;
        char sect[40], name[256] = "";
        if (sscanf(line + 25, "%39s %255[^\n]", sect, name) < 1 || !strchr(sect, ',')) continue;
        or_sym_t *s = &(*out)[n++];
        s->addr = addr;
        snprintf(s->sect, sizeof s->sect, "%s", sect);
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    or_lines_free(&l);
    return n;
}

static inline size_t or_function_starts(const char *objdump, const char *path, const char *arch,
                                        uint64_t **out) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --macho %s%s --function-starts '%s' 2>/dev/null", objdump,
             arch ? "--arch=" : "", arch ? arch : "", path);
    or_lines_t l;
    or_run(cmd, &l);
    *out = calloc(l.n + 1, sizeof **out);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        char *end;
        uint64_t a = strtoull(l.line[i], &end, 16);
        if (end == l.line[i] + 16 && *end == 0) (*out)[n++] = a;
    }
    or_lines_free(&l);
    return n;
}

/* ---- A loaded layout ---- */

/* Lays a file slice out as dyld would: each segment's file bytes at vmaddr + slide in a calloc'd
 * buffer covering every segment with file bytes (__PAGEZERO is reserved, never mapped), which
 * starts at __TEXT. Sets *origin (the runtime address of the buffer's first byte) and *size. */
static inline uint8_t *or_layout_loaded(const fl_macho_image_t *fimg, const uint8_t *file,
                                        uint64_t slide, uint64_t *origin, uint64_t *size) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < fimg->nsegments; i++) {
        const fl_macho_segment_t *s = &fimg->segments[i];
        if (!s->filesize) continue;
        if (s->vmaddr < lo) lo = s->vmaddr;
        if (s->vmaddr + s->vmsize > hi) hi = s->vmaddr + s->vmsize;
    }
    if (lo >= hi) return NULL;
    uint8_t *mem = calloc(1, hi - lo);
    for (unsigned i = 0; mem && i < fimg->nsegments; i++) {
        const fl_macho_segment_t *s = &fimg->segments[i];
        if (s->filesize)
            memcpy(mem + (s->vmaddr - lo), file + fimg->header + s->fileoff, s->filesize);
    }
    *origin = lo + slide;
    *size = hi - lo;
    return mem;
}

#endif
