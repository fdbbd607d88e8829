/* SPDX-License-Identifier: MIT */
/* frames: libFuzzer target over DWARF CFI tables (.eh_frame records, with an .eh_frame_hdr taken
 * raw or synthesised from the records): fl_cfi_fde_each, fl_cfi_fde_find, fl_cfi_fde_parse,
 * fl_cfi_row_compute and fl_cfi_row_apply (rows of the table, and rows whose expressions are the
 * input's bytes) over a small fake stack. Aborts on any broken promise of the API: a found FDE
 * that does not cover the pc, a row outside its FDE or not covering the pc, rules out of order or
 * more than FL_DWARF_REGS, an error code the API does not name, regs changed by a failed apply,
 * answers that differ with and without a memo, with the bytes read in place or copied, between
 * fde_find and fde_parse, or between the search table and the linear scan of a table that parses
 * whole.
 *
 * Input: 8 header bytes, then the table.
 *   [0] flags: bit 0 arm64 (else x86_64); bit 1 synthesise .eh_frame_hdr from the records (the
 *       rest of the input is .eh_frame); bit 2 raw: the first hdr_len bytes are .eh_frame_hdr and
 *       the records follow (neither: records alone, scanned); bit 3 pass eh_frame_size; bit 4 pass
 *       eh_frame even with a hdr; bits 5-7 which registers are unknown to fl_cfi_row_apply.
 *   [1..2] hdr_len (little-endian; raw mode)
 *   [3..7] pc selectors: the top 3 bits pick an FDE's start, middle, last byte, end or a byte
 *       inside it, or a pc from the input's bytes; the low 5 bits an index. [3..5] also place
 *       the expressions taken from the input's bytes.
 *
 * Built with -DFL_BUILD_FUZZERS=ON (clang; `make sanitize` or `make fuzz` do it in build-san).
 * Seeds: corpus/fuzz_cfi/, the .eh_frame of system libraries cut at a record boundary under 6000
 * bytes and the valid tables of test_cfi_malformed (scripts/fuzz-seeds.sh; fuzz_cfi_seeds.sh
 * makes larger ones). Run: scripts/fuzz.sh --seconds 60 build-san fuzz_cfi (which passes
 * -max_len=65536; a crash leaves crash-<sha1> in build-san/fuzz/fuzz_cfi/: the input, replayed
 * by passing it as the only argument). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frames/frames.h"
#include "cfi_test.h"

#define ORIGIN 0x10000000ull
#define STACK 0x7ff000000000ull
#define HDR_MAX (12u + 8u * 256u)
#define MAX_FDES 256u
#define CHECK(c) do { if (!(c)) abort(); } while (0)
/* 1: also check what reported bugs break (see the checks under it). */
static void check_row(const fl_cfi_row_t *row, const fl_cfi_fde_t *fde, uint64_t pc) {
    CHECK(row->start <= pc && pc < row->end);
    CHECK(fde->pc_start <= row->start && row->end <= fde->pc_end);
    CHECK(row->h.cfa_kind == FL_CFI_CFA_REG || row->h.cfa_kind == FL_CFI_CFA_EXPR);
    if (row->h.cfa_kind == FL_CFI_CFA_REG) CHECK(row->h.cfa_reg < FL_DWARF_REGS);
    /* (an expression CFA leaves no register behind: def_cfa_expression resets it) */
    CHECK(row->h.cfa_reg < FL_DWARF_REGS);
    CHECK(row->h.ra_reg < FL_DWARF_REGS && row->h.nrules <= FL_DWARF_REGS);
    CHECK(row->h.expr_base == fde->addr);
    for (unsigned i = 0; i < row->h.nrules; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        CHECK(u->reg < FL_DWARF_REGS && u->kind > FL_CFI_RULE_UNSET && u->kind <= FL_CFI_RULE_VAL_EXPR);
        if (i) CHECK(u->reg > row->rule[i - 1].reg);
        if (u->kind == FL_CFI_RULE_REGISTER) CHECK(u->value >= 0 && u->value < (int32_t)FL_DWARF_REGS);
    }
}

static bool known_error(int e) {
    return e == FL_EBADDATA || e == FL_EFAULT || e == FL_ENOTFOUND || e == FL_ENOSYS || e == FL_ERANGE;
}

/* A reader of the same bytes that never offers them in place. */
static int copy_read(const fl_reader_t *self, uint64_t addr, void *dst, size_t len) {
    return fl_read(self->fallback, addr, dst, len);
}

/* ---- The fake stack and registers ---- */

static uint64_t g_words[512];
static fl_reader_t g_stack;

static void regs_init(fl_dwarf_regs_t *r, uint8_t flags) {
    for (unsigned i = 0; i < FL_DWARF_REGS; i++) r->r[i] = STACK + 8 * (64 + 7 * i);
    r->r[16] = r->r[30] = r->r[32] = 0x401000;
    r->valid = (1ull << FL_DWARF_REGS) - 1;
    if (flags & 0x20) r->valid &= ~(1ull << 6 | 1ull << 29); /* fp */
    if (flags & 0x40) r->valid &= ~(1ull << 3 | 1ull << 12 | 1ull << 19);
    if (flags & 0x80) r->valid &= ~(1ull << 16 | 1ull << 30); /* the return address */
}

static void apply(const fl_cfi_row_t *row, int arch, const fl_reader_t *tables, uint8_t flags) {
    fl_dwarf_regs_t r, before;
    regs_init(&r, flags);
    before = r;
    int e = fl_cfi_row_apply(row, arch, &g_stack, tables, &r);
    CHECK(e == 1 || e == 0 || e == FL_EINVAL || e == FL_EFAULT || e == FL_EBADDATA || e == FL_ENOSYS ||
          e == FL_ERANGE);
    if (e != 1) CHECK(memcmp(&r, &before, sizeof r) == 0);
    if (e == 1) { /* pc is the return address (sp the CFA, unless a rule for sp says otherwise,
                   * even "undefined") */
        unsigned pc = arch == FL_REGS_ARCH_X86_64 ? 16 : 32;
        CHECK((r.valid >> pc & 1) && r.r[pc] != 0);
    }
}

/* ---- The records ---- */

typedef struct {
    unsigned n;
    bool more;
    fl_cfi_fde_t fde[MAX_FDES];
} fdes_t;

static int collect(void *ctx, const fl_cfi_fde_t *fde) {
    fdes_t *f = ctx;
    CHECK(fde->pc_start <= fde->pc_end && fde->insns <= fde->insns_end &&
          fde->cie.insns <= fde->cie.insns_end && fde->cie.code_align != 0);
    if (f->n == MAX_FDES) {
        f->more = true;
        return 2; /* (returned as it is) */
    }
    f->fde[f->n++] = *fde;
    return 0;
}

static int cmp_start(const void *a, const void *b) {
    const fl_cfi_fde_t *x = a, *y = b;
    return x->pc_start < y->pc_start ? -1 : x->pc_start > y->pc_start;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Writes an .eh_frame_hdr for the records at `records` into hdr (HDR_MAX bytes at address
 * hdr_at): version 1, pcrel sdata4 eh_frame_ptr, udata4 count, datarel sdata4 entries sorted by
 * pc. Returns whether every FDE got an entry. */
static bool synth_hdr(uint8_t *hdr, uint64_t hdr_at, uint64_t records, const fdes_t *f) {
    static fl_cfi_fde_t sorted[MAX_FDES];
    memcpy(sorted, f->fde, f->n * sizeof f->fde[0]);
    qsort(sorted, f->n, sizeof sorted[0], cmp_start);
    hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
    put32(hdr + 4, (uint32_t)(records - (hdr_at + 4)));
    unsigned n = 0;
    for (unsigned i = 0; i < f->n; i++) {
        int64_t pc = (int64_t)(sorted[i].pc_start - hdr_at), at = (int64_t)(sorted[i].addr - hdr_at);
        if (pc != (int32_t)pc || at != (int32_t)at) continue;
        put32(hdr + 12 + 8 * n, (uint32_t)pc);
        put32(hdr + 16 + 8 * n, (uint32_t)at);
        n++;
    }
    put32(hdr + 8, n);
    return n == f->n;
}

static void pcs_for(const uint8_t *sel, const fdes_t *f, const uint8_t *data, size_t size,
                    uint64_t *pcs, unsigned *npcs) {
    unsigned n = 0;
    for (unsigned i = 0; i < 5; i++) {
        unsigned kind = sel[i] >> 5, k = sel[i] & 31;
        const fl_cfi_fde_t *d = f->n ? &f->fde[k % f->n] : NULL;
        uint64_t len = d ? d->pc_end - d->pc_start : 0;
        switch (kind) {
        case 0: if (d) pcs[n++] = d->pc_start; break;
        case 1: if (d) pcs[n++] = d->pc_start + len / 2; break;
        case 2: if (d && len) pcs[n++] = d->pc_end - 1; break;
        case 3: if (d) pcs[n++] = d->pc_end; break;
        case 4: if (d) pcs[n++] = d->pc_start + (len ? k % len : 0); break;
        default: /* eight bytes of the input */
            if (size >= 8) {
                uint64_t v;
                memcpy(&v, data + (k * 37u) % (size - 7), 8);
                pcs[n++] = v;
            }
        }
    }
    /* and every FDE's start, up to 16 */
    for (unsigned i = 0; i < f->n && i < 16; i++) pcs[n++] = f->fde[i].pc_start + (i & 1);
    *npcs = n;
}

/* Rows whose expressions are the input's bytes (the CFA's, and a rule's with the CFA pushed). */
static void expressions(const fl_reader_t *image, uint64_t size, const uint8_t *sel, int arch, uint8_t flags) {
    if (!size) return;
    uint64_t off = (sel[0] * 131u + sel[1]) % size, len = size - off;
    if (len > 300) len = 300;
    fl_cfi_row_t row;
    memset(&row, 0, sizeof row);
    row.h.cfa_kind = FL_CFI_CFA_EXPR;
    row.h.expr_base = ORIGIN + off;
    row.h.cfa_len = (uint16_t)len;
    row.h.ra_reg = arch == FL_REGS_ARCH_X86_64 ? 16 : 30;
    apply(&row, arch, image, flags);
    row.h.cfa_kind = FL_CFI_CFA_REG;
    row.h.cfa_reg = arch == FL_REGS_ARCH_X86_64 ? 7 : 31;
    row.h.cfa_offset = 16;
    row.h.nrules = 2;
    row.h.expr_base = ORIGIN;
    row.rule[0] = (fl_cfi_rule_t){.reg = 3, .kind = (sel[2] & 1) ? FL_CFI_RULE_EXPR : FL_CFI_RULE_VAL_EXPR,
                                  .len = (uint16_t)len, .value = (int32_t)off};
    row.rule[1] = (fl_cfi_rule_t){.reg = row.h.ra_reg, .kind = FL_CFI_RULE_OFFSET, .value = -8};
    apply(&row, arch, image, flags);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t in_size) {
    if (in_size < 8) return 0;
    static bool init;
    if (!init) {
        for (unsigned i = 0; i < 512; i++)
            g_words[i] = (i & 1) ? 0x401000 + 16 * i : STACK + 8 * ((i * 37) % 512);
        fl_reader_init_buffer(&g_stack, g_words, sizeof g_words, STACK);
        init = true;
    }
    uint8_t flags = in[0];
    const uint8_t *sel = in + 3, *data = in + 8;
    size_t size = in_size - 8;
    int arch = (flags & 1) ? FL_REGS_ARCH_ARM64 : FL_REGS_ARCH_X86_64;
    bool synth = flags & 2, raw = !synth && (flags & 4);
    size_t hdr_len = raw ? (in[1] | (size_t)in[2] << 8) : 0;
    if (hdr_len > size) hdr_len = size;

    /* The image: an exact-size copy, so that a read past it is an ASan report. */
    size_t img_size = synth ? HDR_MAX + size : size;
    uint8_t *img = malloc(img_size ? img_size : 1);
    if (synth) memset(img, 0, HDR_MAX);
    memcpy(img + (synth ? HDR_MAX : 0), data, size);
    fl_reader_t r;
    fl_reader_init_buffer(&r, img, img_size, ORIGIN);
    fl_reader_t copied = {.read = copy_read, .fallback = &r}; /* (no bytes in place) */
    uint64_t records = ORIGIN + (synth ? HDR_MAX : hdr_len), records_size = img_size - (records - ORIGIN);

    fl_cfi_table_t lin = {.mem = &r, .eh_frame = records, .arch = arch,
                          .eh_frame_size = (flags & 8) ? records_size : 0};
    static fdes_t f;
    f.n = 0, f.more = false;
    int each_lin = fl_cfi_fde_each(&lin, collect, &f);
    CHECK(each_lin == 0 || each_lin == 2 || known_error(each_lin));
    bool whole = false;
    fl_cfi_table_t t = lin;
    if (synth) {
        whole = synth_hdr(img, ORIGIN, records, &f) && each_lin == 0 && !f.more;
        t.eh_frame_hdr = ORIGIN;
        if (!(flags & 16)) t.eh_frame = 0;
        /* the search table agrees with the scan only if no two FDEs overlap */
        for (unsigned i = 0; whole && i < f.n; i++) {
            if (f.fde[i].pc_start == f.fde[i].pc_end) whole = false;
            for (unsigned j = i + 1; whole && j < f.n; j++)
                if (f.fde[i].pc_start < f.fde[j].pc_end && f.fde[j].pc_start < f.fde[i].pc_end) whole = false;
        }
    } else if (raw && hdr_len) {
        t.eh_frame_hdr = ORIGIN;
        if (!(flags & 16)) t.eh_frame = 0;
    }
    fl_cfi_memo_t memo;
    memset(&memo, 0, sizeof memo);
    fl_cfi_table_t tm = t;
    tm.memo = &memo;

    /* The records through the table as given: the same with and without the memo. */
    static fdes_t f1, f2;
    f1.n = f2.n = 0, f1.more = f2.more = false;
    int e1 = fl_cfi_fde_each(&t, collect, &f1), e2 = fl_cfi_fde_each(&tm, collect, &f2);
    CHECK(e1 == 0 || e1 == 2 || known_error(e1));
    CHECK(e1 == e2 && f1.n == f2.n);
    for (unsigned i = 0; i < f1.n; i++) {
        CHECK(fde_eq(&f1.fde[i], &f2.fde[i]));
        fl_cfi_fde_t p;
        CHECK(fl_cfi_fde_parse(&t, f1.fde[i].addr, &p) == 0 && fde_eq(&p, &f1.fde[i]));
    }

    uint64_t pcs[32];
    unsigned npcs;
    pcs_for(sel, &f, data, size, pcs, &npcs);
    for (unsigned k = 0; k < npcs; k++) {
        uint64_t pc = pcs[k];
        fl_cfi_fde_t a, b;
        int ra = fl_cfi_fde_find(&t, pc, &a), rb = fl_cfi_fde_find(&tm, pc, &b);
        CHECK(ra == 0 || known_error(ra));
        CHECK(ra == rb);
        if (whole) { /* the search table and the scan give the same answer */
            fl_cfi_fde_t c;
            int rc = fl_cfi_fde_find(&lin, pc, &c);
            CHECK(rc == ra);
            if (!rc) CHECK(c.addr == a.addr);
        }
        if (ra) continue;
        CHECK(fde_eq(&a, &b));
        CHECK(a.pc_start <= pc && pc < a.pc_end);
        fl_cfi_fde_t p;
        CHECK(fl_cfi_fde_parse(&t, a.addr, &p) == 0 && fde_eq(&p, &a));
        fl_cfi_row_t row, row2;
        int e = fl_cfi_row_compute(&t, &a, pc, &row);
        CHECK(e == 0 || known_error(e));
        CHECK(fl_cfi_row_compute(&tm, &a, pc, &row2) == e);
        /* The program's bytes copied rather than read in place: the general interpreter only
         * (the fast one runs on bytes in place), which must give the same row or error. */
        fl_cfi_table_t tc = t;
        tc.mem = &copied;
        tc.memo = NULL;
        fl_cfi_row_t row3;
        CHECK(fl_cfi_row_compute(&tc, &a, pc, &row3) == e);
        if (e) continue;
        CHECK(row_eq(&row, &row2));
        CHECK(row_eq(&row, &row3));
        check_row(&row, &a, pc);
        /* every pc of the row has this row */
        if (row.end - row.start > 1 && row.start != pc) {
            CHECK(fl_cfi_row_compute(&t, &a, row.start, &row2) == 0);
            CHECK(row_eq(&row, &row2));
        }
        apply(&row, arch, &r, flags);
    }
    /* FDEs by address: the records' own, and addresses from the selectors. */
    for (unsigned i = 0; i < 5 && img_size; i++) {
        fl_cfi_fde_t p;
        uint64_t at = ORIGIN + (sel[i] * 97u + i) % img_size;
        int e = fl_cfi_fde_parse(&t, at, &p);
        CHECK(e == 0 || known_error(e));
        if (!e) CHECK(p.pc_start <= p.pc_end && p.addr == at);
    }
    expressions(&r, img_size, sel, arch, flags);
    free(img);
    return 0;
}
