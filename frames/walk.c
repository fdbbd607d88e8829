/* SPDX-License-Identifier: MIT */
/* The stack walker: an ordered list of steppers (CFI, frame pointer, function entry), each
 * producing a caller that must pass the same plausibility checks. */
/* Order, per step: the unwind tables (CFI), then (frame 0) the caller as the function's entry left
 * it (the return address on top of the stack, or arm64's lr), then the frame-pointer record, then
 * a bounded scan for a return address. */

#include "frames/unwind_internal.h"

static bool in_stack(const fl_walk_env_t *env, uint64_t addr) {
    if (!env->stack_lo && !env->stack_hi) return true; /* unknown: the reads still guard us */
    return addr >= env->stack_lo && addr < env->stack_hi;
}

/* A caller is plausible when its stack pointer moved up (stacks grow down), stays in the stack,
 * and it returns into executable code of a loaded image. Frame 0 alone may share its caller's sp:
 * on arm64 a function that has not stored its frame record (a leaf) returns through lr, and has
 * pushed nothing. */
static bool plausible_step(const fl_walk_env_t *env, uint64_t sp, uint64_t caller_pc,
                           uint64_t caller_sp, bool first) {
    if (caller_sp < sp || (caller_sp == sp && !first) || !in_stack(env, caller_sp - 1)) return false;
    return env->images ? fl_images_is_text(env->images, caller_pc) : caller_pc != 0;
}

static bool plausible(const fl_walk_env_t *env, uint64_t sp, uint64_t caller_pc, uint64_t caller_sp) {
    return plausible_step(env, sp, caller_pc, caller_sp, false);
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

/* The frame-pointer stepper for the full walk: a record that also yields a plausible caller. */
static int fp_step(const fl_walk_env_t *env, fl_regs_t *r) {
    uint64_t sp = fl_regs_sp(r), cfp, cpc, csp;
    if (fp_record(env, sp, fl_regs_fp(r), &cfp, &cpc, &csp) || !plausible(env, sp, cpc, csp))
        return FL_EBADDATA;
    fl_unwind_arch_set(r, cpc, csp, cfp);
    return 0;
}

/* Frame 0 without CFI: the caller as the function's entry left it (fl_unwind_arch_entry_step).
 * Taken when pc is outside any code (a call through a bad pointer: nothing ran yet), and, where
 * the return address is in a register (arm64 lr: the caller's sp is sp), also when the frame
 * record at fp names another return address: a leaf, a prologue before the record is stored or an
 * epilogue after it is reloaded, where the record at fp is the caller's and would skip it. In a
 * function that has stored its record and then made a call, lr is a return address into the
 * function itself: that can add a duplicate frame, never lose one. */
static bool entry_step(const fl_walk_env_t *env, const fl_regs_t *r, uint64_t *cpc, uint64_t *csp) {
    uint64_t sp = fl_regs_sp(r), cfp, rpc, rsp;
    if (!env->images || fl_unwind_arch_entry_step(env->mem, r, cpc, csp) ||
        !plausible_step(env, sp, *cpc, *csp, true))
        return false;
    if (!fl_images_is_text(env->images, fl_regs_pc(r))) return true;
    if (*csp != sp || !fl_unwind_arch_is_return_address(env->mem, *cpc)) return false;
    return fp_record(env, sp, fl_regs_fp(r), &cfp, &rpc, &rsp) != 0 || rpc != *cpc;
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
        if (!plausible(env, sp, v, slot + 8) || !fl_unwind_arch_is_return_address(env->mem, v))
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

int fl_frames_walk(const fl_walk_env_t *env, const fl_regs_t *start, fl_frame_t *out,
                   unsigned max, fl_walk_result_t *res) {
    if (!env->use_cfi) return fl_frames_walk_fp(env, start, out, max, res);
    fl_regs_t r = *start;
    fl_cfi_cursor_t cfi;
    res->count = 0;
    res->truncated = false;
    res->stop_reason = "end of stack";
    if (!max) {
        res->truncated = true;
        return 0;
    }
    fl_cfi_begin(&cfi, env);
    out[0] = (fl_frame_t){fl_regs_pc(&r), fl_regs_sp(&r), FL_FRAME_CONTEXT};
    res->count = 1;
    /* Bounded by max; every accepted step after the first strictly raises sp: no cycle either. */
    while (res->count < max) {
        uint64_t sp = fl_regs_sp(&r);
        uint32_t method = FL_FRAME_UNKNOWN;
        fl_regs_t next = r;
        int cfi_ret = -1;
        if ((cfi_ret = fl_cfi_step(&cfi, &next)) == 1 &&
                   plausible_step(env, sp, fl_regs_pc(&next), fl_regs_sp(&next), res->count == 1)) {
            method = FL_FRAME_CFI;
        } else if (cfi_ret == 0) {
            res->stop_reason = "end of stack (outermost frame)";
            break;
        } else {
            cfi.valid = false;
            next = r;
            uint64_t cpc, csp;
            if (res->count == 1 && entry_step(env, &r, &cpc, &csp)) {
                fl_unwind_arch_set(&next, cpc, csp, fl_regs_fp(&r));
                method = csp == sp ? FL_FRAME_LR : FL_FRAME_SCAN;
            } else if (fp_step(env, &next) == 0) {
                method = FL_FRAME_FP;
            } else if (scan_step(env, (next = r, &next)) == 0) {
                method = FL_FRAME_SCAN;
            }
        }
        if (method == FL_FRAME_UNKNOWN) {
            res->stop_reason = fl_regs_fp(&r) == 0 ? "end of stack"
                                                   : "no unwind information and no trusted frame pointer";
            break;
        }
        r = next;
        out[res->count++] = (fl_frame_t){fl_regs_pc(&r), fl_regs_sp(&r), method};
    }
    if (res->count == max) {
        res->truncated = true;
        res->stop_reason = "frame limit reached";
    }
    fl_cfi_end(&cfi);
    return 0;
}

/* The frame-pointer-only walk, kept to a tight loop: the same checks as fp_record and
 * plausible(), with everything the loop reads held in locals (stores to out[] could alias env and
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
    out[n++] = (fl_frame_t){pc, sp, FL_FRAME_CONTEXT};
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
                if (images || !cpc) break;
            } else {
                text_lo = img->text_start;
                text_hi = img->text_end;
            }
        }
        pc = cpc, sp = fp + 16, fp = cfp;
        out[n++] = (fl_frame_t){pc, sp, FL_FRAME_FP};
    }
    res->count = n;
    if (fp == 0 && n < max) res->stop_reason = "end of stack";
    if (n == max) {
        res->truncated = true;
        res->stop_reason = "frame limit reached";
    }
    return 0;
}
