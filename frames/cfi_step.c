/* SPDX-License-Identifier: MIT */
/* The DWARF step shared by every platform's table stepper: the cursor's registers, the image of
 * the pc and a reader of its tables, the row from the cache or computed, and the counts. */
#include "frames/unwind_internal.h"

#pragma GCC poison malloc calloc realloc free

static int g_mode FL_STARTUP_DATA = FL_CFI_MODE_CACHED; /* fl_install sets it */
static uint64_t g_totals[6]; /* fl_cfi_stats_t, in its field order */
_Static_assert(sizeof(fl_cfi_stats_t) == sizeof g_totals, "fl_cfi_stats_t fields");

/* Defined by the platform stepper: whether LLVM libunwind is linked in. */
extern const bool fl_cfi_have_llvm;

int fl_frames_cfi_mode(int mode) {
    if (mode < FL_CFI_MODE_CACHED || mode > FL_CFI_MODE_LLVM) return FL_EINVAL;
    if (mode == FL_CFI_MODE_LLVM && !fl_cfi_have_llvm) return FL_ENOSYS;
    __atomic_store_n(&g_mode, mode, __ATOMIC_RELEASE);
    return 0;
}

int fl_frames_cfi_mode_current(void) { return __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE); }

void fl_frames_cfi_stats(fl_cfi_stats_t *out) {
    uint64_t v[6];
    for (unsigned i = 0; i < 6; i++) v[i] = __atomic_load_n(&g_totals[i], __ATOMIC_RELAXED);
    fl_memcpy(out, v, sizeof v);
}

static int budget_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    fl_cfi_budget_reader_t *b = (fl_cfi_budget_reader_t *)(uintptr_t)r;
    if (!b->left) return FL_ERANGE;
    b->left--;
    return r->fallback->read(r->fallback, addr, dst, len);
}

void fl_cfi_cursor_init(fl_cfi_cursor_t *c, const fl_walk_env_t *env) {
    c->env = env;
    c->valid = false;
    c->first = true;
    c->exact_pc = true;
    c->faulted = false;
    c->mode = __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE);
    c->tid = 0;
    c->error = 0;
    c->img = 0;
    c->img_id = 0;
    c->text_img = 0;
    c->memo.hdr.addr = c->memo.cie.addr = c->memo.scanned = 0;
    c->cu_memo.size = 0;
    const fl_reader_t *m = env->mem;
    c->slow.r = (fl_reader_t){.read = budget_read, .base = m->base, .size = m->size,
                              .origin = m->origin, .fallback = m};
    c->slow.left = FL_CFI_SLOW_READS_MAX;
    fl_memset(&c->stats, 0, sizeof c->stats);
}

void fl_cfi_cursor_finish(fl_cfi_cursor_t *c) {
    uint64_t v[6];
    fl_memcpy(v, &c->stats, sizeof v);
    for (unsigned i = 0; i < 6; i++)
        if (v[i]) __atomic_add_fetch(&g_totals[i], v[i], __ATOMIC_RELAXED);
}

void fl_cfi_cursor_seed(fl_cfi_cursor_t *c, const fl_regs_t *r) {
    bool all = c->first;
    fl_dwarf_regs_t *m = &c->regs;
    m->valid = 0;
    for (unsigned d = 0; d < FL_DWARF_REGS; d++) {
        int i = fl_unwind_arch_dwarf_map[d];
        m->r[d] = i >= 0 ? r->r[i] : 0;
        if (all && i >= 0) m->valid |= 1ull << d;
    }
    m->valid |= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP |
                1ull << FL_DWARF_FP;
    c->exact_pc = all;
    c->first = false;
}

void fl_cfi_cursor_regs(const fl_cfi_cursor_t *c, const fl_regs_t *r, fl_regs_t *out) {
    *out = *r;
    for (unsigned d = 0; d < FL_DWARF_REGS; d++) {
        int i = fl_unwind_arch_dwarf_map[d];
        if (i >= 0 && (c->regs.valid >> d & 1)) out->r[i] = c->regs.r[d];
    }
    fl_unwind_arch_set(out, fl_regs_pc(r), fl_regs_sp(r), fl_regs_fp(r));
}

void fl_cfi_cursor_from_regs(fl_cfi_cursor_t *c, const fl_regs_t *out) {
    for (unsigned d = 0; d < FL_DWARF_REGS; d++) {
        int i = fl_unwind_arch_dwarf_map[d];
        if (i >= 0) c->regs.r[d] = out->r[i];
    }
    c->regs.valid |= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP | 1ull << FL_DWARF_FP;
}

int fl_cfi_cursor_caller(fl_cfi_cursor_t *c, uint64_t *pc, uint64_t *sp, uint64_t *fp) {
    fl_dwarf_regs_t *m = &c->regs;
    c->valid = true;
    *pc = m->r[FL_DWARF_PC] = fl_unwind_strip_pac(m->r[FL_DWARF_PC]);
    *sp = m->r[FL_DWARF_SP];
    *fp = (m->valid >> FL_DWARF_FP & 1) ? m->r[FL_DWARF_FP] : 0;
    return 1;
}

const fl_image_t *fl_cfi_cursor_image(fl_cfi_cursor_t *c, uint64_t addr) {
    const fl_image_t *img = c->img;
    if (img && addr >= img->start && addr < img->end) return img;
    img = c->text_img;
    if (!(img && addr >= img->start && addr < img->end) &&
        (!c->env->images || !(img = fl_images_find(c->env->images, addr))))
        return 0;
    c->img = img;
    /* The cache flush generation joins the identity (an image list made by hand has no ids). */
    c->img_id = (img->id ? img->id : fl_image_identity(img)) ^ (fl_cfi_cache_generation() << 1);
    /* The tables are read in place inside the window the memory map showed readable; the rest
     * (and all of them when there was no map) through the walk's reader, on a budget. */
    c->tables = &c->slow.r;
    if (img->tables_hi > img->tables_lo && !c->env->concurrent) {
        fl_reader_init_range(&c->window, img->tables_lo, img->tables_hi, &c->slow.r);
        c->tables = &c->window;
    }
    return img;
}

static int failed(fl_cfi_cursor_t *c, int e) {
    if (e == FL_ENOSYS) {
        c->stats.declined++;
    } else if (e != FL_ENOTFOUND && e != FL_EINVAL) {
        c->stats.errors++;
        c->error = e == FL_EFAULT ? "unwind table or saved register unreadable"
                   : e == FL_ERANGE ? "unwind table exceeds a limit"
                                    : "malformed unwind table";
    }
    return e;
}

int fl_cfi_table_step(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                      fl_cfi_row_source_t source, void *ctx) {
    fl_cfi_row_t row;
    bool cached = c->mode == FL_CFI_MODE_CACHED;
    int e = cached ? fl_cfi_cache_step(at, c->img_id, c->env->mem, &c->regs, &row) : -1;
    if (e == 0 || e == 1) { /* a plain row, applied from the cache */
        c->stats.hits++;
        c->stats.steps += (unsigned)e;
        c->exact_pc = false;
        return e;
    }
    if (e == 2) {
        c->stats.hits++;
    } else {
        if ((e = source(c, img, at, ctx, &row))) return failed(c, e);
        c->stats.misses++;
        fl_cfi_entry_t ent;
        if (cached && fl_cfi_entry_plain(&row, &ent)) {
            /* A plain row is applied as the entry it makes, as a hit would (the general
             * application below costs more), and stored from it. */
            e = fl_cfi_entry_apply(&ent, c->env->mem, &c->regs);
            if (e == 0 || e == 1) {
                fl_cfi_cache_put_entry(at, c->img_id, &ent);
                c->stats.steps += (unsigned)e;
                c->exact_pc = false;
                return e;
            }
        } else if (cached) {
            fl_cfi_cache_put(at, c->img_id, &row);
        }
    }
    e = fl_cfi_row_apply(&row, FL_ARCH, c->env->mem, c->tables, &c->regs);
    if (e < 0) return failed(c, e);
    if (e == 1) {
        c->stats.steps++;
        c->exact_pc = row.h.flags & FL_CFI_ROW_SIGNAL;
    }
    return e;
}

/* The row from img's DWARF tables: the FDE at *(uint64_t *)ctx, or the one covering at if 0. */
static int dwarf_source(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at, void *ctx,
                        fl_cfi_row_t *row) {
    uint64_t fde_addr = *(const uint64_t *)ctx;
    fl_cfi_table_t t = {.mem = c->tables, .eh_frame_hdr = img->eh_frame_hdr,
                        .eh_frame = img->eh_frame, .eh_frame_size = img->eh_frame_size,
                        .arch = FL_ARCH, .memo = &c->memo};
    fl_cfi_fde_t fde;
    int e = fde_addr ? fl_cfi_fde_parse(&t, fde_addr, &fde) : fl_cfi_fde_find(&t, at, &fde);
    return e ? e : fl_cfi_row_compute(&t, &fde, at, row);
}

int fl_cfi_dwarf_step(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at, uint64_t fde_addr) {
    return fl_cfi_table_step(c, img, at, dwarf_source, &fde_addr);
}

int fl_cfi_fill(fl_cfi_cursor_t *c, uint64_t at) {
    const fl_image_t *img = c->img;
    fl_cfi_entry_t ent;
    fl_cfi_row_t row;
    uint64_t fde = 0;
    int e = img->cputype ? fl_cfi_macho_fill(c, img, at, &ent, &row)
                         : dwarf_source(c, img, at, &fde, &row);
    if (e < 0) return e;
    c->stats.misses++;
    if (e == 0 && !fl_cfi_entry_plain(&row, &ent)) {
        fl_cfi_cache_put(at, c->img_id, &row);
        return FL_ENOSYS;
    }
    fl_cfi_cache_put_entry(at, c->img_id, &ent);
    return 0;
}
