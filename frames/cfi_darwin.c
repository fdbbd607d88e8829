/* SPDX-License-Identifier: MIT */
/* The unwind-table stepper on Darwin: one compact-unwind step (__unwind_info) through macho/, and
 * the entries that say "DWARF" through the shared CFI evaluator on the image's __eh_frame. */
#include "frames/unwind_internal.h"
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free

const bool fl_cfi_have_llvm = false;

void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env) { fl_cfi_cursor_init(c, env); }

void fl_cfi_end(fl_cfi_cursor_t *c) { fl_cfi_cursor_finish(c); }

/* Darwin's signal trampoline (_sigtramp) is in libsystem_platform, an image with unwind tables. */
bool fl_unwind_os_is_sigreturn(const fl_reader_t *mem, uint64_t pc) {
    (void)mem, (void)pc;
    return false;
}

/* The start of the function holding unslid address `vmaddr` from LC_FUNCTION_STARTS: STACK_IND
 * reads its stack size from that function's code, and an __unwind_info entry may cover several
 * functions (linkers merge neighbours with equal encodings). */
typedef struct starts_ctx {
    uint64_t target, best;
    bool found;
} starts_ctx_t;

static int starts_cb(void *ctx, uint64_t vmaddr) {
    starts_ctx_t *s = ctx;
    if (vmaddr > s->target) return 1; /* ascending: nothing later can hold it */
    s->best = vmaddr;
    s->found = true;
    return 0;
}

__attribute__((noinline)) static int function_start(const fl_walk_env_t *env, const fl_image_t *img,
                                                    uint64_t pc, uint64_t *start) {
    fl_macho_image_t mi; /* ~2 KiB, only on this rare path */
    if (fl_macho_image_init(&mi, env->mem, img->start, UINT64_MAX, true)) return FL_EBADDATA;
    starts_ctx_t s = {.target = pc - mi.slide};
    int e = fl_macho_function_starts(&mi, starts_cb, &s);
    if ((e != 0 && e != 1) || !s.found) return FL_ENOTFOUND;
    *start = s.best + mi.slide;
    return 0;
}

int fl_cfi_step(fl_cfi_cursor_t *c, const fl_regs_t *r, uint64_t *pc_out, uint64_t *sp_out,
                uint64_t *fp_out) {
    const fl_walk_env_t *env = c->env;
    if (!c->valid) fl_cfi_cursor_seed(c, r);
    fl_dwarf_regs_t *m = &c->regs;
    bool exact = c->exact_pc;
    int e;

    /* A return address follows its call, which may be the last instruction of its function
     * (a noreturn call): look the caller up by the call, one byte back. */
    uint64_t pc = m->r[FL_DWARF_PC];
    if (!pc) return -1;
    uint64_t lookup = exact ? pc : pc - 1;
    const fl_image_t *img = fl_cfi_cursor_image(c, lookup);
    if (!img) return -1;
    if (!img->unwind_info_size) { /* no compact unwind: the __eh_frame records, if any */
        e = img->eh_frame ? fl_cfi_dwarf_step(c, img, lookup, 0) : -1;
        return e == 1 ? fl_cfi_cursor_caller(c, pc_out, sp_out, fp_out) : e == 0 ? 0 : -1;
    }
    fl_macho_unwind_info_t ui = {.r = c->tables, .addr = img->unwind_info,
                                 .size = img->unwind_info_size, .base = img->start,
                                 .cputype = img->cputype};
    fl_macho_unwind_entry_t entry;
    fl_macho_unwind_rule_t rule;
    if (fl_macho_unwind_find(&ui, lookup, &entry) ||
        fl_macho_unwind_decode(img->cputype, entry.encoding, &rule))
        return -1;
    if (rule.kind == FL_MACHO_RULE_DWARF) { /* the FDE at the entry's offset in __eh_frame */
        uint64_t fde;
        if (!img->eh_frame || !fl_add_u64(img->eh_frame, rule.dwarf_offset, &fde)) return -1;
        e = fl_cfi_dwarf_step(c, img, lookup, fde);
        return e == 1 ? fl_cfi_cursor_caller(c, pc_out, sp_out, fp_out) : e == 0 ? 0 : -1;
    }

    fl_dwarf_regs_t next = *m;
    if (exact && pc == entry.start) {
        /* Interrupted on a function's first instruction (a call through a bad pointer, or a
         * fault in the first push): its rule describes the body, but nothing has been saved
         * yet; the caller's registers are all still in place. */
        fl_regs_t cur;
        uint64_t cpc, csp;
        fl_cfi_cursor_regs(c, r, &cur);
        if (fl_unwind_arch_entry_step(env->mem, &cur, &cpc, &csp)) return -1;
        next.r[FL_DWARF_PC] = cpc;
        next.r[FL_DWARF_SP] = csp;
    } else {
        uint64_t start = entry.start;
        if (rule.kind == FL_MACHO_RULE_STACK_IND && function_start(env, img, lookup, &start))
            return -1;
        if (fl_macho_unwind_step(&rule, env->mem, start, env->mem, &next)) return -1;
    }
    *m = next;
    c->exact_pc = false;
    return fl_cfi_cursor_caller(c, pc_out, sp_out, fp_out);
}

int fl_frames_prepare(void) { return 0; /* nothing to prepare: every step reads through the reader */ }
