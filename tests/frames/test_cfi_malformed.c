/* SPDX-License-Identifier: MIT */
/* frames: the DWARF CFI evaluator over synthetic .eh_frame / .eh_frame_hdr tables, first valid
 * (every row checked), then truncated, malformed, hostile and randomly corrupted: every call gives
 * a result or the error code the API names, never a crash, a hang or unbounded work.
 * Usage: test_cfi_malformed [ITERATIONS [SEED_DIR]]  (the random loop's length, 200000 by
 * default; with SEED_DIR, the valid tables are also written there as fuzz_cfi inputs). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frames/frames.h"
#include "cfi_test.h"
#include "test.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- Building tables: little-endian bytes at a fake address ---- */

typedef struct {
    const uint8_t *p;
    size_t n;
} blob_t;
#define BLOB(...) ((blob_t){(const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})})
#define NOBLOB ((blob_t){NULL, 0})

typedef struct {
    uint8_t *p;
    size_t n, cap;
    uint64_t base; /* the address of p[0] */
} bytes_t;

static void b_need(bytes_t *b, size_t k) {
    if (b->n + k <= b->cap) return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + k) cap *= 2;
    b->p = realloc(b->p, cap);
    memset(b->p + b->cap, 0, cap - b->cap);
    b->cap = cap;
}
static uint64_t b_addr(const bytes_t *b) { return b->base + b->n; }
static void b_u8(bytes_t *b, uint8_t v) {
    b_need(b, 1);
    b->p[b->n++] = v;
}
static void b_uN(bytes_t *b, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; i++) b_u8(b, (uint8_t)(v >> 8 * i));
}
static void b_uleb(bytes_t *b, uint64_t v) {
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        b_u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
    } while (v);
}
static void b_sleb(bytes_t *b, int64_t v) {
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7; /* arithmetic on gcc and clang */
        bool done = (v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40));
        b_u8(b, (uint8_t)(c | (done ? 0 : 0x80)));
        if (done) return;
    }
}
static void b_blob(bytes_t *b, blob_t x) {
    b_need(b, x.n);
    if (x.n) memcpy(b->p + b->n, x.p, x.n);
    b->n += x.n;
}
static void b_fill(bytes_t *b, uint8_t v, size_t n) {
    b_need(b, n);
    memset(b->p + b->n, v, n);
    b->n += n;
}
static void put_uN(uint8_t *p, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static uint64_t get_uN(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << 8 * i;
    return v;
}

typedef struct {
    uint8_t version;     /* 1 or 3 */
    const char *aug;     /* "zR", "zPLR", "", ... */
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra;
    uint8_t r_enc, p_enc, l_enc; /* 'R', 'P', 'L' (the personality is 0x1234, absolute) */
    blob_t aug_extra;    /* appended to the augmentation data */
    blob_t insns;
    bool len64;          /* the 64-bit length form */
    bool raw_aug_len;    /* write aug_len instead of the augmentation data's length */
    uint64_t aug_len;
} cie_t;

typedef struct {
    unsigned cie;        /* index into the spec's CIEs */
    uint64_t pc, len;
    blob_t insns;
    blob_t aug;          /* FDE augmentation data; default: an LSDA pointer 0 if the CIE says 'L' */
    bool raw_aug;        /* aug is written as it is, without a length before it */
    bool len64, not_in_hdr;
    bool raw_cie_ptr;    /* write cie_ptr instead of the distance to the CIE */
    uint32_t cie_ptr;
} fde_t;

enum { HDR_NONE = 0, HDR_BEFORE = 1, HDR_AFTER = 2 };

typedef struct {
    uint64_t origin;
    int hdr;                            /* HDR_* */
    uint8_t ptr_enc, count_enc, table_enc;
    bool count_set;                     /* write count instead of the number of entries */
    uint64_t count;
    bool no_terminator, pool;           /* pool: indirect pointers' slots at origin + pool_off */
    size_t pool_off;                    /* 0: POOL_OFF */
    const cie_t *cies;
    unsigned ncie;
    const fde_t *fdes;
    unsigned nfde;
} spec_t;

#define POOL_OFF 0x3000u
#define MAX_REC 16u

typedef struct {
    bytes_t b;
    size_t pool_off;
    unsigned pool_used;
    uint64_t cie[MAX_REC], fde[MAX_REC], fde_insns[MAX_REC], cie_insns[MAX_REC];
    uint64_t hdr, hdr_end, table, eh_frame, term, end_records;
} img_t;

static unsigned fmt_size(uint8_t enc) { /* bytes written for a format (0: LEB128) */
    switch (enc & 0x0f) {
    case 0x0: case 0x4: case 0x8: case 0xc: return 8;
    case 0x2: case 0xa: return 2;
    case 0x1: case 0x9: return 0;
    default: return 4; /* 0x3, 0xb, and the unknown formats (their bytes do not matter) */
    }
}

/* Writes value as encoding enc at b's end; datarel: the base of DW_EH_PE_datarel. Indirect: the
 * value goes to a pool slot, whose address is encoded. */
static void b_ptr(img_t *im, uint8_t enc, uint64_t value, uint64_t datarel) {
    bytes_t *b = &im->b;
    if (enc & 0x80) { /* (the slot lies beyond n, in capacity b_need zero-filled) */
        size_t slot = im->pool_off + 8u * im->pool_used++;
        if (b->n > im->pool_off) abort();
        b_need(b, slot + 8 - b->n);
        put_uN(b->p + slot, value, 8);
        value = b->base + slot;
    }
    switch (enc & 0x70) {
    case 0x10: value -= b_addr(b); break;
    case 0x30: value -= datarel; break;
    default: break;
    }
    unsigned n = fmt_size(enc);
    if (n) b_uN(b, value, n);
    else if ((enc & 0x0f) == 0x9) b_sleb(b, (int64_t)value);
    else b_uleb(b, value);
}

/* A record's length field: a placeholder, patched by rec_end. */
static size_t rec_begin(bytes_t *b, bool len64) {
    if (len64) {
        b_uN(b, 0xffffffffu, 4);
        b_uN(b, 0, 8);
    } else {
        b_uN(b, 0, 4);
    }
    return b->n;
}
static void rec_end(bytes_t *b, size_t id_off, bool len64) {
    uint64_t len = b->n - id_off;
    if (len64) put_uN(b->p + id_off - 8, len, 8);
    else put_uN(b->p + id_off - 4, len, 4);
}

static void write_cie(img_t *im, const cie_t *c, unsigned i) {
    bytes_t *b = &im->b;
    im->cie[i] = b_addr(b);
    size_t id = rec_begin(b, c->len64);
    b_uN(b, 0, 4);
    b_u8(b, c->version);
    for (const char *a = c->aug; *a; a++) b_u8(b, (uint8_t)*a);
    b_u8(b, 0);
    b_uleb(b, c->code_align);
    b_sleb(b, c->data_align);
    if (c->version == 1) b_u8(b, (uint8_t)c->ra);
    else b_uleb(b, c->ra);
    if (c->aug[0] == 'z') {
        /* The data (under 128 bytes: a one-byte length) is written in place after the length. */
        size_t len_at = b->n;
        b_u8(b, 0);
        for (const char *a = c->aug + 1; *a; a++) {
            if (*a == 'P') {
                b_u8(b, c->p_enc);
                b_ptr(im, c->p_enc & 0x7f, 0x1234, 0);
            } else if (*a == 'L') {
                b_u8(b, c->l_enc);
            } else if (*a == 'R') {
                b_u8(b, c->r_enc);
            }
        }
        b_blob(b, c->aug_extra);
        b->p[len_at] = (uint8_t)(c->raw_aug_len ? c->aug_len : b->n - len_at - 1);
    }
    im->cie_insns[i] = b_addr(b);
    b_blob(b, c->insns);
    rec_end(b, id, c->len64);
}

static uint8_t cie_r_enc(const cie_t *c) { return c->aug[0] == 'z' && strchr(c->aug, 'R') ? c->r_enc : 0; }

static void write_fde(img_t *im, const spec_t *s, unsigned i) {
    bytes_t *b = &im->b;
    const fde_t *f = &s->fdes[i];
    const cie_t *c = &s->cies[f->cie];
    im->fde[i] = b_addr(b);
    size_t id = rec_begin(b, f->len64);
    b_uN(b, f->raw_cie_ptr ? f->cie_ptr : b_addr(b) - im->cie[f->cie], 4);
    uint8_t enc = cie_r_enc(c);
    b_ptr(im, enc, f->pc, 0);
    b_ptr(im, enc & 0x0f, f->len, 0);
    if (c->aug[0] == 'z') {
        if (f->aug.p) {
            if (!f->raw_aug) b_uleb(b, f->aug.n);
            b_blob(b, f->aug);
        } else if (strchr(c->aug, 'L')) {
            size_t len_at = b->n;
            b_u8(b, 0);
            b_ptr(im, c->l_enc & 0x7f, 0, 0);
            b->p[len_at] = (uint8_t)(b->n - len_at - 1);
        } else {
            b_u8(b, 0);
        }
    }
    im->fde_insns[i] = b_addr(b);
    b_blob(b, f->insns);
    rec_end(b, id, f->len64);
}

static int cmp_pc(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void write_hdr(img_t *im, const spec_t *s) {
    bytes_t *b = &im->b;
    im->hdr = b_addr(b);
    b_u8(b, 1);
    b_u8(b, s->ptr_enc);
    b_u8(b, s->count_enc);
    b_u8(b, s->table_enc);
    b_ptr(im, s->ptr_enc, im->eh_frame, im->hdr);
    uint64_t ent[MAX_REC][2];
    unsigned n = 0;
    for (unsigned i = 0; i < s->nfde; i++)
        if (!s->fdes[i].not_in_hdr) ent[n][0] = s->fdes[i].pc, ent[n++][1] = im->fde[i];
    qsort(ent, n, sizeof ent[0], cmp_pc);
    if (s->count_enc != 0xff) b_ptr(im, s->count_enc, s->count_set ? s->count : n, im->hdr);
    im->table = b_addr(b);
    for (unsigned i = 0; i < n; i++) {
        b_ptr(im, s->table_enc, ent[i][0], im->hdr);
        b_ptr(im, s->table_enc, ent[i][1], im->hdr);
    }
    im->hdr_end = b_addr(b);
}

static void build(const spec_t *s, img_t *im) {
    memset(im, 0, sizeof *im);
    bytes_t *b = &im->b;
    b->base = s->origin;
    im->pool_off = s->pool_off ? s->pool_off : POOL_OFF;
    size_t hdr_off = 0;
    if (s->hdr == HDR_BEFORE) b_fill(b, 0, 24 + 16 * (size_t)s->nfde + 64); /* reserved */
    im->eh_frame = b_addr(b);
    for (unsigned i = 0; i < s->ncie; i++) write_cie(im, &s->cies[i], i);
    for (unsigned i = 0; i < s->nfde; i++) write_fde(im, s, i);
    im->term = b_addr(b);
    if (!s->no_terminator) b_uN(b, 0, 4);
    im->end_records = b_addr(b);
    if (s->hdr == HDR_BEFORE) {
        size_t end = b->n;
        b->n = hdr_off;
        write_hdr(im, s);
        if (b->n > 24 + 16 * (size_t)s->nfde + 64) abort(); /* the reservation was too small */
        b->n = end;
    } else if (s->hdr == HDR_AFTER) {
        write_hdr(im, s);
    }
    if (s->pool) { /* the slots b_ptr wrote beyond n join the image */
        if (b->n > im->pool_off) abort();
        b_need(b, im->pool_off + 8u * 32 - b->n);
        b->n = im->pool_off + 8u * 32;
    }
}

static void img_free(img_t *im) { free(im->b.p); }

/* ---- Running the API over a copy of exactly the image's bytes (over-reads are caught by the
 * sanitizers and valgrind) ---- */

enum {
    M_HDR = 1,      /* pass eh_frame_hdr */
    M_EHF = 2,      /* pass eh_frame (the records' start) */
    M_SIZE = 4,     /* pass eh_frame_size (to the end of the terminator) */
    M_MEMO = 8,     /* use a memo */
    M_ARM64 = 16,
};

typedef struct {
    uint8_t *copy;
    size_t size;
    fl_reader_t r;
    fl_cfi_table_t t;
    fl_cfi_memo_t memo;
} run_t;

static void run_open_n(run_t *x, const img_t *im, size_t size, unsigned mode) {
    memset(x, 0, sizeof *x);
    x->size = size < im->b.n ? size : im->b.n;
    x->copy = malloc(x->size ? x->size : 1);
    if (x->size) memcpy(x->copy, im->b.p, x->size);
    fl_reader_init_buffer(&x->r, x->copy, x->size, im->b.base);
    x->t.mem = &x->r;
    x->t.eh_frame_hdr = (mode & M_HDR) ? im->hdr : 0;
    x->t.eh_frame = (mode & M_EHF) ? im->eh_frame : 0;
    x->t.eh_frame_size = (mode & M_SIZE) ? im->end_records - im->eh_frame : 0;
    x->t.arch = (mode & M_ARM64) ? FL_REGS_ARCH_ARM64 : FL_REGS_ARCH_X86_64;
    x->t.memo = (mode & M_MEMO) ? &x->memo : NULL;
}
static void run_open(run_t *x, const img_t *im, unsigned mode) { run_open_n(x, im, im->b.n, mode); }
static void run_close(run_t *x) { free(x->copy); }

/* What the API promises of any row it returns, for the pc it was asked about. */
static bool row_sane(const fl_cfi_row_t *row, const fl_cfi_fde_t *fde, uint64_t pc) {
    if (!(row->start <= pc && pc < row->end && fde->pc_start <= row->start &&
          row->end <= fde->pc_end))
        return false;
    if (row->h.cfa_kind != FL_CFI_CFA_REG && row->h.cfa_kind != FL_CFI_CFA_EXPR) return false;
    if (row->h.cfa_kind == FL_CFI_CFA_REG && row->h.cfa_reg >= FL_DWARF_REGS) return false;
    if (row->h.ra_reg >= FL_DWARF_REGS || row->h.nrules > FL_DWARF_REGS) return false;
    for (unsigned i = 0; i < row->h.nrules; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        if (u->reg >= FL_DWARF_REGS || u->kind <= FL_CFI_RULE_UNSET || u->kind > FL_CFI_RULE_VAL_EXPR)
            return false;
        if (i && u->reg <= row->rule[i - 1].reg) return false;
        if (u->kind == FL_CFI_RULE_REGISTER && (u->value < 0 || u->value >= (int32_t)FL_DWARF_REGS))
            return false;
    }
    return true;
}

static const char *ename(int e) {
    switch (e) {
    case 0: return "0";
    case 1: return "1";
    case FL_EINVAL: return "EINVAL";
    case FL_EFAULT: return "EFAULT";
    case FL_EBADDATA: return "EBADDATA";
    case FL_ENOTFOUND: return "ENOTFOUND";
    case FL_ERANGE: return "ERANGE";
    case FL_ENOSYS: return "ENOSYS";
    default: return "?";
    }
}

/* CHECK that rc is want, naming the case on failure. */
#define EXPECT(rc, want, ...)                                                                  \
    do {                                                                                       \
        int rc_ = (rc), want_ = (want);                                                        \
        fl_test_checks++;                                                                      \
        if (rc_ != want_) {                                                                    \
            fl_test_failures++;                                                                \
            fprintf(stderr, "%s:%d: got %s, expected %s: ", __FILE__, __LINE__, ename(rc_),    \
                    ename(want_));                                                             \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

/* ---- The valid tables ---- */

#define TEXT 0x7f11f0000000ull /* within 2 GiB of ORIGIN: sdata4 reaches it */
#define ORIGIN 0x7f1200000000ull
#define STACK 0x7ff000000000ull
#define EXPR_AT 0x7e0000000000ull

#define CIE_X86_INSNS BLOB(0x0c, 7, 8, 0x90, 1) /* def_cfa r7+8; r16 at cfa-8 */
static const cie_t k_cie_std = {.version = 1, .aug = "zR", .code_align = 1, .data_align = -8,
                                .ra = 16, .r_enc = 0x1b, .insns = CIE_X86_INSNS};

/* Five CIEs (z R, version 3 with zPLR, zRS, no augmentation, 64-bit length) and six FDEs that
 * between them use every CFA instruction compilers emit. */
static cie_t g_cies[5];
static fde_t g_fdes[6];

/* (Instruction bytes at file scope: the specs keep pointers to them.) */
static const uint8_t k_fde0[] = {0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x02, 0x30, 0x0c, 7, 8};
static const uint8_t k_fde1[] = {0x44, 0x0e, 32, 0x83, 3, 0x0a, 0x50, 0x0e, 8, 0xc3, 0x08, 12, 0x50,
                                 0x0b, 0x03, 0x40, 0x00, 0x07, 13, 0x14, 14, 2, 0x09, 15, 3, 0x04,
                                 0x20, 0, 0, 0, 0x05, 12, 4, 0x11, 13, 0x7e, 0x2e, 0x10};
static const uint8_t k_fde2[] = {0x41, 0x0f, 2, 0x77, 16, 0x10, 6, 2, 0x40, 0x1c, 0x16, 12, 2, 0x73, 8};
static const uint8_t k_fde4[] = {0x44, 0x0e, 32};
static const uint8_t k_fde5[] = {0x01, 0, 0, 0, 0, 0x0e, 16}; /* set_loc: patched by build_valid */
static const uint8_t k_cie3[] = {0x0c, 7, 16};
#define FIXED(a) ((blob_t){a, sizeof a})

static void valid_spec(spec_t *s, uint64_t origin, uint64_t text, int hdr) {
    g_cies[0] = k_cie_std;
    g_cies[1] = (cie_t){.version = 3, .aug = "zPLR", .code_align = 1, .data_align = -8, .ra = 16,
                        .p_enc = 0x9b, .l_enc = 0x1b, .r_enc = 0x1b, .insns = k_cie_std.insns};
    g_cies[2] = (cie_t){.version = 1, .aug = "zRS", .code_align = 1, .data_align = -8, .ra = 16,
                        .r_enc = 0x1b, .insns = k_cie_std.insns};
    g_cies[3] = (cie_t){.version = 1, .aug = "", .code_align = 4, .data_align = -4, .ra = 16,
                        .insns = FIXED(k_cie3)};
    g_cies[4] = k_cie_std;
    g_cies[4].len64 = true;
    g_fdes[0] = (fde_t){.cie = 0, .pc = text + 0x1000, .len = 0x40, .insns = FIXED(k_fde0)};
    g_fdes[1] = (fde_t){.cie = 0, .pc = text + 0x2000, .len = 0x100, .insns = FIXED(k_fde1)};
    g_fdes[2] = (fde_t){.cie = 1, .pc = text + 0x3000, .len = 0x20, .insns = FIXED(k_fde2)};
    g_fdes[3] = (fde_t){.cie = 2, .pc = text + 0x4000, .len = 0x10};
    g_fdes[4] = (fde_t){.cie = 3, .pc = text + 0x5000, .len = 0x40, .insns = FIXED(k_fde4)};
    g_fdes[5] = (fde_t){.cie = 4, .pc = text + 0x6000, .len = 0x8, .len64 = true, .insns = FIXED(k_fde5)};
    *s = (spec_t){.origin = origin, .hdr = hdr, .ptr_enc = 0x1b, .count_enc = 0x03,
                  .table_enc = 0x3b, .cies = g_cies, .ncie = 5, .fdes = g_fdes, .nfde = 6};
}

static void build_valid(img_t *im, uint64_t origin, uint64_t text, int hdr) {
    spec_t s;
    valid_spec(&s, origin, text, hdr);
    build(&s, im);
    /* FDE 5's set_loc: pcrel sdata4 from its operand field to text + 0x6004. */
    uint64_t field = im->fde_insns[5] + 1;
    put_uN(im->b.p + (field - im->b.base), text + 0x6004 - field, 4);
}

/* The expected rows of the valid table: pcs are offsets from the text base; EXPR values are
 * offsets into the FDE's instructions (turned into the row's form by the check). */
typedef struct {
    uint8_t reg, kind;
    int32_t value;
    uint16_t len;
} xrule_t;
typedef struct {
    unsigned fde;
    uint64_t start, end;
    uint8_t cfa_kind, cfa_reg;
    int64_t cfa_off; /* CFA_EXPR: offset into the FDE's instructions */
    uint16_t cfa_len;
    uint8_t flags;
    unsigned n;
    xrule_t r[8];
} xrow_t;

#define OFF FL_CFI_RULE_OFFSET
#define R16 {16, OFF, -8, 0}
static const xrow_t k_rows[] = {
    {0, 0x1000, 0x1001, 1, 7, 8, 0, 0, 1, {R16}},
    {0, 0x1001, 0x1004, 1, 7, 16, 0, 0, 2, {{6, OFF, -16, 0}, R16}},
    {0, 0x1004, 0x1034, 1, 6, 16, 0, 0, 2, {{6, OFF, -16, 0}, R16}},
    {0, 0x1034, 0x1040, 1, 7, 8, 0, 0, 2, {{6, OFF, -16, 0}, R16}},
    {1, 0x2000, 0x2004, 1, 7, 8, 0, 0, 1, {R16}},
    {1, 0x2004, 0x2014, 1, 7, 32, 0, 0, 2, {{3, OFF, -24, 0}, R16}},
    {1, 0x2014, 0x2024, 1, 7, 8, 0, 0, 2, {{12, FL_CFI_RULE_SAME, 0, 0}, R16}},
    {1, 0x2024, 0x2064, 1, 7, 32, 0, 0, 2, {{3, OFF, -24, 0}, R16}},
    {1, 0x2064, 0x2084, 1, 7, 32, 0, 0, 5,
     {{3, OFF, -24, 0}, {13, FL_CFI_RULE_UNDEFINED, 0, 0}, {14, FL_CFI_RULE_VAL_OFFSET, -16, 0},
      {15, FL_CFI_RULE_REGISTER, 3, 0}, R16}},
    {1, 0x2084, 0x2100, 1, 7, 32, 0, 0, 6,
     {{3, OFF, -24, 0}, {12, OFF, -32, 0}, {13, OFF, 16, 0}, {14, FL_CFI_RULE_VAL_OFFSET, -16, 0},
      {15, FL_CFI_RULE_REGISTER, 3, 0}, R16}},
    {2, 0x3000, 0x3001, 1, 7, 8, 0, 0, 1, {R16}},
    {2, 0x3001, 0x3020, 2, 0, 3, 2, 0, 3,
     {{6, FL_CFI_RULE_EXPR, 8, 2}, {12, FL_CFI_RULE_VAL_EXPR, 13, 2}, R16}},
    {3, 0x4000, 0x4010, 1, 7, 8, 0, FL_CFI_ROW_SIGNAL, 1, {R16}},
    {4, 0x5000, 0x5010, 1, 7, 16, 0, 0, 0, {{0}}},
    {4, 0x5010, 0x5040, 1, 7, 32, 0, 0, 0, {{0}}},
    {5, 0x6000, 0x6004, 1, 7, 8, 0, 0, 1, {R16}},
    {5, 0x6004, 0x6008, 1, 7, 16, 0, 0, 1, {R16}},
};

static void expected_row(const img_t *im, uint64_t text, const xrow_t *x, fl_cfi_row_t *row) {
    memset(row, 0, sizeof *row);
    row->start = text + x->start;
    row->end = text + x->end;
    row->h.expr_base = im->fde[x->fde];
    uint64_t insns = im->fde_insns[x->fde];
    row->h.cfa_kind = x->cfa_kind;
    row->h.cfa_reg = x->cfa_reg;
    row->h.cfa_offset = x->cfa_kind == FL_CFI_CFA_EXPR ? (int64_t)(insns + (uint64_t)x->cfa_off - im->fde[x->fde]) : x->cfa_off;
    row->h.cfa_len = x->cfa_len;
    row->h.ra_reg = 16;
    row->h.flags = x->flags;
    row->h.nrules = (uint8_t)x->n;
    for (unsigned i = 0; i < x->n; i++) {
        const xrule_t *u = &x->r[i];
        bool expr = u->kind == FL_CFI_RULE_EXPR || u->kind == FL_CFI_RULE_VAL_EXPR;
        row->rule[i] = (fl_cfi_rule_t){.reg = u->reg, .kind = u->kind, .len = u->len,
                                       .value = expr ? (int32_t)(insns + (uint64_t)u->value - im->fde[x->fde])
                                                     : u->value};
    }
}

/* The row the valid table gives at pc (text-relative), or NULL where no FDE covers it. */
static const xrow_t *xrow_at(uint64_t off) {
    for (unsigned i = 0; i < FL_ARRAY_LEN(k_rows); i++)
        if (off >= k_rows[i].start && off < k_rows[i].end) return &k_rows[i];
    return NULL;
}

/* The valid table's pcs worth asking about: every pc of every FDE, and the gaps around them. */
static unsigned valid_pcs(uint64_t text, uint64_t *pcs, unsigned cap) {
    unsigned n = 0;
    static const uint64_t extra[] = {0, 0xfff, 0x1040, 0x1fff, 0x2100, 0x3020, 0x4010, 0x5040,
                                     0x6008, 0x7000, 0x100000};
    for (unsigned i = 0; i < FL_ARRAY_LEN(k_rows); i++)
        for (uint64_t p = k_rows[i].start; p < k_rows[i].end && n < cap; p++) pcs[n++] = text + p;
    for (unsigned i = 0; i < FL_ARRAY_LEN(extra) && n < cap; i++) pcs[n++] = text + extra[i];
    if (n < cap) pcs[n++] = text - 1;
    return n;
}

typedef struct {
    unsigned n;
    fl_cfi_fde_t fde[MAX_REC];
} collect_t;
static int collect(void *ctx, const fl_cfi_fde_t *fde) {
    collect_t *c = ctx;
    if (c->n < MAX_REC) c->fde[c->n] = *fde;
    c->n++;
    return 0;
}

/* The valid table's FDEs, for comparisons (set by truncations for its layout). */
static fl_cfi_fde_t g_ref_fde[6];

/* Every FDE and every row of the valid table, in every mode; the stack steps of four rows. */
static void check_valid(const img_t *im, uint64_t text, unsigned modes_mask, const char *what) {
    uint64_t pcs[0x300];
    unsigned npc = valid_pcs(text, pcs, FL_ARRAY_LEN(pcs));
    unsigned bad = 0;
    for (unsigned mode = 0; mode < 16; mode++) {
        if (!(mode & (M_HDR | M_EHF)) || (modes_mask && !(modes_mask >> mode & 1))) continue;
        run_t x;
        run_open(&x, im, mode);
        collect_t c = {0};
        EXPECT(fl_cfi_fde_each(&x.t, collect, &c), 0, "%s mode %u: fde_each", what, mode);
        CHECK_EQ_U64(c.n, 6);
        for (unsigned i = 0; i < 6 && i < c.n; i++) {
            CHECK_EQ_U64(c.fde[i].addr, im->fde[i]);
            CHECK_EQ_U64(c.fde[i].pc_start, g_fdes[i].pc);
            CHECK_EQ_U64(c.fde[i].pc_end, g_fdes[i].pc + g_fdes[i].len);
            CHECK_EQ_U64(c.fde[i].insns, im->fde_insns[i]);
            CHECK_EQ_U64(c.fde[i].cie.addr, im->cie[g_fdes[i].cie]);
            CHECK_EQ_U64(c.fde[i].cie.insns, im->cie_insns[g_fdes[i].cie]);
            fl_cfi_fde_t p;
            EXPECT(fl_cfi_fde_parse(&x.t, im->fde[i], &p), 0, "%s: parse FDE %u", what, i);
            CHECK(fde_eq(&p, &c.fde[i]));
        }
        CHECK_EQ_U64(c.fde[1].cie.code_align, 1);
        CHECK(c.fde[1].cie.data_align == -8 && c.fde[1].cie.ra_reg == 16 && c.fde[1].cie.has_z);
        CHECK(c.fde[3].cie.signal_frame && !c.fde[0].cie.signal_frame && !c.fde[4].cie.has_z);
        CHECK(c.fde[4].cie.code_align == 4 && c.fde[4].cie.data_align == -4);
        for (unsigned i = 0; i < 5; i++) {
            fl_cfi_fde_t p;
            EXPECT(fl_cfi_fde_parse(&x.t, im->cie[i], &p), FL_ENOTFOUND, "%s: parse CIE %u", what, i);
        }
        fl_cfi_fde_t p;
        EXPECT(fl_cfi_fde_parse(&x.t, im->term, &p), FL_ENOTFOUND, "%s: parse the terminator", what);
        for (unsigned k = 0; k < npc; k++) {
            const xrow_t *xr = xrow_at(pcs[k] - text);
            fl_cfi_fde_t fde;
            int rc = fl_cfi_fde_find(&x.t, pcs[k], &fde);
            if (!xr) {
                bad += rc != FL_ENOTFOUND;
                EXPECT(rc, FL_ENOTFOUND, "%s mode %u: find pc +0x%llx", what, mode,
                       (unsigned long long)(pcs[k] - text));
                continue;
            }
            EXPECT(rc, 0, "%s mode %u: find pc +0x%llx", what, mode, (unsigned long long)(pcs[k] - text));
            if (rc) continue;
            CHECK_EQ_U64(fde.addr, im->fde[xr->fde]);
            fl_cfi_row_t row, want;
            rc = fl_cfi_row_compute(&x.t, &fde, pcs[k], &row);
            EXPECT(rc, 0, "%s: row at +0x%llx", what, (unsigned long long)(pcs[k] - text));
            expected_row(im, text, xr, &want);
            if (!rc && !row_eq(&row, &want)) {
                bad++;
                CHECK(row_eq(&row, &want));
                fprintf(stderr, "  %s mode %u: row at +0x%llx: [%llx,%llx) cfa %u r%u%+lld n%u\n", what,
                        mode, (unsigned long long)(pcs[k] - text),
                        (unsigned long long)(row.start - text), (unsigned long long)(row.end - text),
                        row.h.cfa_kind, row.h.cfa_reg, (long long)row.h.cfa_offset, row.h.nrules);
            }
        }
        run_close(&x);
    }
    if (bad) fprintf(stderr, "%s: %u wrong answers\n", what, bad);
}

/* ---- Applying rows to a stack ---- */

static uint64_t g_stack_words[64];
static fl_reader_t g_stack;

static void stack_init(void) {
    for (unsigned i = 0; i < 64; i++) g_stack_words[i] = 0x5000 + i;
    fl_reader_init_buffer(&g_stack, g_stack_words, sizeof g_stack_words, STACK);
}
static uint64_t sw(unsigned i) { return g_stack_words[i]; }

static void regs_init(fl_dwarf_regs_t *r) {
    for (unsigned i = 0; i < FL_DWARF_REGS; i++) r->r[i] = 0x100 + i;
    r->valid = (1ull << FL_DWARF_REGS) - 1;
}

/* fl_cfi_row_apply, checking its promise that regs change only when it returns 1. */
static int apply(const fl_cfi_row_t *row, int arch, const fl_reader_t *tables, fl_dwarf_regs_t *r) {
    fl_dwarf_regs_t before = *r;
    int rc = fl_cfi_row_apply(row, arch, &g_stack, tables, r);
    if (rc != 1 && memcmp(&before, r, sizeof before) != 0) {
        fl_test_checks++, fl_test_failures++;
        fprintf(stderr, "fl_cfi_row_apply changed regs and returned %s\n", ename(rc));
    }
    return rc;
}

static void apply_valid(const img_t *im) {
    run_t x;
    run_open(&x, im, M_HDR);
    fl_cfi_fde_t fde;
    fl_cfi_row_t row;
    fl_dwarf_regs_t r;
    /* FDE 0 at +0x1010: cfa = r6 + 16, r6 at cfa-16, return address at cfa-8. */
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x1010, &fde) == 0 &&
          fl_cfi_row_compute(&x.t, &fde, TEXT + 0x1010, &row) == 0);
    regs_init(&r);
    r.r[6] = STACK + 8 * 4;
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &x.r, &r), 1, "apply FDE 0");
    CHECK_EQ_U64(r.r[7], STACK + 8 * 6);
    CHECK_EQ_U64(r.r[6], sw(4));
    CHECK_EQ_U64(r.r[16], sw(5));
    /* FDE 1 at +0x2070: r3 saved, r13 undefined, r14 = cfa-16, r15 = old r3. */
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x2070, &fde) == 0 &&
          fl_cfi_row_compute(&x.t, &fde, TEXT + 0x2070, &row) == 0);
    regs_init(&r);
    r.r[7] = STACK + 8 * 10;
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &x.r, &r), 1, "apply FDE 1");
    CHECK_EQ_U64(r.r[7], STACK + 8 * 14);
    CHECK_EQ_U64(r.r[3], sw(11));
    CHECK(!(r.valid >> 13 & 1));
    CHECK_EQ_U64(r.r[14], STACK + 8 * 12);
    CHECK_EQ_U64(r.r[15], 0x103);
    CHECK_EQ_U64(r.r[16], sw(13));
    /* FDE 2 at +0x3010: expressions. cfa = r7 + 16; r6 at cfa-16; r12 = r3 + 8. */
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x3010, &fde) == 0 &&
          fl_cfi_row_compute(&x.t, &fde, TEXT + 0x3010, &row) == 0);
    regs_init(&r);
    r.r[7] = STACK + 8 * 20;
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &x.r, &r), 1, "apply FDE 2");
    CHECK_EQ_U64(r.r[7], STACK + 8 * 22);
    CHECK_EQ_U64(r.r[6], sw(20));
    CHECK_EQ_U64(r.r[12], 0x103 + 8);
    CHECK_EQ_U64(r.r[16], sw(21));
    /* The expressions' bytes unreadable (the tables reader is the stack's): FL_EFAULT. */
    regs_init(&r);
    r.r[7] = STACK + 8 * 20;
    EXPECT(fl_cfi_row_apply(&row, FL_REGS_ARCH_X86_64, &g_stack, &g_stack, &r), FL_EFAULT,
           "expression bytes unreadable");
    /* FDE 4: no rule for the return address: it is still in r16 (here unknown: FL_EINVAL). */
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x5000, &fde) == 0 &&
          fl_cfi_row_compute(&x.t, &fde, TEXT + 0x5000, &row) == 0);
    regs_init(&r);
    r.r[7] = STACK;
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &x.r, &r), 1, "apply FDE 4");
    CHECK_EQ_U64(r.r[7], STACK + 16);
    CHECK_EQ_U64(r.r[16], 0x110);
    regs_init(&r);
    r.valid &= ~(1ull << 16);
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &x.r, &r), FL_EINVAL, "return address unknown");
    run_close(&x);
}

static void valid_table(void) {
    img_t im;
    build_valid(&im, ORIGIN, TEXT, HDR_BEFORE);
    check_valid(&im, TEXT, 0, "valid, hdr before");
    apply_valid(&im);
    img_free(&im);
    build_valid(&im, ORIGIN, TEXT, HDR_AFTER);
    check_valid(&im, TEXT, 0, "valid, hdr after");
    img_free(&im);
    /* At the very top of the address space (the image's last byte at 2^64-1). */
    build_valid(&im, 0, 0, HDR_BEFORE);
    uint64_t top = 0 - (uint64_t)im.b.n, text = 0 - 0x100000ull;
    img_free(&im);
    build_valid(&im, top, text, HDR_BEFORE);
    check_valid(&im, text, 0, "valid, top of the address space");
    img_free(&im);
}

/* ---- The arm64 table: negate_ra_state, remember/restore state ---- */

static void arm64_table(void) {
    cie_t cie = {.version = 1, .aug = "zR", .code_align = 4, .data_align = -8, .ra = 30,
                 .r_enc = 0x1b, .insns = BLOB(0x0c, 31, 0)};
    fde_t fde = {.cie = 0, .pc = TEXT + 0x100, .len = 0x40,
                 .insns = BLOB(0x2d, 0x41, 0x0e, 16, 0x9d, 2, 0x9e, 1, 0x42, 0x0a, 0x2d, 0x42, 0x0b)};
    spec_t s = {.origin = ORIGIN, .hdr = HDR_BEFORE, .ptr_enc = 0x1b, .count_enc = 0x03,
                .table_enc = 0x3b, .cies = &cie, .ncie = 1, .fdes = &fde, .nfde = 1};
    img_t im;
    build(&s, &im);
    run_t x;
    run_open(&x, &im, M_HDR | M_ARM64);
    static const struct {
        uint64_t pc, start, end;
        int64_t cfa;
        unsigned n;
        uint8_t flags;
    } want[] = {{0x100, 0x100, 0x104, 0, 0, FL_CFI_ROW_RA_SIGNED},
                {0x104, 0x104, 0x10c, 16, 2, FL_CFI_ROW_RA_SIGNED},
                {0x10b, 0x104, 0x10c, 16, 2, FL_CFI_ROW_RA_SIGNED},
                {0x10c, 0x10c, 0x114, 16, 2, 0},
                {0x114, 0x114, 0x140, 16, 2, FL_CFI_ROW_RA_SIGNED},
                {0x13f, 0x114, 0x140, 16, 2, FL_CFI_ROW_RA_SIGNED}};
    for (unsigned i = 0; i < FL_ARRAY_LEN(want); i++) {
        uint64_t pc = TEXT + want[i].pc;
        fl_cfi_fde_t f;
        fl_cfi_row_t row;
        EXPECT(fl_cfi_fde_find(&x.t, pc, &f), 0, "arm64 find");
        EXPECT(fl_cfi_row_compute(&x.t, &f, pc, &row), 0, "arm64 row %u", i);
        CHECK_EQ_U64(row.start, TEXT + want[i].start);
        CHECK_EQ_U64(row.end, TEXT + want[i].end);
        CHECK(row.h.cfa_kind == FL_CFI_CFA_REG && row.h.cfa_reg == 31);
        CHECK_EQ_U64(row.h.cfa_offset, want[i].cfa);
        CHECK_EQ_U64(row.h.nrules, want[i].n);
        CHECK_EQ_U64(row.h.flags, want[i].flags);
        CHECK_EQ_U64(row.h.ra_reg, 30);
        if (want[i].n == 2) {
            CHECK(row.rule[0].reg == 29 && row.rule[0].value == -16);
            CHECK(row.rule[1].reg == 30 && row.rule[1].value == -8);
            fl_dwarf_regs_t r;
            regs_init(&r);
            r.r[31] = STACK + 8 * 2;
            EXPECT(apply(&row, FL_REGS_ARCH_ARM64, &x.r, &r), 1, "arm64 apply");
            CHECK_EQ_U64(r.r[31], STACK + 8 * 4);
            CHECK_EQ_U64(r.r[29], sw(2));
            CHECK_EQ_U64(r.r[30], sw(3));
            CHECK_EQ_U64(r.r[32], sw(3));
        }
    }
    run_close(&x);
    /* The same table read as x86_64's: DW_CFA 0x2d means something else there (declined). */
    run_open(&x, &im, M_HDR);
    fl_cfi_fde_t f;
    fl_cfi_row_t row;
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x100, &f) == 0);
    EXPECT(fl_cfi_row_compute(&x.t, &f, TEXT + 0x100, &row), FL_ENOSYS, "0x2d on x86_64");
    run_close(&x);
    img_free(&im);
}

/* ---- Truncations: the table cut at every byte length ---- */

/* Whatever the API answers on a damaged copy of the valid table (built at ORIGIN/TEXT) must be
 * an error or the valid table's answer: never another FDE or row. Returns the errors seen. */
static unsigned g_trunc_ok, g_trunc_err;

static void probe_against_valid(const img_t *im, run_t *x, const char *what, size_t len) {
    uint64_t pcs[0x300];
    unsigned npc = valid_pcs(TEXT, pcs, FL_ARRAY_LEN(pcs));
    collect_t c = {0};
    int rc = fl_cfi_fde_each(&x->t, collect, &c);
    if (!(rc == 0 || rc == FL_EFAULT || rc == FL_EBADDATA)) {
        EXPECT(rc, FL_EBADDATA, "%s %zu: fde_each", what, len);
    }
    for (unsigned i = 0; i < c.n && i < MAX_REC; i++) {
        bool known = false;
        for (unsigned k = 0; k < 6; k++) known |= fde_eq(&c.fde[i], &g_ref_fde[k]);
        if (!known) {
            CHECK(known);
            fprintf(stderr, "  %s %zu: fde_each gave an FDE at 0x%llx\n", what, len,
                    (unsigned long long)c.fde[i].addr);
        }
    }
    for (unsigned k = 0; k < npc; k += 3) {
        const xrow_t *xr = xrow_at(pcs[k] - TEXT);
        fl_cfi_fde_t fde;
        rc = fl_cfi_fde_find(&x->t, pcs[k], &fde);
        if (rc) {
            g_trunc_err++;
            if (!(rc == FL_EFAULT || rc == FL_EBADDATA || rc == FL_ENOTFOUND))
                EXPECT(rc, FL_EBADDATA, "%s %zu: find at +0x%llx", what, len,
                       (unsigned long long)(pcs[k] - TEXT));
            continue;
        }
        g_trunc_ok++;
        if (!xr || !fde_eq(&fde, &g_ref_fde[xr->fde])) {
            CHECK(!"a wrong FDE");
            fprintf(stderr, "  %s %zu: find at +0x%llx gave an FDE at 0x%llx\n", what, len,
                    (unsigned long long)(pcs[k] - TEXT), (unsigned long long)fde.addr);
            continue;
        }
        fl_cfi_row_t row, want;
        rc = fl_cfi_row_compute(&x->t, &fde, pcs[k], &row);
        expected_row(im, TEXT, xr, &want);
        if (rc == 0) {
            if (!row_eq(&row, &want)) {
                CHECK(!"a wrong row");
                fprintf(stderr, "  %s %zu: row at +0x%llx differs\n", what, len,
                        (unsigned long long)(pcs[k] - TEXT));
            }
        } else if (!(rc == FL_EFAULT || rc == FL_EBADDATA)) {
            EXPECT(rc, FL_EBADDATA, "%s %zu: row at +0x%llx", what, len,
                   (unsigned long long)(pcs[k] - TEXT));
        }
    }
    for (unsigned i = 0; i < 6; i++) {
        fl_cfi_fde_t fde;
        rc = fl_cfi_fde_parse(&x->t, im->fde[i], &fde);
        if (rc == 0) CHECK(fde_eq(&fde, &g_ref_fde[i]));
        else if (!(rc == FL_EFAULT || rc == FL_EBADDATA))
            EXPECT(rc, FL_EBADDATA, "%s %zu: parse FDE %u", what, len, i);
    }
}

static void truncations(void) {
    for (int layout = HDR_BEFORE; layout <= HDR_AFTER; layout++) {
        img_t im;
        build_valid(&im, ORIGIN, TEXT, layout);
        {
            run_t x;
            run_open(&x, &im, M_HDR | M_EHF | M_SIZE);
            for (unsigned i = 0; i < 6; i++) CHECK(fl_cfi_fde_parse(&x.t, im.fde[i], &g_ref_fde[i]) == 0);
            run_close(&x);
        }
        /* The buffer cut at every length, read with and without the records' size. */
        static const unsigned modes[] = {M_HDR, M_HDR | M_EHF, M_HDR | M_EHF | M_SIZE, M_EHF,
                                         M_EHF | M_SIZE, M_HDR | M_MEMO};
        for (size_t len = 0; len <= im.b.n; len++) {
            for (unsigned m = 0; m < FL_ARRAY_LEN(modes); m++) {
                run_t x;
                run_open_n(&x, &im, len, modes[m]);
                probe_against_valid(&im, &x, layout == HDR_BEFORE ? "cut (hdr before)" : "cut (hdr after)", len);
                run_close(&x);
            }
        }
        /* The buffer whole, the records' size cut at every length. */
        for (uint64_t k = 1; k <= im.end_records - im.eh_frame; k++) {
            run_t x;
            run_open(&x, &im, M_HDR | M_EHF | M_SIZE);
            x.t.eh_frame_size = k;
            probe_against_valid(&im, &x, "eh_frame_size", (size_t)k);
            run_close(&x);
        }
        img_free(&im);
    }
    printf("truncations: %u lookups answered correctly, %u refused\n", g_trunc_ok, g_trunc_err);
}

/* ---- Records ---- */

/* The first FDE of a one-CIE table (the standard CIE unless c), its FDE at TEXT+0x1000 with
 * insns, built and looked up in every way: the results of fde_find (through the hdr), of a
 * linear scan (records' size known), of fde_each and of fde_parse. */
typedef struct {
    int find, scan, each, parse;
} res4_t;

static res4_t probe_spec(const spec_t *s, const img_t *im_in) {
    img_t im;
    if (im_in) im = *im_in;
    else build(s, &im);
    res4_t r;
    run_t x;
    fl_cfi_fde_t fde;
    run_open(&x, &im, M_HDR);
    r.find = fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde);
    if (r.find == 0 && !(fde.pc_start <= TEXT + 0x1000 && TEXT + 0x1000 < fde.pc_end)) CHECK(!"find");
    collect_t c = {0};
    r.each = fl_cfi_fde_each(&x.t, collect, &c);
    r.parse = fl_cfi_fde_parse(&x.t, im.fde[0], &fde);
    run_close(&x);
    run_open(&x, &im, M_EHF | M_SIZE);
    r.scan = fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde);
    run_close(&x);
    if (!im_in) img_free(&im);
    return r;
}

static spec_t one_spec(cie_t *c, fde_t *f) {
    return (spec_t){.origin = ORIGIN, .hdr = HDR_BEFORE, .ptr_enc = 0x1b, .count_enc = 0x03,
                    .table_enc = 0x3b, .cies = c, .ncie = 1, .fdes = f, .nfde = 1};
}

static void expect4(res4_t r, int find, int scan, int each, int parse, const char *what) {
    EXPECT(r.find, find, "%s: fde_find (hdr)", what);
    EXPECT(r.scan, scan, "%s: fde_find (scan)", what);
    EXPECT(r.each, each, "%s: fde_each", what);
    EXPECT(r.parse, parse, "%s: fde_parse", what);
}

/* The row at TEXT+0x1000+at of a one-FDE table (CIE c or the standard one). */
static int prog_row_cie(const cie_t *cie, blob_t insns, uint64_t at, int arch, fl_cfi_row_t *row) {
    cie_t c = cie ? *cie : k_cie_std;
    fde_t f = {.cie = 0, .pc = TEXT + 0x1000, .len = 0x100, .insns = insns};
    spec_t s = one_spec(&c, &f);
    img_t im;
    build(&s, &im);
    run_t x;
    run_open(&x, &im, M_HDR | (arch == FL_REGS_ARCH_ARM64 ? M_ARM64 : 0));
    fl_cfi_fde_t fde;
    fl_cfi_row_t tmp;
    int rc = fl_cfi_fde_find(&x.t, f.pc + at, &fde);
    CHECK_EQ_U64(rc, 0);
    if (!rc) {
        rc = fl_cfi_row_compute(&x.t, &fde, f.pc + at, row ? row : &tmp);
        if (rc == 0) CHECK(row_sane(row ? row : &tmp, &fde, f.pc + at));
    }
    run_close(&x);
    img_free(&im);
    return rc;
}
static int prog_row(blob_t insns, uint64_t at, fl_cfi_row_t *row) {
    return prog_row_cie(NULL, insns, at, FL_REGS_ARCH_X86_64, row);
}

static void records(void) {
    cie_t c;
    fde_t f;
    spec_t s;
    res4_t r;
#define RESET() (c = k_cie_std, f = (fde_t){.cie = 0, .pc = TEXT + 0x1000, .len = 0x100}, s = one_spec(&c, &f))
    RESET();
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "the one-FDE table");

    /* Record lengths: past the section (size known: refused; unknown: the reads fail), the 64-bit
     * form (valid), 64-bit lengths that overflow, lengths below 4. */
    img_t im;
    RESET();
    build(&s, &im);
    size_t fo = im.fde[0] - im.b.base, co = im.cie[0] - im.b.base;
    uint32_t flen = (uint32_t)get_uN(im.b.p + fo, 4), clen = (uint32_t)get_uN(im.b.p + co, 4);
    /* Past the buffer but within the 4 GiB an unknown size allows: the FDE's own fields are
     * readable, so the hdr lookup answers (its row would read past the buffer: FL_EFAULT); the
     * scan, which knows the size, refuses; the walk over the records cannot read the next one. */
    put_uN(im.b.p + fo, 0x7ffffff0u, 4);
    r = probe_spec(&s, &im);
    expect4(r, 0, FL_EBADDATA, FL_EFAULT, 0, "FDE length past the section");
    {
        run_t x;
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        run_open(&x, &im, M_HDR);
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), 0, "FDE past the buffer");
        EXPECT(fl_cfi_row_compute(&x.t, &fde, TEXT + 0x1000, &row), FL_EFAULT, "FDE past the buffer: row");
        run_close(&x);
    }
    {
        run_t x;
        run_open(&x, &im, M_HDR | M_EHF | M_SIZE);
        fl_cfi_fde_t fde;
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), FL_EBADDATA, "FDE past the known size");
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[0], &fde), FL_EBADDATA, "FDE past the known size");
        run_close(&x);
    }
    put_uN(im.b.p + fo, 0xfffffff0u, 4); /* past the 4 GiB */
    expect4(probe_spec(&s, &im), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "FDE length 0xfffffff0");
    for (uint32_t len = 1; len < 4; len++) {
        put_uN(im.b.p + fo, len, 4);
        expect4(probe_spec(&s, &im), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "FDE length < 4");
    }
    put_uN(im.b.p + fo, 0, 4); /* a terminator where the FDE is */
    expect4(probe_spec(&s, &im), FL_ENOTFOUND, FL_ENOTFOUND, 0, FL_ENOTFOUND, "FDE length 0");
    put_uN(im.b.p + fo, flen, 4);
    put_uN(im.b.p + co, 0x7ffffff0u, 4);
    expect4(probe_spec(&s, &im), 0, FL_EBADDATA, FL_EFAULT, 0, "CIE length past the section");
    {
        run_t x;
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        run_open(&x, &im, M_HDR);
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), 0, "CIE past the buffer");
        /* the CIE's program runs on over the FDE's bytes: an error, whichever */
        CHECK(fl_cfi_row_compute(&x.t, &fde, TEXT + 0x1000, &row) < 0);
        run_close(&x);
    }
    put_uN(im.b.p + co, 0xfffffffeu, 4); /* past the 4 GiB an unknown size allows */
    expect4(probe_spec(&s, &im), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "CIE length 0xfffffffe");
    for (uint32_t len = 1; len < 4; len++) {
        put_uN(im.b.p + co, len, 4);
        expect4(probe_spec(&s, &im), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "CIE length < 4");
    }
    put_uN(im.b.p + co, 0, 4); /* the scan ends at once; the FDE names a terminator */
    expect4(probe_spec(&s, &im), FL_EBADDATA, FL_ENOTFOUND, 0, FL_EBADDATA, "CIE length 0");
    put_uN(im.b.p + co, clen - 1, 4); /* the CIE one byte short: its last instruction is cut */
    r = probe_spec(&s, &im);
    CHECK(r.scan < 0 && r.each < 0); /* the scan reads a record from the CIE's last byte */
    {
        run_t x;
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        run_open(&x, &im, M_HDR);
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), 0, "CIE one byte short");
        EXPECT(fl_cfi_row_compute(&x.t, &fde, TEXT + 0x1000, &row), FL_EBADDATA, "CIE one byte short: row");
        run_close(&x);
    }
    img_free(&im);

    RESET();
    c.len64 = f.len64 = true;
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "64-bit lengths");
    build(&s, &im);
    fo = im.fde[0] - im.b.base;
    static const uint64_t big[] = {1ull << 63, UINT64_MAX, UINT64_MAX - 11, 1ull << 32, 3};
    for (unsigned i = 0; i < FL_ARRAY_LEN(big); i++) {
        put_uN(im.b.p + fo + 4, big[i], 8);
        r = probe_spec(&s, &im);
        CHECK(r.find < 0 && r.scan < 0 && r.each < 0 && r.parse < 0);
        EXPECT(r.scan, FL_EBADDATA, "64-bit length %llx", (unsigned long long)big[i]);
        if (big[i] != (1ull << 32)) EXPECT(r.find, FL_EBADDATA, "64-bit length %llx", (unsigned long long)big[i]);
    }
    img_free(&im);
    /* The 64-bit form cut inside its length. */
    RESET();
    c.len64 = true;
    s.hdr = HDR_NONE;
    s.nfde = 0;
    s.no_terminator = true;
    build(&s, &im);
    for (size_t len = 0; len < 12; len++) {
        run_t x;
        run_open_n(&x, &im, len, M_EHF);
        collect_t cc = {0};
        int e = fl_cfi_fde_each(&x.t, collect, &cc);
        EXPECT(e, FL_EFAULT, "64-bit length cut at %zu", len);
        run_close(&x);
    }
    img_free(&im);

    /* A terminator between two FDEs: the scan stops there, the hdr still finds the second. */
    {
        cie_t cc = k_cie_std;
        fde_t ff[2] = {{.cie = 0, .pc = TEXT + 0x2000, .len = 0x10},
                       {.cie = 0, .pc = TEXT + 0x1000, .len = 0x10}};
        spec_t s2 = one_spec(&cc, ff);
        s2.nfde = 2;
        build(&s2, &im);
        size_t f1 = im.fde[1] - im.b.base;
        uint8_t *nb = malloc(im.b.n + 4); /* insert 4 zero bytes before FDE 1 */
        memcpy(nb, im.b.p, f1);
        memset(nb + f1, 0, 4);
        memcpy(nb + f1 + 4, im.b.p + f1, im.b.n - f1);
        free(im.b.p);
        im.b.p = nb;
        im.b.n += 4;
        im.b.cap = im.b.n;
        im.fde[1] += 4;
        im.term += 4;
        im.end_records += 4;
        put_uN(nb + f1 + 4 + 4, get_uN(nb + f1 + 4 + 4, 4) + 4, 4); /* its CIE pointer */
        put_uN(nb + f1 + 4 + 8, get_uN(nb + f1 + 4 + 8, 4) - 4, 4); /* its pc (pcrel) */
        /* the hdr entry of TEXT+0x1000 (first, sorted) names FDE 1: +4 */
        uint8_t *ent = nb + (im.table - im.b.base) + 4;
        put_uN(ent, get_uN(ent, 4) + 4, 4);
        r = probe_spec(&s2, &im);
        EXPECT(r.find, 0, "terminator in the middle: hdr");
        EXPECT(r.scan, FL_ENOTFOUND, "terminator in the middle: scan");
        EXPECT(r.each, 0, "terminator in the middle: each");
        run_t x;
        run_open(&x, &im, M_HDR);
        collect_t col = {0};
        CHECK(fl_cfi_fde_each(&x.t, collect, &col) == 0 && col.n == 1);
        fl_cfi_fde_t fde;
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[1], &fde), 0, "the FDE after the terminator");
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[1] - 4, &fde), FL_ENOTFOUND, "parse the terminator");
        run_close(&x);
        img_free(&im);
    }

    /* CIE pointers: to the FDE itself, forward, before the section, to another FDE (no loop can
     * follow: a CIE is never followed further), into the middle of the CIE, 0xffffffff. */
    {
        cie_t cc = k_cie_std;
        fde_t ff[2] = {{.cie = 0, .pc = TEXT + 0x1000, .len = 0x10},
                       {.cie = 0, .pc = TEXT + 0x2000, .len = 0x10}};
        spec_t s2 = one_spec(&cc, ff);
        s2.nfde = 2;
        build(&s2, &im);
        uint8_t *p0 = im.b.p + (im.fde[0] - im.b.base) + 4, *p1 = im.b.p + (im.fde[1] - im.b.base) + 4;
        uint32_t d0 = (uint32_t)get_uN(p0, 4);
        const struct {
            uint32_t ptr;
            const char *what;
        } cases[] = {
            {4, "to the FDE itself"},
            {0xfffffff0u, "forward (negative)"},
            {d0 + 64, "before the section"},
            {(uint32_t)(im.fde[0] + 4 - im.fde[1]), "forward, to the next FDE"},
            {d0 - 4, "into the middle of the CIE"},
            {d0 - 1, "one byte into the CIE"},
            {0xffffffffu, "0xffffffff"},
        };
        for (unsigned i = 0; i < FL_ARRAY_LEN(cases); i++) {
            put_uN(p0, cases[i].ptr, 4);
            r = probe_spec(&s2, &im);
            expect4(r, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, cases[i].what);
        }
        put_uN(p0, d0, 4);
        /* FDE 1 whose CIE pointer names FDE 0 */
        put_uN(p1, (uint32_t)(im.fde[1] + 4 - im.fde[0]), 4);
        run_t x;
        run_open(&x, &im, M_HDR);
        fl_cfi_fde_t fde;
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x2000, &fde), FL_EBADDATA, "CIE pointer at another FDE");
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), 0, "the other FDE is still fine");
        run_close(&x);
        /* without a known start, fde_parse accepts any earlier CIE, and still no FDE as CIE */
        run_open(&x, &im, 0);
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[1], &fde), FL_EBADDATA, "no start: CIE pointer at an FDE");
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[0], &fde), 0, "no start: a good FDE");
        run_close(&x);
        img_free(&im);
    }

    /* CIEs. */
    static const uint8_t versions[] = {0, 2, 4, 5, 0x80, 0xff};
    for (unsigned i = 0; i < FL_ARRAY_LEN(versions); i++) {
        RESET();
        c.version = versions[i];
        expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "CIE version");
    }
    RESET();
    c.version = 3;
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "CIE version 3");
    RESET();
    c.aug = "zPLRSBG";
    c.p_enc = 0x9b, c.l_enc = 0x1b;
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "7-letter augmentation");
    RESET();
    c.aug = "zPLRSBGS";
    c.p_enc = 0x9b, c.l_enc = 0x1b;
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "8-letter augmentation");
    RESET();
    c.aug = "zRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR";
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "80-letter augmentation");
    RESET();
    c.aug = "zXR";
    expect4(probe_spec(&s, NULL), FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, "unknown letter before R");
    RESET();
    c.aug = "zRX";
    c.aug_extra = BLOB(0xaa, 0xbb, 0xcc);
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "unknown letter after R (its data skipped)");
    RESET();
    c.aug = "zRXYZ";
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "three unknown letters after R");
    RESET();
    c.aug = "eh";
    expect4(probe_spec(&s, NULL), FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, "'eh' augmentation");
    RESET();
    c.aug = "R";
    expect4(probe_spec(&s, NULL), FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, FL_ENOSYS, "'R' without 'z'");
    RESET();
    c.aug = "";
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "no augmentation (absptr pcs)");
    RESET();
    c.aug = "z";
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "'z' alone (absptr pcs)");
    RESET();
    c.code_align = 0;
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, "code_align 0");
    RESET();
    c.raw_aug_len = true, c.aug_len = 100;
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "augmentation data past the CIE");
    RESET();
    c.raw_aug_len = true, c.aug_len = 0; /* "zR" whose data is said to be empty: R overruns it */
    /* (the letters' data may not overrun the length 'z' gave it: else the 'R' byte would also be
     * run as the CIE's first CFA instruction) */
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "augmentation data overrun");
    RESET();
    c.aug = "zP";
    c.p_enc = 0xff;
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "personality encoding omit");
    /* The personality pointer is only skipped, whatever its base. */
    static const uint8_t penc[] = {0x00, 0x10, 0x9b, 0x1b, 0x03, 0x04, 0x01, 0x09};
    for (unsigned i = 0; i < FL_ARRAY_LEN(penc); i++) {
        RESET();
        c.aug = "zPLR";
        c.p_enc = penc[i], c.l_enc = 0x1b;
        expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "personality encoding");
    }
    static const uint8_t penc_other[] = {0x20, 0x30, 0x40, 0x50, 0xa3, 0xbb};
    for (unsigned i = 0; i < FL_ARRAY_LEN(penc_other); i++) {
        RESET();
        c.aug = "zPLR";
        c.p_enc = penc_other[i], c.l_enc = 0x1b;
        /* (its base does not matter: only its size is skipped) */
        expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "personality encoding textrel/datarel/funcrel/aligned");
    }
    /* The return-address column: beyond the registers (declined when a row is asked for), and a
     * version 3 ULEB wider than 32 bits. */
    RESET();
    c.version = 3, c.ra = 40;
    expect4(probe_spec(&s, NULL), 0, 0, 0, 0, "RA column 40");
    {
        cie_t cc = k_cie_std;
        cc.version = 3, cc.ra = 40;
        EXPECT(prog_row_cie(&cc, NOBLOB, 0, FL_REGS_ARCH_X86_64, NULL), FL_ENOSYS, "RA column 40 row");
    }
    RESET();
    c.version = 3, c.ra = (1ull << 32) + 16; /* not truncated to column 16 */
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "RA column 2^32+16");

    /* FDEs: augmentation data past the record, a range that wraps, an empty range. */
    RESET();
    f.aug = BLOB(0x7f), f.raw_aug = true;
    expect4(probe_spec(&s, NULL), FL_EBADDATA, FL_EBADDATA, FL_EBADDATA, FL_EBADDATA,
            "FDE augmentation past its end");
    RESET();
    c.r_enc = 0x04; /* udata8 absolute */
    f.len = UINT64_MAX;
    s.hdr = HDR_NONE;
    r = probe_spec(&s, NULL);
    EXPECT(r.scan, FL_EBADDATA, "range wraps");
    EXPECT(r.parse, FL_EBADDATA, "range wraps");
    RESET();
    f.len = 0;
    expect4(probe_spec(&s, NULL), FL_ENOTFOUND, FL_ENOTFOUND, 0, 0, "empty range");
#undef RESET
}

/* ---- Pointer encodings: every byte value as the CIE's 'R' and as each of the hdr's three ---- */

#define SMALL_ORIGIN 0x1000ull
#define SMALL_TEXT 0x5000ull

static bool fmt_known(uint8_t enc) { /* the formats DWARF defines */
    switch (enc & 0x0f) {
    case 0x0: case 0x1: case 0x2: case 0x3: case 0x4: case 0x9: case 0xa: case 0xb: case 0xc:
        return true;
    default: return false;
    }
}

/* A small table (every value representable in every format): two FDEs, the hdr before. */
static void enc_table(img_t *im, uint8_t r_enc, uint8_t ptr_enc, uint8_t count_enc, uint8_t table_enc) {
    static cie_t c;
    static fde_t f[2];
    c = k_cie_std;
    c.r_enc = r_enc;
    f[0] = (fde_t){.cie = 0, .pc = SMALL_TEXT + 0x100, .len = 0x20, .insns = BLOB(0x41, 0x0e, 16)};
    f[1] = (fde_t){.cie = 0, .pc = SMALL_TEXT + 0x200, .len = 0x20, .insns = BLOB(0x42, 0x0e, 24)};
    spec_t s = {.origin = SMALL_ORIGIN, .hdr = HDR_BEFORE, .ptr_enc = ptr_enc, .count_enc = count_enc,
                .table_enc = table_enc, .cies = &c, .ncie = 1, .fdes = f, .nfde = 2, .pool = true};
    build(&s, im);
}

/* Looks up both FDEs (and a gap) through the hdr: 0 when both were found with the right rows,
 * else the first error. Never a wrong FDE. */
static int enc_probe(const img_t *im, unsigned mode) {
    run_t x;
    run_open(&x, im, mode);
    int first = 0;
    for (unsigned i = 0; i < 2; i++) {
        uint64_t pc = SMALL_TEXT + 0x100 * (i + 1) + 1 + i;
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        int rc = fl_cfi_fde_find(&x.t, pc, &fde);
        if (rc == 0) {
            CHECK_EQ_U64(fde.addr, im->fde[i]);
            CHECK_EQ_U64(fde.pc_start, SMALL_TEXT + 0x100 * (i + 1));
            CHECK_EQ_U64(fde.pc_end, SMALL_TEXT + 0x100 * (i + 1) + 0x20);
            rc = fl_cfi_row_compute(&x.t, &fde, pc, &row);
            if (rc == 0) CHECK(row.h.cfa_offset == 16 + 8 * (int64_t)i && row.start == pc);
        }
        if (rc && !first) first = rc;
        fl_cfi_fde_t fde2;
        int e = fl_cfi_fde_find(&x.t, SMALL_TEXT + 0x180, &fde2); /* a gap */
        CHECK(e != 0);
    }
    run_close(&x);
    return first;
}

static void encodings(void) {
    unsigned counts[4] = {0};
    for (unsigned v = 0; v < 256; v++) {
        uint8_t enc = (uint8_t)v, hi = enc & 0x70;
        img_t im;
        /* Formats the reader accepts: DWARF's (0x08, "signed" alone, is none: libgcc and LLVM
         * refuse it too). Applications: absolute, pcrel, datarel read; textrel, funcrel and
         * aligned valid but unsupported (FL_ENOSYS); 0x60 and 0x70 undefined (FL_EBADDATA). */
        bool fmt_ok = fmt_known(enc), undefined = !fmt_ok || hi >= 0x60;
        bool unsupported = !undefined && (hi == 0x20 || hi == 0x40 || hi == 0x50);
        /* The CIE's 'R': the FDEs' pc fields (and set_loc); datarel has no base there. */
        enc_table(&im, enc, 0x1b, 0x03, 0x3b);
        int rc = enc_probe(&im, M_HDR), rc2 = enc_probe(&im, M_EHF | M_SIZE);
        int want = undefined ? FL_EBADDATA : unsupported || hi == 0x30 ? FL_ENOSYS : 0;
        EXPECT(rc, want, "R encoding 0x%02x (hdr)", enc);
        EXPECT(rc2, want, "R encoding 0x%02x (scan)", enc);
        counts[0] += rc == 0;
        img_free(&im);

        /* eh_frame_ptr (datarel: from the hdr) */
        enc_table(&im, 0x1b, enc, 0x03, 0x3b);
        rc = enc_probe(&im, M_HDR);
        EXPECT(rc, undefined ? FL_EBADDATA : unsupported ? FL_ENOSYS : 0,
               "eh_frame_ptr encoding 0x%02x", enc);
        counts[1] += rc == 0;
        img_free(&im);

        /* fde_count: omitted or of an unsupported base: the records are scanned. */
        enc_table(&im, 0x1b, 0x1b, enc, 0x3b);
        rc = enc_probe(&im, M_HDR);
        if (enc == 0xff || !undefined) {
            /* relative to its field or the hdr, a count in an unsigned 2- or 4-byte format
             * becomes another number (the builder wrote count - base): an error or the answer */
            if (hi == 0x30 || hi == 0x10) CHECK(rc == 0 || rc == FL_EFAULT || rc == FL_EBADDATA ||
                                                rc == FL_ENOTFOUND);
            else EXPECT(rc, 0, "fde_count encoding 0x%02x", enc);
        } else {
            EXPECT(rc, FL_EBADDATA, "fde_count encoding 0x%02x", enc);
        }
        counts[2] += rc == 0;
        img_free(&im);

        /* The search table: any encoding the lookup cannot use falls back to the scan. */
        enc_table(&im, 0x1b, 0x1b, 0x03, enc);
        rc = enc_probe(&im, M_HDR);
        EXPECT(rc, 0, "table encoding 0x%02x", enc);
        counts[3] += rc == 0;
        img_free(&im);
    }
    printf("encodings: found with R %u, eh_frame_ptr %u, fde_count %u, table %u of 256\n",
           counts[0], counts[1], counts[2], counts[3]);
}

/* ---- .eh_frame_hdr ---- */

static void hdr_tests(void) {
    img_t im;
    spec_t s;
    valid_spec(&s, ORIGIN, TEXT, HDR_BEFORE);
    build_valid(&im, ORIGIN, TEXT, HDR_BEFORE);
    uint8_t *hdr = im.b.p + (im.hdr - im.b.base);
    size_t table_off = im.table - im.b.base;
    run_t x;
    fl_cfi_fde_t fde;
    /* version */
    static const uint8_t versions[] = {0, 2, 3, 0xff};
    for (unsigned i = 0; i < FL_ARRAY_LEN(versions); i++) {
        hdr[0] = versions[i];
        run_open(&x, &im, M_HDR);
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), FL_EBADDATA, "hdr version %u", versions[i]);
        collect_t c = {0};
        EXPECT(fl_cfi_fde_each(&x.t, collect, &c), FL_EBADDATA, "hdr version: each");
        EXPECT(fl_cfi_fde_parse(&x.t, im.fde[0], &fde), 0, "hdr version: parse (start unknown)");
        run_close(&x);
    }
    hdr[0] = 1;
    img_free(&im);

    /* fde_count: huge (udata8), the limit itself, more entries than there are, zero. */
    static const struct {
        uint64_t count;
        int want; /* 1: an error or the right FDE */
    } counts[] = {{(1ull << 32) + 1, FL_EBADDATA}, {1ull << 63, FL_EBADDATA}, {UINT64_MAX, FL_EBADDATA},
                  {1ull << 32, FL_EFAULT}, {1000, 1}, {7, 1}, {0, 0}};
    for (unsigned i = 0; i < FL_ARRAY_LEN(counts); i++) {
        valid_spec(&s, ORIGIN, TEXT, HDR_BEFORE);
        s.count_enc = 0x04;
        s.count_set = true;
        s.count = counts[i].count;
        build(&s, &im);
        run_open(&x, &im, M_HDR);
        for (unsigned k = 0; k < 6; k++) {
            int rc = fl_cfi_fde_find(&x.t, g_fdes[k].pc, &fde);
            if (counts[i].want == 1) {
                CHECK(rc == FL_ENOTFOUND || rc == FL_EBADDATA || rc == FL_EFAULT ||
                      (rc == 0 && fde.addr == im.fde[k]));
            } else {
                EXPECT(rc, counts[i].want, "fde_count %llu", (unsigned long long)counts[i].count);
            }
        }
        run_close(&x);
        img_free(&im);
    }

    /* The table's entries: unsorted, naming a CIE, an FDE that does not cover the pc, a record
     * before the records, the middle of a record, an address outside the reader. */
    build_valid(&im, ORIGIN, TEXT, HDR_BEFORE);
    uint8_t *t = im.b.p + table_off;
    uint8_t saved[6 * 8];
    memcpy(saved, t, sizeof saved);
    unsigned found = 0, refused = 0;
    for (unsigned perm = 0; perm < 720; perm++) { /* every order of the six entries */
        unsigned order[6] = {0, 1, 2, 3, 4, 5}, p = perm;
        for (unsigned i = 6; i > 1; i--) { /* the perm-th permutation (factorial base) */
            unsigned j = p % i;
            p /= i;
            unsigned tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        for (unsigned i = 0; i < 6; i++) memcpy(t + 8 * i, saved + 8 * order[i], 8);
        run_open(&x, &im, M_HDR);
        for (unsigned k = 0; k < 6; k++) {
            int rc = fl_cfi_fde_find(&x.t, g_fdes[k].pc + 1, &fde);
            if (rc == 0) CHECK_EQ_U64(fde.addr, im.fde[k]);
            else EXPECT(rc, FL_ENOTFOUND, "unsorted table");
            found += rc == 0, refused += rc != 0;
        }
        run_close(&x);
    }
    printf("unsorted tables: %u lookups right, %u not found\n", found, refused);
    memcpy(t, saved, sizeof saved);
    const struct {
        uint64_t addr;
        int want;
        const char *what;
    } names[] = {
        {im.cie[0], FL_EBADDATA, "the table names a CIE"},
        {im.fde[1], FL_ENOTFOUND, "the table names an FDE not covering the pc"},
        {im.eh_frame - 8, FL_EBADDATA, "the table names an address before the records"},
        {im.fde[0] + 4, FL_EBADDATA, "the table names the middle of an FDE"},
        {im.term, FL_ENOTFOUND, "the table names the terminator"},
        {ORIGIN + 0x100000, FL_EFAULT, "the table names an address outside the reader"},
    };
    for (unsigned i = 0; i < FL_ARRAY_LEN(names); i++) {
        put_uN(t + 4, names[i].addr - im.hdr, 4); /* entry 0: TEXT+0x1000 */
        run_open(&x, &im, M_HDR);
        int rc = fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde);
        EXPECT(rc, names[i].want, "%s", names[i].what);
        EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x2000, &fde), 0, "%s: the others still work", names[i].what);
        run_close(&x);
    }
    memcpy(t, saved, sizeof saved);
    /* The entry's pc after the pc asked for (the first entry): not found. */
    run_open(&x, &im, M_HDR);
    EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0xfff, &fde), FL_ENOTFOUND, "pc below every entry");
    run_close(&x);
    /* eh_frame_ptr past the records, and outside the reader. */
    uint8_t *ptr = im.b.p + (im.hdr - im.b.base) + 4;
    uint32_t ptr_saved = (uint32_t)get_uN(ptr, 4);
    put_uN(ptr, ptr_saved + 0x10000, 4);
    run_open(&x, &im, M_HDR);
    EXPECT(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde), FL_EBADDATA, "eh_frame_ptr after the FDEs");
    collect_t c = {0};
    EXPECT(fl_cfi_fde_each(&x.t, collect, &c), FL_EFAULT, "eh_frame_ptr after the FDEs: each");
    run_close(&x);
    put_uN(ptr, ptr_saved, 4);
    /* The hdr itself cut: the reader ends inside its first 20 bytes. */
    for (size_t len = 0; len < 20; len++) {
        run_t y;
        run_open(&y, &im, M_HDR);
        y.t.eh_frame_hdr = im.b.base + im.b.n - len; /* its bytes: the buffer's last len */
        int rc = fl_cfi_fde_find(&y.t, TEXT + 0x1000, &fde);
        CHECK(rc == FL_EFAULT || rc == FL_EBADDATA);
        run_close(&y);
    }
    /* A hdr near the top of the address space (its 20-byte window wraps). */
    run_open(&x, &im, M_HDR);
    x.t.eh_frame_hdr = UINT64_MAX - 5;
    CHECK(fl_cfi_fde_find(&x.t, TEXT + 0x1000, &fde) < 0);
    run_close(&x);
    img_free(&im);
}

/* ---- The CFA program ---- */

static void cfa_program(void) {
    fl_cfi_row_t row;
    uint8_t *code = malloc(200000);

    /* remember_state: FL_CFI_REMEMBER_MAX deep is fine, one more is a limit; restore_state with
     * nothing remembered is malformed; depth carries from the CIE into the FDE. */
    for (unsigned depth = 1; depth <= FL_CFI_REMEMBER_MAX + 1; depth++) {
        memset(code, 0x0a, depth);
        int rc = prog_row((blob_t){code, depth}, 0, &row);
        EXPECT(rc, depth <= FL_CFI_REMEMBER_MAX ? 0 : FL_ERANGE, "remember_state x%u", depth);
    }
    EXPECT(prog_row(BLOB(0x0b), 0, &row), FL_EBADDATA, "restore_state, nothing remembered");
    EXPECT(prog_row(BLOB(0x0a, 0x0b, 0x0b), 0, &row), FL_EBADDATA, "restore_state twice");
    {
        cie_t c = k_cie_std;
        uint8_t ci[5 + FL_CFI_REMEMBER_MAX];
        memcpy(ci, (const uint8_t[]){0x0c, 7, 8, 0x90, 1}, 5);
        memset(ci + 5, 0x0a, FL_CFI_REMEMBER_MAX);
        c.insns = (blob_t){ci, sizeof ci};
        EXPECT(prog_row_cie(&c, BLOB(0x0a), 0, FL_REGS_ARCH_X86_64, &row), FL_ERANGE,
               "remembered in the CIE, one more in the FDE");
        EXPECT(prog_row_cie(&c, BLOB(0x0b, 0x0b), 0, FL_REGS_ARCH_X86_64, &row), 0,
               "restored in the FDE");
    }

    /* FL_CFI_INSNS_MAX: the CIE runs 2 instructions; nops fill the FDE to the limit, then one
     * more. The time of the longest legal program is the worst case the limit allows. */
    for (unsigned extra = 0; extra < 2; extra++) {
        unsigned n = FL_CFI_INSNS_MAX - 2 + extra;
        memset(code, 0x00, n);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = prog_row((blob_t){code, n}, 0x80, &row);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        EXPECT(rc, extra ? FL_ERANGE : 0, "%u nops", n);
        printf("%u nops: %s in %.2f ms (including the table's construction)\n", n, ename(rc),
               (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    }
    /* The nops after the pc's row are not run (the program stops at the next advance). */
    code[0] = 0x41;
    memset(code + 1, 0x00, FL_CFI_INSNS_MAX + 10);
    EXPECT(prog_row((blob_t){code, FL_CFI_INSNS_MAX + 11}, 0, &row), 0, "nops after the row");

    /* LEB128: 11 bytes, more than 64 bits, exactly 64 bits. */
    EXPECT(prog_row(BLOB(0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, &row),
           FL_EBADDATA, "ULEB128 of 11 bytes");
    EXPECT(prog_row(BLOB(0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02), 0, &row),
           FL_EBADDATA, "ULEB128 of 65 bits");
    EXPECT(prog_row(BLOB(0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 0, &row),
           0, "ULEB128 of 64 bits");
    CHECK_EQ_U64(row.h.cfa_offset, 1ull << 63);
    EXPECT(prog_row(BLOB(0x13, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, &row),
           FL_EBADDATA, "SLEB128 of 11 bytes");
    EXPECT(prog_row(BLOB(0x13, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f), 0, &row),
           FL_ERANGE, "SLEB128 of 64 bits (-2^63, times -8)");
    {
        int rc = prog_row(BLOB(0x13, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02), 0, &row);
        CHECK(rc == 0 || rc == FL_EBADDATA);
        /* sleb() refuses a 10th byte other than 0x00/0x7f (bits beyond 64 would be dropped:
         * here the value becomes 0), where uleb() refuses more than 64 bits. */
        EXPECT(rc, FL_EBADDATA, "SLEB128 of 65 bits");
    }

    /* advance_loc: the product with code_align overflows, the sum overflows. */
    {
        cie_t c = k_cie_std;
        c.code_align = 1ull << 62;
        EXPECT(prog_row_cie(&c, BLOB(0x44), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA,
               "advance_loc x code_align overflows");
        c = k_cie_std;
        c.aug = ""; /* absptr pcs */
        fde_t f = {.cie = 0, .pc = UINT64_MAX - 0x100, .len = 0xff,
                   .insns = BLOB(0x04, 0xff, 0xff, 0xff, 0xff, 0x0e, 16)};
        spec_t s = one_spec(&c, &f);
        s.hdr = HDR_NONE;
        img_t im;
        build(&s, &im);
        run_t x;
        run_open(&x, &im, M_EHF | M_SIZE);
        fl_cfi_fde_t fde;
        EXPECT(fl_cfi_fde_find(&x.t, UINT64_MAX - 2, &fde), 0, "FDE at the top");
        EXPECT(fl_cfi_row_compute(&x.t, &fde, UINT64_MAX - 2, &row), FL_EBADDATA, "advance_loc4 wraps");
        /* A huge code_align that does not overflow: the next row starts far away (clipped). */
        run_close(&x);
        img_free(&im);
        c = k_cie_std;
        c.code_align = 1ull << 40;
        EXPECT(prog_row_cie(&c, BLOB(0x41, 0x0e, 16), 0x80, FL_REGS_ARCH_X86_64, &row), 0, "code_align 2^40");
        CHECK_EQ_U64(row.end, TEXT + 0x1100);
    }

    /* set_loc (absptr): forward, backwards, below the FDE, beyond it, in the CIE (ignored). */
    {
        cie_t c = k_cie_std;
        c.r_enc = 0x00;
        uint8_t p[2 * 9 + 2];
        p[0] = 0x01;
        put_uN(p + 1, TEXT + 0x1010, 8);
        p[9] = 0x0e, p[10] = 16;
        p[11] = 0x01;
        put_uN(p + 12, TEXT + 0x1008, 8);
        blob_t b = {p, sizeof p};
        EXPECT(prog_row_cie(&c, b, 0x8, FL_REGS_ARCH_X86_64, &row), 0, "before set_loc");
        CHECK(row.start == TEXT + 0x1000 && row.end == TEXT + 0x1010);
        EXPECT(prog_row_cie(&c, b, 0x10, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "set_loc backwards");
        put_uN(p + 1, TEXT + 0x800, 8);
        EXPECT(prog_row_cie(&c, b, 0x0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "set_loc below the FDE");
        put_uN(p + 1, TEXT + 0x1000, 8);
        put_uN(p + 12, TEXT + 0x5000, 8);
        EXPECT(prog_row_cie(&c, b, 0x40, FL_REGS_ARCH_X86_64, &row), 0, "set_loc to the same place");
        CHECK(row.end == TEXT + 0x1100 && row.h.cfa_offset == 16);
        cie_t c2 = c;
        c2.insns = BLOB(0x0c, 7, 8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 1);
        EXPECT(prog_row_cie(&c2, NOBLOB, 0x40, FL_REGS_ARCH_X86_64, &row), 0, "set_loc in the CIE");
    }

    /* The CFA: an offset or register before any def_cfa, no CFA at all, registers beyond the
     * register file (declined), rules for them (dropped). */
    cie_t bare = k_cie_std;
    bare.insns = NOBLOB;
    EXPECT(prog_row_cie(&bare, BLOB(0x0e, 16), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "def_cfa_offset first");
    EXPECT(prog_row_cie(&bare, BLOB(0x13, 0x7e), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "def_cfa_offset_sf first");
    EXPECT(prog_row_cie(&bare, BLOB(0x0d, 6), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "def_cfa_register first");
    EXPECT(prog_row_cie(&bare, BLOB(0x90, 1), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA, "no CFA rule");
    EXPECT(prog_row_cie(&bare, BLOB(0x0f, 1, 0x30, 0x0d, 6), 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA,
           "def_cfa_register after def_cfa_expression");
    EXPECT(prog_row(BLOB(0x0c, 33, 8), 0, &row), FL_ENOSYS, "def_cfa r33");
    EXPECT(prog_row(BLOB(0x0c, 0x80, 0x80, 0x80, 0x80, 0x10, 8), 0, &row), FL_ENOSYS, "def_cfa r2^32");
    EXPECT(prog_row(BLOB(0x0c, 32, 8), 0, &row), 0, "def_cfa r32");
    EXPECT(prog_row(BLOB(0x12, 40, 1), 0, &row), FL_ENOSYS, "def_cfa_sf r40");
    EXPECT(prog_row(BLOB(0x0d, 33), 0, &row), FL_ENOSYS, "def_cfa_register r33");
    EXPECT(prog_row(BLOB(0x09, 3, 33), 0, &row), FL_ENOSYS, "r3 in register 33");
    EXPECT(prog_row(BLOB(0x09, 3, 0x80, 0x80, 0x80, 0x80, 0x10), 0, &row), FL_ENOSYS, "r3 in register 2^32");
    EXPECT(prog_row(BLOB(0x09, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 0, &row),
           FL_ENOSYS, "r3 in register 2^64-1");
    /* Declined only if the row still says so at the pc: a later rule replaces them. */
    EXPECT(prog_row(BLOB(0x0c, 33, 8, 0x0c, 7, 16), 0, &row), 0, "def_cfa r33, then r7");
    CHECK(row.h.cfa_reg == 7 && row.h.cfa_offset == 16);
    EXPECT(prog_row(BLOB(0x0d, 40, 0x41, 0x0d, 6), 1, &row), 0, "def_cfa_register r40, then r6");
    EXPECT(prog_row(BLOB(0x0d, 40, 0x41, 0x0d, 6), 0, &row), FL_ENOSYS, "def_cfa_register r40 in effect");
    EXPECT(prog_row(BLOB(0x09, 3, 33, 0x08, 3), 0, &row), 0, "r3 in r33, then same value");
    EXPECT(prog_row(BLOB(0x0a, 0x09, 3, 33, 0x41, 0x0b), 1, &row), 0, "r3 in r33, then restore_state");
    EXPECT(prog_row(BLOB(0x0a, 0x09, 3, 33, 0x41, 0x0b), 0, &row), FL_ENOSYS, "r3 in r33 in effect");
    EXPECT(prog_row(BLOB(0x09, 3, 33, 0xc3), 0, &row), 0, "r3 in r33, then restored");
    EXPECT(prog_row(BLOB(0x0c, 33, 8, 0x0f, 2, 0x77, 0x10), 0, &row), 0, "def_cfa r33, then an expression");
    {
        /* The row must also apply: cfa = breg7 + 16. */
        uint8_t e[] = {0x77, 0x10};
        fl_reader_t tables;
        fl_dwarf_regs_t r;
        row.h.expr_base = EXPR_AT, row.h.cfa_offset = 0; /* (the expression's bytes, re-homed) */
        fl_reader_init_buffer(&tables, e, sizeof e, EXPR_AT);
        regs_init(&r);
        r.r[7] = STACK;
        int rc = apply(&row, FL_REGS_ARCH_X86_64, &tables, &r);
        CHECK(rc == 1 || rc == FL_EBADDATA);
        /* def_cfa with a register >= 33, then an expression defines the CFA: a valid row, which
         * must apply (fl_cfi_row_apply looks at cfa_reg only for a register CFA). */
        EXPECT(rc, 1, "apply a CFA expression row after def_cfa r33");
    }
    fl_cfi_row_t base;
    EXPECT(prog_row(NOBLOB, 0, &base), 0, "the CIE's row");
    EXPECT(prog_row(BLOB(0x80 | 33, 1, 0x80 | 63, 2, 0x05, 40, 1, 0x07, 50, 0x08, 0x80, 0x80, 0x04,
                         0x10, 41, 1, 0x30, 0x16, 0xff, 0x7f, 1, 0x30, 0x09, 45, 3, 0x09, 45, 100,
                         0x14, 33, 1, 0xc0 | 33, 0x06, 34, 0x2f, 60, 1, 0x11, 61, 1, 0x15, 62, 1),
                    0, &row), 0, "rules for registers >= 33");
    CHECK(row_eq(&row, &base));

    /* Offsets that do not fit the row's 32 bits: 2^28 x -8 = -2^31 fits, one more does not. */
    EXPECT(prog_row(BLOB(0x86, 0x80, 0x80, 0x80, 0x80, 0x01), 0, &row), 0, "offset 2^28 (x -8)");
    CHECK(row.h.nrules == 2 && row.rule[0].reg == 6 && row.rule[0].value == INT32_MIN);
    EXPECT(prog_row(BLOB(0x86, 0x81, 0x80, 0x80, 0x80, 0x01), 0, &row), FL_ERANGE, "offset 2^28+1 (x -8)");
    EXPECT(prog_row(BLOB(0x86, 0x80, 0x80, 0x80, 0x80, 0x08), 0, &row), FL_ERANGE, "offset 2^31");
    EXPECT(prog_row(BLOB(0x86, 0xff, 0xff, 0xff, 0xff, 0x0f), 0, &row), FL_ERANGE, "offset 2^32-1");
    EXPECT(prog_row(BLOB(0x86, 0x80, 0x80, 0x80, 0x80, 0x00), 0, &row), 0, "offset 0 in 5 bytes");
    {
        cie_t c = k_cie_std;
        c.data_align = 8;
        EXPECT(prog_row_cie(&c, BLOB(0x86, 0x80, 0x80, 0x80, 0x80, 0x01), 0, FL_REGS_ARCH_X86_64, &row),
               FL_ERANGE, "offset 2^28 x 8");
        EXPECT(prog_row_cie(&c, BLOB(0x86, 0xff, 0xff, 0xff, 0x7f), 0, FL_REGS_ARCH_X86_64, &row), 0,
               "offset (2^28-1) x 8");
    }
    EXPECT(prog_row(BLOB(0x11, 6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20), 0, &row), FL_ERANGE, "offset_sf 2^40");
    EXPECT(prog_row(BLOB(0x14, 6, 0x80, 0x80, 0x80, 0x80, 0x02), 0, &row), FL_ERANGE, "val_offset 2^29");
    EXPECT(prog_row(BLOB(0x15, 6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f), 0, &row), FL_ERANGE, "val_offset_sf");
    EXPECT(prog_row(BLOB(0x2f, 6, 0x80, 0x80, 0x80, 0x80, 0x02), 0, &row), FL_ERANGE, "negative_offset 2^29");
    EXPECT(prog_row(BLOB(0x05, 6, 0x80, 0x80, 0x80, 0x80, 0x08), 0, &row), FL_ERANGE, "offset_extended 2^31");
    EXPECT(prog_row(BLOB(0x12, 7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40), 0, &row), FL_ERANGE,
           "def_cfa_sf -2^62 x -8");
    {
        cie_t c = k_cie_std;
        c.data_align = INT64_MIN;
        EXPECT(prog_row_cie(&c, BLOB(0x86, 1), 0, FL_REGS_ARCH_X86_64, &row), FL_ERANGE, "data_align -2^63");
        EXPECT(prog_row_cie(&c, BLOB(0x11, 6, 0x7f), 0, FL_REGS_ARCH_X86_64, &row), FL_ERANGE,
               "-1 x -2^63");
    }
    /* An expression longer than the row can record (65535 bytes). */
    {
        size_t n = 70000;
        code[0] = 0x0f;
        code[1] = 0xf0, code[2] = 0xa2, code[3] = 0x04; /* 70000 */
        memset(code + 4, 0x96, n);
        EXPECT(prog_row((blob_t){code, n + 4}, 0, &row), FL_ERANGE, "a 70000-byte expression");
        code[1] = 0xff, code[2] = 0xff, code[3] = 0x03; /* 65535 */
        EXPECT(prog_row((blob_t){code, 65535 + 4}, 0, &row), 0, "a 65535-byte expression");
        code[1] = 0x80, code[2] = 0x80, code[3] = 0x04; /* 65536 */
        EXPECT(prog_row((blob_t){code, 65536 + 4}, 0, &row), FL_ERANGE, "a 65536-byte expression");
        EXPECT(prog_row(BLOB(0x0f, 5, 0x30), 0, &row), FL_EBADDATA, "an expression past the FDE");
        EXPECT(prog_row(BLOB(0x10, 6, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x30), 0, &row), FL_EBADDATA,
               "an expression of 2^32-1 bytes past the FDE");
    }
    free(code);
}

/* Every opcode 0x00..0x3f (and the primary ones) with its operands cut short: malformed. */
static void opcodes(void) {
    static const struct {
        uint8_t op;
        uint8_t n;
        uint8_t operand[8];
        int full; /* the result with all operands */
    } ops[] = {
        {0x01, 4, {0, 0, 0, 0}, 0}, /* set_loc pcrel 0: its own field, beyond TEXT */
        {0x02, 1, {4}, 0}, {0x03, 2, {4, 0}, 0}, {0x04, 4, {4, 0, 0, 0}, 0},
        {0x05, 4, {0x86, 0, 0x81, 0}, 0}, {0x06, 2, {0x86, 0}, 0}, {0x07, 2, {0x86, 0}, 0},
        {0x08, 2, {0x86, 0}, 0}, {0x09, 4, {0x86, 0, 0x83, 0}, 0}, {0x0c, 4, {0x87, 0, 0x88, 0}, 0},
        {0x0d, 2, {0x87, 0}, 0}, {0x0e, 2, {0x90, 0}, 0}, {0x0f, 4, {0x82, 0, 0x30, 0x30}, 0},
        {0x10, 6, {0x86, 0, 0x82, 0, 0x30, 0x30}, 0}, {0x11, 4, {0x86, 0, 0xff, 0x7f}, 0},
        {0x12, 4, {0x87, 0, 0xff, 0x7f}, 0}, {0x13, 2, {0xfe, 0x7f}, 0},
        {0x14, 4, {0x86, 0, 0x81, 0}, 0}, {0x15, 4, {0x86, 0, 0xff, 0x7f}, 0},
        {0x16, 6, {0x86, 0, 0x82, 0, 0x30, 0x30}, 0}, {0x2e, 2, {0x90, 0}, 0},
        {0x2f, 4, {0x86, 0, 0x81, 0}, 0}, {0x86, 2, {0x81, 0}, 0}, {0x8f, 2, {0x81, 0}, 0},
    };
    fl_cfi_row_t row;
    unsigned cut = 0;
    bool has_operands[256] = {false};
    for (unsigned i = 0; i < FL_ARRAY_LEN(ops); i++) {
        has_operands[ops[i].op] = true;
        uint8_t b[9];
        b[0] = ops[i].op;
        memcpy(b + 1, ops[i].operand, ops[i].n);
        EXPECT(prog_row((blob_t){b, 1u + ops[i].n}, 0, &row), ops[i].full, "op 0x%02x whole", ops[i].op);
        for (unsigned k = 0; k < ops[i].n; k++) {
            int rc = prog_row((blob_t){b, 1 + k}, 0, &row);
            cut++;
            if ((ops[i].op == 0x03 || ops[i].op == 0x04) && k > 0) {
                /* run() must not return advance()'s 1 ("the row is complete") before it looks
                 * at the read error: advance_loc2/4 cut after 1..3 bytes would otherwise advance
                 * by the bytes read and give a row ([pc, pc+4) for 04 04 00). */
                EXPECT(rc, FL_EBADDATA, "op 0x%02x cut to %u operand bytes", ops[i].op, k);
                continue;
            }
            EXPECT(rc, FL_EBADDATA, "op 0x%02x cut to %u operand bytes", ops[i].op, k);
            /* the same instruction, cut, as the CIE's last */
            cie_t c = k_cie_std;
            uint8_t ci[5 + 9];
            memcpy(ci, (const uint8_t[]){0x0c, 7, 8, 0x90, 1}, 5);
            memcpy(ci + 5, b, 1 + k);
            c.insns = (blob_t){ci, 6 + k};
            EXPECT(prog_row_cie(&c, NOBLOB, 0, FL_REGS_ARCH_X86_64, &row), FL_EBADDATA,
                   "op 0x%02x cut in the CIE", ops[i].op);
        }
    }
    /* Register operands cut inside a value >= 33 (what was read so far must not decide). */
    EXPECT(prog_row(BLOB(0x09, 3, 0xa1), 0, &row), FL_EBADDATA, "register's second operand cut at 33");
    EXPECT(prog_row(BLOB(0x0c, 0xa1), 0, &row), FL_EBADDATA, "def_cfa's register cut at 33");
    EXPECT(prog_row(BLOB(0x0c, 0xa1, 0x80), 0, &row), FL_EBADDATA, "def_cfa's register cut at 33 (2)");
    EXPECT(prog_row(BLOB(0x0c, 33, 0x80), 0, &row), FL_EBADDATA, "def_cfa r33, offset cut");
    EXPECT(prog_row(BLOB(0x0d, 0xa1), 0, &row), FL_EBADDATA, "def_cfa_register cut at 33");
    /* Opcodes without operands, and the unknown ones, alone. */
    for (unsigned op = 0; op < 0x40; op++) {
        if (has_operands[op]) continue;
        uint8_t b = (uint8_t)op;
        int rc = prog_row((blob_t){&b, 1}, 0, &row);
        int want = op == 0x00 || op == 0x0a ? 0 : op == 0x0b ? FL_EBADDATA : FL_ENOSYS;
        EXPECT(rc, want, "op 0x%02x alone (x86_64)", op);
        rc = prog_row_cie(NULL, (blob_t){&b, 1}, 0, FL_REGS_ARCH_ARM64, &row);
        if (op == 0x2d) want = 0;
        EXPECT(rc, want, "op 0x%02x alone (arm64)", op);
        if (op == 0x2d && rc == 0) CHECK(row.h.flags & FL_CFI_ROW_RA_SIGNED);
    }
    /* The primary opcodes: advance_loc (none), offset (one ULEB), restore (none). */
    for (unsigned reg = 0; reg < 64; reg++) {
        uint8_t b[3] = {(uint8_t)(0x40 | reg), (uint8_t)(0xc0 | reg), 0x80};
        EXPECT(prog_row((blob_t){b, 2}, 0, &row), 0, "advance_loc/restore %u", reg);
        b[0] = (uint8_t)(0x80 | reg);
        EXPECT(prog_row((blob_t){b, 1}, 0, &row), FL_EBADDATA, "offset r%u, no operand", reg);
        b[1] = 0x81;
        EXPECT(prog_row((blob_t){b, 2}, 0, &row), FL_EBADDATA, "offset r%u, operand cut", reg);
    }
    printf("opcodes: %u cut instructions refused\n", cut);
}

/* ---- DWARF expressions, through hand-made rows ---- */

static uint8_t g_expr[1024];
static fl_reader_t g_tables;

/* The CFA computed by an expression (no initial push), as the caller's sp: rc. */
static int expr_cfa(const uint8_t *code, size_t len, uint64_t *out) {
    memset(g_expr, 0xee, sizeof g_expr);
    memcpy(g_expr, code, len);
    fl_reader_init_buffer(&g_tables, g_expr, len, EXPR_AT); /* exactly the expression */
    fl_cfi_row_t row;
    memset(&row, 0, sizeof row);
    row.h.cfa_kind = FL_CFI_CFA_EXPR;
    row.h.expr_base = EXPR_AT;
    row.h.cfa_len = (uint16_t)len;
    row.h.ra_reg = 16;
    fl_dwarf_regs_t r;
    regs_init(&r);
    r.valid &= ~(1ull << 5); /* r5 unknown */
    r.r[7] = STACK + 16;
    int rc = apply(&row, FL_REGS_ARCH_X86_64, &g_tables, &r);
    if (rc == 1 && out) *out = r.r[7];
    return rc;
}
/* The value of register 3 by an (val_)expression rule (the CFA, sp + 16, pushed first). */
static int expr_rule(const uint8_t *code, size_t len, uint8_t kind, uint64_t *out) {
    memcpy(g_expr, code, len);
    fl_reader_init_buffer(&g_tables, g_expr, len, EXPR_AT);
    fl_cfi_row_t row;
    memset(&row, 0, sizeof row);
    row.h.cfa_kind = FL_CFI_CFA_REG;
    row.h.cfa_reg = 7;
    row.h.cfa_offset = 16;
    row.h.expr_base = EXPR_AT - 100;
    row.h.ra_reg = 16;
    row.h.nrules = 1;
    row.rule[0] = (fl_cfi_rule_t){.reg = 3, .kind = kind, .len = (uint16_t)len, .value = 100};
    fl_dwarf_regs_t r;
    regs_init(&r);
    r.valid &= ~(1ull << 5);
    r.r[7] = STACK;
    int rc = apply(&row, FL_REGS_ARCH_X86_64, &g_tables, &r);
    if (rc == 1 && out) *out = r.r[3];
    return rc;
}
#define CFA(v, ...) expr_cfa((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}), v)
#define VRULE(v, ...) \
    expr_rule((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}), FL_CFI_RULE_VAL_EXPR, v)

static void expressions(void) {
    uint64_t v = 0;
    uint8_t code[600];
    /* Sanity: breg7 (sp) + 8, and an EXPR rule (saved at cfa - 16 + 8). */
    EXPECT(CFA(&v, 0x77, 8), 1, "breg7 8");
    CHECK_EQ_U64(v, STACK + 24);
    EXPECT(expr_rule((const uint8_t[]){0x38, 0x1c}, 2, FL_CFI_RULE_EXPR, &v), 1, "cfa - 8, deref");
    CHECK_EQ_U64(v, sw(1));
    EXPECT(VRULE(&v, 0x38, 0x1c), 1, "val: cfa - 8");
    CHECK_EQ_U64(v, STACK + 8);

    /* Underflow: each operator with one operand too few (CFA: nothing pushed first). */
    static const struct {
        uint8_t op, need, nopnd, opnd[2];
    } pops[] = {
        {0x06, 1, 0, {0}}, {0x12, 1, 0, {0}}, {0x13, 1, 0, {0}}, {0x19, 1, 0, {0}}, {0x1f, 1, 0, {0}},
        {0x20, 1, 0, {0}}, {0x23, 1, 1, {1}}, {0x94, 1, 1, {8}}, {0x28, 1, 2, {0, 0}},
        {0x14, 2, 0, {0}}, {0x16, 2, 0, {0}}, {0x1a, 2, 0, {0}}, {0x1b, 2, 0, {0}}, {0x1c, 2, 0, {0}},
        {0x1d, 2, 0, {0}}, {0x1e, 2, 0, {0}}, {0x21, 2, 0, {0}}, {0x22, 2, 0, {0}}, {0x24, 2, 0, {0}},
        {0x25, 2, 0, {0}}, {0x26, 2, 0, {0}}, {0x27, 2, 0, {0}}, {0x29, 2, 0, {0}}, {0x2a, 2, 0, {0}},
        {0x2b, 2, 0, {0}}, {0x2c, 2, 0, {0}}, {0x2d, 2, 0, {0}}, {0x2e, 2, 0, {0}}, {0x17, 3, 0, {0}},
        {0x15, 1, 1, {0}}, {0x15, 3, 1, {2}},
    };
    for (unsigned i = 0; i < FL_ARRAY_LEN(pops); i++) {
        for (unsigned have = 0; have <= pops[i].need; have++) {
            size_t n = 0;
            /* operands that make every operator succeed: addresses in the stack, divisors 1 */
            for (unsigned k = 0; k < have; k++) {
                code[n++] = 0x0e;
                put_uN(code + n, STACK + 8, 8);
                n += 8;
            }
            if (pops[i].op == 0x1b || pops[i].op == 0x1d) {
                if (have == pops[i].need) code[n - 9] = 0x31, n -= 8; /* the divisor: lit1 */
            }
            code[n++] = pops[i].op;
            memcpy(code + n, pops[i].opnd, pops[i].nopnd);
            n += pops[i].nopnd;
            if (pops[i].op == 0x13 || pops[i].op == 0x28) code[n++] = 0x30; /* something to return */
            int rc = expr_cfa(code, n, &v);
            if (have < pops[i].need) EXPECT(rc, FL_EBADDATA, "op 0x%02x with %u on the stack", pops[i].op, have);
            else EXPECT(rc, 1, "op 0x%02x with enough", pops[i].op);
        }
    }
    /* The rule form pushes the CFA: one operand fewer is needed. */
    EXPECT(VRULE(&v, 0x1c), FL_EBADDATA, "minus with the CFA alone");
    EXPECT(VRULE(&v, 0x12), 1, "dup of the CFA");
    EXPECT(CFA(&v, 0x96), FL_EBADDATA, "nothing left on the stack");
    EXPECT(expr_cfa(code, 0, &v), FL_EBADDATA, "an empty CFA expression");
    EXPECT(VRULE(&v, 0x96), 1, "a rule leaves the CFA");

    /* Overflow: FL_CFI_EXPR_STACK entries, then one more, by every pushing operator. */
    static const uint8_t pushes[][10] = {
        {1, 0x30}, {1, 0x4f}, {1, 0x12}, {1, 0x14}, {2, 0x15, 0}, {2, 0x08, 1}, {2, 0x09, 1},
        {3, 0x0a, 1, 0}, {5, 0x0c, 1, 0, 0, 0}, {9, 0x0e, 1, 0, 0, 0, 0, 0, 0, 0},
        {2, 0x10, 1}, {2, 0x11, 1}, {1, 0x57}, {2, 0x77, 0}, {2, 0x90, 7}, {3, 0x92, 7, 0},
        {9, 0x03, 1, 0, 0, 0, 0, 0, 0, 0},
    };
    for (unsigned i = 0; i < FL_ARRAY_LEN(pushes); i++) {
        for (unsigned extra = 0; extra < 2; extra++) { /* lit0s, then the operator */
            size_t n = FL_CFI_EXPR_STACK - 1 + extra;
            memset(code, 0x30, n);
            memcpy(code + n, pushes[i] + 1, pushes[i][0]);
            n += pushes[i][0];
            EXPECT(expr_cfa(code, n, &v), extra ? FL_ERANGE : 1, "push 0x%02x to %u entries",
                   pushes[i][1], FL_CFI_EXPR_STACK + extra);
        }
    }

    /* Loops stop at FL_CFI_EXPR_STEPS; branches out of range; branches to the end. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(CFA(&v, 0x2f, 0xfd, 0xff), FL_ERANGE, "skip to itself");
    EXPECT(CFA(&v, 0x31, 0x28, 0xfc, 0xff), FL_ERANGE, "lit1; bra back");
    EXPECT(VRULE(&v, 0x12, 0x28, 0xfc, 0xff), FL_ERANGE, "dup; bra back (rule)");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("expression loops: 3 stopped in %.3f ms\n",
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    EXPECT(CFA(&v, 0x30, 0x2f, 0x01, 0x00), FL_EBADDATA, "skip past the end");
    EXPECT(CFA(&v, 0x30, 0x2f, 0xfb, 0xff), FL_EBADDATA, "skip before the start");
    EXPECT(CFA(&v, 0x30, 0x2f, 0x00, 0x80), FL_EBADDATA, "skip -32768");
    EXPECT(CFA(&v, 0x30, 0x2f, 0xff, 0x7f), FL_EBADDATA, "skip +32767");
    EXPECT(CFA(&v, 0x33, 0x2f, 0x00, 0x00), 1, "skip to the end");
    CHECK_EQ_U64(v, 3);
    EXPECT(CFA(&v, 0x31, 0x31, 0x28, 0x01, 0x00, 0x35), 1, "bra over one op");
    CHECK_EQ_U64(v, 1);
    EXPECT(CFA(&v, 0x31, 0x30, 0x28, 0x01, 0x00, 0x35), 1, "bra not taken");
    CHECK_EQ_U64(v, 5);
    EXPECT(CFA(&v, 0x31, 0x28, 0x01), FL_EBADDATA, "bra's operand cut");
    /* A loop of FL_CFI_EXPR_STEPS operations is evaluated, one more is a limit: lit_k, then
     * (dup; lit1; minus; dup; bra -6) counts down, 5 operations a turn, a final drop-free end. */
    for (unsigned k = 1; k <= 3; k++) {
        /* k turns: 1 + 5k operations, then lit0 = 2 + 5k in all */
        uint8_t b[] = {(uint8_t)(0x30 + k), 0x31, 0x1c, 0x12, 0x28, 0xfa, 0xff, 0x30};
        EXPECT(expr_cfa(b, sizeof b, &v), 1, "count down from %u", k);
    }
    {
        /* p nops, const1u 249, then 249 turns of (lit1; minus; dup; bra -6): p + 1 + 4 x 249
         * operations: exactly FL_CFI_EXPR_STEPS with 3 nops, one more with 4. */
        uint8_t b[] = {0x96, 0x96, 0x96, 0x96, 0x08, 249, 0x31, 0x1c, 0x12, 0x28, 0xfa, 0xff};
        _Static_assert(FL_CFI_EXPR_STEPS == 1000, "the loop below counts to 1000");
        EXPECT(expr_cfa(b + 1, sizeof b - 1, &v), 1, "exactly FL_CFI_EXPR_STEPS operations");
        EXPECT(expr_cfa(b, sizeof b, &v), FL_ERANGE, "FL_CFI_EXPR_STEPS + 1 operations");
    }

    /* Arithmetic edge cases. */
    EXPECT(CFA(&v, 0x31, 0x30, 0x1b), FL_EBADDATA, "div by zero");
    EXPECT(CFA(&v, 0x31, 0x30, 0x1d), FL_EBADDATA, "mod by zero");
    EXPECT(CFA(&v, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x09, 0xff, 0x1b), 1, "INT64_MIN / -1");
    CHECK_EQ_U64(v, 1ull << 63);
    EXPECT(CFA(&v, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x09, 0xff, 0x1d), 1, "INT64_MIN mod -1");
    CHECK_EQ_U64(v, 1ull << 63);
    EXPECT(CFA(&v, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x19), 1, "abs INT64_MIN");
    EXPECT(CFA(&v, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x1f), 1, "neg INT64_MIN");
    EXPECT(CFA(&v, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x31, 0x1e), 1, "INT64_MIN x 1");
    EXPECT(CFA(&v, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x32, 0x1e), 1, "overflowing mul");
    EXPECT(CFA(&v, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x31, 0x22), 1, "overflowing plus");
    EXPECT(CFA(&v, 0x31, 0x08, 64, 0x24), 1, "shl 64");
    CHECK_EQ_U64(v, 0);
    EXPECT(CFA(&v, 0x31, 0x08, 200, 0x25), 1, "shr 200");
    CHECK_EQ_U64(v, 0);
    EXPECT(CFA(&v, 0x09, 0xfe, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x26), 1, "shra 2^63");
    CHECK_EQ_U64(v, UINT64_MAX);
    EXPECT(CFA(&v, 0x31, 0x08, 63, 0x24), 1, "shl 63");
    CHECK_EQ_U64(v, 1ull << 63);
    EXPECT(CFA(&v, 0x09, 0x80, 0x09, 0x80, 0x1b), 1, "-128 / -128");
    CHECK_EQ_U64(v, 1);
    EXPECT(CFA(&v, 0x23, 0x05), FL_EBADDATA, "plus_uconst on nothing");

    /* pick */
    EXPECT(CFA(&v, 0x30, 0x15, 1), FL_EBADDATA, "pick 1 of 1");
    EXPECT(CFA(&v, 0x30, 0x15, 255), FL_EBADDATA, "pick 255 of 1");
    EXPECT(CFA(&v, 0x33, 0x30, 0x15, 1), 1, "pick 1 of 2");
    CHECK_EQ_U64(v, 3);

    /* deref */
    EXPECT(CFA(&v, 0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x06), FL_EFAULT, "deref of 0x10");
    EXPECT(CFA(&v, 0x0e, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x06), FL_EFAULT, "deref of 2^64-7");
    uint8_t d[] = {0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0x94, 0};
    put_uN(d + 1, STACK + 8, 8);
    for (unsigned size = 0; size <= 9; size++) {
        d[10] = (uint8_t)size;
        int rc = expr_cfa(d, sizeof d, &v);
        if (size == 0 || size > 8) {
            EXPECT(rc, FL_EBADDATA, "deref_size %u", size);
        } else {
            EXPECT(rc, 1, "deref_size %u", size);
            CHECK_EQ_U64(v, size == 8 ? sw(1) : sw(1) & ((1ull << 8 * size) - 1));
        }
    }
    put_uN(d + 1, STACK + sizeof g_stack_words - 4, 8);
    d[10] = 8;
    EXPECT(expr_cfa(d, sizeof d, &v), FL_EFAULT, "deref_size 8 across the stack's end");
    d[10] = 4;
    EXPECT(expr_cfa(d, sizeof d, &v), 1, "deref_size 4 at the stack's end");
    EXPECT(expr_rule((const uint8_t[]){0x0e, 0x10, 0, 0, 0, 0, 0, 0, 0}, 9, FL_CFI_RULE_EXPR, &v),
           FL_EFAULT, "an EXPR rule's address unreadable");

    /* Registers: unknown (FL_EINVAL), beyond the register file (FL_ENOSYS). */
    EXPECT(CFA(&v, 0x75, 0), FL_EINVAL, "breg5 unknown");
    EXPECT(CFA(&v, 0x55), FL_EINVAL, "reg5 unknown");
    EXPECT(CFA(&v, 0x90, 5), FL_EINVAL, "regx 5 unknown");
    EXPECT(CFA(&v, 0x92, 5, 0), FL_EINVAL, "bregx 5 unknown");
    EXPECT(CFA(&v, 0x90, 33), FL_ENOSYS, "regx 33");
    EXPECT(CFA(&v, 0x92, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0), FL_ENOSYS, "bregx 2^63");
    EXPECT(CFA(&v, 0x90, 32), 1, "regx 32");
    EXPECT(CFA(&v, 0x7f, 0x7f), 1, "breg15 -1");
    CHECK_EQ_U64(v, 0x100 + 15 - 1);
    EXPECT(CFA(&v, 0x92, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f), 1, "bregx 3 -2^63");
    CHECK_EQ_U64(v, 0x103 + (1ull << 63));

    /* Operands cut and LEB128 too long. */
    static const uint8_t fixed[] = {0x03, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x15, 0x94, 0x28, 0x2f};
    for (unsigned i = 0; i < FL_ARRAY_LEN(fixed); i++) {
        uint8_t b[8] = {0x31, 0x31, fixed[i], 1, 1, 1, 1, 1};
        unsigned size = fixed[i] == 0x03 || fixed[i] == 0x0e || fixed[i] == 0x0f ? 8
                        : fixed[i] == 0x0c || fixed[i] == 0x0d             ? 4
                        : fixed[i] == 0x0a || fixed[i] == 0x0b || fixed[i] == 0x28 || fixed[i] == 0x2f ? 2
                                                                          : 1;
        for (unsigned k = 0; k < size && 3 + k <= sizeof b; k++)
            EXPECT(expr_cfa(b, 3 + k, &v), FL_EBADDATA, "op 0x%02x with %u of %u operand bytes", fixed[i], k, size);
    }
    static const uint8_t lebs[] = {0x10, 0x11, 0x23, 0x90, 0x92, 0x70, 0x8f};
    for (unsigned i = 0; i < FL_ARRAY_LEN(lebs); i++) {
        uint8_t b[16] = {0x31, lebs[i]};
        EXPECT(expr_cfa(b, 2, &v), FL_EBADDATA, "op 0x%02x without its LEB128", lebs[i]);
        b[2] = 0x80;
        EXPECT(expr_cfa(b, 3, &v), FL_EBADDATA, "op 0x%02x with its LEB128 cut", lebs[i]);
        memset(b + 2, 0x80, 10);
        b[12] = 0x00;
        EXPECT(expr_cfa(b, 13, &v), FL_EBADDATA, "op 0x%02x with an 11-byte LEB128", lebs[i]);
    }
    EXPECT(CFA(&v, 0x92, 3), FL_EBADDATA, "bregx without its offset");

    /* Unknown and unsupported operations: declined. */
    static const uint8_t unknown[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x07, 0x18, 0x91, 0x93, 0x95,
                                      0x97, 0x98, 0x99, 0x9a, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xa3,
                                      0xe0, 0xf0, 0xf3, 0xfa, 0xff};
    for (unsigned i = 0; i < FL_ARRAY_LEN(unknown); i++) {
        uint8_t b[12] = {0x31, 0x31, unknown[i], 1, 1, 1, 1, 1, 1, 1, 1, 1};
        EXPECT(expr_cfa(b, sizeof b, &v), FL_ENOSYS, "op 0x%02x", unknown[i]);
    }
    /* Every operation, after three stack entries and with bytes enough for its operands: an
     * answer or one of the documented errors. */
    for (unsigned op = 0; op < 256; op++) {
        uint8_t b[14] = {0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0x32, 0x31, (uint8_t)op, 1, 0};
        put_uN(b + 1, STACK + 8, 8);
        int rc = expr_cfa(b, sizeof b, &v);
        CHECK(rc == 1 || rc == 0 || rc == FL_EBADDATA || rc == FL_ENOSYS || rc == FL_EINVAL ||
              rc == FL_EFAULT);
    }

    /* Length: 256 bytes are evaluated, 257 declined; the bytes unreadable. */
    memset(code, 0x96, 300);
    code[0] = 0x31;
    EXPECT(expr_cfa(code, 256, &v), 1, "a 256-byte expression");
    EXPECT(expr_cfa(code, 257, &v), FL_ENOSYS, "a 257-byte expression");
    {
        fl_cfi_row_t row;
        memset(&row, 0, sizeof row);
        row.h.cfa_kind = FL_CFI_CFA_EXPR;
        row.h.expr_base = EXPR_AT + 0x100000;
        row.h.cfa_len = 4;
        row.h.ra_reg = 16;
        fl_dwarf_regs_t r;
        regs_init(&r);
        EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &g_tables, &r), FL_EFAULT, "expression unreadable");
        row.h.expr_base = UINT64_MAX - 1;
        EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &g_tables, &r), FL_EFAULT, "expression at 2^64-2");
    }
}

/* fl_cfi_row_apply on rows no table gives: out-of-range fields are errors. */
static void apply_rows(void) {
    fl_cfi_row_t row;
    fl_dwarf_regs_t r;
    memset(&row, 0, sizeof row);
    row.h.cfa_kind = FL_CFI_CFA_REG;
    row.h.cfa_reg = 7;
    row.h.cfa_offset = 16;
    row.h.ra_reg = 16;
    row.h.nrules = 1;
    row.rule[0] = (fl_cfi_rule_t){.reg = 16, .kind = FL_CFI_RULE_OFFSET, .value = -8};
    regs_init(&r);
    r.r[7] = STACK;
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &g_stack, &r), 1, "a plain row");
    CHECK(r.r[16] == sw(1) && r.r[7] == STACK + 16);
    fl_cfi_row_t b = row;
    regs_init(&r);
    r.r[7] = STACK;
    b.h.cfa_reg = 33;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "cfa_reg 33");
    b = row, b.h.cfa_reg = 255;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "cfa_reg 255");
    b = row, b.h.ra_reg = 40;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "ra_reg 40");
    b = row, b.h.nrules = 34;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "34 rules");
    b = row, b.h.nrules = 255;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "255 rules");
    b = row, b.rule[0].reg = 33;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "a rule for r33");
    b = row, b.rule[0].kind = 0;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "a rule of kind UNSET");
    b = row, b.rule[0].kind = 99;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EBADDATA, "a rule of kind 99");
    b = row, b.h.cfa_kind = 7;
    {
        int rc = apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r);
        CHECK(rc < 0);
    }
    b = row, b.rule[0] = (fl_cfi_rule_t){.reg = 16, .kind = FL_CFI_RULE_REGISTER, .value = -1};
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EINVAL, "in register -1");
    b.rule[0].value = 33;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EINVAL, "in register 33");
    b.rule[0].value = INT32_MAX;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EINVAL, "in register 2^31-1");
    b = row, b.rule[0].value = INT32_MIN;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EFAULT, "saved below the stack");
    b = row, b.h.cfa_offset = INT64_MIN;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EFAULT, "cfa offset -2^63");
    b = row, b.rule[0].kind = FL_CFI_RULE_UNDEFINED;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), 0, "return address undefined");
    b = row, b.rule[0].kind = FL_CFI_RULE_VAL_OFFSET, b.rule[0].value = 0;
    b.h.cfa_offset = -(int64_t)STACK;
    EXPECT(apply(&b, FL_REGS_ARCH_X86_64, &g_stack, &r), 0, "return address 0");
    EXPECT(apply(&row, FL_REGS_ARCH_UNKNOWN, &g_stack, &r), FL_EINVAL, "unknown arch");
    EXPECT(apply(&row, 77, &g_stack, &r), FL_EINVAL, "arch 77");
    r.valid &= ~(1ull << 7);
    EXPECT(apply(&row, FL_REGS_ARCH_X86_64, &g_stack, &r), FL_EINVAL, "cfa register unknown");
}

/* ---- An enormous table: the linear scan stops at FL_CFI_SCAN_MAX records ---- */

static void scan_limit(void) {
    size_t n = (size_t)FL_CFI_SCAN_MAX + 1, size = 8 * n + 4;
    uint8_t *buf = calloc(1, size);
    for (size_t i = 0; i < n; i++) put_uN(buf + 8 * i, 4, 4); /* CIEs of length 4: id 0, nothing else */
    fl_reader_t r;
    fl_reader_init_buffer(&r, buf, size, ORIGIN);
    fl_cfi_table_t t = {.mem = &r, .eh_frame = ORIGIN, .arch = FL_REGS_ARCH_X86_64};
    collect_t c = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(fl_cfi_fde_each(&t, collect, &c), FL_ERANGE, "%zu records", n);
    fl_cfi_fde_t fde;
    EXPECT(fl_cfi_fde_find(&t, TEXT, &fde), FL_ERANGE, "%zu records: find", n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("scan limit: %zu records refused twice in %.1f ms\n", n,
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    t.eh_frame_size = 8 * (n - 1); /* exactly FL_CFI_SCAN_MAX records */
    int rc = fl_cfi_fde_each(&t, collect, &c);
    CHECK(rc == 0 || rc == FL_ERANGE);
    /* (off by one, fixed) fl_cfi_fde_each visits FL_CFI_SCAN_MAX records and then returns
     * FL_ERANGE without checking whether the table had ended (at == limit, or a terminator). */
    EXPECT(rc, 0, "exactly %u records", FL_CFI_SCAN_MAX);
    t.eh_frame_size = 8 * (n - 2);
    EXPECT(fl_cfi_fde_each(&t, collect, &c), 0, "%u records", FL_CFI_SCAN_MAX - 1);
    free(buf);
}

/* ---- Work per call where every read is a system call (the live safe reader; the walker reads
 * tables so when the memory map did not show them) ---- */

typedef struct {
    fl_reader_t r; /* first: the callback gets it */
    const uint8_t *buf;
    uint64_t size, origin;
    unsigned long reads;
} counting_t;

static int counting_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    counting_t *c = (counting_t *)(void *)r;
    c->reads++;
    if (addr < c->origin || addr - c->origin > c->size || len > c->size - (addr - c->origin))
        return FL_EFAULT;
    memcpy(dst, c->buf + (addr - c->origin), len);
    return 0;
}

static void counting_init(counting_t *c, const uint8_t *buf, uint64_t size, uint64_t origin) {
    memset(c, 0, sizeof *c);
    c->r.read = counting_read; /* no base: nothing is read in place */
    c->buf = buf, c->size = size, c->origin = origin;
}

/* A table of one CIE and n FDEs of 20 bytes, none covering TEXT; n up to FL_CFI_SCAN_MAX. */
static uint8_t *many_fdes(size_t n, size_t *size) {
    static const uint8_t cie[] = {0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
                                  0x0c, 7, 8, 0x90, 1, 0, 0};
    *size = sizeof cie + 20 * n + 4;
    uint8_t *b = calloc(1, *size);
    memcpy(b, cie, sizeof cie);
    for (size_t i = 0; i < n; i++) {
        uint8_t *f = b + sizeof cie + 20 * i;
        put_uN(f, 16, 4);
        put_uN(f + 4, (uint32_t)(sizeof cie + 20 * i + 4), 4); /* back to the CIE */
        put_uN(f + 8, 0x100, 4);  /* pc: 0x100 past the field */
        put_uN(f + 12, 0x10, 4);  /* range 16; then no augmentation data and 3 nops */
    }
    return b;
}

static void work(void) {
    /* The valid table: the most reads any lookup and row takes. */
    img_t im;
    build_valid(&im, ORIGIN, TEXT, HDR_BEFORE);
    counting_t c;
    counting_init(&c, im.b.p, im.b.n, ORIGIN);
    fl_cfi_table_t t = {.mem = &c.r, .eh_frame_hdr = im.hdr, .arch = FL_REGS_ARCH_X86_64};
    unsigned long worst_find = 0, worst_row = 0;
    for (unsigned i = 0; i < FL_ARRAY_LEN(k_rows); i++) {
        uint64_t pc = TEXT + k_rows[i].start;
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        c.reads = 0;
        CHECK(fl_cfi_fde_find(&t, pc, &fde) == 0);
        worst_find = c.reads > worst_find ? c.reads : worst_find;
        c.reads = 0;
        CHECK(fl_cfi_row_compute(&t, &fde, pc, &row) == 0);
        worst_row = c.reads > worst_row ? c.reads : worst_row;
    }
    printf("reads: the valid table, at most %lu per fde_find and %lu per row\n", worst_find, worst_row);
    img_free(&im);

    /* A linear scan of FL_CFI_SCAN_MAX - 1 FDEs (no hdr, or one whose table is unusable): the
     * bound's cost, in reads and, through the live safe reader, in time. */
    size_t n = FL_CFI_SCAN_MAX - 2, size; /* and the CIE: one record under the bound */
    uint8_t *b = many_fdes(n, &size);
    counting_init(&c, b, size, ORIGIN);
    fl_cfi_memo_t memo;
    memset(&memo, 0, sizeof memo);
    t = (fl_cfi_table_t){.mem = &c.r, .eh_frame = ORIGIN, .arch = FL_REGS_ARCH_X86_64, .memo = &memo};
    fl_cfi_fde_t fde;
    double t0 = now_ms();
    EXPECT(fl_cfi_fde_find(&t, ORIGIN + 0x100000000ull, &fde), FL_ENOTFOUND, "a scan of %zu FDEs", n);
    double t1 = now_ms();
    unsigned long scan_reads = c.reads;
    double live_ms = -1;
    size_t live_n = n / 10; /* (the whole bound takes seconds through the live reader) */
    if (fl_memory_init(FL_MEMORY_NONE) == 0) {
        uint64_t at = (uint64_t)(uintptr_t)b;
        memset(&memo, 0, sizeof memo);
        t = (fl_cfi_table_t){.mem = fl_memory_reader(), .eh_frame = at,
                             .eh_frame_size = 24 + 20 * live_n, .arch = FL_REGS_ARCH_X86_64,
                             .memo = &memo};
        double t2 = now_ms();
        EXPECT(fl_cfi_fde_find(&t, at + 0x100000000ull, &fde), FL_ENOTFOUND, "a live scan");
        live_ms = now_ms() - t2;
    }
    printf("reads: a scan of %zu FDEs, %lu reads, %.0f ms counted; of %zu FDEs through the live "
           "reader: %.0f ms\n", n, scan_reads, t1 - t0, live_n, live_ms);
    free(b);

    /* The longest program, every instruction a set_loc through an indirect pointer. */
    {
        cie_t ci = k_cie_std;
        ci.r_enc = 0x9b; /* indirect pcrel sdata4 */
        size_t k = FL_CFI_INSNS_MAX - 2;
        uint8_t *p = malloc(5 * k);
        fde_t f = {.cie = 0, .pc = TEXT + 0x1000, .len = 0x100, .insns = {p, 5 * k}};
        spec_t s = one_spec(&ci, &f);
        s.pool = true;
        s.pool_off = 6 * k;
        for (size_t i = 0; i < k; i++) p[5 * i] = 0x01;
        build(&s, &im);
        /* every set_loc names the pool's first slot (pc_start, the FDE's own pc_begin): the same
         * location each time */
        uint64_t slot = ORIGIN + im.pool_off;
        for (size_t i = 0; i < k; i++) {
            uint64_t field = im.fde_insns[0] + 5 * i + 1;
            put_uN(im.b.p + (field - ORIGIN), slot - field, 4);
        }
        counting_init(&c, im.b.p, im.b.n, ORIGIN);
        t = (fl_cfi_table_t){.mem = &c.r, .eh_frame_hdr = im.hdr, .arch = FL_REGS_ARCH_X86_64};
        fl_cfi_row_t row;
        CHECK(fl_cfi_fde_find(&t, TEXT + 0x1000, &fde) == 0);
        c.reads = 0;
        t0 = now_ms();
        EXPECT(fl_cfi_row_compute(&t, &fde, TEXT + 0x1000, &row), FL_ENOSYS, "%zu indirect set_locs", k);
        t1 = now_ms();
        unsigned long reads = c.reads;
        live_ms = -1;
        if (fl_memory_reader()) {
            /* The records' pointers are relative (pcrel) or loaded from the pool (the pcs): the
             * FDE reads the same where it lies in memory. (The hdr's pcs would move with it.) */
            uint64_t real = (uint64_t)(uintptr_t)im.b.p;
            t = (fl_cfi_table_t){.mem = fl_memory_reader(), .eh_frame = real + (im.eh_frame - ORIGIN),
                                 .arch = FL_REGS_ARCH_X86_64};
            CHECK(fl_cfi_fde_parse(&t, real + (im.fde[0] - ORIGIN), &fde) == 0);
            CHECK(fde.pc_start == TEXT + 0x1000);
            double t2 = now_ms();
            EXPECT(fl_cfi_row_compute(&t, &fde, TEXT + 0x1000, &row), FL_ENOSYS, "live set_locs");
            live_ms = now_ms() - t2;
        }
        printf("reads: %zu indirect set_locs, %lu reads (%.1f ms counted, %.0f ms through the live "
               "reader)\n", k, reads, t1 - t0, live_ms);
        img_free(&im);
        /* The same instructions in the CIE, where set_loc is ignored: every FDE of the CIE pays. */
        ci.insns = (blob_t){p, 5 * k};
        f.insns = NOBLOB;
        build(&s, &im);
        uint64_t cslot = ORIGIN + im.pool_off + 8; /* slot 0: the personality-free CIE has none */
        for (size_t i = 0; i < k; i++) {
            uint64_t field = im.cie_insns[0] + 5 * i + 1;
            put_uN(im.b.p + (field - ORIGIN), cslot - field, 4);
        }
        counting_init(&c, im.b.p, im.b.n, ORIGIN);
        t = (fl_cfi_table_t){.mem = &c.r, .eh_frame_hdr = im.hdr, .arch = FL_REGS_ARCH_X86_64};
        CHECK(fl_cfi_fde_find(&t, TEXT + 0x1000, &fde) == 0);
        c.reads = 0;
        int rc = fl_cfi_row_compute(&t, &fde, TEXT + 0x1000, &row);
        EXPECT(rc, FL_ENOSYS, "indirect set_loc in the CIE"); /* declined: a read per row */
        printf("reads: %zu indirect set_locs in the CIE, %lu reads per row of each of its FDEs\n", k,
               c.reads);
        free(p);
        img_free(&im);
    }
}

/* ---- Random corruption of the valid table ---- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* xorshift64* */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545f4914f6cdd1dull;
}

typedef struct {
    double worst;
    const char *worst_call;
    unsigned long calls, ok, errors[16];
} stats_t;
static stats_t g_st;

static void note(int rc, double ms, const char *call) {
    g_st.calls++;
    if (rc >= 0) g_st.ok++;
    else if (-rc < 16) g_st.errors[-rc]++;
    if (ms > g_st.worst) g_st.worst = ms, g_st.worst_call = call;
}

/* rc = call, timed; a call slower than 1 ms is timed again (up to 3 times, the least kept), so
 * that a preempted call on a shared machine does not count as a slow one. */
#define TIMED(rc, name, call)                                                                  \
    do {                                                                                       \
        double t0_ = now_ms();                                                                 \
        rc = (call);                                                                           \
        double ms_ = now_ms() - t0_;                                                           \
        for (int k_ = 0; k_ < 3 && ms_ > 1.0; k_++) {                                          \
            double t1_ = now_ms();                                                             \
            (void)(call);                                                                      \
            double m_ = now_ms() - t1_;                                                        \
            ms_ = m_ < ms_ ? m_ : ms_;                                                         \
        }                                                                                      \
        note(rc, ms_, name);                                                                   \
    } while (0)

static int each_bounded(void *ctx, const fl_cfi_fde_t *fde) {
    unsigned *n = ctx;
    if (fde->pc_start > fde->pc_end || fde->insns > fde->insns_end) CHECK(!"fde_each: an FDE out of order");
    return ++*n > 10000;
}

static void corrupt_one(const img_t *valid, uint8_t *buf, size_t size, unsigned it) {
    memcpy(buf, valid->b.p, size);
    unsigned k = 1 + (unsigned)(rnd() % 4);
    for (unsigned i = 0; i < k; i++) {
        size_t at = rnd() % size;
        switch (rnd() % 5) {
        case 0: buf[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
        case 1: buf[at] = (uint8_t)rnd(); break;
        case 2: buf[at] = (const uint8_t[]){0x00, 0xff, 0x7f, 0x80, 0x40, 0x01}[rnd() % 6]; break;
        case 3: /* a 32-bit field nudged */
            if (at + 4 <= size) put_uN(buf + at, get_uN(buf + at, 4) + (uint32_t)(rnd() % 17) - 8, 4);
            break;
        default: /* a byte moved */
            buf[at] = buf[rnd() % size];
            break;
        }
    }
    fl_reader_t r;
    fl_reader_init_buffer(&r, buf, size, valid->b.base);
    fl_cfi_memo_t memo;
    memset(&memo, 0, sizeof memo);
    unsigned mode = (unsigned)rnd();
    fl_cfi_table_t t = {.mem = &r,
                        .eh_frame_hdr = (mode & 1) || !(mode & 2) ? valid->hdr : 0,
                        .eh_frame = (mode & 2) ? valid->eh_frame : 0,
                        .eh_frame_size = (mode & 4) ? valid->end_records - valid->eh_frame : 0,
                        .arch = (mode & 8) ? FL_REGS_ARCH_ARM64 : FL_REGS_ARCH_X86_64,
                        .memo = (mode & 16) ? &memo : NULL};
    unsigned n = 0;
    int rc;
    TIMED(rc, "fde_each", fl_cfi_fde_each(&t, each_bounded, &n));
    CHECK(rc <= 1);
    uint64_t pcs[8];
    for (unsigned i = 0; i < 6; i++) pcs[i] = g_fdes[i].pc + rnd() % (g_fdes[i].len + 2);
    pcs[6] = TEXT + rnd() % 0x8000;
    pcs[7] = rnd();
    for (unsigned i = 0; i < 8; i++) {
        fl_cfi_fde_t fde;
        fl_cfi_row_t row;
        TIMED(rc, "fde_find", fl_cfi_fde_find(&t, pcs[i], &fde));
        if (rc) continue;
        if (!(fde.pc_start <= pcs[i] && pcs[i] < fde.pc_end)) {
            CHECK(!"fde_find gave an FDE that does not cover the pc");
            continue;
        }
        TIMED(rc, "row_compute", fl_cfi_row_compute(&t, &fde, pcs[i], &row));
        if (rc) continue;
        if (!row_sane(&row, &fde, pcs[i])) {
            CHECK(!"row_compute gave a row breaking its promises");
            fprintf(stderr, "  iteration %u pc %llx\n", it, (unsigned long long)pcs[i]);
            continue;
        }
        fl_dwarf_regs_t regs;
        regs_init(&regs);
        regs.r[7] = regs.r[6] = regs.r[31] = regs.r[29] = STACK + 8 * (rnd() % 48);
        fl_dwarf_regs_t saved = regs;
        TIMED(rc, "row_apply", apply(&row, t.arch, &r, (regs = saved, &regs)));
        CHECK(rc == 1 || rc == 0 || rc == FL_EINVAL || rc == FL_EFAULT || rc == FL_EBADDATA ||
              rc == FL_ENOSYS || rc == FL_ERANGE);
    }
    for (unsigned i = 0; i < 2; i++) {
        fl_cfi_fde_t fde;
        uint64_t at = i ? valid->b.base + rnd() % size : valid->fde[rnd() % 6];
        TIMED(rc, "fde_parse", fl_cfi_fde_parse(&t, at, &fde));
        if (rc == 0) CHECK(fde.pc_start <= fde.pc_end && fde.insns <= fde.insns_end);
    }
}

static void random_corruption(unsigned iterations) {
    img_t valid[2];
    build_valid(&valid[0], ORIGIN, TEXT, HDR_BEFORE);
    build_valid(&valid[1], ORIGIN, TEXT, HDR_AFTER);
    uint8_t *buf[2] = {malloc(valid[0].b.n), malloc(valid[1].b.n)};
    double t0 = now_ms();
    for (unsigned it = 0; it < iterations; it++) {
        unsigned v = it & 1;
        corrupt_one(&valid[v], buf[v], valid[v].b.n, it);
    }
    double total = now_ms() - t0;
    printf("random corruption: %u tables, %lu calls (%lu answered) in %.0f ms; errors: EFAULT %lu "
           "EBADDATA %lu ENOTFOUND %lu ERANGE %lu ENOSYS %lu EINVAL %lu; slowest call %.3f ms (%s)\n",
           iterations, g_st.calls, g_st.ok, total, g_st.errors[-FL_EFAULT], g_st.errors[-FL_EBADDATA],
           g_st.errors[-FL_ENOTFOUND], g_st.errors[-FL_ERANGE], g_st.errors[-FL_ENOSYS],
           g_st.errors[-FL_EINVAL], g_st.worst, g_st.worst_call ? g_st.worst_call : "-");
    /* Generous: a call on a table this small takes microseconds. */
    CHECK(g_st.worst < 50.0);
    free(buf[0]);
    free(buf[1]);
    img_free(&valid[0]);
    img_free(&valid[1]);
}

/* ---- The walker on a broken table: it returns, and names the table ---- */

static fl_image_list_t g_images;

static void walk_broken(void) {
    bool arm64 = fl_regs_arch() == FL_REGS_ARCH_ARM64;
    uint8_t sp_reg = arm64 ? 31 : 7, ra = arm64 ? 30 : 16;
    cie_t c = {.version = 1, .aug = "zR", .code_align = 1, .data_align = -8, .ra = ra, .r_enc = 0x1b};
    uint8_t cie_insns[] = {0x0c, sp_reg, 8, (uint8_t)(0x80 | ra), 1}; /* x86_64's; arm64 alike here */
    c.insns = (blob_t){cie_insns, sizeof cie_insns};
    fde_t f[2] = {{.cie = 0, .pc = TEXT + 0x1000, .len = 0x100},
                  {.cie = 0, .pc = TEXT + 0x2000, .len = 0x100}};
    const struct {
        blob_t insns1; /* FDE 1's program; FDE 0 is fine */
        int damage;    /* 1: the hdr's version, 2: the hdr's table names an unreadable FDE */
        uint64_t pc;   /* frame 0's pc (TEXT-relative) */
        unsigned frames;
        const char *reason;
    } cases[] = {
        {{NULL, 0}, 1, 0x1010, 1, "malformed unwind table"},
        {{NULL, 0}, 2, 0x1010, 1, "unwind table or saved register unreadable"},
        {{(const uint8_t[]){0x0b}, 1}, 0, 0x2010, 1, "malformed unwind table"},
        {{(const uint8_t[]){0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a}, 9}, 0, 0x2010, 1,
         "unwind table exceeds a limit"},
        {{(const uint8_t[]){0x0b}, 1}, 0, 0x1010, 2, "malformed unwind table"}, /* frame 1's */
        /* frame 1's return address is 0: its CFI says it is the outermost */
        {{(const uint8_t[]){0x0e, 0x10}, 2}, 0, 0x1010, 2, "end of stack (outermost frame)"},
        /* frame 1's return address is undefined (a thread's entry; cached as an outermost
         * entry) */
        {{(const uint8_t[]){0x07, ra}, 2}, 0, 0x1010, 2, "end of stack (outermost frame)"},
        {{NULL, 0}, 0, 0x8010, 1, "end of stack"}, /* no FDE, no frame pointer */
    };
    for (unsigned mode = 0; mode < 2; mode++) {
        CHECK(fl_frames_cfi_mode(mode ? FL_CFI_MODE_CACHED : FL_CFI_MODE_UNCACHED) == 0);
        for (unsigned i = 0; i < FL_ARRAY_LEN(cases); i++) {
            fl_frames_cfi_cache_flush();
            f[1].insns = cases[i].insns1;
            spec_t s = one_spec(&c, f);
            s.nfde = 2;
            img_t im;
            build(&s, &im);
            if (cases[i].damage == 1) im.b.p[im.hdr - im.b.base] = 7;
            if (cases[i].damage == 2) put_uN(im.b.p + (im.table - im.b.base) + 4, 0x100000, 4);
            /* The tables, then the stack, in one reader (the walk's). */
            size_t stack_off = (im.b.n + 4095) & ~(size_t)4095, size = stack_off + 4096;
            uint8_t *mem = calloc(1, size);
            memcpy(mem, im.b.p, im.b.n);
            uint64_t sp = ORIGIN + stack_off + 256;
            /* frame 0 (FDE 0: cfa = sp + 8, return address at sp) returns into FDE 1 */
            put_uN(mem + stack_off + 256, TEXT + 0x2010, 8);
            fl_reader_t r;
            fl_reader_init_buffer(&r, mem, size, ORIGIN);
            memset(&g_images, 0, sizeof g_images);
            g_images.count = 1;
            g_images.image[0] = (fl_image_t){.start = TEXT, .end = TEXT + 0x10000, .text_start = TEXT,
                                             .text_end = TEXT + 0x10000, .eh_frame_hdr = im.hdr,
                                             .eh_frame_hdr_size = im.hdr_end - im.hdr};
            fl_images_sort(&g_images);
            fl_walk_env_t env = {.mem = &r, .images = &g_images, .stack_lo = ORIGIN + stack_off,
                                 .stack_hi = ORIGIN + size, .use_cfi = true};
            fl_regs_t regs;
            memset(&regs, 0, sizeof regs);
            for (unsigned k = 0; k < fl_regs_count(); k++) {
                const char *n = fl_regs_name(k);
                if (!strcmp(n, "rip") || !strcmp(n, "pc")) regs.r[k] = TEXT + cases[i].pc;
                if (!strcmp(n, "rsp") || !strcmp(n, "sp")) regs.r[k] = sp;
                if (arm64 && !strcmp(n, "lr")) regs.r[k] = 0;
            }
            fl_frame_t out[16];
            fl_walk_result_t res;
            memset(&res, 0, sizeof res);
            CHECK(fl_frames_walk(&env, &regs, out, 16, &res) == 0);
            if (res.count != cases[i].frames || !res.stop_reason ||
                strcmp(res.stop_reason, cases[i].reason) != 0)
                fprintf(stderr, "walk case %u (mode %u): %u frames, \"%s\"\n", i, mode, res.count,
                        res.stop_reason ? res.stop_reason : "(null)");
            CHECK_EQ_U64(res.count, cases[i].frames);
            CHECK_STREQ(res.stop_reason, cases[i].reason);
            if (cases[i].frames == 2) {
                CHECK(out[1].method == FL_FRAME_CFI && out[1].pc == TEXT + 0x2010 && out[1].sp == sp + 8);
            }
            free(mem);
            img_free(&im);
        }
    }
    fl_frames_cfi_mode(FL_CFI_MODE_CACHED);
    fl_frames_cfi_cache_flush();
    fl_cfi_stats_t st;
    fl_frames_cfi_stats(&st);
    CHECK(st.errors >= 6);
}

/* ---- Seeds for fuzz_cfi (its input: 8 header bytes, then the table; see fuzz_cfi.c) ---- */

static void write_seed(const char *dir, const char *name, uint8_t flags, const img_t *im, uint64_t from) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    size_t off = (size_t)(from - im->b.base), hdr_len = (size_t)(im->eh_frame - from);
    uint8_t h[8] = {flags, (uint8_t)hdr_len, (uint8_t)(hdr_len >> 8), 0x10, 0x31, 0x52, 0x73, 0x94};
    fwrite(h, 1, 8, f);
    fwrite(im->b.p + off, 1, im->b.n - off, f);
    fclose(f);
}

static void write_seeds(const char *dir) {
    img_t im;
    build_valid(&im, ORIGIN, TEXT, HDR_BEFORE);
    write_seed(dir, "valid-synth", 0x0a, &im, im.eh_frame);
    write_seed(dir, "valid-raw", 0x04, &im, im.hdr);
    img_free(&im);
}

int main(int argc, char **argv) {
    unsigned iterations = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 200000;
    stack_init();
    double t0 = now_ms();
    valid_table();
    arm64_table();
    truncations();
    records();
    encodings();
    hdr_tests();
    cfa_program();
    opcodes();
    expressions();
    apply_rows();
    scan_limit();
    work();
    walk_broken();
    double t1 = now_ms();
    random_corruption(iterations);
    printf("deterministic checks %.0f ms, random loop %.0f ms\n", t1 - t0, now_ms() - t1);
    if (argc > 2) write_seeds(argv[2]);
    TEST_END();
}
