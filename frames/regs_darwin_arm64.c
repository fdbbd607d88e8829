/* SPDX-License-Identifier: MIT */
/* arm64 Darwin register set: accessors, and extraction from a ucontext or a Mach thread. */
#include <mach/mach.h>
#include <sys/ucontext.h>

#include "frames/cfi_darwin.h"

/* x0..x28, fp (x29), lr (x30), sp, pc, pstate: the order of regs_names.c, which is also the DWARF
 * numbering for 0..32 (x0..x30, sp 31, pc 32), so compact unwind's registers map one to one. */
enum { X0 = 0, FP = 29, LR = 30, SP = 31, PC = 32, PSTATE = 33, REG_COUNT };
_Static_assert(REG_COUNT == FL_REGS_ARM64_COUNT, "names in regs_names.c");

unsigned fl_regs_count(void) { return REG_COUNT; }
const char *fl_regs_name(unsigned i) { return fl_regs_arch_name(FL_REGS_ARCH_ARM64, i); }
uint64_t fl_regs_pc(const fl_regs_t *r) { return r->r[PC]; }
uint64_t fl_regs_sp(const fl_regs_t *r) { return r->r[SP]; }
uint64_t fl_regs_fp(const fl_regs_t *r) { return r->r[FP]; }
int fl_regs_arch(void) { return FL_REGS_ARCH_ARM64; }

/* Register values are kept as the thread had them, pointer-authentication bits included (a report
 * of EXC_ARM_PAC_FAIL needs them); the walker strips them where it uses one as an address. This
 * file is built for arm64, not arm64e, so the thread-state structs have plain fields
 * (__DARWIN_OPAQUE_ARM_THREAD_STATE64 is 0). */
static void from_state(fl_regs_t *r, const arm_thread_state64_t *ss) {
    fl_memset(r, 0, sizeof *r);
    for (unsigned i = 0; i < 29; i++) r->r[X0 + i] = ss->__x[i];
    r->r[FP] = ss->__fp;
    r->r[LR] = ss->__lr;
    r->r[SP] = ss->__sp;
    r->r[PC] = ss->__pc;
    r->r[PSTATE] = ss->__cpsr;
}

void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext) {
    const ucontext_t *uc = ucontext;
    from_state(r, &uc->uc_mcontext->__ss);
}

int fl_regs_from_mach_thread(fl_regs_t *r, uint32_t thread) {
    arm_thread_state64_t ss;
    mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
    if (thread_get_state(thread, ARM_THREAD_STATE64, (thread_state_t)&ss, &count) != KERN_SUCCESS)
        return FL_EIO;
    from_state(r, &ss);
    return 0;
}

/* Stores the general registers into r (x0 in the first slot, 8 bytes each): pc is the return
 * address (lr at entry) and sp is the caller's (a leaf without a frame leaves it unchanged). */
_Static_assert(FP == 29 && LR == 30 && SP == 31 && PC == 32, "asm layout");
__asm__(".text\n"
        ".globl _fl_regs_get_current\n"
        ".private_extern _fl_regs_get_current\n"
        ".p2align 2\n"
        "_fl_regs_get_current:\n"
        "  stp x0, x1, [x0, #0]\n   stp x2, x3, [x0, #16]\n   stp x4, x5, [x0, #32]\n"
        "  stp x6, x7, [x0, #48]\n  stp x8, x9, [x0, #64]\n   stp x10, x11, [x0, #80]\n"
        "  stp x12, x13, [x0, #96]\n stp x14, x15, [x0, #112]\n stp x16, x17, [x0, #128]\n"
        "  stp x18, x19, [x0, #144]\n stp x20, x21, [x0, #160]\n stp x22, x23, [x0, #176]\n"
        "  stp x24, x25, [x0, #192]\n stp x26, x27, [x0, #208]\n stp x28, x29, [x0, #224]\n"
        "  mov x1, sp\n"
        "  stp x30, x1, [x0, #240]\n"
        "  str x30, [x0, #256]\n"
        "  ret\n");

/* ---- Architecture hooks for the walker and the compact-unwind stepper ---- */

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp) {
    r->r[PC] = pc;
    r->r[SP] = sp;
    r->r[FP] = fp;
}

/* At a function's first instruction (a blr through a bad pointer lands pc there) nothing has been
 * pushed: the return address is in lr and sp is the caller's. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp) {
    (void)mem;
    if (r->r[SP] & 15) return FL_EBADDATA; /* sp is 16-byte aligned at every call */
    *caller_pc = fl_unwind_strip_pac(r->r[LR]);
    *caller_sp = r->r[SP];
    return 0;
}

/* The instruction before a return address is a call: bl, blr, or (arm64e) blraa/blrab and
 * blraaz/blrabz. Instructions are 4 bytes, little-endian, 4-byte aligned. */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc) {
    uint32_t insn;
    if (pc < 4 || (pc & 3) || fl_read_u32(mem, pc - 4, &insn)) return false;
    if ((insn & 0xfc000000u) == 0x94000000u) return true;                  /* bl imm26 */
    if ((insn & 0xfffffc1fu) == 0xd63f0000u) return true;                  /* blr xn */
    if ((insn & 0xfffff800u) == 0xd73f0800u) return true;                  /* blraa/blrab xn, xm */
    return (insn & 0xfffff81fu) == 0xd63f081fu;                            /* blraaz/blrabz xn */
}

int fl_unwind_arch_dwarf_reg(unsigned dwarf) { return dwarf <= PC ? (int)dwarf : -1; }
const unsigned fl_unwind_arch_dwarf_pc = PC, fl_unwind_arch_dwarf_sp = SP, fl_unwind_arch_dwarf_fp = FP;
