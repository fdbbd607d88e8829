/* SPDX-License-Identifier: MIT */
/* The emulation harness's test program: fault scenarios chosen at run time (emu.py, build.sh). */
/* emu.py loads this Mach-O into Unicorn and calls emu_main(case) as if from a thread's first
 * frame (return address 0). Freestanding: nothing here may call libSystem (no dyld in the
 * emulator); emu_rt.c supplies memcpy, memset, bzero. The true call chain comes from the
 * emulator's trace of every call and return, so the compiler may inline or tail-call as it
 * likes: noinline, volatile and asm barriers only keep the chains the cases are named after,
 * and emu.py checks the few properties a case needs (e.g. recursion depth). */
#include <stdint.h>

#define NOINLINE __attribute__((noinline, used))
#define KEEP(x) __asm__ volatile("" : "+r"(x))
/* Callee-saved registers the function must save and restore (pushes, or arm64 register pairs
 * in the frame: FRAME encodings with saved pairs, STACK_IMMD/STACK_IND register lists). The
 * function also overwrites them with values of its own (tagged with the line), so that they
 * differ from its caller's: emu.py compares the callee-saved registers the walker restores with
 * the caller's true ones, which a walker that failed to restore them would then not match. */
#define EMU_TAG ((uint64_t)0x7a67000000ull + ((uint64_t)__LINE__ << 8))
#if defined(__x86_64__)
#define CLOBBER_SAVED()                                                                            \
    __asm__ volatile("movq %0, %%rbx\n\tleaq 1(%0), %%r12\n\tleaq 2(%0), %%r14" ::"r"(EMU_TAG)     \
                     : "rbx", "r12", "r14")
#define CLOBBER_FEW() __asm__ volatile("movq %0, %%rbx" ::"r"(EMU_TAG) : "rbx")
#else
#define CLOBBER_SAVED()                                                                            \
    __asm__ volatile("mov x19, %0\n\tadd x20, %0, #1\n\tadd x21, %0, #2\n\tadd x22, %0, #3\n\t" \
                     "add x27, %0, #4\n\tadd x28, %0, #5" ::"r"(EMU_TAG)                            \
                     : "x19", "x20", "x21", "x22", "x27", "x28")
#define CLOBBER_FEW() __asm__ volatile("mov x19, %0\n\tadd x20, %0, #1" ::"r"(EMU_TAG) : "x19", "x20")
#endif

int *volatile emu_null_ptr;       /* stays 0: the address every fault reads */
int (*volatile emu_null_fn)(int); /* stays 0: the NULL function pointer */
volatile int emu_depth = 200;     /* the recursion case's depth */

NOINLINE int emu_sink(int x) {
    KEEP(x);
    return x;
}

/* ---- Leaves ---- */

/* A frameless leaf in C: no frame, nothing saved (x86_64 without frame pointers: no unwind
 * entry at all, encoding 0). */
NOINLINE int leaf_load(int *p) { return *p + 1; }

/* A leaf without any CFI (cases_<arch>.s): encoding 0 in every build. */
int leaf_asm(int *p);

/* A leaf that saves registers and has locals: x86_64 STACK_IMMD, arm64 FRAMELESS with a stack
 * size (without frame pointers). */
NOINLINE int leaf_saves(int *p) {
    volatile int a[6];
    CLOBBER_FEW();
    a[0] = *p;
    return a[0] + 1;
}

/* ---- 1 leaf, 2 leaf_asm: a fault in a frameless leaf (defect 1 of issue 13) ---- */

NOINLINE int mid_leaf(int i) {
    int r = leaf_load(emu_null_ptr);
    KEEP(r);
    return r + emu_sink(i);
}
NOINLINE int case_leaf(int i) {
    int r = mid_leaf(i);
    KEEP(r);
    return r + emu_sink(i);
}

NOINLINE int mid_leaf_asm(int i) {
    int r = leaf_asm(emu_null_ptr);
    KEEP(r);
    return r + emu_sink(i);
}
NOINLINE int case_leaf_asm(int i) {
    int r = mid_leaf_asm(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 3 null_call: a call through a NULL function pointer (pc 0, nothing of a callee ran) ---- */

NOINLINE int mid_null_call(int i) {
    int r = emu_null_fn(i);
    KEEP(r);
    return r + emu_sink(i);
}
NOINLINE int case_null_call(int i) {
    int r = mid_null_call(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 4 big_body, 5 big_call: a frame of over 4 KiB of locals (x86_64 without frame pointers:
 * STACK_IND; the prologue calls ___chkstk_darwin), faulting in its own body after a call, or
 * in a leaf it calls ---- */

NOINLINE int big_body(int i) {
    volatile char buf[8192];
    CLOBBER_SAVED();
    buf[i & 8191] = (char)i;
    int r = emu_sink(buf[(i * 7) & 8191]);
    KEEP(r);
    return r + *emu_null_ptr + buf[(i * 3) & 8191];
}
NOINLINE int case_big_body(int i) {
    int r = big_body(i);
    KEEP(r);
    return r + emu_sink(i);
}

NOINLINE int big_call(int i) {
    volatile char buf[8192];
    CLOBBER_SAVED();
    buf[i & 8191] = (char)i;
    int r = leaf_load(emu_null_ptr);
    KEEP(r);
    return r + emu_sink(buf[(i * 7) & 8191]);
}
NOINLINE int case_big_call(int i) {
    int r = big_call(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 6 recurse: 200 frames of one function, then a fault in a leaf ---- */

NOINLINE int recurse(int n) {
    if (n <= 0) return leaf_load(emu_null_ptr);
    int r = recurse(n - 1);
    KEEP(r);
    return r + emu_sink(n);
}
NOINLINE int case_recurse(int i) {
    int r = recurse(emu_depth);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 7 kinds: one chain through a function of each encoding kind the toolchain emits ----
 * case_kinds -> k_saves (saves callee-saved registers: x86_64 RBP_FRAME or STACK_IMMD with a
 * register list, arm64 FRAME with saved pairs or DWARF) -> k_big (STACK_IND without frame
 * pointers) -> k_dwarf_asm (cases_<arch>.s: DWARF in every build, no frame record) -> k_pm
 * (preserve_most: DWARF in C) -> leaf_saves (x86_64 STACK_IMMD, arm64 FRAMELESS), which faults. */

int k_dwarf_asm(int i);
__attribute__((preserve_most)) NOINLINE int k_pm(int i) {
    int r = leaf_saves(emu_null_ptr);
    KEEP(r);
    return r + i;
}
/* Called by k_dwarf_asm. */
NOINLINE int k_after_dwarf(int i) {
    int r = k_pm(i);
    KEEP(r);
    return r + emu_sink(i);
}
NOINLINE int k_big(int i) {
    volatile char buf[5000];
    CLOBBER_SAVED();
    buf[i % 5000] = (char)i;
    int r = k_dwarf_asm(buf[(i * 7) % 5000]);
    KEEP(r);
    return r + buf[(i * 3) % 5000];
}
NOINLINE int k_saves(int i) {
    CLOBBER_SAVED();
    int r = k_big(i);
    KEEP(r);
    return r + emu_sink(i);
}
NOINLINE int case_kinds(int i) {
    int r = k_saves(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 8 dwarf_body: a fault in the body of a DWARF-described C function (preserve_most),
 * between two calls ---- */

__attribute__((preserve_most)) NOINLINE int pm_body(int i) {
    int r = emu_sink(i);
    KEEP(r);
    int v = *emu_null_ptr;
    KEEP(v);
    return emu_sink(v + r) + 1;
}
NOINLINE int case_dwarf_body(int i) {
    int r = pm_body(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 9 tail_load: a fault in a function's last load, which the compiler may schedule into
 * the epilogue (arm64 -O2: after the frame record is reloaded): a real fault in an epilogue,
 * where compact unwind and Apple's CFI (no epilogue rows) describe the body ---- */

NOINLINE int tail_load(int i) {
    CLOBBER_FEW();
    int r = emu_sink(i);
    KEEP(r);
    return r + *emu_null_ptr;
}
NOINLINE int case_tail_load(int i) {
    int r = tail_load(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- 10 entry, 11 prologue, 12 epilogue: interruptions, not faults. emu.py stops the emulation
 * at an instruction of int_target (its first; its second, after the first prologue
 * instruction ran; its first ret, after the epilogue restored everything), as a snapshot that
 * suspends a thread anywhere would. ---- */

NOINLINE int int_target(int i) {
    volatile int a[4];
    CLOBBER_SAVED();
    a[i & 3] = i;
    int r = emu_sink(a[(i + 1) & 3]);
    KEEP(r);
    return r + 1;
}
NOINLINE int case_interrupt(int i) {
    int r = int_target(i);
    KEEP(r);
    return r + emu_sink(i);
}

/* ---- Dispatch: through a table of function pointers in __DATA, which dyld (here emu.py)
 * must rebase for the slide; emu.py checks the table against the symbol table. ---- */

typedef int (*emu_case_fn)(int);
emu_case_fn emu_cases[] = {case_leaf,     case_leaf_asm,   case_null_call, case_big_body,
                           case_big_call, case_recurse,    case_kinds,     case_dwarf_body,
                           case_tail_load, case_interrupt};

int emu_main(int c);
NOINLINE int emu_main(int c) {
    int r = emu_cases[c](c);
    KEEP(r);
    return r + emu_sink(c);
}
