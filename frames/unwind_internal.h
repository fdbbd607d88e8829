/* SPDX-License-Identifier: MIT */
/* Internal to frames/: the per-architecture step hooks and the unwind-table stepper's interface. */
#ifndef FAULTLINE_FRAMES_UNWIND_INTERNAL_H
#define FAULTLINE_FRAMES_UNWIND_INTERNAL_H

#include "base/config.h"
#include "frames/frames.h"

/* ---- Architecture hooks (arch_<arch>.c, the same on every OS; all AS-SAFE) ---- */

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp);
/* The caller as a function's first instruction sees it: x86_64 the return address on top of the
 * stack (caller sp = sp + 8); arm64 lr (caller sp = sp), still valid until the frame record is
 * stored. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp);

/* True when the bytes just before pc encode a call instruction. */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc);

/* A code address as stored in memory or a register (a return address, a saved lr) without the
 * pointer-authentication bits arm64e and pac-ret code sign it with; other architectures return it
 * unchanged. Inline: the walkers call it for every frame. AS-SAFE.
 * arm64: XPACLRI (HINT #7) replaces the PAC field of x30 with the sign extension the kernel's
 * address configuration gives a plain pointer. It is a hint: on cores without pointer
 * authentication it is a no-op, and so is it on an address that carries no signature. Unlike a
 * fixed mask, it is right whatever the virtual-address size (macOS, iOS and Linux differ). */
static inline uint64_t fl_unwind_strip_pac(uint64_t addr) {
#if defined(FL_ARCH_ARM64)
    register uint64_t x30 __asm__("x30") = addr;
    __asm__("hint #7" : "+r"(x30));
    return x30;
#else
    return addr;
#endif
}

/* Straight-line code at an exact pc (frame 0, or a frame a signal interrupted), where compact
 * unwind's rules, exact only at call sites, are wrong: in a prologue before the frame is set up
 * and in an epilogue after it is torn down (a snapshot stops threads at any instruction).
 * Both emulate the few instructions that occur there and nothing else (pushes and pops, stp/ldp
 * on sp, sp adjustments, setting or restoring the frame pointer, hints, ret), so whenever they
 * answer, the answer is what the CPU computes.
 * _epilogue runs forward from pc: if only such instructions lead to a return, regs become the
 * caller's (pc the return address, sp and the reloaded registers as the return leaves them).
 * _prologue runs from the function's first instruction at `start` up to pc: if only prologue
 * instructions lie between, every register but sp (and the frame pointer, once it is set) still
 * holds the caller's value, and regs become the caller's. 1 stepped, 0 not such code (regs
 * unchanged). Memory through `code` and `stack`; bounded to a few dozen instructions. AS-SAFE. */
int fl_unwind_arch_epilogue(const fl_reader_t *code, const fl_reader_t *stack, fl_dwarf_regs_t *regs);
int fl_unwind_arch_prologue(const fl_reader_t *code, uint64_t start, const fl_reader_t *stack,
                            fl_dwarf_regs_t *regs);

/* DWARF numbering of this architecture's registers: the fl_regs_t index of each DWARF register,
 * -1 where the register set has none (arch_<arch>.c); the DWARF numbers of pc, sp and fp, and
 * the build's FL_REGS_ARCH_* (constants: the table stepper's hot path). */
extern const signed char fl_unwind_arch_dwarf_map[FL_DWARF_REGS];
#if defined(FL_ARCH_X86_64)
enum { FL_DWARF_PC = 16, FL_DWARF_SP = 7, FL_DWARF_FP = 6, FL_ARCH = FL_REGS_ARCH_X86_64 };
#define FL_DWARF_CALLEE_SAVED (1ull << 3 | 1ull << 6 | 0xfull << 12) /* rbx, rbp, r12..r15 */
#else
enum { FL_DWARF_PC = 32, FL_DWARF_SP = 31, FL_DWARF_FP = 29, FL_ARCH = FL_REGS_ARCH_ARM64 };
#define FL_DWARF_CALLEE_SAVED (0x7ffull << 19) /* x19..x29 (the ABIs' callee-saved registers) */
#endif

/* The operating system's signal return trampoline (its code at the pc of regs, read through mem)
 * when no unwind table covers it: steps regs to the interrupted context saved in the signal
 * frame (1; that pc is exact, not a return address), or FL_ENOTFOUND. Linux: arm64's vDSO
 * __kernel_rt_sigreturn has no CFI since Linux 5.8; x86_64 restorers without CFI (glibc's has
 * one). (regs_<platform>_<arch>.c; AS-SAFE.) */
int fl_unwind_os_sigreturn(const fl_reader_t *mem, fl_dwarf_regs_t *regs);
/* Whether the code at pc is that trampoline. A return address into it is plausible wherever it
 * lies: qemu-user's is outside every image (Darwin: false; its _sigtramp is in an image). */
bool fl_unwind_os_is_sigreturn(const fl_reader_t *mem, uint64_t pc);

/* ---- The unwind-table stepper: one per platform, chosen by CMake ----
 * Linux: DWARF CFI through faultline's evaluator and row cache (cfi_step.c, cfi_cache.c), LLVM
 * libunwind for the steps the evaluator declines (cfi_linux.c). Darwin: compact unwind
 * (__TEXT,__unwind_info) through macho/, its DWARF entries through the same evaluator
 * (cfi_darwin.c). Both report their frames as FL_FRAME_CFI. A walk owns one cursor on its
 * stack. */

#define FL_CFI_SLOW_READS_MAX 4096u /* per walk (~1 us each through the safe reader here) */

/* A reader that answers in place what its fallback would (the same window), and passes at most
 * `left` other reads on to it (FL_ERANGE after that). */
typedef struct fl_cfi_budget_reader {
    fl_reader_t r; /* first: the reader's callback finds the count from it */
    unsigned left;
} fl_cfi_budget_reader_t;
#define FL_CFI_STATE_BYTES 3072u /* the platform stepper's own state; each checks it fits */

typedef struct fl_cfi_cursor {
    const fl_walk_env_t *env;
    bool valid;    /* regs continue from the last table step (cleared by the walker when another
                    * stepper moved the registers) */
    bool first;    /* no step yet: regs will be seeded from the interrupted context, all known */
    bool exact_pc; /* the next lookup is at pc itself (frame 0, or after a signal frame), not at
                    * pc - 1 (a return address, whose call may end its function) */
    bool faulted;  /* a guarded LLVM libunwind step faulted and was recovered */
    int mode;      /* FL_CFI_MODE_* when the walk began */
    int tid;       /* the walking thread, for the fault guard (0 until needed) */
    const char *error; /* why the last table step failed on a malformed table, or NULL */
    fl_dwarf_regs_t regs; /* the frame the next table step starts from */
    /* The image of the last table step, its identity for the row cache, and a reader of its
     * unwind tables (direct inside the window the memory map shows readable). */
    const fl_image_t *img;
    uint64_t img_id;
    const fl_reader_t *tables; /* window (in place) or straight to slow */
    fl_reader_t window;
    /* Reads of tables outside the in-place window go through here: a system call each with the
     * safe reader, so a walk gets FL_CFI_SLOW_READS_MAX of them (a corrupt search table would
     * otherwise make every step scan a whole .eh_frame that way, for seconds). */
    fl_cfi_budget_reader_t slow;
    fl_cfi_memo_t memo; /* the headers the last miss parsed */
    const fl_image_t *text_img; /* the image whose text held the last caller (a memo) */
    fl_cfi_stats_t stats; /* this walk's counts, added to the totals by fl_cfi_end */
    _Alignas(16) unsigned char state[FL_CFI_STATE_BYTES];
} fl_cfi_cursor_t;

/* Starts a walk over env (images, memory): c is reset to an exact frame-0 context. AS-SAFE. */
void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env);

/* Steps the current frame to its caller with the unwind tables and returns the caller's pc
 * (without a pointer signature), sp and fp. r is the current frame: the cursor reads all of it
 * for the first step, only pc, sp and fp when c->valid is false (another stepper moved it), and
 * nothing while c->valid (it keeps the registers it restores itself). 1 stepped (the walker
 * clears c->valid if it rejects the caller: the cursor then starts again from r), 0 the tables
 * mark the outermost frame, <0 no unwind information, an error, or a recovered fault. AS-SAFE. */
int fl_cfi_step(fl_cfi_cursor_t *c, const fl_regs_t *r, uint64_t *pc, uint64_t *sp, uint64_t *fp);

/* The step of fl_cfi_step in a Mach-O image (img->cputype != 0): compact unwind, its DWARF
 * entries through the evaluator, __eh_frame alone when there is no __unwind_info (cfi_macho.c,
 * shared: Darwin walks nothing else, Linux walks Mach-O images in `faultline unwind`). c->regs
 * hold the current frame (seeded). Returns as fl_cfi_step. AS-SAFE. */
int fl_cfi_macho_step(fl_cfi_cursor_t *c, const fl_image_t *img,
                      uint64_t *pc, uint64_t *sp, uint64_t *fp);
/* A compact-unwind rule (not NONE or DWARF) of the function starting at func_start (STACK_IND
 * reads its stack size from that code through `code`) as the CFI row that describes the same
 * step: CFA = fp + 16 or sp + the stack size, the return address and every saved register at
 * fixed offsets from it, arm64's frameless return address in lr. 0, FL_ENOSYS (NONE, DWARF),
 * FL_EBADDATA, FL_EFAULT. AS-SAFE. */
struct fl_macho_unwind_rule;
int fl_cfi_macho_row(const struct fl_macho_unwind_rule *rule, const fl_reader_t *code,
                     uint64_t func_start, fl_cfi_row_t *row);

/* The same rule as the row cache's plain entry (FL_CFI_ENTRY_PLAIN: what fl_cfi_cache_put makes
 * of that row, built directly, for the walker to apply and store on a miss), but for its seq,
 * key and image. FL_ENOSYS also for rules whose row is not plain (arm64 FRAMELESS: the return
 * address stays in lr). AS-SAFE. */
struct fl_cfi_entry;
int fl_cfi_macho_entry(const struct fl_macho_unwind_rule *rule, const fl_reader_t *code,
                       uint64_t func_start, struct fl_cfi_entry *e);

/* Ends the walk begun by fl_cfi_begin (undoes what it set up). AS-SAFE. */
void fl_cfi_end(fl_cfi_cursor_t *c);

/* ---- Shared by the platform steppers (cfi_step.c; all AS-SAFE) ---- */

void fl_cfi_cursor_init(fl_cfi_cursor_t *c, const fl_walk_env_t *env);
void fl_cfi_cursor_finish(fl_cfi_cursor_t *c); /* adds c->stats to the totals */
/* Loads c->regs from r when they do not continue from a table step: every register of the
 * interrupted context for the first step, else only pc, sp and fp (what a frame-pointer or scan
 * step knows). Sets exact_pc for the first step. */
void fl_cfi_cursor_seed(fl_cfi_cursor_t *c, const fl_regs_t *r);
/* The current frame as a register set: c->regs, with pc, sp and fp from r (for LLVM libunwind). */
void fl_cfi_cursor_regs(const fl_cfi_cursor_t *c, const fl_regs_t *r, fl_regs_t *out);
/* Makes the cursor's registers the caller's in register-set form: LLVM libunwind's result (pc,
 * sp and what it restores; the rest is carried). */
void fl_cfi_cursor_from_regs(fl_cfi_cursor_t *c, const fl_regs_t *out);
/* The cursor's pc (without a pointer signature), sp and fp, as fl_cfi_step returns them; 1. */
int fl_cfi_cursor_caller(fl_cfi_cursor_t *c, uint64_t *pc, uint64_t *sp, uint64_t *fp);
/* The image holding addr (the last one, or the one whose text held the last caller, or found),
 * with c->img_id and c->tables set. */
const fl_image_t *fl_cfi_cursor_image(fl_cfi_cursor_t *c, uint64_t addr);
/* One DWARF step of c->regs at lookup address `at` (pc, or pc - 1 for a return address) in img:
 * the row from the cache or computed from the FDE at fde_addr (compact unwind names it) or, when
 * fde_addr is 0, the one img's tables give for `at`. 1 stepped (exact_pc set from the row),
 * 0 outermost frame, FL_ENOTFOUND no FDE, FL_ENOSYS declined, other errors (c->error says
 * why). */
int fl_cfi_dwarf_step(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at, uint64_t fde_addr);
/* The same with the row, on a cache miss, from `source` (returns 0 with *row set, or an error):
 * compact unwind's rules are cached and applied as the rows they translate to. */
typedef int (*fl_cfi_row_source_t)(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                                   void *ctx, fl_cfi_row_t *row);
int fl_cfi_table_step(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                      fl_cfi_row_source_t source, void *ctx);

/* ---- The row cache (cfi_cache.c) ----
 * Rows keyed by lookup address and image identity, in memory reserved in the library's
 * zero-filled data; shared by every walk and thread, lock-free: a sequence count per entry, even
 * when stable, odd while written. A writer takes an entry by moving its count from even to odd
 * with a compare-and-swap and skips the entry if that fails; a reader uses the entry and keeps
 * the result only if the count was even and unchanged. No one waits: a walk interrupted by a
 * crash handler's walk on the same thread cannot deadlock it (a writer that never finishes
 * leaves that one entry unusable). 4,096 direct-mapped entries of 200 bytes (800 KiB, pages
 * supplied by the kernel as walks first touch them): the threads of one process share most
 * return addresses, so an all-thread capture needs few distinct rows (framehop's 509 entries hit
 * ~80 % on Firefox). */
#define FL_CFI_CACHE_BITS 12u
#define FL_CFI_CACHE_RULES 16u /* rows with more (signal trampolines) are not cached */
/* The form nearly every row of compiled code takes: the CFA is a register plus an offset, and
 * every rule (the return address's among them) says "saved at CFA + n". Such a row is applied
 * from its entry directly, with no copy and no interpretation; the return address's slot and fp's
 * are kept apart from the other rules, so that the walker can hold pc, sp and fp in registers. */
#define FL_CFI_ENTRY_PLAIN 0x80u
#define FL_CFI_ENTRY_PLAIN_FP 0x40u /* ... and fp is restored, from CFA + fp_off */
#define FL_CFI_ENTRY_OUTERMOST 0x20u /* ... or the return address is undefined and nothing else
                                      * has a rule: the outermost frame (a thread's entry) */

typedef struct fl_cfi_entry {
    uint32_t seq;
    int32_t ra_off, fp_off; /* PLAIN: the return address's slot, fp's, from the CFA */
    int32_t off_lo, off_hi; /* PLAIN: the lowest and highest slot */
    uint64_t key, image;
    fl_cfi_head_t h;        /* h.flags adds FL_CFI_ENTRY_*; PLAIN: h.nrules counts rule[] */
    uint64_t regmask;       /* PLAIN: the registers of rule[]: the rules but the return
                             * address's and fp's, by ascending register */
    fl_cfi_rule_t rule[FL_CFI_CACHE_RULES];
} fl_cfi_entry_t;
extern fl_cfi_entry_t fl_cfi_entries[1u << FL_CFI_CACHE_BITS];

static inline fl_cfi_entry_t *fl_cfi_cache_slot(uint64_t at, uint64_t image_id) {
    return &fl_cfi_entries[((at ^ image_id) * 0x9e3779b97f4a7c15ull) >> (64 - FL_CFI_CACHE_BITS)];
}

/* The entry for (at, image_id) and its even sequence count, or NULL. */
static inline const fl_cfi_entry_t *fl_cfi_cache_find(uint64_t at, uint64_t image_id,
                                                      uint32_t *seq) {
    const fl_cfi_entry_t *e = fl_cfi_cache_slot(at, image_id);
    *seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
    return (*seq & 1) || e->key != at || e->image != image_id ? 0 : e;
}

/* Applies a plain entry found with count seq, as fl_cfi_row_apply would, to the frame whose pc,
 * sp and fp (fp_known: whether fp is) are in *pc, *sp, *fp and whose other registers are in regs:
 * 1 stepped, 0 the outermost frame, -1 the entry changed meanwhile or cannot be applied (nothing
 * changed). The loads come first: every slot is checked to lie in the window read, so a torn
 * entry can only make them read other stack words; the registers are written once the count
 * shows the entry was stable. */
static inline __attribute__((always_inline)) int
fl_cfi_plain_step(const fl_cfi_entry_t *e, uint32_t seq, const fl_reader_t *stack,
                  fl_dwarf_regs_t *regs, uint64_t *pc, uint64_t *sp, uint64_t *fp,
                  bool *fp_known) {
    unsigned n = e->h.nrules, cfa_reg = e->h.cfa_reg, ra = e->h.ra_reg, flags = e->h.flags;
    uint64_t mask = e->regmask, base, val[FL_CFI_CACHE_RULES], npc, nfp = *fp;
    int32_t lo = e->off_lo, hi = e->off_hi;
    if (cfa_reg == FL_DWARF_SP) base = *sp;
    else if (cfa_reg == FL_DWARF_FP && *fp_known) base = *fp;
    else if (cfa_reg < FL_DWARF_REGS && cfa_reg != FL_DWARF_FP && (regs->valid >> cfa_reg & 1))
        base = regs->r[cfa_reg];
    else return -1;
    if (flags & FL_CFI_ENTRY_OUTERMOST) {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq ? 0 : -1;
    }
    if (n > FL_CFI_CACHE_RULES || hi < lo || ra >= FL_DWARF_REGS) return -1;
    uint64_t cfa = base + (uint64_t)e->h.cfa_offset, first = cfa + (uint64_t)(int64_t)lo;
    uint32_t span = (uint32_t)(hi - lo), ra_at = (uint32_t)(e->ra_off - lo),
             fp_at = (uint32_t)(e->fp_off - lo);
    const char *p = (const char *)fl_reader_direct(stack, first, (size_t)span + 8);
    if (p && ra_at <= span && fp_at <= span) {
        __builtin_memcpy(&npc, p + ra_at, 8);
        if (flags & FL_CFI_ENTRY_PLAIN_FP) __builtin_memcpy(&nfp, p + fp_at, 8);
        for (unsigned i = 0; i < n; i++) {
            uint32_t at = (uint32_t)(e->rule[i].value - lo);
            if (at > span) return -1;
            __builtin_memcpy(&val[i], p + at, 8);
        }
    } else {
        if (fl_read_u64(stack, cfa + (uint64_t)(int64_t)e->ra_off, &npc) ||
            ((flags & FL_CFI_ENTRY_PLAIN_FP) &&
             fl_read_u64(stack, cfa + (uint64_t)(int64_t)e->fp_off, &nfp)))
            return -1;
        for (unsigned i = 0; i < n; i++)
            if (fl_read_u64(stack, cfa + (uint64_t)(int64_t)e->rule[i].value, &val[i])) return -1;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq || (mask >> FL_DWARF_REGS)) return -1;
    if (!npc) return 0; /* libunwind's convention for the outermost frame */
    regs->valid |= mask;
    for (unsigned i = 0; mask && i < n; i++, mask &= mask - 1) /* (one bit per rule) */
        regs->r[__builtin_ctzll(mask)] = val[i];
    regs->r[ra] = npc; /* (arm64: lr, as fl_cfi_row_apply leaves it) */
    regs->valid |= 1ull << ra;
    *pc = npc;
    *sp = cfa;
    if (flags & FL_CFI_ENTRY_PLAIN_FP) {
        *fp = nfp;
        *fp_known = true;
    }
    return 1;
}

/* fl_cfi_plain_step with the frame's pc, sp and fp in regs (where the caller's are put). */
static inline __attribute__((always_inline)) int
fl_cfi_entry_apply(const fl_cfi_entry_t *e, uint32_t seq, const fl_reader_t *stack,
                   fl_dwarf_regs_t *regs) {
    uint64_t pc = regs->r[FL_DWARF_PC], sp = regs->r[FL_DWARF_SP], fp = regs->r[FL_DWARF_FP];
    bool fp_known = regs->valid >> FL_DWARF_FP & 1;
    int ret = fl_cfi_plain_step(e, seq, stack, regs, &pc, &sp, &fp, &fp_known);
    if (ret == 1) {
        regs->r[FL_DWARF_PC] = pc;
        regs->r[FL_DWARF_SP] = sp;
        regs->r[FL_DWARF_FP] = fp;
        regs->valid |= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP | (uint64_t)fp_known << FL_DWARF_FP;
    }
    return ret;
}

/* The cached row for (at, image_id): 1 or 0 when it was plain and applied to regs (stepped,
 * outermost frame), 2 when it was copied to *row for the caller to apply, -1 when there is none. */
int fl_cfi_cache_step(uint64_t at, uint64_t image_id, const fl_reader_t *stack,
                      fl_dwarf_regs_t *regs, fl_cfi_row_t *row);
void fl_cfi_cache_put(uint64_t at, uint64_t image_id, const fl_cfi_row_t *row);
/* Whether the row takes the plain form; if so, e holds it as the cache would (but for its seq,
 * key and image), for a miss to apply and store (fl_cfi_cache_put_entry). */
bool fl_cfi_entry_plain(const fl_cfi_row_t *row, fl_cfi_entry_t *e);
/* Stores a plain entry made elsewhere (fl_cfi_macho_entry, fl_cfi_entry_plain; its seq, key and
 * image are not read). */
void fl_cfi_cache_put_entry(uint64_t at, uint64_t image_id, const fl_cfi_entry_t *src);
/* The current flush generation, mixed into image identities (fl_frames_cfi_cache_flush bumps it). */
uint64_t fl_cfi_cache_generation(void);

#endif
