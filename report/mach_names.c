/* SPDX-License-Identifier: MIT */
/* Mach exception and exception-code names (values of <mach/exception_types.h> and friends). */
#include "report/report.h"

#pragma GCC poison malloc calloc realloc free printf fprintf snprintf sprintf

const char *fl_mach_exception_name(int type) {
    switch (type) {
    case 1: return "EXC_BAD_ACCESS";
    case 2: return "EXC_BAD_INSTRUCTION";
    case 3: return "EXC_ARITHMETIC";
    case 4: return "EXC_EMULATION";
    case 5: return "EXC_SOFTWARE";
    case 6: return "EXC_BREAKPOINT";
    case 7: return "EXC_SYSCALL";
    case 8: return "EXC_MACH_SYSCALL";
    case 9: return "EXC_RPC_ALERT";
    case 10: return "EXC_CRASH";
    case 11: return "EXC_RESOURCE";
    case 12: return "EXC_GUARD";
    case 13: return "EXC_CORPSE_NOTIFY";
    default: return "";
    }
}

static const char *bad_access(int arch, uint64_t code) {
    switch (code) {
    case 1: return "KERN_INVALID_ADDRESS";
    case 2: return "KERN_PROTECTION_FAILURE";
    default: break;
    }
    if (arch == FL_REGS_ARCH_ARM64) {
        switch (code) {
        case 0x101: return "EXC_ARM_DA_ALIGN";
        case 0x102: return "EXC_ARM_DA_DEBUG";
        case 0x103: return "EXC_ARM_SP_ALIGN";
        case 0x104: return "EXC_ARM_SWP";
        case 0x105: return "EXC_ARM_PAC_FAIL";
        default: return "";
        }
    }
    return arch == FL_REGS_ARCH_X86_64 && code == 13 ? "EXC_I386_GPFLT" : "";
}

static const char *arithmetic(int arch, uint64_t code) {
    static const char *const arm[] = {"EXC_ARM_FP_UNDEFINED", "EXC_ARM_FP_IO", "EXC_ARM_FP_DZ",
                                      "EXC_ARM_FP_OF", "EXC_ARM_FP_UF", "EXC_ARM_FP_IX",
                                      "EXC_ARM_FP_ID"};
    static const char *const x86[] = {NULL, "EXC_I386_DIV", "EXC_I386_INTO", "EXC_I386_NOEXT",
                                      "EXC_I386_EXTOVR", "EXC_I386_EXTERR", "EXC_I386_EMERR",
                                      "EXC_I386_BOUND", "EXC_I386_SSEEXTERR"};
    if (arch == FL_REGS_ARCH_ARM64 && code < FL_ARRAY_LEN(arm) && arm[code]) return arm[code];
    if (arch == FL_REGS_ARCH_X86_64 && code < FL_ARRAY_LEN(x86) && x86[code]) return x86[code];
    return "";
}

const char *fl_mach_exception_code_name(int arch, int type, uint64_t code0) {
    switch (type) {
    case 1: return bad_access(arch, code0);
    case 2:
        if (code0 != 1) return "";
        return arch == FL_REGS_ARCH_ARM64 ? "EXC_ARM_UNDEFINED"
               : arch == FL_REGS_ARCH_X86_64 ? "EXC_I386_INVOP" : "";
    case 3: return arithmetic(arch, code0);
    case 5:
        switch (code0) {
        case 0x10000: return "EXC_UNIX_BAD_SYSCALL";
        case 0x10001: return "EXC_UNIX_BAD_PIPE";
        case 0x10002: return "EXC_UNIX_ABORT";
        case 0x10003: return "EXC_SOFT_SIGNAL";
        default: return "";
        }
    case 6:
        if (arch == FL_REGS_ARCH_ARM64) return code0 == 1 ? "EXC_ARM_BREAKPOINT" : "";
        if (arch == FL_REGS_ARCH_X86_64)
            return code0 == 1 ? "EXC_I386_SGL" : code0 == 2 ? "EXC_I386_BPT" : "";
        return "";
    default: return "";
    }
}
