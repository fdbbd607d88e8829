/* SPDX-License-Identifier: MIT */
/* Test binary: functions with many kinds of compact unwind encodings (see build.sh). */
#include <stdarg.h>

#define NOINLINE __attribute__((noinline, used))

int cu_sink(int x);
NOINLINE int cu_sink(int x) {
    __asm__ volatile("" : "+r"(x));
    return x;
}

NOINLINE int cu_leaf_add(int a, int b) { return a + b; }

NOINLINE int cu_leaf_small(int i) {
    volatile int a[8];
    for (int k = 0; k < 8; k++) a[k] = k * i;
    return a[i & 7];
}

NOINLINE int cu_leaf_big(int i) {
    volatile char buf[6000];
    buf[i % 6000] = (char)i;
    return buf[(i * 7) % 6000];
}

/* Over 65520 bytes: beyond what an arm64 frameless encoding can hold. */
NOINLINE int cu_leaf_huge(int i) {
    volatile char buf[70000];
    buf[i % 70000] = (char)i;
    return buf[(i * 3) % 70000];
}

NOINLINE int cu_calls(int i) { return cu_sink(i) + cu_sink(i + 1); }

/* Callee-saved registers: each function clobbers a different set and calls out, so they are
 * saved in the prologue. */
#if defined(__x86_64__)
#define R1 "rbx"
#define R2 "r12"
#define R3 "r13"
#define R4 "r14"
#define R5 "r15"
#define SAVE(name, ...)                                                                       \
    NOINLINE int name(int i) {                                                                \
        __asm__ volatile("" ::: __VA_ARGS__);                                                 \
        return cu_sink(i) + 1;                                                                \
    }
SAVE(cu_save_a, R1)
SAVE(cu_save_b, R1, R2)
SAVE(cu_save_c, R3, R4)
SAVE(cu_save_d, R2, R3, R4)
SAVE(cu_save_e, R1, R2, R3, R4, R5)
SAVE(cu_save_f, R5)
SAVE(cu_save_g, R1, R5)
SAVE(cu_save_h, R2, R4)
SAVE(cu_save_i, R1, R3, R5)
SAVE(cu_save_j, R2, R3, R4, R5)
#elif defined(__aarch64__)
#define SAVE(name, ...)                                                                       \
    NOINLINE int name(int i) {                                                                \
        __asm__ volatile("" ::: __VA_ARGS__);                                                 \
        return cu_sink(i) + 1;                                                                \
    }
SAVE(cu_save_a, "x19")
SAVE(cu_save_b, "x19", "x20", "x21")
SAVE(cu_save_c, "x23", "x24")
SAVE(cu_save_d, "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28")
SAVE(cu_save_e, "d8")
SAVE(cu_save_f, "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15")
SAVE(cu_save_g, "x19", "d8", "d9")
SAVE(cu_save_h, "x27", "x28", "d14", "d15")
SAVE(cu_save_i, "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "d8",
     "d9", "d10", "d11", "d12", "d13", "d14", "d15")
SAVE(cu_save_j, "x21", "x25")
#endif

/* A leaf that saves callee-saved registers and has no locals: on arm64 without a frame
 * pointer, FRAMELESS with saved pairs. */
NOINLINE int cu_leaf_saves(int i) {
#if defined(__x86_64__)
    __asm__ volatile("" ::: "rbx", "r12");
#elif defined(__aarch64__)
    __asm__ volatile("" ::: "x19", "x20", "x21", "x22", "d8", "d9");
#endif
    return i + 1;
}

/* Register pressure in a leaf: callee-saved registers without a call. */
NOINLINE long cu_pressure(const long *p, int n) {
    long a = 0, b = 1, c = 2, d = 3, e = 4, f = 5, g = 6, h = 7, k = 8, l = 9, m = 10, o = 11;
    long q = 12, r = 13, s = 14, t = 15, u = 16, v = 17, w = 18, x = 19;
    for (int i = 0; i < n; i++) {
        a += p[i] * b; b ^= p[i] + c; c += p[i] << 1; d -= p[i] * e; e += p[i] ^ f;
        f += p[i] * g; g -= p[i] + h; h ^= p[i] * k; k += p[i] - l; l += p[i] * m;
        m ^= p[i] + o; o += p[i] * q; q -= p[i] ^ r; r += p[i] * s; s ^= p[i] - t;
        t += p[i] * u; u -= p[i] + v; v ^= p[i] * w; w += p[i] - x; x += p[i] * a;
        __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g),
                         "+r"(h), "+r"(k), "+r"(l));
    }
    return a + b + c + d + e + f + g + h + k + l + m + o + q + r + s + t + u + v + w + x;
}

/* A large frame and saved registers together (x86_64 without frame pointer: STACK_IND with a
 * register list). */
NOINLINE int cu_big_saves(int i) {
    volatile char buf[4000];
    buf[i % 4000] = (char)i;
#if defined(__x86_64__)
    __asm__ volatile("" ::: "rbx", "r12", "r14");
#elif defined(__aarch64__)
    __asm__ volatile("" ::: "x19", "x20", "x22");
#endif
    return cu_sink(buf[(i * 5) % 4000]);
}

NOINLINE int cu_variadic(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, int);
    va_end(ap);
    return cu_sink(s);
}

NOINLINE int cu_alloca(int n) {
    volatile char *p = __builtin_alloca((unsigned)n + 16);
    p[n] = 1;
    return cu_sink(p[n / 2]);
}

NOINLINE int cu_recurse(int n) { return n <= 0 ? 0 : cu_recurse(n - 1) + cu_sink(n); }

/* A function with CFI that compact unwind cannot describe (a .cfi_escape), so the linker
 * points its __unwind_info entry at its FDE in __eh_frame. */
int cu_dwarf(int x);
#if defined(__x86_64__)
__asm__(".text\n.globl _cu_dwarf\n.p2align 4\n_cu_dwarf:\n.cfi_startproc\n"
        "pushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
        "movq %rsp, %rbp\n.cfi_def_cfa_register %rbp\n.cfi_escape 0x2e, 0x00\n"
        "movl %edi, %eax\npopq %rbp\nretq\n.cfi_endproc\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl _cu_dwarf\n.p2align 2\n_cu_dwarf:\n.cfi_startproc\n"
        "stp x29, x30, [sp, #-16]!\n.cfi_def_cfa_offset 16\n.cfi_escape 0x2e, 0x00\n"
        "mov x29, sp\nldp x29, x30, [sp], #16\nret\n.cfi_endproc\n");
#endif

int cu_all(int i);
NOINLINE int cu_all(int i) {
    long p[4] = {i, i + 1, i + 2, i + 3};
    return cu_leaf_add(i, 1) + cu_leaf_saves(i) + cu_leaf_small(i) + cu_leaf_big(i) +
           cu_leaf_huge(i) + cu_calls(i) + cu_save_a(i) + cu_save_b(i) + cu_save_c(i) +
           cu_save_d(i) + cu_save_e(i) + cu_save_f(i) + cu_save_g(i) + cu_save_h(i) +
           cu_save_i(i) + cu_save_j(i) + (int)cu_pressure(p, 4) + cu_big_saves(i) +
           cu_variadic(3, i, i, i) + cu_alloca(i) + cu_recurse(i) + cu_dwarf(i);
}
