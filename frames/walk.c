/* SPDX-License-Identifier: MIT */
/* The stack walker: an ordered list of steppers (CFI, frame pointer, function entry), each
 * producing a caller that must pass the same plausibility checks. */
/* Order, per step: the unwind tables (CFI), then (frame 0, or a frame under a call a runtime
 * injected) the caller as the function's entry left it (the return address on top of the stack,
 * or arm64's lr), then the frame-pointer record (on the stack, or on another stack it leads to),
 * then a bounded scan for a return address. */

#include "frames/unwind_internal.h"

static bool in_stack(const fl_walk_env_t *env, uint64_t addr) {
    if (!env->stack_lo && !env->stack_hi) return true; /* unknown: the reads still guard us */
    return addr >= env->stack_lo && addr < env->stack_hi;
}

/* Whether a stack pointer value lies in the stack: from its lowest address (a stack used to the
 * last byte, as an overflow leaves it) up to and including its end (the outermost frame's). */
static bool sp_in_stack(const fl_walk_env_t *env, uint64_t sp) {
    if (!env->stack_lo && !env->stack_hi) return true;
    return sp >= env->stack_lo && sp <= env->stack_hi;
}

/* Code in no image: an executable mapping that no image holds, where a JIT compiler puts the
 * code it writes (V8, the JVM, LuaJIT, .NET). It has no unwind tables: its frames are reached
 * by their callee's tables or frame record and left by their own frame record (V8's frames and
 * the JVM interpreter's keep one), never by the scan. Needs the memory map; never the thread's
 * own stack (an executable stack holds no code that calls). */
static bool jit_code(const fl_walk_env_t *env, uint64_t pc) {
    if (!env->maps || !env->images || (pc >= env->stack_lo && pc < env->stack_hi) ||
        fl_images_find(env->images, pc))
        return false;
    const fl_map_t *m = fl_maps_find(env->maps, pc);
    return m && (m->perms & FL_MAP_X);
}

/* Whether pc lies in code: an image's text, or (jit) code in no image. */
static bool is_code(const fl_walk_env_t *env, uint64_t pc, bool jit) {
    if (!env->images) return pc != 0;
    return fl_images_is_text(env->images, pc) || (jit && jit_code(env, pc));
}

/* A caller is plausible when its stack pointer moved up (stacks grow down), stays in the stack,
 * and it returns into code: a loaded image's text, or (jit) code in no image. A frame with an
 * exact pc (frame 0, or one a signal interrupted: `first`) alone may share its caller's sp: on
 * arm64 a function that has not stored its frame record (a leaf) returns through lr, and has
 * pushed nothing. */
static bool plausible_step(const fl_walk_env_t *env, uint64_t sp, uint64_t caller_pc,
                           uint64_t caller_sp, bool first, bool jit) {
    if (caller_sp < sp || (caller_sp == sp && !first) || !sp_in_stack(env, caller_sp)) return false;
    return is_code(env, caller_pc, jit);
}

/* Whether pc lies in some image's text, the last image whose text held one remembered in *memo
 * (consecutive frames mostly share an image). */
static bool in_text(const fl_image_list_t *images, const fl_image_t **memo, uint64_t pc) {
    const fl_image_t *img = *memo;
    if (img && pc >= img->text_start && pc < img->text_end) return true;
    img = fl_images_find(images, pc);
    if (!img || pc < img->text_start || pc >= img->text_end) return false;
    *memo = img;
    return true;
}

/* plausible_step for the caller the CFI cursor computed, with the cursor's memo. The tables may
 * also return into the signal trampoline, which need not lie in an image (qemu-user's). */
static bool plausible_cfi(const fl_walk_env_t *env, fl_cfi_cursor_t *c, uint64_t sp,
                          uint64_t caller_pc, uint64_t caller_sp, bool first) {
    if (caller_sp < sp || (caller_sp == sp && !first) || !sp_in_stack(env, caller_sp)) return false;
    if (!env->images) return caller_pc != 0;
    return in_text(env->images, &c->text_img, caller_pc) ||
           fl_unwind_os_is_sigreturn(env->mem, caller_pc) || jit_code(env, caller_pc);
}

/* One frame-pointer step: the record {caller fp, return address} lies at fp on x86_64 and arm64
 * alike, and the caller's sp is fp + 16. Trust checks: the record is aligned, at or above sp and
 * inside the stack (so the chain strictly increases). */
static int fp_record(const fl_walk_env_t *env, uint64_t sp, uint64_t fp, uint64_t *cfp,
                     uint64_t *cpc, uint64_t *csp) {
    uint64_t rec[2];
    if (fp < sp || (fp & 7) || !in_stack(env, fp) || fl_read(env->mem, fp, rec, sizeof rec))
        return FL_EBADDATA;
    *cfp = rec[0];
    *cpc = fl_unwind_strip_pac(rec[1]);
    *csp = fp + 16;
    return 0;
}

/* Whether the code before pc is a call instruction (every return-address check of the walk),
 * its bytes read in place where the walk's threads stand still (not `concurrent`) and the
 * memory map showed them readable, as the unwind tables are (a system call each through the
 * safe reader: one per frame the tables do not step, and one per candidate of the scan); else
 * through the walk's reader. */
static bool follows_call(const fl_walk_env_t *env, uint64_t pc) {
    const fl_map_t *m;
    fl_reader_t code;
    if (!env->concurrent && env->maps && pc >= 8 && (m = fl_maps_find(env->maps, pc - 8)) &&
        (m->perms & FL_MAP_R) && pc <= m->end) {
        fl_reader_init_range(&code, m->start, m->end, env->mem);
        return fl_unwind_arch_is_return_address(&code, pc);
    }
    return fl_unwind_arch_is_return_address(env->mem, pc);
}

/* The frame-pointer stepper for the full walk: a record that also yields a plausible caller. */
static int fp_step(const fl_walk_env_t *env, fl_regs_t *r) {
    uint64_t sp = fl_regs_sp(r), cfp, cpc, csp;
    if (fp_record(env, sp, fl_regs_fp(r), &cfp, &cpc, &csp) ||
        !plausible_step(env, sp, cpc, csp, false, true))
        return FL_EBADDATA;
    fl_unwind_arch_set(r, cpc, csp, cfp);
    return 0;
}

/* Frame 0 without unwind tables: the caller as the function's entry left it
 * (fl_unwind_arch_entry_step: arm64 lr, x86_64 the return address on top of the stack). Taken
 * when pc is outside any code (a call through a bad pointer: nothing ran yet), and also when that
 * caller follows a call instruction and the frame record at fp names another return address: a
 * leaf (which has no unwind entry of its own when it saves nothing: Darwin's compilers emit
 * encoding 0 for it), a prologue before the record is stored or an epilogue after it is
 * reloaded, where the record at fp is the caller's and would skip it. arm64: in a function that
 * has stored its record and then made a call, lr is a return address into the function itself,
 * which can add a duplicate frame, never lose one. x86_64: [sp] is a local variable in a function
 * that has pushed or reserved anything; it is taken only if it holds a return address, and such
 * a function has unwind tables wherever a compiler made it. */
static bool entry_step(const fl_walk_env_t *env, const fl_regs_t *r, uint64_t *cpc, uint64_t *csp) {
    uint64_t sp = fl_regs_sp(r), cfp, rpc, rsp;
    if (!env->images || fl_unwind_arch_entry_step(env->mem, r, cpc, csp) ||
        !plausible_step(env, sp, *cpc, *csp, true, true))
        return false;
    if (!is_code(env, fl_regs_pc(r), true)) return true;
    if (!follows_call(env, *cpc)) return false;
    return fp_record(env, sp, fl_regs_fp(r), &cfp, &rpc, &rsp) != 0 || rpc != *cpc;
}

/* A frame record that leads off the stack onto another one: a runtime that runs code on stacks
 * of its own and switches between them without a record of the switch that unwind tables
 * describe (Go: C code called through cgo, and runtime.systemstack's callees, run on the
 * thread's system stack; the frame pointer still names the goroutine's last record, on its
 * stack in Go's heap). Taken only where the tables gave no step and the record in the stack
 * did not either, when fp lies in another readable, writable, non-executable mapping and the
 * records there chain: FL_SWITCH_RECORDS in a row, each a return address that follows a call
 * into an image's text, the next record further up the same mapping (the last may be 0, the
 * outermost). The walk's bounds become that mapping. */
#define FL_SWITCH_RECORDS 3u
static bool stack_switch(fl_walk_env_t *bounds, const fl_regs_t *r, fl_regs_t *next) {
    const fl_walk_env_t *env = bounds;
    uint64_t fp = fl_regs_fp(r), at = fp, rec[2], cfp = 0, cpc = 0;
    if (!env->maps || !env->images || !fp || (fp & 7) || in_stack(env, fp)) return false;
    const fl_map_t *m = fl_maps_find(env->maps, fp);
    if (!m || (m->perms & (FL_MAP_R | FL_MAP_W | FL_MAP_X)) != (FL_MAP_R | FL_MAP_W)) return false;
    for (unsigned k = 0; k < FL_SWITCH_RECORDS; k++) {
        if (at < m->start || m->end - at < 16 || fl_read(env->mem, at, rec, sizeof rec)) return false;
        uint64_t ret = fl_unwind_strip_pac(rec[1]);
        if (!fl_images_is_text(env->images, ret) || !follows_call(env, ret)) return false;
        if (k == 0) cfp = rec[0], cpc = ret;
        if (rec[0] == 0 && k > 0) break;
        if (rec[0] <= at || rec[0] >= m->end || (rec[0] & 7)) return false;
        at = rec[0];
    }
    bounds->stack_lo = m->start;
    bounds->stack_hi = m->end;
    fl_unwind_arch_set(next, cpc, fp + 16, cfp);
    return true;
}

/* Last resort: the nearest stack slot above sp holding a return address (a value inside code
 * that follows a call instruction). Bounded to FL_SCAN_WORDS slots. */
#define FL_SCAN_WORDS 512u
static int scan_step(const fl_walk_env_t *env, fl_regs_t *r) {
    uint64_t sp = fl_regs_sp(r), words[32];
    unsigned base = 0, have = 0; /* words[] holds slots base .. base+have-1 */
    for (unsigned i = 0; i < FL_SCAN_WORDS; i++) {
        uint64_t slot = sp + 8u * i, v;
        if (!in_stack(env, slot)) return FL_ENOTFOUND;
        if (i >= base + have) { /* read ahead; word by word near the end of readable memory */
            base = i;
            have = FL_ARRAY_LEN(words);
            if (fl_read(env->mem, slot, words, sizeof words)) {
                have = 1;
                if (fl_read(env->mem, slot, words, 8)) return FL_ENOTFOUND;
            }
        }
        v = fl_unwind_strip_pac(words[i - base]);
        /* (not into code in no image: a JIT's heap holds many stale code addresses) */
        if (!plausible_step(env, sp, v, slot + 8, false, false) ||
            !follows_call(env, v))
            continue;
        /* A callee with a frame record pushed the caller's frame pointer right below the slot. */
        uint64_t fp = fl_regs_fp(r), saved;
        if (i > 0 && fl_read_u64(env->mem, slot - 8, &saved) == 0 && saved > slot && in_stack(env, saved))
            fp = saved;
        fl_unwind_arch_set(r, v, slot + 8, fp);
        return 0;
    }
    return FL_ENOTFOUND;
}

/* hi - lo, or 0 for an empty or inverted range: x lies in [lo, hi) iff x - lo < len(lo, hi). */
static inline uint64_t len(uint64_t lo, uint64_t hi) { return hi > lo ? hi - lo : 0; }

/* The fast loop's state (cfi_hits). */
typedef struct hits {
    uint64_t pc, sp, fp, adj; /* fp known; adj 0 for an exact pc (frame 0, or one a signal
                               * interrupted: looked up at pc itself, and alone may share its
                               * caller's sp), else 1 */
    fl_frame_t *o, *o_end;
    fl_dwarf_regs_t *m;       /* the cursor's registers */
    uint64_t id, img_lo, img_len; /* the image of pc */
    uint64_t text_lo, text_len;   /* the text of the last caller */
    uint64_t stack_lo, stack_len; /* where slots and the caller's sp may lie */
    uint64_t delta;           /* the stack in place: at address + delta (integers: the sum only
                               * is a pointer) */
    uint64_t at, npc;         /* HITS_IMAGE: the lookup address; HITS_TEXT: the caller's pc */
    uint64_t hits;            /* cache entries used */
    uint64_t filled;          /* the last lookup address fl_cfi_fill stored (0: none) */
} hits_t;
enum { HITS_STOP, HITS_END, HITS_IMAGE, HITS_TEXT };

/* The loop of cfi_hits: steps h while the next step is a cache hit in h's image whose caller
 * returns into h's text, with no call, so that its state stays in registers. Returns why it
 * stopped: HITS_STOP (the general loop decides; also when h->o reaches h->o_end), HITS_END (the
 * outermost frame), HITS_IMAGE (h->at is outside the image), HITS_TEXT (h->npc is outside the
 * text; the step is not taken). (A miss is a HITS_STOP: the loop stays as it was without
 * misses, its state in registers.) */
static __attribute__((noinline)) int hits_run(hits_t *h) {
    uint64_t pc = h->pc, sp = h->sp, fp = h->fp, adj = h->adj;
    fl_frame_t *o = h->o;
    int why = HITS_STOP;
    while (o < h->o_end) {
        uint64_t at = pc - adj, raw, npc, nfp;
        if (at - h->img_lo >= h->img_len) {
            h->at = at;
            why = HITS_IMAGE;
            break;
        }
        fl_cfi_plain_t q;
        uint16_t slots[FL_CFI_CACHE_RULES];
        if (!fl_cfi_cache_plain(fl_cfi_cache_slot(at, h->id), at, h->id, &q, slots)) break;
        if (!(q.kind & (FL_CFI_ENTRY_CFA_SP | FL_CFI_ENTRY_CFA_FP))) break;
        if (q.kind & FL_CFI_ENTRY_OUTERMOST) {
            h->hits++;
            why = HITS_END;
            break;
        }
        uint64_t base = q.kind & FL_CFI_ENTRY_CFA_SP ? sp : fp;
        uint64_t first = base + (uint64_t)q.lo_off, rel = first - h->stack_lo;
        if (rel > h->stack_len || h->stack_len - rel < q.reach) break;
        const char *p = (const char *)(uintptr_t)(first + h->delta); /* (slots lie in reach) */
        __builtin_memcpy(&raw, p + q.ra_at, 8);
        __builtin_memcpy(&nfp, p + q.fp_at, 8);
        uint64_t nsp = base + (uint64_t)q.cfa_off, mask = q.regmask;
        if (!raw) { /* libunwind's convention for the outermost frame */
            h->hits++;
            why = HITS_END;
            break;
        }
        npc = fl_unwind_strip_pac(raw);
        /* plausible_step: sp moves up (or stays, for an exact pc), inside the stack (as the
         * reach checked above), and the return address lies in an image's text */
        if (nsp - adj < sp) break;
        if (npc - h->text_lo >= h->text_len) {
            h->npc = npc;
            why = HITS_TEXT;
            break;
        }
        fl_dwarf_regs_t *m = h->m;
        m->valid |= mask | 1ull << q.ra_reg;
        for (unsigned i = 0; mask; i++, mask &= mask - 1) /* (one bit per slot) */
            __builtin_memcpy(&m->r[__builtin_ctzll(mask)], p + slots[i], 8);
        m->r[q.ra_reg] = raw; /* (arm64: lr, as fl_cfi_row_apply leaves it) */
        if (q.kind & FL_CFI_ENTRY_PLAIN_FP) fp = nfp;
        pc = npc, sp = nsp, adj = 1;
        o->pc = pc, o->sp = sp, o->method = FL_FRAME_CFI, o->flags = 0;
        o++;
    }
    h->hits += (uint64_t)(o - h->o);
    h->pc = pc, h->sp = sp, h->fp = fp, h->adj = adj, h->o = o;
    return why;
}

/* Cache hits on plain rows whose CFA is sp or fp, nearly every frame: the CFI step and the
 * plausibility checks of the general loop below in one tight loop (hits_run), its state in
 * locals as in fl_frames_walk_fp, every range check one subtraction and one comparison. The
 * loop takes only what it can decide alone: the slots and the caller's sp inside both the
 * stack's bounds and the reader's window (read in place), the caller's pc in the text of the
 * last image that held one or found in the image list. Anything else (a miss, a row of another
 * form, a check that fails) it leaves to the general loop, which takes that step with the same
 * cursor (the fast loop writes the cursor's registers only for the steps it takes). Returns the
 * frame count; *end set at the outermost frame. */
static unsigned cfi_hits(const fl_walk_env_t *env, fl_cfi_cursor_t *c, fl_regs_t *r,
                         fl_frame_t *out, unsigned n, unsigned max, bool *end) {
    const fl_reader_t *w = env->mem;
    fl_dwarf_regs_t *m = &c->regs;
    /* (a frame whose fp is unknown is the general loop's: rare, and one value fewer for the
     * loop to hold) */
    if (!c->valid || !env->images || c->mode != FL_CFI_MODE_CACHED || env->frame_regs ||
        !w->base || !(m->valid >> FL_DWARF_FP & 1))
        return n;
    bool bounded = env->stack_lo || env->stack_hi;
    uint64_t lo = w->origin, hi = w->origin + w->size;
    if (hi < lo) hi = UINT64_MAX;
    if (bounded && env->stack_lo > lo) lo = env->stack_lo;
    if (bounded && env->stack_hi < hi) hi = env->stack_hi;
    /* No image held a caller yet: the one frame 0 is in will mostly hold the next (a search
     * of the image list saved per walk). */
    const fl_image_t *img = c->img, *text = c->text_img ? c->text_img : c->img;
    /* A miss at an exact pc (frame 0, a signal frame) is the general loop's at once: the loop
     * fills misses only at return addresses, and pays for no set-up here (a hint: the loop
     * checks the entry as it should). */
    uint64_t at = m->r[FL_DWARF_PC];
    if (c->exact_pc && img && at - img->start < len(img->start, img->end) &&
        __atomic_load_n(&fl_cfi_cache_slot(at, c->img_id)->key, __ATOMIC_RELAXED) != at)
        return n;
    hits_t h = {.pc = m->r[FL_DWARF_PC], .sp = m->r[FL_DWARF_SP], .fp = m->r[FL_DWARF_FP],
                .adj = !c->exact_pc, .o = out + n, .o_end = out + max, .m = m, .id = c->img_id,
                .img_lo = img ? img->start : 0, .img_len = img ? len(img->start, img->end) : 0,
                .text_lo = text ? text->text_start : 0,
                .text_len = text ? len(text->text_start, text->text_end) : 0,
                .stack_lo = lo, .stack_len = len(lo, hi),
                .delta = (uint64_t)(uintptr_t)w->base - w->origin};
    const fl_image_t *prev = NULL; /* the text before (a call into a library mostly returns) */
    uint64_t fills = 0;
    for (;;) {
        int why = hits_run(&h);
        const fl_image_t *t = prev;
        uint64_t ret_at = h.pc - 1; /* (h.adj: a return address) */
        if (why == HITS_STOP && h.adj && h.o < h.o_end && ret_at != h.filled &&
            __atomic_load_n(&fl_cfi_cache_slot(ret_at, h.id)->key, __ATOMIC_RELAXED) != ret_at) {
            /* A miss at a return address: computed and stored, then the loop again (the
             * entry is a hit), unless the row is of another form (the general loop's) */
            if (fl_cfi_fill(c, ret_at)) break;
            h.filled = ret_at;
            fills++;
            continue;
        }
        if (why == HITS_IMAGE) { /* another image: its identity and tables */
            c->text_img = text;
            if (!(img = fl_cfi_cursor_image(c, h.at))) break;
            h.img_lo = img->start, h.img_len = len(img->start, img->end), h.id = c->img_id;
            if (!text) text = img; /* (the comment above) */
        } else if (why == HITS_TEXT &&
                   ((t && h.npc - t->text_start < len(t->text_start, t->text_end)) ||
                    (t = text, in_text(env->images, &t, h.npc)))) {
            prev = text, text = t; /* (then the step again) */
        } else {
            *end = why == HITS_END;
            break;
        }
        h.text_lo = text->text_start, h.text_len = len(text->text_start, text->text_end);
    }
    c->text_img = text;
    unsigned found = (unsigned)(h.o - out) - n;
    if (found) {
        m->r[FL_DWARF_PC] = h.pc;
        m->r[FL_DWARF_SP] = h.sp;
        m->r[FL_DWARF_FP] = h.fp;
        c->exact_pc = false;
        fl_unwind_arch_set(r, h.pc, h.sp, h.fp);
    }
    /* (a filled entry's hit is counted as its miss) */
    c->stats.hits += h.hits - (fills < h.hits ? fills : h.hits);
    c->stats.steps += found;
    return n + found;
}

/* env->frame_regs' entry for the frame just found: the callee-saved registers of the cursor
 * after a table step (the others a call does not preserve: the cursor carries them only as the
 * tables' default rule), and pc, sp and fp (all that the other steppers know). */
static void frame_regs(const fl_cfi_cursor_t *c, const fl_regs_t *r, uint32_t method,
                       fl_dwarf_regs_t *o) {
    if (method == FL_FRAME_CFI && c->valid) {
        *o = c->regs;
        o->valid &= FL_DWARF_CALLEE_SAVED;
    } else {
        fl_memset(o, 0, sizeof *o);
        o->valid = fl_regs_fp(r) ? 1ull << FL_DWARF_FP : 0;
    }
    o->r[FL_DWARF_PC] = fl_regs_pc(r); /* (without a pointer signature, as the frame's pc) */
    o->r[FL_DWARF_SP] = fl_regs_sp(r);
    o->r[FL_DWARF_FP] = fl_regs_fp(r);
    o->valid |= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP;
}

void fl_regs_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp) {
    fl_unwind_arch_set(r, pc, sp, fp);
}

void fl_walk_env_stack(fl_walk_env_t *env, const fl_map_t *sm, uint64_t sp, fl_reader_t *stack,
                       bool direct) {
    if (!sm) return;
    env->stack_lo = sm->start < sp ? sm->start : sp;
    env->stack_hi = sm->end;
    if (direct && (sm->perms & FL_MAP_R)) {
        fl_reader_init_range(stack, sm->start, sm->end, env->mem);
        env->mem = stack;
    }
}

int fl_frames_walk(const fl_walk_env_t *env_in, const fl_regs_t *start, fl_frame_t *out,
                   unsigned max, fl_walk_result_t *res) {
    if (!env_in->use_cfi) return fl_frames_walk_fp(env_in, start, out, max, res);
    fl_walk_env_t bounds = *env_in; /* its stack bounds move when a signal frame changes stacks */
    const fl_walk_env_t *env = &bounds;
    fl_regs_t r = *start;
    fl_cfi_cursor_t cfi;
    res->count = 0;
    res->truncated = false;
    res->omitted = res->omitted_at = 0;
    res->stop_reason = "end of stack";
    if (!max) {
        res->truncated = true;
        return 0;
    }
    /* Past max frames the walk goes on to the stack's end, keeping out[0..head) and using
     * out[head..max) as a window on the outermost frames: each time it fills, its older half is
     * dropped (what started a runaway recursion is at the bottom of the stack). */
    unsigned head = max >= 8 ? max - max / 4 : max, steps = 0;
    fl_cfi_begin(&cfi, env);
    fl_cfi_cursor_seed(&cfi, &r); /* so that the fast loop can start at frame 0 */
    if (env->pc_sp_only) cfi.regs.valid &= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP;
    cfi.valid = true;
    out[0] = (fl_frame_t){fl_regs_pc(&r), fl_regs_sp(&r), FL_FRAME_CONTEXT, 0};
    if (env->frame_regs) env->frame_regs[0] = cfi.regs;
    res->count = 1;
    /* Bounded by FL_WALK_STEPS_MAX; every accepted step after the first strictly raises sp: no
     * cycle either. */
    for (;;) {
        if (res->count >= max) {
            unsigned keep = (max - head) / 2;
            if (head == max || steps >= FL_WALK_STEPS_MAX) break;
            /* (apart: max - keep >= head + keep) */
            fl_memcpy(out + head, out + max - keep, keep * sizeof *out);
            if (env->frame_regs)
                fl_memcpy(env->frame_regs + head, env->frame_regs + max - keep,
                           keep * sizeof *env->frame_regs);
            res->omitted += max - head - keep;
            res->omitted_at = head;
            res->count = head + keep;
        }
        unsigned before = res->count;
        bool end = false;
        res->count = cfi_hits(env, &cfi, &r, out, res->count, max, &end);
        steps += res->count - before;
        if (end) {
            res->stop_reason = "end of stack (outermost frame)";
            break;
        }
        if (res->count >= max) continue;
        uint64_t sp = fl_regs_sp(&r), cpc, csp, cfp;
        uint32_t method = FL_FRAME_UNKNOWN;
        /* The CFI stepper keeps the registers it restores itself; r follows in pc, sp and fp,
         * which is all the other steppers use. */
        /* Frame 0 and a frame a signal interrupted have exact pcs: an arm64 leaf there has not
         * moved sp, and its caller shares it. */
        bool exact = cfi.valid ? cfi.exact_pc : res->count == 1;
        int cfi_ret = fl_cfi_step(&cfi, &r, &cpc, &csp, &cfp);
        uint64_t below = sp; /* the caller's sp must not be below this */
        if (cfi_ret == 1 && cfi.exact_pc && env->maps && !sp_in_stack(env, csp)) {
            /* A signal frame whose interrupted code ran on another stack (the handler was on
             * an alternate one): that stack's mapping bounds the walk from here; sp may go
             * either way across the switch. */
            const fl_map_t *m = fl_maps_stack(env->maps, csp);
            if (m && (m->perms & FL_MAP_R)) {
                bounds.stack_lo = m->start < csp ? m->start : csp;
                bounds.stack_hi = m->end;
                below = 0;
            }
        }
        if (cfi_ret == 1 && plausible_cfi(env, &cfi, below, cpc, csp, exact || !below)) {
            fl_unwind_arch_set(&r, cpc, csp, cfp);
            method = FL_FRAME_CFI;
            /* The step crossed a signal frame: the frame it left is the return trampoline. */
            if (cfi.exact_pc) out[res->count - 1].flags |= FL_FRAME_TRAMPOLINE;
        } else if (cfi_ret == 0) {
            res->stop_reason = "end of stack (outermost frame)";
            break;
        } else {
            fl_regs_t next = r, full;
            const fl_regs_t *entry = &r;
            /* Frame 0; a frame a signal interrupted, whose pc is as exact as frame 0's (it may
             * lie in a leaf that has pushed nothing: Go's runtime.raise under its handler's
             * dieFromSignal; its registers are those the signal frame restored, lr with them);
             * or a frame whose pc follows no call: a runtime turned a fault into a call of its
             * own, made to look as if the faulting instruction had called it (Go's
             * runtime.sigpanic), so the pc is exact, maybe at the function's entry, and the
             * frame record at fp may be its caller's (Go's leaves push none). */
            bool interrupted = res->count > 2 && (out[res->count - 2].flags & FL_FRAME_TRAMPOLINE);
            bool injected = res->count > 1 && !interrupted && fl_unwind_arch_entry_on_stack &&
                            is_code(env, fl_regs_pc(&r), false) && !follows_call(env, fl_regs_pc(&r));
            if (interrupted && cfi.valid) {
                fl_cfi_cursor_regs(&cfi, &r, &full);
                entry = &full;
            }
            cfi.valid = false;
            if ((res->count == 1 || interrupted || injected) && entry_step(env, entry, &cpc, &csp)) {
                fl_unwind_arch_set(&next, cpc, csp, fl_regs_fp(&r));
                method = csp == sp ? FL_FRAME_LR : FL_FRAME_SCAN;
            } else if (fp_step(env, &next) == 0 || stack_switch(&bounds, &r, (next = r, &next))) {
                method = FL_FRAME_FP;
            } else if (scan_step(env, (next = r, &next)) == 0) {
                method = FL_FRAME_SCAN;
            }
            if (method != FL_FRAME_UNKNOWN) r = next;
        }
        if (method == FL_FRAME_UNKNOWN) {
            /* A malformed unwind table is named: it is why this walk ended early. */
            res->stop_reason = cfi.error                ? cfi.error
                               : fl_regs_fp(&r) == 0 ? "end of stack"
                                                      : "no unwind information and no trusted frame pointer";
            break;
        }
        cfi.error = 0;
        if (env->frame_regs) frame_regs(&cfi, &r, method, &env->frame_regs[res->count]);
        out[res->count++] = (fl_frame_t){fl_regs_pc(&r), fl_regs_sp(&r), method, 0};
        steps++;
    }
    if (res->count == max) {
        res->truncated = true;
        res->stop_reason = steps >= FL_WALK_STEPS_MAX ? "step limit reached" : "frame limit reached";
    }
    res->truncated |= res->omitted > 0;
    fl_cfi_end(&cfi);
    return 0;
}

/* The frame-pointer-only walk, kept to a tight loop: the same checks as fp_record and
 * plausible_step, with everything the loop reads held in locals (stores to out[] could alias env and
 * the reader, which would reload them every frame), the reader's direct window tested inline,
 * and the last image whose text held a return address remembered (consecutive frames mostly
 * share an image). */
int fl_frames_walk_fp(const fl_walk_env_t *env, const fl_regs_t *regs, fl_frame_t *out,
                      unsigned max, fl_walk_result_t *res) {
    uint64_t pc = fl_regs_pc(regs), sp = fl_regs_sp(regs), fp = fl_regs_fp(regs);
    uint64_t text_lo = 1, text_hi = 0; /* empty */
    const fl_reader_t mem = *env->mem; /* a local copy: out[] cannot alias it */
    const fl_image_list_t *images = env->images;
    /* Records must lie wholly inside [lo, hi): fp in [lo, hi - 16]. Unknown stack: no bound. */
    bool bounded = env->stack_lo || env->stack_hi;
    uint64_t lo = bounded ? env->stack_lo : 0, hi = bounded ? env->stack_hi : UINT64_MAX;
    unsigned n = 0;
    res->truncated = max == 0;
    res->stop_reason = "frame pointer chain ends or cannot be trusted";
    if (!max) {
        res->count = 0;
        return 0;
    }
    out[n++] = (fl_frame_t){pc, sp, FL_FRAME_CONTEXT, 0};
    while (n < max) {
        uint64_t cfp, cpc;
        /* fp >= sp and fp + 16 <= hi: the caller's sp (fp + 16) is above sp and in the stack. */
        if (fp < sp || (fp & 7) || fp < lo || hi < 16 || fp > hi - 16) break;
        /* Two 8-byte loads, not a copy into an array: the next fp is on the loop's critical path,
         * and a round trip through memory would add a store-to-load forwarding to every step. */
        const char *direct = fl_reader_direct(&mem, fp, 16);
        if (direct) {
            __builtin_memcpy(&cfp, direct, 8);
            __builtin_memcpy(&cpc, direct + 8, 8);
        } else {
            uint64_t rec[2];
            if (mem.read(&mem, fp, rec, sizeof rec)) break;
            cfp = rec[0], cpc = rec[1];
        }
        /* A value inside the remembered text range carries no signature (signatures live in the
         * high bits), so the pointer-authentication strip is needed only outside it. */
        if (cpc < text_lo || cpc >= text_hi) {
            cpc = fl_unwind_strip_pac(cpc);
            const fl_image_t *img = images ? fl_images_find(images, cpc) : NULL;
            if (!img || cpc < img->text_start || cpc >= img->text_end) {
                if (images || !cpc) break; /* (code in no image: fl_frames_walk's only) */
            } else {
                text_lo = img->text_start;
                text_hi = img->text_end;
            }
        }
        pc = cpc, sp = fp + 16, fp = cfp;
        out[n++] = (fl_frame_t){pc, sp, FL_FRAME_FP, 0};
    }
    res->count = n;
    if (fp == 0 && n < max) res->stop_reason = "end of stack";
    if (n == max) {
        res->truncated = true;
        res->stop_reason = "frame limit reached";
    }
    return 0;
}
