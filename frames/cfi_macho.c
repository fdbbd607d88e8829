/* SPDX-License-Identifier: MIT */
/* The unwind-table stepper for Mach-O images, on every platform (Darwin's walker; `faultline
 * unwind` and the emulation tests replaying Darwin states on Linux): one compact-unwind step
 * (__unwind_info) through macho/, and the entries that say "DWARF" through the shared CFI
 * evaluator on the image's __eh_frame. */
#include "frames/unwind_internal.h"
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free

/* The start of the function holding pc from LC_FUNCTION_STARTS: STACK_IND reads its stack size
 * from that function's code, and an __unwind_info entry may cover several functions (linkers
 * merge neighbours with equal encodings). From the table fl_macho_image_describe recorded, read
 * through the walk's reader; a list made without one (by hand) has its image parsed again. */
__attribute__((noinline)) static int function_start(const fl_walk_env_t *env, const fl_image_t *img,
                                                    uint64_t pc, uint64_t *start) {
    const fl_reader_t *r = env->mem;
    uint64_t addr = img->function_starts, text = img->start - img->slide, best;
    uint32_t size = img->function_starts_size;
    fl_macho_image_t mi; /* ~2 KiB, used only on the rare path */
    if (!size) {
        if (fl_macho_image_init(&mi, env->mem, img->start, UINT64_MAX, true) ||
            !mi.function_starts_size ||
            fl_macho_image_file_to_reader(&mi, mi.function_starts_off, mi.function_starts_size,
                                          &addr))
            return FL_ENOTFOUND;
        r = mi.r;
        size = mi.function_starts_size;
        text = mi.text_vmaddr;
    }
    if (fl_macho_function_start_find(r, addr, size, text, pc - img->slide, &best))
        return FL_ENOTFOUND;
    *start = best + img->slide;
    return 0;
}

/* The compact-unwind entry covering `at` and its rule. */
static int entry_rule(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                      fl_macho_unwind_entry_t *entry, fl_macho_unwind_rule_t *rule) {
    fl_macho_unwind_info_t ui = {.r = c->tables, .addr = img->unwind_info,
                                 .size = img->unwind_info_size, .base = img->start,
                                 .cputype = img->cputype, .memo = &c->cu_memo};
    int e = fl_macho_unwind_find(&ui, at, entry);
    return e ? e : fl_macho_unwind_decode(img->cputype, entry->encoding, rule);
}

/* Where a rule (not NONE or DWARF) puts the CFA, and the base its register offsets are from,
 * relative to the CFA: FRAME, the frame record at fp (the caller's fp, then the return address;
 * CFA = fp + 16); FRAMELESS and STACK_IND, the caller's sp (sp + the stack size). */
static int compact_cfa(const fl_macho_unwind_rule_t *rule, const fl_reader_t *code,
                       uint64_t func_start, fl_cfi_head_t *h, int32_t *base) {
    bool arm64 = rule->cputype == FL_MACHO_CPU_ARM64;
    if (rule->cputype != ((int)FL_ARCH == (int)FL_REGS_ARCH_ARM64 ? FL_MACHO_CPU_ARM64 : FL_MACHO_CPU_X86_64))
        return FL_ENOSYS; /* the walker's register numbers are its own architecture's */
    *h = (fl_cfi_head_t){.cfa_kind = FL_CFI_CFA_REG, .ra_reg = arm64 ? 30 : 16};
    if (rule->kind == FL_MACHO_RULE_FRAME) {
        h->cfa_reg = FL_DWARF_FP;
        h->cfa_offset = 16;
        *base = -16;
    } else if (rule->kind == FL_MACHO_RULE_FRAMELESS && arm64) {
        h->cfa_reg = FL_DWARF_SP; /* the return address stays in lr (rule UNSET) */
        h->cfa_offset = rule->stack_size;
        *base = 0;
    } else if (!arm64 && (rule->kind == FL_MACHO_RULE_FRAMELESS || rule->kind == FL_MACHO_RULE_STACK_IND)) {
        uint64_t size = rule->stack_size;
        if (rule->kind == FL_MACHO_RULE_STACK_IND) {
            /* The immediate of the prologue's "sub $imm32, %rsp", plus what the pushes and the
             * call added. */
            uint32_t imm;
            uint64_t at;
            int e;
            if (!code || !fl_add_u64(func_start, rule->stack_ind_offset, &at)) return FL_EBADDATA;
            if ((e = fl_read_u32(code, at, &imm))) return e;
            size = (uint64_t)imm + rule->stack_adjust;
        }
        if (size < 8u * ((uint64_t)rule->nregs + 1) || size > INT32_MAX) return FL_EBADDATA;
        h->cfa_reg = FL_DWARF_SP;
        h->cfa_offset = (int64_t)size;
        *base = 0;
    } else {
        return rule->kind == FL_MACHO_RULE_NONE || rule->kind == FL_MACHO_RULE_DWARF ? FL_ENOSYS
                                                                                   : FL_EBADDATA;
    }
    return 0;
}

/* Adds rule u to the row's rules, kept by ascending register: a rule for a register already
 * there replaces it (the later one wins). Compact rules come nearly sorted (arm64's always), so
 * an insertion is mostly one compare. */
static void row_insert(fl_cfi_row_t *row, unsigned *n, fl_cfi_rule_t u) {
    unsigned k = *n;
    while (k && row->rule[k - 1].reg > u.reg) k--;
    if (k && row->rule[k - 1].reg == u.reg) {
        row->rule[k - 1] = u;
        return;
    }
    for (unsigned i = *n; i > k; i--) row->rule[i] = row->rule[i - 1];
    row->rule[k] = u;
    ++*n;
}

int fl_cfi_macho_row(const fl_macho_unwind_rule_t *rule, const fl_reader_t *code,
                     uint64_t func_start, fl_cfi_row_t *row) {
    int32_t base;
    int e = compact_cfa(rule, code, func_start, &row->h, &base);
    if (e) return e;
    row->start = row->end = 0;
    unsigned fp = FL_DWARF_FP, ra = row->h.ra_reg, n = 0;
    bool arm64 = rule->cputype == FL_MACHO_CPU_ARM64;
    for (unsigned i = 0; i < rule->nregs && i < FL_MACHO_RULE_REGS_MAX; i++) {
        if (rule->reg[i] >= FL_DWARF_REGS) continue; /* (arm64 d8..d15: not tracked) */
        row_insert(row, &n, (fl_cfi_rule_t){.reg = rule->reg[i], .kind = FL_CFI_RULE_OFFSET,
                                            .value = base + rule->reg_offset[i]});
    }
    /* The frame record's, then the return address's slot: added last, they win over a saved
     * register of the same number, as in macho/'s step. */
    if (rule->kind == FL_MACHO_RULE_FRAME)
        row_insert(row, &n, (fl_cfi_rule_t){.reg = (uint8_t)fp, .kind = FL_CFI_RULE_OFFSET,
                                            .value = -16});
    if (rule->kind == FL_MACHO_RULE_FRAME || !arm64)
        row_insert(row, &n, (fl_cfi_rule_t){.reg = (uint8_t)ra, .kind = FL_CFI_RULE_OFFSET,
                                            .value = -8});
    row->h.nrules = (uint8_t)n;
    return 0;
}

int fl_cfi_macho_entry(const fl_macho_unwind_rule_t *rule, const fl_reader_t *code,
                       uint64_t func_start, fl_cfi_entry_t *e) {
    fl_cfi_head_t h;
    int32_t base, off[FL_DWARF_REGS];
    int err = compact_cfa(rule, code, func_start, &h, &base);
    if (err) return err;
    unsigned fp = FL_DWARF_FP, ra = h.ra_reg;
    if (rule->kind != FL_MACHO_RULE_FRAME && rule->cputype == FL_MACHO_CPU_ARM64)
        return FL_ENOSYS; /* the return address stays in lr: not a plain row */
    /* Each register's last rule, as fl_cfi_macho_row's row keeps it; then the row's checks
     * (fl_cfi_entry_plain) on the rules it would hold. The range of the slots is taken as they
     * come, and again over the final rules only when one replaced another (no compiler's
     * encoding names a register twice). */
    uint64_t mask = 0, dup = 0, fixed = 1ull << ra;
    int32_t lo = -8, hi = -8;
    for (unsigned i = 0; i < rule->nregs && i < FL_MACHO_RULE_REGS_MAX; i++) {
        unsigned reg = rule->reg[i];
        if (reg >= FL_DWARF_REGS) continue; /* (arm64 d8..d15: not tracked) */
        int32_t v = base + rule->reg_offset[i];
        off[reg] = v;
        dup |= mask & 1ull << reg;
        mask |= 1ull << reg;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (rule->kind == FL_MACHO_RULE_FRAME) {
        off[fp] = -16;
        fixed |= 1ull << fp;
        lo = lo < -16 ? lo : -16;
    }
    off[ra] = -8;
    dup |= mask & fixed;
    mask |= fixed;
    if (dup) {
        lo = INT32_MAX, hi = INT32_MIN;
        for (uint64_t m = mask; m; m &= m - 1) {
            int32_t v = off[__builtin_ctzll(m)];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    if (((mask >> FL_DWARF_SP) & 1) || (FL_DWARF_PC != ra && ((mask >> FL_DWARF_PC) & 1)) ||
        (unsigned)__builtin_popcountll(mask) > FL_CFI_CACHE_RULES)
        return FL_ENOSYS;
    int64_t lo_off = h.cfa_offset + lo, reach = (int64_t)hi - lo + 8;
    if ((int64_t)hi - lo > FL_CFI_PLAIN_SPAN || lo >= 0 || -(int64_t)lo > FL_CFI_PLAIN_SPAN ||
        lo_off != (int32_t)lo_off)
        return FL_ENOSYS;
    bool has_fp = (mask >> fp) & 1;
    uint64_t saved = mask & ~(1ull << ra | 1ull << fp);
    unsigned n = 0;
    for (uint64_t m = saved; m; m &= m - 1) e->u.at[n++] = (uint16_t)(off[__builtin_ctzll(m)] - lo);
    e->kind = (uint8_t)(FL_CFI_ENTRY_PLAIN | (has_fp ? FL_CFI_ENTRY_PLAIN_FP : 0) |
                        (h.cfa_reg == FL_DWARF_SP ? FL_CFI_ENTRY_CFA_SP : FL_CFI_ENTRY_CFA_FP));
    e->cfa_reg = (uint8_t)h.cfa_reg;
    e->ra_reg = (uint8_t)ra;
    e->nsaved = (uint8_t)n;
    e->regmask = saved;
    e->span = (uint16_t)(hi - lo);
    e->reach = (uint16_t)(reach > -(int64_t)lo ? reach : -(int64_t)lo);
    e->ra_at = (uint16_t)(off[ra] - lo);
    e->fp_at = (uint16_t)((has_fp ? off[fp] : off[ra]) - lo);
    e->cfa_off = (int32_t)h.cfa_offset;
    e->lo_off = (int32_t)lo_off;
    return 0;
}

/* An __unwind_info lookup already made for `at` (frame 0's prologue check), for compact_source
 * to reuse rather than repeat. */
typedef struct looked {
    bool have;
    int fstart_err; /* 1: fstart not looked up yet; else function_start's result for `at` */
    uint64_t fstart;
    fl_macho_unwind_entry_t entry;
    fl_macho_unwind_rule_t rule;
} looked_t;

/* The row for `at` from its compact-unwind entry (ctx: a looked_t, or NULL): the FDE an entry
 * names for DWARF, else the rule as a row. */
static int compact_source(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at, void *ctx,
                          fl_cfi_row_t *row) {
    looked_t own, *l = ctx && ((looked_t *)ctx)->have ? ctx : &own;
    uint64_t start, fde;
    if (l == &own && entry_rule(c, img, at, &own.entry, &own.rule)) return FL_ENOTFOUND;
    if (l->rule.kind == FL_MACHO_RULE_DWARF) {
        fl_cfi_table_t t = {.mem = c->tables, .eh_frame = img->eh_frame,
                            .eh_frame_size = img->eh_frame_size, .arch = FL_ARCH, .memo = &c->memo};
        fl_cfi_fde_t f;
        int e;
        if (!img->eh_frame || !fl_add_u64(img->eh_frame, l->rule.dwarf_offset, &fde))
            return FL_ENOTFOUND;
        if ((e = fl_cfi_fde_parse(&t, fde, &f))) return e;
        return fl_cfi_row_compute(&t, &f, at, row);
    }
    start = l->entry.start;
    if (l->rule.kind == FL_MACHO_RULE_STACK_IND) { /* (frame 0's prologue check may have it) */
        if (l == &own || l->fstart_err == 1)
            l->fstart_err = function_start(c->env, img, at, &l->fstart);
        if (l->fstart_err) return FL_ENOTFOUND;
        start = l->fstart;
    }
    int e = fl_cfi_macho_row(&l->rule, c->env->mem, start, row);
    return e == FL_ENOSYS ? FL_ENOTFOUND : e;
}

int fl_cfi_macho_fill(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                      fl_cfi_entry_t *ent, fl_cfi_row_t *row) {
    looked_t l; /* (not zero-filled: the rule's register arrays are read up to nregs) */
    l.have = true;
    l.fstart_err = 1;
    if (!img->unwind_info_size || entry_rule(c, img, at, &l.entry, &l.rule)) return FL_ENOTFOUND;
    uint64_t start = l.entry.start;
    if (l.rule.kind == FL_MACHO_RULE_STACK_IND &&
        (l.fstart_err = function_start(c->env, img, at, &l.fstart)) == 0)
        start = l.fstart;
    int e = l.fstart_err < 0 ? FL_ENOTFOUND : fl_cfi_macho_entry(&l.rule, c->env->mem, start, ent);
    if (e != FL_ENOSYS) return e == 0 ? 1 : e;
    return compact_source(c, img, at, &l, row); /* DWARF, or a row of another form */
}

/* Whether the function has a prologue its rule does not describe: not a leaf that saves and
 * allocates nothing (its rule holds at every instruction), nor DWARF (exact everywhere). */
static bool has_prologue(const fl_macho_unwind_rule_t *rule) {
    if (rule->kind == FL_MACHO_RULE_FRAME || rule->kind == FL_MACHO_RULE_STACK_IND) return true;
    if (rule->kind != FL_MACHO_RULE_FRAMELESS) return false;
    return rule->nregs || rule->stack_size > (rule->cputype == FL_MACHO_CPU_ARM64 ? 0u : 8u);
}

int fl_cfi_macho_step(fl_cfi_cursor_t *c, const fl_image_t *img,
                      uint64_t *pc_out, uint64_t *sp_out, uint64_t *fp_out) {
    const fl_walk_env_t *env = c->env;
    fl_dwarf_regs_t *m = &c->regs;
    uint64_t pc = m->r[FL_DWARF_PC], lookup = c->exact_pc ? pc : pc - 1;
    looked_t looked; /* (its entry and rule are read only once `have` is set) */
    looked.have = false;
    looked.fstart_err = 1;
    if (c->exact_pc) {
        /* An exact pc may lie where no table of a Darwin image is right: in an epilogue after
         * the frame is torn down (compact unwind never describes one, and compilers emit no
         * epilogue CFI for Darwin), or in a prologue before the frame is set up (a call
         * through a bad pointer lands on the first instruction; a snapshot stops threads
         * anywhere), where compact unwind's rule, which describes the body, is wrong. The code
         * itself says where the caller is. The entry's start may be an earlier function's (the
         * linker folds neighbours with equal encodings): LC_FUNCTION_STARTS then gives the
         * function's own. */
        bool stepped = fl_unwind_arch_epilogue(env->mem, env->mem, m) == 1;
        if (!stepped)
            looked.have = img->unwind_info_size &&
                          entry_rule(c, img, lookup, &looked.entry, &looked.rule) == 0;
        stepped = stepped ||
                  (looked.have && has_prologue(&looked.rule) &&
                   (fl_unwind_arch_prologue(env->mem, looked.entry.start, env->mem, m) == 1 ||
                    ((looked.fstart_err = function_start(env, img, lookup, &looked.fstart)) == 0 &&
                     looked.fstart != looked.entry.start &&
                     fl_unwind_arch_prologue(env->mem, looked.fstart, env->mem, m) == 1)));
        if (stepped) {
            c->exact_pc = false;
            return fl_cfi_cursor_caller(c, pc_out, sp_out, fp_out);
        }
    }
    /* No __unwind_info: __eh_frame's records alone, if any. */
    int e = img->unwind_info_size ? fl_cfi_table_step(c, img, lookup, compact_source, &looked)
            : img->eh_frame      ? fl_cfi_dwarf_step(c, img, lookup, 0)
                                 : FL_ENOTFOUND;
    return e == 1 ? fl_cfi_cursor_caller(c, pc_out, sp_out, fp_out) : e == 0 ? 0 : -1;
}
