/* SPDX-License-Identifier: MIT */
/* Binaries on disk for the CLI: one interface over ELF files and thin or fat Mach-O files. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

typedef struct slice {
    fl_macho_image_t img;
    int init_error;           /* fl_macho_image_init's result */
    fl_macho_symindex_t *ix;  /* built on the first lookup */
    int ix_error;
} slice_t;

struct fl_tool_bin {
    int kind;
    fl_elf_file_t *elf;
    const void *map; /* Mach-O: the whole file */
    size_t size;
    fl_reader_t reader;
    unsigned nslices;
    fl_macho_slice_t slices[FL_MACHO_FAT_MAX];
    slice_t s[FL_MACHO_FAT_MAX];
};

static int open_macho(const char *path, fl_tool_bin_t *b) {
    uint64_t size;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &size);
    if (fd < 0) return fd;
    if (size < 32) {
        close(fd);
        return FL_EBADDATA;
    }
    const void *map;
    int err = fl_file_map(fd, size, path, &map);
    int e = errno;
    close(fd);
    if (err) {
        errno = e;
        return err;
    }
    b->map = map;
    b->size = (size_t)size;
    fl_reader_init_buffer(&b->reader, map, b->size, 0);
    err = fl_macho_slices(&b->reader, b->size, b->slices, FL_MACHO_FAT_MAX, &b->nslices);
    if (err == FL_ERANGE) err = 0; /* more slices than we keep: the first ones still work */
    if (err) return err;
    for (unsigned i = 0; i < b->nslices; i++)
        b->s[i].init_error = fl_macho_image_init(&b->s[i].img, &b->reader, b->slices[i].offset,
                                                 b->slices[i].size, false);
    return 0;
}

int fl_tool_bin_open(const char *path, fl_tool_bin_t **out) {
    *out = NULL;
    unsigned char magic[4] = {0};
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return fd;
    ssize_t got = read(fd, magic, sizeof magic);
    int e = errno;
    close(fd);
    if (got < 0) {
        errno = e;
        return FL_EIO;
    }
    fl_tool_bin_t *b = calloc(1, sizeof *b);
    if (!b) return FL_ENOMEM;
    int err;
    if (got == 4 && memcmp(magic, "\177ELF", 4) == 0) {
        b->kind = FL_TOOL_BIN_ELF;
        err = fl_elf_file_open(path, &b->elf);
    } else {
        b->kind = FL_TOOL_BIN_MACHO;
        err = open_macho(path, b);
    }
    if (err) {
        e = errno;
        fl_tool_bin_close(b);
        errno = e;
        return err;
    }
    *out = b;
    return 0;
}

void fl_tool_bin_close(fl_tool_bin_t *b) {
    if (!b) return;
    if (b->elf) fl_elf_file_close(b->elf);
    for (unsigned i = 0; i < b->nslices; i++) fl_macho_symindex_free(b->s[i].ix);
    if (b->map) fl_file_unmap(b->map, b->size);
    free(b);
}

int fl_tool_bin_kind(const fl_tool_bin_t *b) { return b->kind; }

unsigned fl_tool_bin_count(const fl_tool_bin_t *b) {
    return b->kind == FL_TOOL_BIN_ELF ? 1 : b->nslices;
}

bool fl_tool_bin_is_fat(const fl_tool_bin_t *b) {
    return b->kind == FL_TOOL_BIN_MACHO && (b->nslices != 1 || b->slices[0].offset != 0);
}

const char *fl_tool_bin_arch(const fl_tool_bin_t *b, unsigned i) {
    if (b->kind == FL_TOOL_BIN_ELF) {
        unsigned m = fl_elf_file_machine(b->elf);
        return m == 62 ? "x86_64" : m == 183 ? "arm64" : "unknown";
    }
    return i < b->nslices ? fl_macho_arch_name(b->slices[i].cputype, b->slices[i].cpusubtype)
                          : "unknown";
}

int fl_tool_bin_error(const fl_tool_bin_t *b, unsigned i) {
    if (b->kind == FL_TOOL_BIN_ELF) return 0;
    return i < b->nslices ? b->s[i].init_error : FL_EINVAL;
}

const fl_macho_image_t *fl_tool_bin_macho(const fl_tool_bin_t *b, unsigned i) {
    return b->kind == FL_TOOL_BIN_MACHO && i < b->nslices && b->s[i].init_error == 0
               ? &b->s[i].img
               : NULL;
}

fl_elf_file_t *fl_tool_bin_elf(const fl_tool_bin_t *b) { return b->elf; }

int fl_tool_bin_id(const fl_tool_bin_t *b, unsigned i, uint8_t *id, unsigned cap, unsigned *len) {
    *len = 0;
    if (b->kind == FL_TOOL_BIN_ELF) return fl_elf_file_build_id(b->elf, id, cap, len);
    const fl_macho_image_t *m = fl_tool_bin_macho(b, i);
    if (!m) return i < b->nslices ? b->s[i].init_error : FL_EINVAL;
    if (!m->has_uuid) return FL_ENOTFOUND;
    *len = cap < 16 ? cap : 16;
    memcpy(id, m->uuid, *len);
    return cap < 16 ? FL_ERANGE : 0;
}

int fl_tool_bin_find_uuid(const fl_tool_bin_t *b, const uint8_t *uuid, size_t len) {
    if (b->kind != FL_TOOL_BIN_MACHO || len != 16) return -1;
    for (unsigned i = 0; i < b->nslices; i++) {
        const fl_macho_image_t *m = fl_tool_bin_macho(b, i);
        if (m && m->has_uuid && memcmp(m->uuid, uuid, 16) == 0) return (int)i;
    }
    return -1;
}

int fl_tool_bin_find_arch(const fl_tool_bin_t *b, const char *arch) {
    for (unsigned i = 0; i < fl_tool_bin_count(b); i++)
        if (strcmp(fl_tool_bin_arch(b, i), arch) == 0) return (int)i;
    return -1;
}

long fl_tool_bin_symbol_count(fl_tool_bin_t *b, unsigned i) {
    if (b->kind == FL_TOOL_BIN_ELF) return fl_elf_file_symbol_count(b->elf);
    slice_t *s = &b->s[i];
    if (i >= b->nslices || s->init_error) return FL_EINVAL;
    if (!s->ix && !s->ix_error) s->ix_error = fl_macho_symindex_build(&s->img, &s->ix);
    if (s->ix_error) return s->ix_error;
    return (long)fl_macho_symindex_count(s->ix);
}

int fl_tool_bin_symbolize(fl_tool_bin_t *b, unsigned i, uint64_t addr, const char **name,
                          uint64_t *off) {
    if (b->kind == FL_TOOL_BIN_ELF) return fl_elf_file_symbolize(b->elf, addr, name, off);
    long n = fl_tool_bin_symbol_count(b, i);
    if (n < 0) return (int)n;
    uint64_t sym;
    int e = fl_macho_symindex_find(b->s[i].ix, addr, name, &sym);
    if (e) return e;
    *off = addr - sym;
    return 0;
}

const char *fl_tool_symbol_link_name(const char *raw, int kind) {
    /* Mach-O prefixes C-level names with '_' (so C++'s _Z... is stored as __Z...). */
    return kind == FL_TOOL_BIN_MACHO && raw[0] == '_' ? raw + 1 : raw;
}

const char *fl_tool_symbol_display(const char *name, unsigned flags, char *buf, size_t cap) {
    return fl_tool_demangle(name, flags, buf, cap) ? buf : name;
}
