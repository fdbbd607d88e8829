/* SPDX-License-Identifier: MIT */
/* Internal to frames/: the per-architecture step hooks and the unwind-table stepper's interface. */
#ifndef FAULTLINE_FRAMES_UNWIND_INTERNAL_H
#define FAULTLINE_FRAMES_UNWIND_INTERNAL_H

#include "base/config.h"
#include "frames/frames.h"
#include "macho/macho.h"

/* ---- Architecture hooks (arch_<arch>.c, the same on every OS; all AS-SAFE) ---- */

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp);
/* The caller as a function's first instruction sees it: x86_64 the return address on top of the
 * stack (caller sp = sp + 8); arm64 lr (caller sp = sp), still valid until the frame record is
 * stored. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp);
/* Whether fl_unwind_arch_entry_step reads only pc and sp, so that it applies to a frame other
 * than frame 0 (whose other registers the walk does not follow): x86_64 yes, arm64 no (lr). */
extern const bool fl_unwind_arch_entry_on_stack;

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
    fl_macho_unwind_memo_t cu_memo; /* the __unwind_info header and page the last lookup used */
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
 * with a compare-and-swap and skips the entry if that fails; a reader copies the entry and keeps
 * the result only if the count was even and unchanged. No one waits: a walk interrupted by a
 * crash handler's walk on the same thread cannot deadlock it (a writer that never finishes
 * leaves that one entry unusable). 4,096 direct-mapped entries of 256 bytes (1 MiB, pages
 * supplied by the kernel as walks first touch them): the threads of one process share most
 * return addresses, so an all-thread capture needs few distinct rows (framehop's 509 entries hit
 * ~80 % on Firefox). */
#define FL_CFI_CACHE_BITS 12u
#define FL_CFI_CACHE_RULES 16u /* rows with more (signal trampolines) are not cached */
/* The form nearly every row of compiled code takes: the CFA is a register plus an offset, and
 * every rule (the return address's among them) says "saved at CFA + n" within a few KiB. Such a
 * row is kept as the slots to load from one window of the stack (a few fields, copied and
 * applied with no interpretation); the return address's slot and fp's are kept apart from the
 * other rules, so that the walker can hold pc, sp and fp in registers. */
#define FL_CFI_ENTRY_PLAIN 0x01u
#define FL_CFI_ENTRY_PLAIN_FP 0x02u  /* ... and fp is restored, from its slot */
#define FL_CFI_ENTRY_OUTERMOST 0x04u /* ... or the return address is undefined and nothing else
                                      * has a rule: the outermost frame (a thread's entry) */
#define FL_CFI_ENTRY_CFA_SP 0x08u    /* ... and the CFA's register is sp */
#define FL_CFI_ENTRY_CFA_FP 0x10u    /* ... or fp (the walker's fast loop takes these two) */
#define FL_CFI_PLAIN_SPAN 4096u      /* bytes from a plain row's lowest slot to its highest */

typedef struct fl_cfi_entry {
    _Alignas(64) uint32_t seq; /* (256 bytes: a shift finds an entry; the plain fields fill the
                                * first cache line) */
    uint8_t kind;             /* FL_CFI_ENTRY_* (0: a row of another form, in u.row) */
    uint8_t cfa_reg, ra_reg;  /* PLAIN: the CFA's register, the return-address column */
    uint8_t nsaved;           /* PLAIN: the slots of u.at */
    uint16_t span;            /* PLAIN: bytes from the lowest slot to the highest */
    uint16_t ra_at, fp_at;    /* PLAIN: the return address's slot, fp's (= ra_at when fp has no
                               * rule), in bytes from the lowest slot */
    uint16_t reach;           /* PLAIN: bytes from the lowest slot that hold every slot and the
                               * CFA's byte below (the caller's sp - 1): span + 8 or more */
    int32_t cfa_off, lo_off;  /* PLAIN: CFA = cfa_reg + cfa_off, the lowest slot cfa_reg + lo_off */
    uint64_t key, image;
    uint64_t regmask;         /* PLAIN: the registers of u.at: the rules but the return
                               * address's and fp's, by ascending register */
    union {
        uint16_t at[FL_CFI_CACHE_RULES]; /* PLAIN: each one's slot, from the lowest slot */
        struct {
            fl_cfi_head_t h;
            fl_cfi_rule_t rule[FL_CFI_CACHE_RULES];
        } row;                           /* otherwise: the row as computed */
    } u;
} fl_cfi_entry_t;
_Static_assert(sizeof(fl_cfi_entry_t) == 256, "fl_cfi_entry_t: a power of two");
extern fl_cfi_entry_t fl_cfi_entries[1u << FL_CFI_CACHE_BITS];

static inline fl_cfi_entry_t *fl_cfi_cache_slot(uint64_t at, uint64_t image_id) {
    return &fl_cfi_entries[((at ^ image_id) * 0x9e3779b97f4a7c15ull) >> (64 - FL_CFI_CACHE_BITS)];
}

/* A plain entry's fields as one stable read (fl_cfi_cache_plain). */
typedef struct fl_cfi_plain {
    unsigned kind, cfa_reg, ra_reg, nsaved;
    uint32_t reach, ra_at, fp_at;
    int64_t cfa_off, lo_off;
    uint64_t regmask;
} fl_cfi_plain_t;

/* Whether e holds (at, image_id); if so, *p and slots[0..p->nsaved) are a copy of its plain
 * fields as fl_cfi_cache_put wrote them (a seqlock's read: the fields are copied, then the count
 * checked), meaningful when p->kind has FL_CFI_ENTRY_PLAIN (the other kind bits imply it); the
 * slots of such a copy all lie within reach. (The slots apart: a struct indexed by a variable
 * would live in memory.) AS-SAFE. */
static inline __attribute__((always_inline)) bool
fl_cfi_cache_plain(const fl_cfi_entry_t *e, uint64_t at, uint64_t image_id, fl_cfi_plain_t *p,
                   uint16_t slots[FL_CFI_CACHE_RULES]) {
    uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
    if ((seq & 1) || e->key != at || e->image != image_id) return false;
    p->kind = e->kind, p->cfa_reg = e->cfa_reg, p->ra_reg = e->ra_reg, p->nsaved = e->nsaved;
    p->reach = e->reach, p->ra_at = e->ra_at, p->fp_at = e->fp_at;
    p->cfa_off = e->cfa_off, p->lo_off = e->lo_off, p->regmask = e->regmask;
    if (p->nsaved) __builtin_memcpy(slots, e->u.at, sizeof e->u.at);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq;
}

/* Applies a plain entry that no writer changes (a local one, fl_cfi_entry_plain's or
 * a miss's) to regs, as a cache hit would: 1 stepped, 0 the outermost frame, -1 a
 * register it needs is unknown or a slot unreadable (regs unchanged). AS-SAFE. */
int fl_cfi_entry_apply(const fl_cfi_entry_t *e, const fl_reader_t *stack, fl_dwarf_regs_t *regs);

/* The cached row for (at, image_id): 1 or 0 when it was plain and applied to regs (stepped,
 * outermost frame), 2 when it was copied to *row for the caller to apply, -1 when there is none. */
int fl_cfi_cache_step(uint64_t at, uint64_t image_id, const fl_reader_t *stack,
                      fl_dwarf_regs_t *regs, fl_cfi_row_t *row);
void fl_cfi_cache_put(uint64_t at, uint64_t image_id, const fl_cfi_row_t *row);
/* Whether the row takes the plain form; if so, e holds it as the cache would (but for its seq,
 * key and image), for a miss to apply and store (fl_cfi_cache_put_entry). */
bool fl_cfi_entry_plain(const fl_cfi_row_t *row, fl_cfi_entry_t *e);
/* Stores a plain entry made elsewhere (fl_cfi_entry_plain's; its seq, key and
 * image are not read). */
void fl_cfi_cache_put_entry(uint64_t at, uint64_t image_id, const fl_cfi_entry_t *src);
/* A miss of the walker's fast loop (cfi_hits): the row of `at` in c->img (the image the cursor
 * last stepped in, whose tables c->tables reads) computed and stored in the cache, without the
 * general loop's steppers. 0 stored as a plain entry; FL_ENOSYS when the row takes another form
 * (stored as a row: the general loop finds it); other errors as the table step's, not counted
 * (the general loop takes that step again and says why). Only for a return address
 * (at = pc - 1): an exact pc needs the prologue and epilogue checks. */
int fl_cfi_fill(fl_cfi_cursor_t *c, uint64_t at);
/* fl_cfi_fill's part in a Mach-O image: 1 with *ent the plain entry of a compact-unwind rule,
 * 0 with *row (its DWARF FDE's row, or a rule that is not plain), or an error. */
int fl_cfi_macho_fill(fl_cfi_cursor_t *c, const fl_image_t *img, uint64_t at,
                      fl_cfi_entry_t *ent, fl_cfi_row_t *row);
/* A compact-unwind rule as the plain entry fl_cfi_entry_plain makes of its row
 * (fl_cfi_macho_row), built directly: 0, FL_ENOSYS (not plain: arm64 FRAMELESS, NONE, DWARF),
 * or fl_cfi_macho_row's error. (Its fields, not seq, key and image.) */
int fl_cfi_macho_entry(const struct fl_macho_unwind_rule *rule, const fl_reader_t *code,
                       uint64_t func_start, fl_cfi_entry_t *e);
/* The current flush generation, mixed into image identities (fl_frames_cfi_cache_flush bumps it). */
uint64_t fl_cfi_cache_generation(void);

#endif
