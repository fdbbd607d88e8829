/* SPDX-License-Identifier: MIT */
/* The unwind-table stepper on Darwin: one compact-unwind step (__unwind_info) through macho/. */
#include "frames/cfi_darwin.h"

#pragma GCC poison malloc calloc realloc free

/* The registers compact unwind works on, carried from one table step to the next so that the
 * callee-saved registers a FRAME rule restored are there for the caller's own rule, and so that a
 * register the tables say nothing about is known to be unknown (lr above frame 0, for one). */
typedef struct state {
    fl_macho_regs_t regs;
} state_t;
_Static_assert(sizeof(state_t) <= FL_CFI_STATE_BYTES, "FL_CFI_STATE_BYTES too small");

static state_t *state_of(fl_cfi_cursor_t *c) { return (state_t *)(void *)c->state; }

void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env) {
    c->env = env;
    c->valid = false;
    c->exact_pc = true;
    c->faulted = false; /* nothing here can fault: every read goes through env->mem */
    c->tid = 0;
}

void fl_cfi_end(fl_cfi_cursor_t *c) { (void)c; }

/* Seeds the DWARF-numbered registers from r: every register for the interrupted context
 * (frame 0), only pc, sp and fp after a frame-pointer or scan step, which know nothing else. */
static void seed(fl_macho_regs_t *m, const fl_regs_t *r, bool all) {
    fl_memset(m, 0, sizeof *m);
    for (unsigned d = 0; d < FL_ARRAY_LEN(m->r); d++) {
        int i = fl_unwind_arch_dwarf_reg(d);
        if (i < 0) continue;
        m->r[d] = r->r[i];
        if (all) m->valid |= 1ull << d;
    }
    m->valid |= 1ull << fl_unwind_arch_dwarf_pc | 1ull << fl_unwind_arch_dwarf_sp |
                1ull << fl_unwind_arch_dwarf_fp;
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

int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r) {
    const fl_walk_env_t *env = c->env;
    fl_macho_regs_t *m = &state_of(c)->regs;
    bool frame0 = c->exact_pc;
    c->exact_pc = false;
    if (!c->valid) seed(m, r, frame0);
    c->valid = false;
    if (!env->images) return -1;

    /* A return address follows its call, which may be the last instruction of its function
     * (a noreturn call): look the caller up by the call, one byte back. */
    uint64_t pc = fl_regs_pc(r);
    if (!pc) return -1;
    uint64_t lookup = frame0 ? pc : pc - 1;
    const fl_image_t *img = fl_images_find(env->images, lookup);
    if (!img || !img->unwind_info_size) return -1;
    fl_macho_unwind_info_t ui = {.r = env->mem, .addr = img->unwind_info,
                                 .size = img->unwind_info_size, .base = img->start,
                                 .cputype = img->cputype};
    fl_macho_unwind_entry_t entry;
    fl_macho_unwind_rule_t rule;
    if (fl_macho_unwind_find(&ui, lookup, &entry) ||
        fl_macho_unwind_decode(img->cputype, entry.encoding, &rule))
        return -1;

    /* Interrupted on a function's first instruction (a call through a bad pointer, or a fault in
     * the first push): its rule describes the body, but nothing has been saved yet. */
    if (frame0 && pc == entry.start) {
        uint64_t cpc, csp;
        if (fl_unwind_arch_entry_step(env->mem, r, &cpc, &csp)) return -1;
        fl_unwind_arch_set(r, cpc, csp, fl_regs_fp(r));
        return 1;
    }
    uint64_t start = entry.start;
    if (rule.kind == FL_MACHO_RULE_STACK_IND && function_start(env, img, lookup, &start)) return -1;
    fl_macho_regs_t next = *m;
    if (fl_macho_unwind_step(&rule, env->mem, start, env->mem, &next)) return -1;

    const unsigned pc_d = fl_unwind_arch_dwarf_pc, sp_d = fl_unwind_arch_dwarf_sp,
                   fp_d = fl_unwind_arch_dwarf_fp;
    next.r[pc_d] = fl_unwind_strip_pac(next.r[pc_d]);
    *m = next;
    for (unsigned d = 0; d < FL_ARRAY_LEN(m->r); d++) {
        int i = fl_unwind_arch_dwarf_reg(d);
        if (i >= 0 && (m->valid >> d & 1)) r->r[i] = m->r[d];
    }
    fl_unwind_arch_set(r, m->r[pc_d], m->r[sp_d], (m->valid >> fp_d & 1) ? m->r[fp_d] : 0);
    c->valid = true;
    return 1;
}

int fl_frames_prepare(void) { return 0; /* compact unwind keeps no state between walks */ }
