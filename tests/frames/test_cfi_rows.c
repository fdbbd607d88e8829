/* SPDX-License-Identifier: MIT */
/* frames: the DWARF CFI rows of cfi_dwarf.c checked against an independent oracle, binutils'
 * `readelf --debug-dump=frames-interp`, for every FDE of each ELF file on the command line.
 *
 * Usage: test_cfi_rows FILE...
 * Each FDE readelf prints in .eh_frame is found again through fl_cfi_fde_find (the .eh_frame_hdr
 * search table, as a walk finds it) at every instruction boundary of its range -- x86_64: every
 * byte (a superset of the boundaries, no disassembler needed), arm64: every 4 bytes -- and the row
 * fl_cfi_row_compute gives there is compared with readelf's row in effect at that address: the
 * CFA (register and offset, or an expression), every register column readelf prints (DWARF
 * registers >= FL_DWARF_REGS are not tracked by the evaluator: counted as skipped), no rule for a
 * tracked register readelf does not print, the return-address column, and the row's [start, end)
 * lying inside readelf's (the row cache reuses a row over that range). fl_cfi_fde_each must list
 * the same FDEs with the same ranges. Nothing is sampled: every byte of libLLVM-14 (50 MB of
 * code, 95,000 FDEs, 50 M addresses) takes 14 s on an idle 2-core machine (readelf: 2 s of it).
 *
 * How readelf prints (binutils dwarf.c, display_debug_frames and frame_display_row): a block per
 * CIE and FDE; a table of rows whose header names the referenced columns ("ra" for the CIE's
 * return-address column); a row is printed at each advance (the state before it, at the old
 * location) and one at the end, so the row in effect at A is the last one printed with LOC <= A;
 * an FDE whose instructions are all nops prints no table: its row is its CIE's (the CIE's block
 * ends with it). Cells: u (undefined, or not set yet), s, c+N (saved at CFA+N), v+N (is CFA+N),
 * "rN (name)" or "rN" (in register N), exp, vexp; the CFA: "reg+N" or exp.
 *
 * readelf is FL_READELF if set, else the PATH's. The test can fail (tried by hand on libc.so.6:
 * FL_READELF set to a wrapper that turns readelf's first "c-16" cell into "c-24", or drops one
 * row, made it print the mismatch and exit 1; so did a row-end check corrupted to LOC + 1).
 * A mismatch is printed once per readelf row (the addresses after it in that row are counted).
 * Exit status: 0, or 1 on any mismatch, any error other than a decline (FL_ENOSYS: reported, not
 * a failure), and when readelf cannot be run or prints no FDE. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultline/faultline.h"
#include "frames/frames.h"

#define MAX_COLS 256u       /* columns readelf prints for one FDE (DWARF registers 0..~130) */
#define MAX_SEGS 64u        /* PT_LOAD segments of one file */
#define SHOW_MISMATCHES 20u /* printed in full per file; the others are counted */

/* ---- The file: its PT_LOAD segments as a reader over link-time addresses ---- */

typedef struct seg {
    uint64_t vaddr, memsz, offset, filesz;
} seg_t;

typedef struct elf_map {
    fl_reader_t r; /* first: the read callback gets &r */
    const uint8_t *map;
    size_t size;
    seg_t seg[MAX_SEGS];
    unsigned nseg;
    int arch;                      /* FL_REGS_ARCH_* */
    uint64_t eh_frame_hdr;         /* PT_GNU_EH_FRAME's vaddr, 0 if none */
    uint64_t eh_frame, eh_frame_size; /* the .eh_frame section */
} elf_map_t;

/* Bytes past a segment's file size and inside its memory size read as zeros (.bss). */
static int map_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    const elf_map_t *m = (const elf_map_t *)r;
    for (unsigned i = 0; i < m->nseg; i++) {
        const seg_t *s = &m->seg[i];
        if (addr < s->vaddr || addr - s->vaddr > s->memsz || len > s->memsz - (addr - s->vaddr))
            continue;
        uint64_t rel = addr - s->vaddr;
        for (size_t k = 0; k < len; k++)
            ((uint8_t *)dst)[k] = rel + k < s->filesz ? m->map[s->offset + rel + k] : 0;
        return 0;
    }
    return FL_EFAULT;
}

static int elf_map_open(const char *path, elf_map_t *m, char *err, size_t cap) {
    memset(m, 0, sizeof *m);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        snprintf(err, cap, "cannot open as a regular file: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    m->size = (size_t)st.st_size;
    void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, cap, "mmap: %s", strerror(errno));
        return -1;
    }
    m->map = p;
    const Elf64_Ehdr *eh = p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB) {
        snprintf(err, cap, "not a 64-bit little-endian ELF file");
        return -1;
    }
    if (eh->e_machine == EM_X86_64) m->arch = FL_REGS_ARCH_X86_64;
    else if (eh->e_machine == EM_AARCH64) m->arch = FL_REGS_ARCH_ARM64;
    else {
        snprintf(err, cap, "e_machine %u is neither x86_64 nor aarch64", eh->e_machine);
        return -1;
    }
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > m->size ||
        (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > m->size - eh->e_phoff) {
        snprintf(err, cap, "bad program headers");
        return -1;
    }
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(m->map + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_GNU_EH_FRAME) m->eh_frame_hdr = ph[i].p_vaddr;
        if (ph[i].p_type != PT_LOAD) continue;
        if (m->nseg == MAX_SEGS || ph[i].p_offset > m->size ||
            ph[i].p_filesz > m->size - ph[i].p_offset || ph[i].p_filesz > ph[i].p_memsz) {
            snprintf(err, cap, "bad or too many PT_LOAD segments");
            return -1;
        }
        m->seg[m->nseg++] = (seg_t){ph[i].p_vaddr, ph[i].p_memsz, ph[i].p_offset, ph[i].p_filesz};
    }
    /* .eh_frame's address: readelf numbers records by their offset in that section. */
    if (eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shoff <= m->size && eh->e_shnum &&
        (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= m->size - eh->e_shoff &&
        eh->e_shstrndx < eh->e_shnum) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(m->map + eh->e_shoff);
        const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
        for (unsigned i = 0; i < eh->e_shnum && strs->sh_offset < m->size; i++) {
            if (sh[i].sh_name >= strs->sh_size || sh[i].sh_name >= m->size - strs->sh_offset)
                continue;
            const char *name = (const char *)m->map + strs->sh_offset + sh[i].sh_name;
            size_t room = m->size - strs->sh_offset - sh[i].sh_name;
            if (strnlen(name, room) < room && strcmp(name, ".eh_frame") == 0) {
                m->eh_frame = sh[i].sh_addr;
                m->eh_frame_size = sh[i].sh_size;
            }
        }
    }
    if (!m->eh_frame) {
        snprintf(err, cap, "no .eh_frame section");
        return -1;
    }
    /* The segment holding the tables is read in place (fl_reader_direct), the others through
     * map_read: as a walk reads an image's tables where the memory map shows them readable. */
    m->r.read = map_read;
    uint64_t key = m->eh_frame_hdr ? m->eh_frame_hdr : m->eh_frame;
    for (unsigned i = 0; i < m->nseg; i++) {
        if (key >= m->seg[i].vaddr && key - m->seg[i].vaddr < m->seg[i].filesz) {
            m->r.base = m->map + m->seg[i].offset;
            m->r.size = m->seg[i].filesz;
            m->r.origin = m->seg[i].vaddr;
        }
    }
    return 0;
}

static void elf_map_close(elf_map_t *m) {
    if (m->map) munmap((void *)m->map, m->size);
    m->map = NULL;
}

/* ---- readelf's register names (binutils dwarf.c: dwarf_regnames_x86_64, _aarch64) ---- */

static const char *const names_x86_64[] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
    "r13", "r14", "r15", "rip", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
    "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st0", "st1", "st2",
    "st3", "st4", "st5", "st6", "st7", "mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7",
    "rflags", "es", "cs", "ss", "ds", "fs", "gs", NULL, NULL, "fs.base", "gs.base", NULL, NULL,
    "tr", "ldtr", "mxcsr", "fcw", "fsw", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
    "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31",
    [118] = "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
static const char *const names_aarch64[] = {
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
    "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
    "x27", "x28", "x29", "x30", "sp", NULL, "elr", [46] = "vg", "ffr", "p0", "p1", "p2", "p3",
    "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13", "p14", "p15", "v0", "v1",
    "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15",
    "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28",
    "v29", "v30", "v31", "z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10", "z11",
    "z12", "z13", "z14", "z15", "z16", "z17", "z18", "z19", "z20", "z21", "z22", "z23", "z24",
    "z25", "z26", "z27", "z28", "z29", "z30", "z31"};

static const char *reg_name(int arch, unsigned reg, char *buf, size_t cap) {
    const char *const *t = arch == FL_REGS_ARCH_X86_64 ? names_x86_64 : names_aarch64;
    size_t n = arch == FL_REGS_ARCH_X86_64 ? sizeof names_x86_64 / sizeof *names_x86_64
                                           : sizeof names_aarch64 / sizeof *names_aarch64;
    if (reg < n && t[reg]) return t[reg];
    snprintf(buf, cap, "r%u", reg);
    return buf;
}

/* A register name as readelf prints it: its table's name, or "rN" for a register without one. */
static int reg_number(int arch, const char *s, size_t len, unsigned *out) {
    const char *const *t = arch == FL_REGS_ARCH_X86_64 ? names_x86_64 : names_aarch64;
    size_t n = arch == FL_REGS_ARCH_X86_64 ? sizeof names_x86_64 / sizeof *names_x86_64
                                           : sizeof names_aarch64 / sizeof *names_aarch64;
    for (size_t i = 0; i < n; i++) {
        if (t[i] && strlen(t[i]) == len && memcmp(t[i], s, len) == 0) {
            *out = (unsigned)i;
            return 0;
        }
    }
    if (len >= 2 && len <= 5 && s[0] == 'r') {
        unsigned v = 0;
        for (size_t i = 1; i < len; i++) {
            if (s[i] < '0' || s[i] > '9') return -1;
            v = v * 10 + (unsigned)(s[i] - '0');
        }
        *out = v;
        return 0;
    }
    return -1;
}

/* ---- readelf's blocks ---- */

enum { CELL_U, CELL_S, CELL_OFF, CELL_VOFF, CELL_REG, CELL_EXP, CELL_VEXP };

typedef struct cell {
    uint8_t kind;
    int64_t value; /* CELL_OFF, CELL_VOFF: offset; CELL_REG: register */
} cell_t;

typedef struct rrow {
    uint64_t loc;
    bool cfa_exp;
    unsigned cfa_reg;
    int64_t cfa_off;
    size_t cells; /* index of its first cell in the block's cell array */
} rrow_t;

typedef struct block {
    bool open, is_fde;
    uint64_t off, cie_off, pc_lo, pc_hi;
    unsigned ra;
    bool have_header;
    unsigned ncols;
    unsigned col[MAX_COLS];
    rrow_t *row;
    size_t nrows, cap_rows;
    cell_t *cell;
    size_t ncells, cap_cells;
    char problem[200]; /* a line readelf printed that is not a row, or a parse error */
} block_t;

/* A CIE as the FDEs that use it need it: its return-address column, and its last row and
 * columns (the row of FDEs whose instructions are all nops). */
typedef struct cie_rec {
    uint64_t off;
    unsigned ra;
    bool has_row;
    unsigned ncols;
    unsigned col[MAX_COLS];
    rrow_t row;
    cell_t cell[MAX_COLS];
} cie_rec_t;

/* ---- Our FDEs, as fl_cfi_fde_each lists them ---- */

typedef struct our_fde {
    uint64_t addr, pc_start, pc_end;
    bool seen; /* readelf printed it too */
} our_fde_t;

typedef struct ours {
    our_fde_t *v;
    size_t n, cap;
} ours_t;

static int collect_cb(void *ctx, const fl_cfi_fde_t *fde) {
    ours_t *o = ctx;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 1024;
        our_fde_t *v = realloc(o->v, cap * sizeof *v);
        if (!v) return FL_ENOMEM;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (our_fde_t){fde->addr, fde->pc_start, fde->pc_end, false};
    return 0;
}

static our_fde_t *ours_find(ours_t *o, uint64_t addr) {
    size_t lo = 0, hi = o->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->v[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo < o->n && o->v[lo].addr == addr ? &o->v[lo] : NULL;
}

/* ---- One file's run ---- */

typedef struct run {
    const char *path;
    elf_map_t elf;
    fl_cfi_table_t table;
    fl_cfi_memo_t memo;
    ours_t ours;
    cie_rec_t *cies;
    size_t ncies, cap_cies;
    /* counts */
    uint64_t fdes, fdes_empty, fdes_cie_row, rows, addrs, cells, skipped, declined, mismatches, errors;
    uint64_t readelf_fdes;
    uint64_t shown;                 /* mismatches printed */
    uint64_t last_fde, last_loc;    /* the readelf row of the last row mismatch printed */
} run_t;

static void mismatch(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(run_t *r, const char *fmt, ...) {
    r->mismatches++;
    if (r->shown++ < SHOW_MISMATCHES) {
        va_list ap;
        va_start(ap, fmt);
        printf("MISMATCH %s: ", r->path);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    } else if (r->shown == SHOW_MISMATCHES + 1) {
        printf("(further mismatches of %s are counted, not shown)\n", r->path);
    }
}

static void error(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error(run_t *r, const char *fmt, ...) {
    if (r->errors++ < SHOW_MISMATCHES) {
        va_list ap;
        va_start(ap, fmt);
        printf("ERROR %s: ", r->path);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    }
}

static void *grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return p;
    size_t cap2 = *cap ? *cap : 16;
    while (cap2 < need) cap2 *= 2;
    void *q = realloc(p, cap2 * size);
    if (!q) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    *cap = cap2;
    return q;
}

/* readelf's row as it printed it (the columns, then the cells). */
static void format_readelf(const run_t *r, const block_t *b, const rrow_t *w, const unsigned *col,
                           unsigned ncols, const cell_t *cell, char *out, size_t cap) {
    char nb[16];
    size_t n = 0;
    if (w->cfa_exp) n += (size_t)snprintf(out + n, cap - n, "CFA=exp");
    else
        n += (size_t)snprintf(out + n, cap - n, "CFA=%s%+" PRId64,
                              reg_name(r->elf.arch, w->cfa_reg, nb, sizeof nb), w->cfa_off);
    for (unsigned c = 0; c < ncols && n < cap; c++) {
        const cell_t *x = &cell[c];
        const char *name = col[c] == b->ra ? "ra" : reg_name(r->elf.arch, col[c], nb, sizeof nb);
        n += (size_t)snprintf(out + n, cap - n, " %s=", name);
        if (n >= cap) break;
        switch (x->kind) {
        case CELL_U: n += (size_t)snprintf(out + n, cap - n, "u"); break;
        case CELL_S: n += (size_t)snprintf(out + n, cap - n, "s"); break;
        case CELL_OFF: n += (size_t)snprintf(out + n, cap - n, "c%+" PRId64, x->value); break;
        case CELL_VOFF: n += (size_t)snprintf(out + n, cap - n, "v%+" PRId64, x->value); break;
        case CELL_REG: n += (size_t)snprintf(out + n, cap - n, "r%" PRId64, x->value); break;
        case CELL_EXP: n += (size_t)snprintf(out + n, cap - n, "exp"); break;
        default: n += (size_t)snprintf(out + n, cap - n, "vexp"); break;
        }
    }
}

/* Ours in the same form: the CFA, then every register with a rule (UNSET ones are omitted). */
static void format_ours(const run_t *r, const fl_cfi_row_t *row, char *out, size_t cap) {
    char nb[16];
    size_t n = 0;
    if (row->h.cfa_kind == FL_CFI_CFA_EXPR) n += (size_t)snprintf(out + n, cap - n, "CFA=exp");
    else
        n += (size_t)snprintf(out + n, cap - n, "CFA=%s%+" PRId64,
                              reg_name(r->elf.arch, row->h.cfa_reg, nb, sizeof nb),
                              row->h.cfa_offset);
    for (unsigned i = 0; i < row->h.nrules && n < cap; i++) {
        const fl_cfi_rule_t *x = &row->rule[i];
        const char *name = x->reg == row->h.ra_reg ? "ra" : reg_name(r->elf.arch, x->reg, nb, sizeof nb);
        n += (size_t)snprintf(out + n, cap - n, " %s=", name);
        if (n >= cap) break;
        switch (x->kind) {
        case FL_CFI_RULE_UNDEFINED: n += (size_t)snprintf(out + n, cap - n, "u(undefined)"); break;
        case FL_CFI_RULE_SAME: n += (size_t)snprintf(out + n, cap - n, "s"); break;
        case FL_CFI_RULE_OFFSET: n += (size_t)snprintf(out + n, cap - n, "c%+d", x->value); break;
        case FL_CFI_RULE_VAL_OFFSET: n += (size_t)snprintf(out + n, cap - n, "v%+d", x->value); break;
        case FL_CFI_RULE_REGISTER: n += (size_t)snprintf(out + n, cap - n, "r%d", x->value); break;
        case FL_CFI_RULE_EXPR: n += (size_t)snprintf(out + n, cap - n, "exp"); break;
        case FL_CFI_RULE_VAL_EXPR: n += (size_t)snprintf(out + n, cap - n, "vexp"); break;
        default: n += (size_t)snprintf(out + n, cap - n, "kind%u", x->kind); break;
        }
    }
    if (n < cap)
        snprintf(out + n, cap - n, " [row 0x%" PRIx64 "..0x%" PRIx64 ")", row->start, row->end);
}

static bool cell_matches(const cell_t *x, const fl_cfi_rule_t *rule) {
    unsigned kind = rule ? rule->kind : FL_CFI_RULE_UNSET;
    switch (x->kind) {
    case CELL_U: return kind == FL_CFI_RULE_UNSET || kind == FL_CFI_RULE_UNDEFINED;
    case CELL_S: return kind == FL_CFI_RULE_SAME;
    case CELL_OFF: return kind == FL_CFI_RULE_OFFSET && rule->value == x->value;
    case CELL_VOFF: return kind == FL_CFI_RULE_VAL_OFFSET && rule->value == x->value;
    case CELL_REG: return kind == FL_CFI_RULE_REGISTER && rule->value == x->value;
    case CELL_EXP: return kind == FL_CFI_RULE_EXPR;
    default: return kind == FL_CFI_RULE_VAL_EXPR;
    }
}

/* Compares our row at `a` with readelf's row w (in effect from w->loc to next_loc). */
static void compare_row(run_t *r, const block_t *b, uint64_t a, const rrow_t *w, uint64_t next_loc,
                        const unsigned *col, unsigned ncols, const cell_t *cell,
                        const fl_cfi_row_t *row) {
    char why[160] = "";
    const fl_cfi_rule_t *by_reg[FL_DWARF_REGS] = {0};
    if (row->h.nrules > FL_DWARF_REGS) {
        mismatch(r, "FDE 0x%" PRIx64 " at 0x%" PRIx64 ": %u rules", b->off, a, row->h.nrules);
        return;
    }
    for (unsigned i = 0; i < row->h.nrules; i++)
        if (row->rule[i].reg < FL_DWARF_REGS) by_reg[row->rule[i].reg] = &row->rule[i];
    bool printed[FL_DWARF_REGS] = {0};

    if (w->cfa_exp ? row->h.cfa_kind != FL_CFI_CFA_EXPR
                   : row->h.cfa_kind != FL_CFI_CFA_REG || row->h.cfa_reg != w->cfa_reg ||
                         (int32_t)row->h.cfa_offset != w->cfa_off) /* readelf prints (int) */
        snprintf(why, sizeof why, "CFA");
    if (!why[0] && row->h.ra_reg != b->ra)
        snprintf(why, sizeof why, "return-address column %u, readelf's CIE says %u", row->h.ra_reg,
                 b->ra);
    for (unsigned c = 0; c < ncols; c++) {
        if (col[c] >= FL_DWARF_REGS) {
            r->skipped++;
            continue;
        }
        printed[col[c]] = true;
        r->cells++;
        if (!why[0] && !cell_matches(&cell[c], by_reg[col[c]]))
            snprintf(why, sizeof why, "register %u", col[c]);
    }
    /* The rules are those other than UNSET, by ascending register (frames.h). */
    for (unsigned i = 0; i < row->h.nrules && !why[0]; i++) {
        const fl_cfi_rule_t *x = &row->rule[i];
        if (x->reg >= FL_DWARF_REGS || x->kind == FL_CFI_RULE_UNSET ||
            (i && x->reg <= row->rule[i - 1].reg))
            snprintf(why, sizeof why, "rule %u (register %u, kind %u) out of order or unset", i,
                     x->reg, x->kind);
        else if (!printed[x->reg])
            snprintf(why, sizeof why, "register %u has a rule; readelf prints no column for it",
                     x->reg);
    }
    /* The row applies over [start, end): inside readelf's row, else a cached row would be
     * reused where another one is in effect. (Narrower would only cost cache hits.) */
    if (!why[0] && !(row->start <= a && a < row->end && row->start >= w->loc && row->end <= next_loc))
        snprintf(why, sizeof why, "row range, readelf's row applies over [0x%" PRIx64 ", 0x%" PRIx64 ")",
                 w->loc, next_loc);
    if (why[0] && r->last_fde == b->off + 1 && r->last_loc == w->loc) {
        r->mismatches++; /* the same row again, at the next address: counted */
    } else if (why[0]) {
        char theirs[1024], mine[1024];
        r->last_fde = b->off + 1;
        r->last_loc = w->loc;
        format_readelf(r, b, w, col, ncols, cell, theirs, sizeof theirs);
        format_ours(r, row, mine, sizeof mine);
        mismatch(r,
                 "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64 " at 0x%" PRIx64 " (%s):\n"
                 "  readelf (LOC 0x%" PRIx64 "): %s\n  ours: %s",
                 b->off, b->pc_lo, b->pc_hi, a, why, w->loc, theirs, mine);
    }
}

/* Why the evaluator declined (FL_ENOSYS) an FDE: the reason lies in its CIE's augmentation or
 * return-address column, or in a CFA instruction; their bytes, for `readelf -wf` to name. */
static void print_decline(const run_t *r, const block_t *b, const char *call, uint64_t a, int e) {
    printf("DECLINED %s: FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64 ": %s at 0x%" PRIx64
           ": %s (see readelf -wf, CIE 0x%" PRIx64 ")\n",
           r->path, b->off, b->pc_lo, b->pc_hi, call, a, fl_strerror(e), b->cie_off);
    fl_cfi_fde_t fde;
    if (fl_cfi_fde_parse(&r->table, r->elf.eh_frame + b->off, &fde)) return;
    printf("  ra column %u; instructions of the CIE, then of the FDE:", (unsigned)fde.cie.ra_reg);
    uint64_t from[2] = {fde.cie.insns, fde.insns}, to[2] = {fde.cie.insns_end, fde.insns_end};
    for (int k = 0; k < 2; k++) {
        printf(k ? " |" : "");
        for (uint64_t x = from[k]; x < to[k] && x - from[k] < 64; x++) {
            uint8_t byte;
            if (fl_read(&r->elf.r, x, &byte, 1)) break;
            printf(" %02x", byte);
        }
    }
    printf("\n");
}

static const cie_rec_t *cie_find(const run_t *r, uint64_t off) {
    size_t lo = 0, hi = r->ncies; /* readelf prints records by ascending offset */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->cies[mid].off < off) lo = mid + 1;
        else hi = mid;
    }
    return lo < r->ncies && r->cies[lo].off == off ? &r->cies[lo] : NULL;
}

static void check_fde(run_t *r, block_t *b) {
    r->readelf_fdes++;
    uint64_t addr = r->elf.eh_frame + b->off;
    our_fde_t *o = ours_find(&r->ours, addr);
    if (!o) {
        mismatch(r, "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64
                    ": fl_cfi_fde_each does not list an FDE at 0x%" PRIx64,
                 b->off, b->pc_lo, b->pc_hi, addr);
        return;
    }
    o->seen = true;
    if (o->pc_start != b->pc_lo || o->pc_end != b->pc_hi) {
        mismatch(r, "FDE 0x%" PRIx64 ": readelf pc=0x%" PRIx64 "..0x%" PRIx64
                    ", fl_cfi_fde_each 0x%" PRIx64 "..0x%" PRIx64,
                 b->off, b->pc_lo, b->pc_hi, o->pc_start, o->pc_end);
        return;
    }
    if (b->problem[0]) {
        error(r, "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64 ": readelf output: %s", b->off,
              b->pc_lo, b->pc_hi, b->problem);
        return;
    }
    r->fdes++;
    if (b->pc_lo == b->pc_hi) {
        r->fdes_empty++;
        return;
    }
    /* The rows: the FDE's own, or (all nops) its CIE's last one. */
    const rrow_t *w = b->row;
    size_t n = b->nrows;
    const unsigned *col = b->col;
    unsigned ncols = b->ncols;
    const cell_t *cells = b->cell;
    rrow_t cie_row;
    const cie_rec_t *cie = cie_find(r, b->cie_off);
    if (!cie) {
        error(r, "FDE 0x%" PRIx64 ": readelf printed no CIE at 0x%" PRIx64, b->off, b->cie_off);
        return;
    }
    if (!n) {
        if (!cie->has_row) {
            error(r, "FDE 0x%" PRIx64 ": neither it nor its CIE has a row in readelf's output",
                  b->off);
            return;
        }
        r->fdes_cie_row++;
        cie_row = cie->row;
        cie_row.loc = b->pc_lo;
        cie_row.cells = 0;
        w = &cie_row;
        n = 1;
        col = cie->col;
        ncols = cie->ncols;
        cells = cie->cell;
    }
    r->rows += n;
    for (size_t i = 1; i < n; i++) {
        if (w[i].loc < w[i - 1].loc) {
            error(r, "FDE 0x%" PRIx64 ": readelf's rows go backwards at LOC 0x%" PRIx64, b->off,
                  w[i].loc);
            return;
        }
    }
    if (w[0].loc > b->pc_lo) {
        error(r, "FDE 0x%" PRIx64 ": readelf's first row starts at 0x%" PRIx64 ", after pc_begin",
              b->off, w[0].loc);
        return;
    }
    const unsigned step = r->elf.arch == FL_REGS_ARCH_X86_64 ? 1 : 4;
    size_t i = 0;
    for (uint64_t a = b->pc_lo; a < b->pc_hi; a += step) {
        while (i + 1 < n && w[i + 1].loc <= a) i++;
        uint64_t next = i + 1 < n && w[i + 1].loc < b->pc_hi ? w[i + 1].loc : b->pc_hi;
        r->addrs++;
        fl_cfi_fde_t fde;
        int e = fl_cfi_fde_find(&r->table, a, &fde);
        if (e == FL_ENOSYS) {
            r->declined++;
            print_decline(r, b, "fl_cfi_fde_find", a, e);
            return;
        }
        if (e) {
            error(r, "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64 ": fl_cfi_fde_find(0x%" PRIx64
                     "): %s",
                  b->off, b->pc_lo, b->pc_hi, a, fl_strerror(e));
            return;
        }
        if (fde.addr != addr) {
            mismatch(r, "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64 ": fl_cfi_fde_find(0x%" PRIx64
                        ") gives the FDE at 0x%" PRIx64 " (offset 0x%" PRIx64 ") pc=0x%" PRIx64
                        "..0x%" PRIx64,
                     b->off, b->pc_lo, b->pc_hi, a, fde.addr, fde.addr - r->elf.eh_frame,
                     fde.pc_start, fde.pc_end);
            return;
        }
        fl_cfi_row_t row;
        e = fl_cfi_row_compute(&r->table, &fde, a, &row);
        if (e == FL_ENOSYS) {
            r->declined++;
            print_decline(r, b, "fl_cfi_row_compute", a, e);
            return;
        }
        if (e) {
            error(r, "FDE 0x%" PRIx64 " pc=0x%" PRIx64 "..0x%" PRIx64
                     ": fl_cfi_row_compute(0x%" PRIx64 "): %s",
                  b->off, b->pc_lo, b->pc_hi, a, fl_strerror(e));
            return;
        }
        compare_row(r, b, a, &w[i], next, col, ncols, cells + w[i].cells, &row);
    }
}

/* ---- Parsing readelf's lines ---- */

static void block_problem(block_t *b, const char *what, const char *line) {
    if (!b->problem[0]) snprintf(b->problem, sizeof b->problem, "%s: \"%.120s\"", what, line);
}

static void parse_header(run_t *r, block_t *b, char *line) {
    b->have_header = true;
    b->ncols = 0;
    char *save = NULL;
    char *tok = strtok_r(line, " \t\n", &save); /* LOC */
    tok = strtok_r(NULL, " \t\n", &save);       /* CFA */
    if (!tok || strcmp(tok, "CFA") != 0) {
        block_problem(b, "a header without CFA", line);
        return;
    }
    unsigned prev = 0;
    while ((tok = strtok_r(NULL, " \t\n", &save)) != NULL) {
        unsigned reg;
        if (strcmp(tok, "ra") == 0) {
            reg = b->ra;
        } else if (reg_number(r->elf.arch, tok, strlen(tok), &reg)) {
            block_problem(b, "an unknown register name in the header", tok);
            return;
        }
        if (b->ncols == MAX_COLS || (b->ncols && reg <= prev)) {
            block_problem(b, "too many or unordered columns", tok);
            return;
        }
        b->col[b->ncols++] = prev = reg;
    }
}

static int parse_cell(run_t *r, const char *tok, const char *next, bool *used_next, cell_t *c) {
    char *end;
    *used_next = false;
    if (strcmp(tok, "u") == 0) c->kind = CELL_U;
    else if (strcmp(tok, "s") == 0) c->kind = CELL_S;
    else if (strcmp(tok, "exp") == 0) c->kind = CELL_EXP;
    else if (strcmp(tok, "vexp") == 0) c->kind = CELL_VEXP;
    else if ((tok[0] == 'c' || tok[0] == 'v') && (tok[1] == '+' || tok[1] == '-')) {
        c->kind = tok[0] == 'c' ? CELL_OFF : CELL_VOFF;
        errno = 0;
        c->value = strtoll(tok + 1, &end, 10);
        if (*end || errno) return -1;
    } else {
        /* In a register: "rN (name)" for a register with a name, else "rN". */
        (void)r;
        if (tok[0] != 'r' || tok[1] < '0' || tok[1] > '9') return -1;
        errno = 0;
        c->value = strtoll(tok + 1, &end, 10);
        if (*end || errno) return -1;
        if (next && next[0] == '(' && next[strlen(next) - 1] == ')') *used_next = true;
        c->kind = CELL_REG;
    }
    return 0;
}

static void parse_row(run_t *r, block_t *b, char *line) {
    char copy[512];
    snprintf(copy, sizeof copy, "%s", line);
    if (!b->have_header) {
        block_problem(b, "a row before the header", copy);
        return;
    }
    char *tok[2 * MAX_COLS + 8]; /* "rN (name)" is two */
    unsigned nt = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
        if (nt == sizeof tok / sizeof *tok) {
            block_problem(b, "too many cells", copy);
            return;
        }
        tok[nt++] = t;
    }
    if (nt < 2) {
        block_problem(b, "a short row", copy);
        return;
    }
    b->row = grow(b->row, &b->cap_rows, b->nrows + 1, sizeof *b->row);
    rrow_t *w = &b->row[b->nrows];
    char *end;
    errno = 0;
    w->loc = strtoull(tok[0], &end, 16);
    if (*end || errno) {
        block_problem(b, "a bad LOC", copy);
        return;
    }
    if (strcmp(tok[1], "exp") == 0) {
        w->cfa_exp = true;
        w->cfa_reg = 0;
        w->cfa_off = 0;
    } else {
        char *sign = strpbrk(tok[1], "+-");
        w->cfa_exp = false;
        if (!sign || reg_number(r->elf.arch, tok[1], (size_t)(sign - tok[1]), &w->cfa_reg)) {
            block_problem(b, "a bad CFA", copy);
            return;
        }
        errno = 0;
        w->cfa_off = strtoll(sign, &end, 10);
        if (*end || errno) {
            block_problem(b, "a bad CFA offset", copy);
            return;
        }
    }
    w->cells = b->ncells;
    b->cell = grow(b->cell, &b->cap_cells, b->ncells + b->ncols, sizeof *b->cell);
    unsigned c = 0;
    for (unsigned k = 2; k < nt; k++) {
        bool used_next;
        if (c == b->ncols ||
            parse_cell(r, tok[k], k + 1 < nt ? tok[k + 1] : NULL, &used_next, &b->cell[b->ncells + c])) {
            block_problem(b, "a bad cell or more cells than columns", copy);
            return;
        }
        c++;
        if (used_next) k++;
    }
    if (c != b->ncols) {
        block_problem(b, "fewer cells than columns", copy);
        return;
    }
    b->ncells += c;
    b->nrows++;
}

static void end_block(run_t *r, block_t *b) {
    if (!b->open) return;
    b->open = false;
    if (b->is_fde) {
        check_fde(r, b);
        return;
    }
    r->cies = grow(r->cies, &r->cap_cies, r->ncies + 1, sizeof *r->cies);
    cie_rec_t *c = &r->cies[r->ncies++];
    memset(c, 0, sizeof *c);
    c->off = b->off;
    c->ra = b->ra;
    if (b->problem[0]) {
        error(r, "CIE 0x%" PRIx64 ": readelf output: %s", b->off, b->problem);
        return;
    }
    if (b->nrows) {
        c->has_row = true;
        c->row = b->row[b->nrows - 1];
        c->ncols = b->ncols;
        if (b->ncols) { /* (b->cell is NULL without columns) */
            memcpy(c->col, b->col, b->ncols * sizeof *b->col);
            memcpy(c->cell, b->cell + c->row.cells, b->ncols * sizeof *b->cell);
        }
    }
}

static void begin_block(run_t *r, block_t *b, char *line) {
    unsigned long long off, len, id, cie_off, lo, hi;
    unsigned ra;
    int k = 0;
    b->open = true;
    b->is_fde = false;
    b->have_header = false;
    b->ncols = 0;
    b->nrows = 0;
    b->ncells = 0;
    b->problem[0] = 0;
    b->ra = 0;
    if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &off, &len, &id, &cie_off, &lo,
               &hi) == 6) {
        b->is_fde = true;
        b->off = off;
        b->cie_off = cie_off;
        b->pc_lo = lo;
        b->pc_hi = hi;
        const cie_rec_t *cie = cie_find(r, cie_off); /* its "ra" column */
        if (cie) b->ra = cie->ra;
        else block_problem(b, "an FDE whose CIE readelf has not printed before", line);
        return;
    }
    if (sscanf(line, "%llx %llx %llx CIE %n", &off, &len, &id, &k) == 3 && k) {
        const char *p = strstr(line + k, " ra=");
        b->off = off;
        if (p && sscanf(p, " ra=%u", &ra) == 1) {
            b->ra = ra;
            return;
        }
    }
    b->open = false;
    error(r, "unexpected line in readelf's output: \"%.120s\"", line);
}

static bool is_block_start(const char *line) {
    unsigned i = 0;
    while (i < 8 && ((line[i] >= '0' && line[i] <= '9') || (line[i] >= 'a' && line[i] <= 'f'))) i++;
    return i == 8 && line[8] == ' ';
}

/* Runs readelf on r->path; every block of .eh_frame goes to begin_block/end_block. */
static int run_readelf(run_t *r) {
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        const char *readelf = getenv("FL_READELF");
        if (!readelf || !*readelf) readelf = "readelf";
        /* no-follow-links: not the separate debug file (libc6-dbg's has a NOBITS .eh_frame,
         * which makes readelf exit 1). */
        execlp(readelf, readelf, "--debug-dump=no-follow-links", "--debug-dump=frames-interp",
               r->path, (char *)NULL);
        fprintf(stderr, "cannot run %s: %s\n", readelf, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    if (!in) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool in_eh = false;
    uint64_t lines = 0;
    static block_t b; /* its arrays are reused from file to file */
    b.open = false;
    while ((len = getline(&line, &cap, in)) > 0) {
        lines++;
        if (line[len - 1] == '\n') line[--len] = 0;
        if (strncmp(line, "Contents of the ", 16) == 0) {
            end_block(r, &b);
            in_eh = strncmp(line + 16, ".eh_frame section", 17) == 0;
            continue;
        }
        if (!in_eh) continue;
        if (len == 0) {
            end_block(r, &b);
            continue;
        }
        if (is_block_start(line)) {
            end_block(r, &b);
            if (strstr(line, " ZERO terminator")) continue;
            begin_block(r, &b, line);
        } else if (!b.open) {
            error(r, "unexpected line in readelf's output: \"%.120s\"", line);
        } else if (strncmp(line, "   LOC ", 7) == 0) {
            parse_header(r, &b, line);
        } else if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
            parse_row(r, &b, line);
        } else {
            block_problem(&b, "a line that is neither a header nor a row", line);
        }
    }
    end_block(r, &b);
    free(line);
    fclose(in);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL %s: readelf exited with status 0x%x after %" PRIu64 " lines\n", r->path,
               status, lines);
        return -1;
    }
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 0 if every FDE of path matches readelf's rows. */
static int check_file(const char *path) {
    static run_t r;
    char err[256];
    double t0 = now();
    free(r.ours.v);
    free(r.cies);
    memset(&r, 0, sizeof r);
    r.path = path;
    if (elf_map_open(path, &r.elf, err, sizeof err)) {
        printf("FAIL %s: %s\n", path, err);
        elf_map_close(&r.elf);
        return 1;
    }
    /* As a walk sees a shared object: .eh_frame_hdr, records from its eh_frame_ptr, a memo. A
     * file without the header (a static executable) is searched linearly. */
    r.table = (fl_cfi_table_t){.mem = &r.elf.r, .eh_frame_hdr = r.elf.eh_frame_hdr,
                               .arch = r.elf.arch, .memo = &r.memo};
    if (!r.elf.eh_frame_hdr) {
        r.table.eh_frame = r.elf.eh_frame;
        r.table.eh_frame_size = r.elf.eh_frame_size;
    }
    /* fl_cfi_fde_each without the memo, bounded by the section: ld.so's .eh_frame has no zero
     * terminator (it is linked without crtend.o) and ends with its segment, so a walk to the
     * terminator would run off the file's bytes (FL_EFAULT). */
    fl_cfi_table_t plain = {.mem = &r.elf.r, .eh_frame_hdr = r.elf.eh_frame_hdr,
                            .eh_frame = r.elf.eh_frame, .eh_frame_size = r.elf.eh_frame_size,
                            .arch = r.elf.arch};
    int e = fl_cfi_fde_each(&plain, collect_cb, &r.ours);
    if (e) {
        printf("FAIL %s: fl_cfi_fde_each: %s (after %zu FDEs)\n", path, fl_strerror(e), r.ours.n);
        elf_map_close(&r.elf);
        return 1;
    }
    if (run_readelf(&r)) {
        elf_map_close(&r.elf);
        return 1;
    }
    for (size_t i = 0; i < r.ours.n && r.readelf_fdes; i++) {
        if (!r.ours.v[i].seen)
            mismatch(&r, "fl_cfi_fde_each lists an FDE at 0x%" PRIx64 " (offset 0x%" PRIx64
                         ") pc=0x%" PRIx64 "..0x%" PRIx64 " that readelf does not print",
                     r.ours.v[i].addr, r.ours.v[i].addr - r.elf.eh_frame, r.ours.v[i].pc_start,
                     r.ours.v[i].pc_end);
    }
    int fail = 0;
    if (!r.readelf_fdes) {
        printf("FAIL %s: readelf printed no FDE\n", path);
        fail = 1;
    }
    printf("%s (%s): %" PRIu64 " FDEs compared (%" PRIu64 " empty, %" PRIu64 " all nops: their CIE's row), %" PRIu64 " readelf rows, %" PRIu64
           " addresses checked (%s), %" PRIu64 " cells compared, %" PRIu64
           " cells skipped (untracked registers), %" PRIu64 " FDEs declined, %" PRIu64
           " mismatches, %" PRIu64 " errors; %.1f s\n",
           path, r.elf.arch == FL_REGS_ARCH_X86_64 ? "x86_64" : "arm64", r.fdes, r.fdes_empty,
           r.fdes_cie_row, r.rows, r.addrs,
           r.elf.arch == FL_REGS_ARCH_X86_64 ? "every byte" : "every 4 bytes",
           r.cells, r.skipped, r.declined, r.mismatches, r.errors, now() - t0);
    elf_map_close(&r.elf);
    return fail || r.mismatches || r.errors ? 1 : 0;
}

int main(int argc, char **argv) {
    int files = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        files++;
        failed += check_file(argv[i]);
    }
    if (!files) {
        fprintf(stderr, "usage: %s ELF-FILE...\n", argv[0]);
        return 2;
    }
    printf("%d of %d files match readelf\n", files - failed, files);
    return failed ? 1 : 0;
}
