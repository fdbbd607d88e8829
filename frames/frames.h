/* SPDX-License-Identifier: MIT */
/* frames: register sets and stack walking (unwind tables, frame pointers, link register). */
#ifndef FAULTLINE_FRAMES_H
#define FAULTLINE_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Register sets (one *_x86_64.c / *_arm64.c per architecture) ---- */

#define FL_REGS_MAX 40u

/* General registers of one thread, in the architecture's order (see fl_regs_name). */
typedef struct fl_regs {
    uint64_t r[FL_REGS_MAX];
} fl_regs_t;

unsigned fl_regs_count(void);                     /* AS-SAFE */
const char *fl_regs_name(unsigned i);             /* AS-SAFE; "rax", "x0", ... */
uint64_t fl_regs_pc(const fl_regs_t *r);          /* AS-SAFE */
uint64_t fl_regs_sp(const fl_regs_t *r);          /* AS-SAFE */
uint64_t fl_regs_fp(const fl_regs_t *r);          /* AS-SAFE */
/* Sets r's pc, sp and frame pointer (the others are left as they are). AS-SAFE. */
void fl_regs_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp);
/* Fills r from a signal handler's ucontext_t. AS-SAFE. */
void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext);
/* Darwin: fills r with thread_get_state of the Mach thread `thread` (a thread_act_t), which must
 * not be the caller and should be suspended or blocked in the kernel (an exception). On x86_64
 * err/trapno/cr2 come from the exception state. 0, or FL_EIO if the kernel refused (the thread is
 * gone). AS-SAFE (Mach calls only). */
int fl_regs_from_mach_thread(fl_regs_t *r, uint32_t thread);
/* Fills r with the registers of the function that calls it, as they are just after the call
 * returns (pc = the return address, sp = the caller's). The caller's frame must stay live while
 * r is used, so call it from the function whose stack is to be walked. Only the general registers
 * are set (the caller zeroes r first). AS-SAFE. */
void fl_regs_get_current(fl_regs_t *r);
/* The proto's Arch value for this build (1 = x86_64, 2 = arm64). AS-SAFE. */
int fl_regs_arch(void);

/* Register names of any architecture, whatever the build's (report readers need them for
 * reports from elsewhere). The order is that of fl_regs_t in a build for `arch`, and of
 * Thread.register_values in reports (docs/report-format.md); a *_<arch>.c register set must
 * keep to it. */
enum { FL_REGS_ARCH_UNKNOWN = 0, FL_REGS_ARCH_X86_64 = 1, FL_REGS_ARCH_ARM64 = 2 }; /* = Arch */
#define FL_REGS_X86_64_COUNT 24u
#define FL_REGS_ARM64_COUNT 34u /* x0..x28, fp (x29), lr (x30), sp, pc, pstate */
unsigned fl_regs_arch_count(int arch);               /* AS-SAFE; 0 for an unknown arch */
const char *fl_regs_arch_name(int arch, unsigned i); /* AS-SAFE; "" past the count */
/* The name of DWARF register `reg` of `arch` (fl_dwarf_regs_t's numbering), as fl_regs_arch_name
 * spells it ("rbx", "x19", "fp"); "" for numbers the register file does not track. AS-SAFE. */
const char *fl_dwarf_reg_name(int arch, unsigned reg);

/* ---- DWARF call frame information (cfi_dwarf.c, cfi_apply.c; the same code on every platform)
 * The unwind tables of ELF's .eh_frame (found through .eh_frame_hdr's search table) and Mach-O's
 * __eh_frame (found through compact unwind's DWARF entries), read only through a memory reader:
 * the tables may be corrupt or hostile, so every count, length, offset and loop is bounded and a
 * malformed table is an error code, never a fault. Registers are DWARF-numbered (fl_dwarf_regs_t);
 * rules for registers the register file does not track (vector, float) are parsed and dropped.
 * Errors: FL_ENOTFOUND (no FDE covers the address), FL_EBADDATA (malformed), FL_EFAULT
 * (unreadable), FL_ENOSYS (valid but not supported here: the walker hands such a step to LLVM
 * libunwind where it has it), FL_ERANGE (a bound was reached: see the FL_CFI_*_MAX below). */

#define FL_CFI_REMEMBER_MAX 8u    /* DW_CFA_remember_state nesting (real code: 1) */
#define FL_CFI_INSNS_MAX 100000u  /* CFA instructions run for one row (real code: < 400) */
#define FL_CFI_SCAN_MAX 1000000u  /* records visited by a linear .eh_frame scan (and by all the
                                   * scans of one walk: fl_cfi_memo_t) */
#define FL_CFI_EXPR_STACK 64u     /* DWARF expression stack entries */
#define FL_CFI_EXPR_STEPS 1000u   /* DWARF expression operations evaluated (branches loop) */

typedef struct fl_cfi_memo fl_cfi_memo_t;

/* Where one image's DWARF unwind tables are, as addresses in `mem` (runtime addresses of a loaded
 * image, or file addresses through a reader over the file). */
typedef struct fl_cfi_table {
    const fl_reader_t *mem;
    uint64_t eh_frame_hdr;  /* .eh_frame_hdr, 0 if none */
    uint64_t eh_frame;      /* the first CIE/FDE record; 0: eh_frame_hdr's eh_frame_ptr */
    uint64_t eh_frame_size; /* 0: unknown (records run to the zero terminator) */
    int arch;               /* FL_REGS_ARCH_*: the meaning of DW_CFA 0x2d and of sp/pc */
    fl_cfi_memo_t *memo;    /* headers parsed before, or NULL (see fl_cfi_memo_t) */
} fl_cfi_table_t;

/* What a CIE says about the FDEs that refer to it. */
typedef struct fl_cfi_cie {
    uint64_t addr;             /* the CIE record's first byte */
    uint64_t insns, insns_end; /* its initial instructions */
    uint64_t code_align;
    int64_t data_align;
    uint32_t ra_reg;           /* the return-address column */
    uint8_t ptr_enc;           /* 'R': the encoding of pc fields (and DW_CFA_set_loc) */
    bool signal_frame;         /* 'S': the frame of a signal trampoline */
    bool has_z;                /* 'z': FDEs carry augmentation data */
} fl_cfi_cie_t;

/* One FDE and its CIE. */
typedef struct fl_cfi_fde {
    uint64_t addr;             /* the FDE record's first byte */
    uint64_t pc_start, pc_end; /* the code it covers: [pc_start, pc_end) */
    uint64_t insns, insns_end; /* its instructions */
    fl_cfi_cie_t cie;
} fl_cfi_fde_t;

/* The last .eh_frame_hdr header and CIE parsed, reused while they are the ones needed: the FDEs
 * of one image mostly share one CIE. Keyed by address alone, so one memo must serve only tables
 * whose bytes at an address do not change (a walk's; zero-fill it to start). */
typedef struct fl_cfi_hdr {
    uint64_t addr;                /* the .eh_frame_hdr described (0: none yet) */
    uint64_t start, table, count; /* its records' start, search table, entries */
    uint8_t table_enc;
    int8_t entry_size;            /* 0: no usable search table */
} fl_cfi_hdr_t;
struct fl_cfi_memo {
    fl_cfi_hdr_t hdr;             /* the last .eh_frame_hdr parsed */
    fl_cfi_cie_t cie;             /* the last CIE parsed (addr 0: none yet) */
    uint64_t scanned;             /* records linear scans visited (bounded by FL_CFI_SCAN_MAX) */
};

enum { /* how a register of the caller is found (DWARF 5 section 6.4.1) */
    FL_CFI_RULE_UNSET = 0, /* no rule: the register keeps its value; for the return-address
                            * column, the return address is still in that register (arm64 lr) */
    FL_CFI_RULE_UNDEFINED, /* unrecoverable; for the return-address column: the outermost frame */
    FL_CFI_RULE_SAME,      /* same value */
    FL_CFI_RULE_OFFSET,    /* saved at CFA + value */
    FL_CFI_RULE_VAL_OFFSET,/* is CFA + value */
    FL_CFI_RULE_REGISTER,  /* in register `value` */
    FL_CFI_RULE_EXPR,      /* saved at the address the expression computes (CFA pushed first) */
    FL_CFI_RULE_VAL_EXPR   /* is what the expression computes (CFA pushed first) */
};
enum { FL_CFI_CFA_REG = 1, FL_CFI_CFA_EXPR = 2 };
enum { FL_CFI_ROW_SIGNAL = 1, /* the FDE's CIE says 'S': the caller's pc is exact, not a return */
       FL_CFI_ROW_RA_SIGNED = 2 }; /* arm64: the return address carries a pointer signature */

typedef struct fl_cfi_rule {
    uint8_t reg, kind; /* DWARF register, FL_CFI_RULE_* */
    uint16_t len;      /* EXPR, VAL_EXPR: the expression's length in bytes */
    int32_t value;     /* OFFSET, VAL_OFFSET: bytes from the CFA; REGISTER: the register;
                        * EXPR, VAL_EXPR: the expression's address minus the row's expr_base */
} fl_cfi_rule_t;

/* A row but its rules (the row cache keeps this part as it is). */
typedef struct fl_cfi_head {
    uint16_t cfa_len;     /* CFA_EXPR: the expression's length */
    uint8_t cfa_kind, cfa_reg, ra_reg, flags; /* FL_CFI_CFA_*, register, RA column, FL_CFI_ROW_* */
    uint8_t nrules;       /* rules other than UNSET */
    int64_t cfa_offset;   /* CFA_REG: added to the register; CFA_EXPR: like rule.value */
    uint64_t expr_base;   /* expressions are addressed from here (the FDE) */
} fl_cfi_head_t;

/* The unwind row in effect at one address: the CFA rule and the register rules. */
typedef struct fl_cfi_row {
    uint64_t start, end; /* the addresses where this row applies (inside its FDE) */
    fl_cfi_head_t h;
    fl_cfi_rule_t rule[FL_DWARF_REGS]; /* h.nrules of them, by ascending register */
} fl_cfi_row_t;

/* The FDE covering pc: the binary-search table of .eh_frame_hdr when there is one, else a linear
 * scan of the records (bounded by FL_CFI_SCAN_MAX). AS-SAFE. */
int fl_cfi_fde_find(const fl_cfi_table_t *t, uint64_t pc, fl_cfi_fde_t *fde);
/* The FDE record at addr (compact unwind names FDEs by offset): FL_ENOTFOUND if a CIE or the
 * terminator is there. AS-SAFE. */
int fl_cfi_fde_parse(const fl_cfi_table_t *t, uint64_t addr, fl_cfi_fde_t *fde);
/* Calls fn for every FDE in record order until fn returns nonzero (returned); for the tests and
 * the CLI. A malformed record ends the walk with its error. AS-SAFE if fn is. */
int fl_cfi_fde_each(const fl_cfi_table_t *t, int (*fn)(void *ctx, const fl_cfi_fde_t *fde),
                    void *ctx);
/* Runs the CIE's initial instructions and the FDE's instructions up to pc (pc_start <= pc <
 * pc_end): the row in effect at pc. AS-SAFE. */
int fl_cfi_row_compute(const fl_cfi_table_t *t, const fl_cfi_fde_t *fde, uint64_t pc,
                       fl_cfi_row_t *row);
/* Steps regs (the frame the row belongs to) to its caller: the CFA becomes the caller's sp, the
 * return address its pc, and every register with a rule gets its saved value (read through
 * `stack`; expression bytes through `tables`). 1 stepped, 0 outermost frame (the return address
 * is undefined or 0), FL_EINVAL (a register the row needs is unknown), FL_EFAULT, FL_EBADDATA,
 * FL_ENOSYS (an expression operation not supported). regs is unchanged unless 1. AS-SAFE. */
int fl_cfi_row_apply(const fl_cfi_row_t *row, int arch, const fl_reader_t *stack,
                     const fl_reader_t *tables, fl_dwarf_regs_t *regs);

/* Counts of the CFI steppers since the process started (all walks, all threads). */
typedef struct fl_cfi_stats {
    uint64_t steps;      /* DWARF steps taken by faultline's evaluator */
    uint64_t hits;       /* ... of which with a row from the cache */
    uint64_t misses;     /* rows computed (and then cached, if the cache is on) */
    uint64_t declined;   /* steps the evaluator declined (FL_ENOSYS): handed to LLVM libunwind */
    uint64_t fallback;   /* steps LLVM libunwind took (declined, or the LLVM mode) */
    uint64_t errors;     /* malformed or unreadable tables (the walker went on without CFI) */
} fl_cfi_stats_t;
void fl_frames_cfi_stats(fl_cfi_stats_t *out); /* AS-SAFE */

/* Which CFI engine walks use (for tests and benchmarks; the default is FL_CFI_MODE_CACHED):
 * faultline's evaluator with the row cache, without it (every step computes its row), or LLVM
 * libunwind alone (Linux only: FL_ENOSYS elsewhere). Affects walks begun afterwards. AS-SAFE. */
enum { FL_CFI_MODE_CACHED = 0, FL_CFI_MODE_UNCACHED = 1, FL_CFI_MODE_LLVM = 2 };
int fl_frames_cfi_mode(int mode);
int fl_frames_cfi_mode_current(void); /* AS-SAFE */
/* Empties the row cache (benchmarks measure cold walks with it). AS-SAFE. */
void fl_frames_cfi_cache_flush(void);

/* ---- Frames ---- */

enum { /* values equal faultline.Frame.Method in proto/faultline.proto */
    FL_FRAME_UNKNOWN = 0,
    FL_FRAME_CONTEXT = 1,
    FL_FRAME_CFI = 2,
    FL_FRAME_FP = 3,
    FL_FRAME_LR = 4,
    FL_FRAME_SCAN = 5,
    FL_FRAME_SYSCALL = 6 /* frame 0 of a thread that blocks the capture signal: pc and sp from
                          * /proc/self/task/TID/syscall while it sat in a system call */
};

enum { FL_FRAME_TRAMPOLINE = 1 }; /* fl_frame_t.flags: the frame's code is a signal return
                                   * trampoline; the next frame is the context it interrupted */

/* Where the kernel put the parts of a signal frame, from the sp of its return trampoline's frame
 * (one a walk marked FL_FRAME_TRAMPOLINE), by the layout of Linux's rt_sigframe for the
 * architecture: the siginfo (written only for a handler with SA_SIGINFO: anything may lie there
 * otherwise), and in the saved context the fault address (x86_64 cr2, arm64 fault_address) and
 * the pc. FL_ENOSYS on Darwin (its _sigtramp gets the siginfo in a register). The memory there
 * is the stack's: read it through the safe reader. AS-SAFE. */
typedef struct fl_sigframe {
    uint64_t info, fault_addr, pc;
} fl_sigframe_t;
int fl_frames_sigframe(uint64_t trampoline_sp, fl_sigframe_t *out);

typedef struct fl_frame {
    uint64_t pc; /* exact for frame 0 and after a trampoline, a return address for the others */
    uint64_t sp;
    uint32_t method; /* FL_FRAME_* */
    uint32_t flags;  /* FL_FRAME_TRAMPOLINE */
} fl_frame_t;

/* What a walk may look at. All memory is read through `mem`. */
typedef struct fl_walk_env {
    const fl_reader_t *mem;
    const fl_image_list_t *images; /* executable ranges; unwind tables for the table stepper */
    uint64_t stack_lo, stack_hi;   /* the thread's stack mapping; 0,0 = unknown */
    /* The walk runs while other threads run (a thread walking itself for a snapshot): images
     * may be unloaded meanwhile, so their tables are read only through `mem` (not in place),
     * and LLVM libunwind (whose fault guards are for the capturing threads) is not used. */
    bool concurrent;
    bool use_cfi;                  /* try the unwind tables (fl_frames_walk, step 1) */
    /* Optional: the memory map. When a step crosses a signal frame onto another stack (a handler
     * ran on an alternate stack; the code it interrupted on its own), the walk goes on within
     * that stack's mapping (fl_maps_stack). Without it the walk ends at the signal frame. */
    const fl_maps_t *maps;
    /* Optional (NULL in the crash path), `max` entries: for each frame out[i] the registers the
     * walk knows there (bit r of valid: DWARF register r): frame 0 all of the context; after a
     * table step pc, sp and the callee-saved registers the tables restored or carried; after a
     * frame-pointer, link-register or scan step pc, sp and fp. For the emulation tests and
     * `faultline unwind`; the walk then takes no fast path. */
    fl_dwarf_regs_t *frame_regs;
    /* The registers hold pc and sp only (a thread read from its system call, not stopped): the
     * others are unknown to the tables, and the frame pointer is 0. */
    bool pc_sp_only;
} fl_walk_env_t;

typedef struct fl_walk_result {
    unsigned count;
    bool truncated;          /* frames were dropped: max frames reached, or the step limit */
    /* A stack deeper than max keeps its innermost frames, out[0..omitted_at), and its outermost
     * ones, out[omitted_at..count): omitted frames lay between them (0: none omitted). */
    unsigned omitted, omitted_at;
    const char *stop_reason; /* static string: why the walk ended */
} fl_walk_result_t;

/* Bounds env's walk by sm, the stack mapping that holds sp (NULL: unknown, env unchanged), and
 * when `direct` (its thread stands still) and the mapping is readable, reads the stack through
 * `stack`, plain copies over it with env's reader for the rest. `stack` must outlive the walk.
 * AS-SAFE. */
void fl_walk_env_stack(fl_walk_env_t *env, const fl_map_t *sm, uint64_t sp, fl_reader_t *stack,
                       bool direct);

/* Walks the stack described by `regs` into out[0..max). Frame 0 is the context's pc. Each step
 * is taken by the first stepper that gives a plausible caller (caller sp above the callee's,
 * inside the stack, return address inside an executable segment or a signal trampoline):
 *   1. the unwind tables (method CFI): DWARF CFI by faultline's evaluator and its row cache
 *      (Linux: each image's .eh_frame_hdr, or .eh_frame of a static executable; Darwin: the FDEs
 *      compact unwind's DWARF entries name), exact even in code without frame pointers, in
 *      prologues and in leaf functions; Darwin's compact unwind (exact at call sites); a signal
 *      trampoline recognised by its code; LLVM libunwind for a step the evaluator declines;
 *   2. the frame-pointer record, under the same trust checks (code without unwind tables); or,
 *      where the record lies on another stack (env->maps: another readable, writable,
 *      non-executable mapping where three records chain), that stack, which bounds the walk
 *      from there (Go's switches to its system stack);
 *   3. the caller as the function's entry left it: the link register (arm64) or the return
 *      address on top of the stack (x86_64), at frame 0 and (x86_64) at a frame whose pc
 *      follows no call (a call a runtime injected at a fault: Go's runtime.sigpanic); then a
 *      bounded scan. docs/unwinding.md has the whole table.
 * Why CFI before frame pointers: see docs/unwinding.md (a frame-pointer chain through code built
 * without frame pointers looks valid and silently skips callers). Images in env->images with
 * tables_lo/hi set (fl_images_map_tables) have their tables read in place.
 * A stack deeper than max (max >= 8) is walked on to its end: the first max - max/4 frames and
 * between max/8 and max/4 of the outermost are kept, res->omitted counting those dropped between.
 * Never faults: memory goes through env->mem and libunwind runs under a fault guard. AS-SAFE. */
int fl_frames_walk(const fl_walk_env_t *env, const fl_regs_t *regs, fl_frame_t *out, unsigned max,
                   fl_walk_result_t *res);
/* Steps a walk takes at most (a stack deeper than max frames is walked to its end, for its
 * outermost frames): beyond it the walk ends with "step limit reached". */
#define FL_WALK_STEPS_MAX (1u << 20)

/* Frame-pointer-only walk (the trust checks, no CFI); for tests and benchmarks. Return addresses
 * lose their pointer-authentication bits in both walks. AS-SAFE. */
int fl_frames_walk_fp(const fl_walk_env_t *env, const fl_regs_t *regs, fl_frame_t *out,
                      unsigned max, fl_walk_result_t *res);

#endif
