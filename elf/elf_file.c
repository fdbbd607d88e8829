/* SPDX-License-Identifier: MIT */
/* elf: ELF files on disk (mapped read-only): validation, build-id, text hash, symbols, debuglink. */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf.h"

typedef struct fl_elf_sym {
    uint64_t addr, size;
    const char *name; /* into the mapping */
    unsigned rank;    /* among symbols at one address, lower is preferred */
} fl_elf_sym_t;

struct fl_elf_file {
    const uint8_t *data;
    uint64_t size;
    fl_reader_t reader; /* over the mapping, origin 0: addresses are file offsets */
    unsigned machine;
    uint64_t phoff, phnum;
    uint64_t shoff, shnum, shstrndx; /* shnum 0 when there is no section table */
    const char *debuglink;
    uint64_t debuglink_size; /* bytes of the section from debuglink on */
    bool syms_built;
    fl_elf_sym_t *syms;
    size_t nsyms;
};

/* Copies len bytes at file offset off; false if they lie outside the file. Used instead of
 * casting into the mapping, because malformed offsets may be misaligned. */
static bool get(const fl_elf_file_t *f, uint64_t off, void *dst, size_t len) {
    if (!fl_range_ok(off, len, f->size)) return false;
    memcpy(dst, f->data + off, len);
    return true;
}

static bool get_shdr(const fl_elf_file_t *f, uint64_t i, Elf64_Shdr *sh) {
    return i < f->shnum && get(f, f->shoff + i * sizeof *sh, sh, sizeof *sh);
}

static bool get_phdr(const fl_elf_file_t *f, uint64_t i, Elf64_Phdr *ph) {
    return i < f->phnum && get(f, f->phoff + i * sizeof *ph, ph, sizeof *ph);
}

/* The NUL-terminated string at offset off of the string section sh, or NULL. */
static const char *str_at(const fl_elf_file_t *f, const Elf64_Shdr *sh, uint64_t off) {
    if (sh->sh_type == SHT_NOBITS || !fl_range_ok(sh->sh_offset, sh->sh_size, f->size) ||
        off >= sh->sh_size)
        return NULL;
    const char *s = (const char *)f->data + sh->sh_offset + off;
    return memchr(s, 0, sh->sh_size - off) ? s : NULL;
}

static const char *section_name(const fl_elf_file_t *f, const Elf64_Shdr *sh) {
    Elf64_Shdr strs;
    return get_shdr(f, f->shstrndx, &strs) ? str_at(f, &strs, sh->sh_name) : NULL;
}

/* Checks the header and that both header tables lie inside the file (with the extended
 * numbering of gABI: counts >= 0xff00 stored in section header 0). */
static int validate(fl_elf_file_t *f) {
    Elf64_Ehdr eh;
    if (!get(f, 0, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_ident[EI_VERSION] != EV_CURRENT)
        return FL_EBADDATA;
    if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) return FL_EBADDATA;
    f->machine = eh.e_machine;

    Elf64_Shdr sh0 = {0};
    if (eh.e_shoff) {
        if (eh.e_shentsize != sizeof(Elf64_Shdr) || !get(f, eh.e_shoff, &sh0, sizeof sh0))
            return FL_EBADDATA;
        f->shoff = eh.e_shoff;
        f->shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
        f->shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
        uint64_t bytes;
        if (!fl_mul_u64(f->shnum, sizeof(Elf64_Shdr), &bytes) ||
            !fl_range_ok(f->shoff, bytes, f->size))
            return FL_EBADDATA;
    }
    f->phnum = eh.e_phnum == PN_XNUM && f->shnum ? sh0.sh_info : eh.e_phnum;
    f->phoff = eh.e_phoff;
    if (f->phnum) {
        uint64_t bytes;
        if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
            !fl_mul_u64(f->phnum, sizeof(Elf64_Phdr), &bytes) ||
            !fl_range_ok(f->phoff, bytes, f->size))
            return FL_EBADDATA;
    }

    for (uint64_t i = 0; i < f->shnum; i++) {
        Elf64_Shdr sh;
        const char *name;
        if (get_shdr(f, i, &sh) && sh.sh_type == SHT_PROGBITS && sh.sh_size &&
            (name = section_name(f, &sh)) && strcmp(name, ".gnu_debuglink") == 0) {
            /* Contents: the file name, NUL, padding, a CRC32; str_at checks the NUL. */
            f->debuglink = str_at(f, &sh, 0);
            f->debuglink_size = sh.sh_size;
            break;
        }
    }
    return 0;
}

int fl_elf_file_open(const char *path, fl_elf_file_t **out) {
    *out = NULL;
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return fd;
    if (fsize < sizeof(Elf64_Ehdr)) {
        close(fd);
        return FL_EBADDATA;
    }
    const void *map;
    int err = fl_file_map(fd, fsize, path, &map);
    close(fd);
    if (err) return err;
    fl_elf_file_t *f = calloc(1, sizeof *f);
    if (!f) {
        fl_file_unmap(map, fsize);
        return FL_ENOMEM;
    }
    f->data = map;
    f->size = fsize;
    fl_reader_init_buffer(&f->reader, f->data, f->size, 0);
    int e = validate(f);
    if (e) {
        fl_elf_file_close(f);
        return e;
    }
    *out = f;
    return 0;
}

void fl_elf_file_close(fl_elf_file_t *f) {
    if (!f) return;
    fl_file_unmap(f->data, f->size);
    free(f->syms);
    free(f);
}

unsigned fl_elf_file_machine(const fl_elf_file_t *f) { return f->machine; }

const char *fl_elf_file_debuglink(const fl_elf_file_t *f) { return f->debuglink; }

unsigned fl_elf_file_phnum(const fl_elf_file_t *f) { return (unsigned)f->phnum; }

int fl_elf_file_load_segment(const fl_elf_file_t *f, unsigned i, uint64_t *vaddr, uint64_t *memsz,
                             uint64_t *offset, uint64_t *filesz, uint32_t *flags) {
    Elf64_Phdr ph;
    if (!get_phdr(f, i, &ph) || ph.p_type != PT_LOAD) return FL_ENOTFOUND;
    *vaddr = ph.p_vaddr;
    *memsz = ph.p_memsz;
    *offset = ph.p_offset;
    *filesz = ph.p_filesz;
    *flags = ph.p_flags;
    return 0;
}

bool fl_elf_file_has_segment(const fl_elf_file_t *f, uint32_t p_type) {
    Elf64_Phdr ph;
    for (uint64_t i = 0; i < f->phnum; i++)
        if (get_phdr(f, i, &ph) && ph.p_type == p_type) return true;
    return false;
}

int fl_elf_file_build_id(const fl_elf_file_t *f, uint8_t *id, unsigned cap, unsigned *len) {
    /* Program headers first (what the loader maps, hence what the memory side sees), then
     * sections, for objects whose notes are not in a PT_NOTE. */
    for (uint64_t i = 0; i < f->phnum; i++) {
        Elf64_Phdr ph;
        if (!get_phdr(f, i, &ph) || ph.p_type != PT_NOTE) continue;
        int e = fl_elf_notes_build_id(&f->reader, ph.p_offset, ph.p_filesz, ph.p_align, id, cap,
                                      len);
        if (e == 0 || e == FL_ERANGE) return e;
    }
    for (uint64_t i = 0; i < f->shnum; i++) {
        Elf64_Shdr sh;
        if (!get_shdr(f, i, &sh) || sh.sh_type != SHT_NOTE) continue;
        int e = fl_elf_notes_build_id(&f->reader, sh.sh_offset, sh.sh_size, sh.sh_addralign, id,
                                      cap, len);
        if (e == 0 || e == FL_ERANGE) return e;
    }
    return FL_ENOTFOUND;
}

int fl_elf_file_text_hash(const fl_elf_file_t *f, int kind, uint8_t id[16]) {
    if (kind == FL_BUILD_ID_TEXT_SECTION) {
        uint64_t addr, off, size;
        int e = fl_elf_text_section(&f->reader, &addr, &off, &size);
        if (!e) e = fl_elf_text_hash(&f->reader, off, size, id);
        return e == FL_EFAULT ? FL_EBADDATA : e;
    }
    for (uint64_t i = 0; i < f->phnum; i++) {
        Elf64_Phdr ph;
        if (!get_phdr(f, i, &ph) || ph.p_type != PT_LOAD || ph.p_memsz == 0 || !(ph.p_flags & PF_X))
            continue;
        /* Same bytes as fl_elf_image_from_phdrs hashes at p_vaddr + slide in memory. */
        uint64_t len = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz;
        int e = fl_elf_text_hash(&f->reader, ph.p_offset, len, id);
        return e == FL_EFAULT ? FL_EBADDATA : e;
    }
    return FL_ENOTFOUND;
}

/* ---- Symbols ---- */

static int sym_cmp(const void *a, const void *b) {
    const fl_elf_sym_t *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Prefer, at one address: sized over unsized (only the kept symbol's size bounds lookups),
 * then functions over objects and untyped symbols, then global over weak over local; names break the remaining
 * ties so the choice is deterministic. */
static unsigned sym_rank(const Elf64_Sym *s) {
    unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
    return (s->st_size ? 0 : 6) + (type == STT_OBJECT || type == STT_NOTYPE ? 3 : 0) +
           (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
}

/* Fills f->syms with the usable symbols of the symbol table section sh. */
static int load_symtab(fl_elf_file_t *f, const Elf64_Shdr *sh) {
    Elf64_Shdr strs;
    if (sh->sh_entsize != sizeof(Elf64_Sym) || !fl_range_ok(sh->sh_offset, sh->sh_size, f->size) ||
        !get_shdr(f, sh->sh_link, &strs) || strs.sh_type != SHT_STRTAB)
        return 0;
    uint64_t n = sh->sh_size / sizeof(Elf64_Sym); /* bounded by the file size */
    if (n < 2) return 0;
    f->syms = malloc((size_t)n * sizeof *f->syms);
    if (!f->syms) return FL_ENOMEM;
    for (uint64_t i = 1; i < n; i++) { /* entry 0 is the reserved null symbol */
        Elf64_Sym s;
        memcpy(&s, f->data + sh->sh_offset + i * sizeof s, sizeof s);
        unsigned type = ELF64_ST_TYPE(s.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE)
            continue;
        if (s.st_shndx == SHN_UNDEF || s.st_shndx == SHN_ABS || s.st_shndx == SHN_COMMON) continue;
        const char *name = str_at(f, &strs, s.st_name);
        if (!name || !name[0]) continue;
        /* An untyped symbol names code only in an executable section: assembly that declares
         * no type (Go's crosscall_amd64, as nm, gdb and addr2line name it); not the mapping
         * symbols ($x, $d) of arm64 nor the linker's markers (_end, __bss_start). */
        Elf64_Shdr sec;
        if (type == STT_NOTYPE && (name[0] == '$' || !get_shdr(f, s.st_shndx, &sec) ||
                                   !(sec.sh_flags & SHF_EXECINSTR)))
            continue;
        f->syms[f->nsyms++] = (fl_elf_sym_t){s.st_value, s.st_size, name, sym_rank(&s)};
    }
    if (!f->nsyms) {
        free(f->syms);
        f->syms = NULL;
    }
    return 0;
}

/* Builds the sorted index from .symtab, or from .dynsym when there is no usable .symtab. An
 * object has at most one section of each (gABI), so the first one found is the one. */
static int build_index(fl_elf_file_t *f) {
    const uint32_t types[2] = {SHT_SYMTAB, SHT_DYNSYM};
    for (unsigned t = 0; t < 2 && f->nsyms == 0; t++) {
        for (uint64_t i = 0; i < f->shnum; i++) {
            Elf64_Shdr sh;
            if (!get_shdr(f, i, &sh) || sh.sh_type != types[t]) continue;
            int e = load_symtab(f, &sh);
            if (e) return e; /* syms_built stays false: a later call retries */
            break;
        }
    }
    f->syms_built = true;
    if (!f->nsyms) return 0;
    qsort(f->syms, f->nsyms, sizeof *f->syms, sym_cmp);
    size_t w = 1; /* keep the preferred (first-sorted) symbol per address */
    for (size_t r = 1; r < f->nsyms; r++)
        if (f->syms[r].addr != f->syms[w - 1].addr) f->syms[w++] = f->syms[r];
    f->nsyms = w;
    return 0;
}

long fl_elf_file_symbol_count(fl_elf_file_t *f) {
    if (!f->syms_built) {
        int e = build_index(f);
        if (e) return e;
    }
    return (long)f->nsyms;
}

int fl_elf_file_symbol(fl_elf_file_t *f, size_t i, uint64_t *addr, uint64_t *size,
                       const char **name) {
    long n = fl_elf_file_symbol_count(f);
    if (n < 0) return (int)n;
    if (i >= (size_t)n) return FL_ENOTFOUND;
    *addr = f->syms[i].addr;
    *size = f->syms[i].size;
    *name = f->syms[i].name;
    return 0;
}

int fl_elf_file_section(const fl_elf_file_t *f, const char *name, uint64_t *addr, uint64_t *size) {
    for (uint64_t i = 0; i < f->shnum; i++) {
        Elf64_Shdr sh;
        const char *n;
        if (get_shdr(f, i, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
            (n = section_name(f, &sh)) && strcmp(n, name) == 0) {
            if (addr) *addr = sh.sh_addr;
            if (size) *size = sh.sh_size;
            return 0;
        }
    }
    return FL_ENOTFOUND;
}

bool fl_elf_file_has_section(const fl_elf_file_t *f, const char *name) {
    return fl_elf_file_section(f, name, NULL, NULL) == 0;
}

int fl_elf_file_debuglink_crc(const fl_elf_file_t *f, uint32_t *crc) {
    if (!f->debuglink) return FL_ENOTFOUND;
    /* The name, its NUL, padding to 4 bytes, then the CRC in the file's byte order (LE here). */
    uint64_t at = (strlen(f->debuglink) + 1 + 3) & ~(uint64_t)3;
    if (at + 4 > f->debuglink_size) return FL_ENOTFOUND;
    const uint8_t *p = (const uint8_t *)f->debuglink + at;
    *crc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return 0;
}

int fl_elf_file_symbolize(fl_elf_file_t *f, uint64_t vaddr, const char **name, uint64_t *offset) {
    if (!f->syms_built) {
        int e = build_index(f);
        if (e) return e;
    }
    /* The last symbol with addr <= vaddr. */
    size_t lo = 0, hi = f->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->syms[mid].addr <= vaddr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return FL_ENOTFOUND;
    const fl_elf_sym_t *s = &f->syms[lo - 1];
    uint64_t off = vaddr - s->addr;
    if (s->size && off >= s->size) return FL_ENOTFOUND;
    *name = s->name;
    *offset = off;
    return 0;
}
