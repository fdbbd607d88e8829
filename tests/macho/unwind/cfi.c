/* SPDX-License-Identifier: MIT */
/* Test binary: functions whose unwind information compact unwind cannot hold (build.sh); the
 * assembly in cfi_<arch>.s adds hand-written CFI. Never run: only its tables are read. */
#include <stdarg.h>

#define NOINLINE __attribute__((noinline, used))

int cfi_sink(int x);
NOINLINE int cfi_sink(int x) {
    __asm__ volatile("" : "+r"(x));
    return x;
}

/* preserve_most: the callee saves the argument and temporary registers as well (x86_64: rax..r11
 * but r11; arm64: x9..x15), which no compact encoding names. */
#define PRESERVE(name, k)                                                                     \
    __attribute__((preserve_most)) NOINLINE int name(int i) { return cfi_sink(i + k) + k; }
PRESERVE(cfi_pm_a, 1)
PRESERVE(cfi_pm_b, 2)

__attribute__((preserve_most)) NOINLINE int cfi_pm_big(int i) {
    volatile char buf[3000];
    buf[i % 3000] = (char)i;
    return cfi_sink(buf[(i * 7) % 3000]);
}

#if defined(__x86_64__)
/* ms_abi: rsi, rdi and xmm6..xmm15 are callee-saved, which compact unwind cannot say. */
__attribute__((ms_abi)) NOINLINE int cfi_ms_a(int i) {
    __asm__ volatile("" ::: "rsi", "rdi", "xmm6", "xmm7");
    return cfi_sink(i) + 1;
}
__attribute__((ms_abi)) NOINLINE int cfi_ms_b(int i) {
    __asm__ volatile("" ::: "rbx", "rsi", "xmm6", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
                     "xmm13", "xmm14", "xmm15");
    volatile char buf[200];
    buf[i % 200] = (char)i;
    return cfi_sink(buf[(i * 3) % 200]);
}
__attribute__((ms_abi)) NOINLINE long cfi_ms_c(long a, long b, long c, long d, long e) {
    __asm__ volatile("" ::: "rsi", "rdi", "r12", "r13", "r14", "r15");
    return cfi_sink((int)(a + b + c + d + e));
}
#endif

/* A cleanup around a call that may unwind (through a pointer): with -fexceptions a landing pad,
 * an LSDA and a personality ("zPLR" CIE). */
static void cfi_cleanup(int *p) { cfi_sink(*p); }
extern int (*const cfi_table[])(void);
NOINLINE int cfi_with_cleanup(int i) {
    __attribute__((cleanup(cfi_cleanup))) int guard = i;
    return cfi_table[i % 12]() + guard;
}

NOINLINE int cfi_vla(int n) {
    volatile char buf[n + 16];
    buf[n] = 1;
    return cfi_sink(buf[n / 2]);
}

NOINLINE int cfi_variadic(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, int);
    va_end(ap);
    return cfi_sink(s);
}

NOINLINE int cfi_recurse(int n) { return n <= 0 ? 0 : cfi_recurse(n - 1) + cfi_sink(n); }

NOINLINE int cfi_saves(int i) {
#if defined(__x86_64__)
    __asm__ volatile("" ::: "rbx", "r12", "r13", "r14", "r15");
#else
    __asm__ volatile("" ::: "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
                     "x28", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15");
#endif
    return cfi_sink(i) + 2;
}

/* The hand-written functions (cfi_<arch>.s). */
int cfi_sigtramp(void), cfi_sigframe(void), cfi_remember(int, int), cfi_thread_start(void);
int cfi_ra_in_reg(int), cfi_escapes(void), cfi_far(void), cfi_decline(void);
#if defined(__x86_64__)
int cfi_cfa_rbx(void), cfi_cfa_r12(void), cfi_cfa_r13(void), cfi_cfa_r14(void),
    cfi_cfa_r15(void);
#define CFA_FUNCS cfi_cfa_rbx, cfi_cfa_r12, cfi_cfa_r13, cfi_cfa_r14, cfi_cfa_r15
#else
int cfi_cfa_x19(void), cfi_cfa_x20(void), cfi_cfa_x21(void), cfi_cfa_x25(void),
    cfi_cfa_x28(void), cfi_pac(void);
#define CFA_FUNCS cfi_cfa_x19, cfi_cfa_x20, cfi_cfa_x21, cfi_cfa_x25, cfi_cfa_x28, cfi_pac
#endif
int (*const cfi_table[])(void) = {cfi_sigtramp, cfi_sigframe, cfi_thread_start, cfi_escapes,
                                  cfi_far, cfi_decline, CFA_FUNCS};

NOINLINE int cfi_all(int i) {
    int s = cfi_pm_a(i) + cfi_pm_b(i) + cfi_pm_big(i) + cfi_with_cleanup(i) + cfi_vla(i) +
            cfi_variadic(3, i, i, i) + cfi_recurse(i) + cfi_saves(i) + cfi_remember(i, i) +
            cfi_ra_in_reg(i) + cfi_table[i % 12]();
#if defined(__x86_64__)
    s += cfi_ms_a(i) + cfi_ms_b(i) + (int)cfi_ms_c(i, i, i, i, i);
#endif
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    return cfi_all(argc);
}
