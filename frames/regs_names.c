/* SPDX-License-Identifier: MIT */
/* Register names of every supported architecture: for the register sets and for report readers. */
#include "frames/frames.h"

/* x86_64: the order of regs_linux_x86_64.c (LLVM libunwind's GPR layout first). */
static const char *const k_x86_64[] = {
    "rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "rsp", "r8",  "r9",     "r10", "r11",
    "r12", "r13", "r14", "r15", "rip", "rflags", "cs", "fs", "gs", "err", "trapno", "cr2"};
_Static_assert(FL_ARRAY_LEN(k_x86_64) == FL_REGS_X86_64_COUNT, "x86_64 register names");

/* arm64: x0..x28, x29 as "fp", x30 as "lr", then sp, pc, pstate. */
static const char *const k_arm64[] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10", "x11",
    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
    "x24", "x25", "x26", "x27", "x28", "fp",  "lr",  "sp",  "pc",  "pstate"};
_Static_assert(FL_ARRAY_LEN(k_arm64) == FL_REGS_ARM64_COUNT, "arm64 register names");
_Static_assert(FL_REGS_X86_64_COUNT <= FL_REGS_MAX && FL_REGS_ARM64_COUNT <= FL_REGS_MAX,
               "register sets larger than fl_regs_t");

unsigned fl_regs_arch_count(int arch) {
    switch (arch) {
    case FL_REGS_ARCH_X86_64: return FL_REGS_X86_64_COUNT;
    case FL_REGS_ARCH_ARM64: return FL_REGS_ARM64_COUNT;
    default: return 0;
    }
}

const char *fl_regs_arch_name(int arch, unsigned i) {
    if (i >= fl_regs_arch_count(arch))
        return "";
    return arch == FL_REGS_ARCH_X86_64 ? k_x86_64[i] : k_arm64[i];
}

/* DWARF numbering (fl_dwarf_regs_t): x86_64 rax rdx rcx rbx rsi rdi rbp rsp r8..r15, the return
 * address column as "rip"; arm64 x0..x30 (fp, lr), sp, pc. */
static const char *const k_dwarf_x86_64[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp",
                                             "rsp", "r8",  "r9",  "r10", "r11", "r12", "r13",
                                             "r14", "r15", "rip"};

const char *fl_dwarf_reg_name(int arch, unsigned reg) {
    if (arch == FL_REGS_ARCH_X86_64) return reg < FL_ARRAY_LEN(k_dwarf_x86_64) ? k_dwarf_x86_64[reg] : "";
    if (arch == FL_REGS_ARCH_ARM64) return reg < FL_DWARF_REGS ? k_arm64[reg] : "";
    return "";
}
