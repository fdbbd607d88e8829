/* SPDX-License-Identifier: MIT */
/* The benchmark's reference in mode (b): LLVM libunwind stepping the same faulting state. */
/* LLVM libunwind (zig's copy of its sources, built by build.sh for the same target, -O2) is the
 * unwinder Apple's libSystem is built from, and the one PLCrashReporter, KSCrash and Breakpad
 * are measured against. emu.py runs emu_ref_walk after the walker's passes, on the same
 * registers and stack, and counts the emulator's instructions between the writes of `phase` and
 * of each frame, as for the walker: unw_init_local, then unw_step and two unw_get_reg a frame.
 * libunwind keeps no rows between steps on Darwin (each step looks its function up in
 * __unwind_info and applies the encoding, or parses the FDE and runs its CFA program), so its
 * every step is a cold one. What it is given for free: dyld's answer to "which image holds this
 * pc, and where are its unwind sections" (_dyld_find_unwind_sections, below: a range check on
 * values emu.py found), which the walker pays for once per walk when it describes the image. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlfcn.h>
#include <libunwind.h>
#include <mach-o/dyld.h>
#include <stdio.h>
#include <stdlib.h>

#define EMU_REF_FRAMES 512u

typedef struct emu_ref_args {
    uint64_t regs[40];           /* in: fl_regs_t, which is libunwind's own GPR order on both
                                  * architectures (regs_names.c) */
    uint64_t header;             /* in: the mach_header_64 */
    uint64_t image_lo, image_hi; /* in: the image's mapped range */
    uint64_t unwind_info, unwind_info_size, eh_frame, eh_frame_size; /* in: its sections */
    uint64_t max;                /* in: frames wanted */
    uint64_t phase;              /* out: 1 before unw_init_local, 2 after */
    uint64_t count;              /* out: frames written */
    int64_t last;                /* out: unw_init_local's error, or unw_step's last result */
    uint64_t frames[EMU_REF_FRAMES][2]; /* out: pc, sp */
} emu_ref_args_t;
/* emu.py's layout of the structure. */
_Static_assert(offsetof(emu_ref_args_t, phase) == 384, "emu.py: R_PHASE");
_Static_assert(offsetof(emu_ref_args_t, frames) == 408, "emu.py: R_FRAMES");

void emu_ref_walk(emu_ref_args_t *a);

static const emu_ref_args_t *g_ref;

/* dyld's lookup, as libunwind's LocalAddressSpace::findUnwindSections calls it on Darwin. */
struct dyld_unwind_sections {
    const void *mh;
    const void *dwarf_section;
    uintptr_t dwarf_section_length;
    const void *compact_unwind_section;
    uintptr_t compact_unwind_section_length;
};
bool _dyld_find_unwind_sections(void *addr, struct dyld_unwind_sections *info);
bool _dyld_find_unwind_sections(void *addr, struct dyld_unwind_sections *info) {
    const emu_ref_args_t *a = g_ref;
    if ((uintptr_t)addr - a->image_lo >= a->image_hi - a->image_lo) return false;
    info->mh = (const void *)(uintptr_t)a->header;
    info->dwarf_section = (const void *)(uintptr_t)a->eh_frame;
    info->dwarf_section_length = a->eh_frame_size;
    info->compact_unwind_section = (const void *)(uintptr_t)a->unwind_info;
    info->compact_unwind_section_length = a->unwind_info_size;
    return true;
}

/* The rest of libSystem that libunwind.o names, none of it on a step's path: its error
 * reports (silent here: emu.py compares the frames), the FDE cache's growth (refused: the
 * static table is enough for these programs), unw_resume and unw_get_proc_name (never called). */
FILE *__stderrp;
int fprintf(FILE *restrict f, const char *restrict fmt, ...) { (void)f, (void)fmt; return 0; }
int (snprintf)(char *restrict s, size_t n, const char *restrict fmt, ...) {
    (void)fmt;
    if (n) s[0] = 0;
    return 0;
}
int fflush(FILE *f) { (void)f; return 0; }
size_t fwrite(const void *restrict p, size_t size, size_t n, FILE *restrict f) {
    (void)p, (void)size, (void)f;
    return n;
}
void *malloc(size_t n) { (void)n; return NULL; }
void free(void *p) { (void)p; }
void abort(void) { __builtin_trap(); }
int dladdr(const void *addr, Dl_info *info) { (void)addr, (void)info; return 0; }
void _dyld_register_func_for_remove_image(void (*fn)(const struct mach_header *, intptr_t)) {
    (void)fn;
}
void __libunwind_Registers_x86_64_jumpto(void *regs);
void __libunwind_Registers_x86_64_jumpto(void *regs) { (void)regs; __builtin_trap(); }
void __libunwind_Registers_arm64_jumpto(void *regs);
void __libunwind_Registers_arm64_jumpto(void *regs) { (void)regs; __builtin_trap(); }

__attribute__((used)) void emu_ref_walk(emu_ref_args_t *a) {
    g_ref = a;
    unw_context_t ctx;
    unw_cursor_t cur;
    /* x86_64: rax..gs (21, the whole context); arm64: x0..x28, fp, lr, sp, pc (the vector
     * registers stay 0) */
    unsigned n = sizeof(ctx.data) / 8 < 33 ? (unsigned)(sizeof(ctx.data) / 8) : 33;
    __builtin_memset(&ctx, 0, sizeof(ctx));
    for (unsigned i = 0; i < n; i++) ctx.data[i] = a->regs[i];
    unsigned max = a->max < EMU_REF_FRAMES ? (unsigned)a->max : EMU_REF_FRAMES;
    __atomic_store_n(&a->phase, 1, __ATOMIC_SEQ_CST);
    int e = unw_init_local(&cur, &ctx);
    __atomic_store_n(&a->phase, 2, __ATOMIC_SEQ_CST);
    a->last = e;
    if (e) return;
    unw_word_t pc = 0, sp = 0;
    unw_get_reg(&cur, UNW_REG_IP, &pc);
    unw_get_reg(&cur, UNW_REG_SP, &sp);
    a->frames[0][0] = pc, a->frames[0][1] = sp;
    unsigned k = 1;
    for (; k < max; k++) {
        e = unw_step(&cur);
        if (e <= 0) break;
        unw_get_reg(&cur, UNW_REG_IP, &pc);
        unw_get_reg(&cur, UNW_REG_SP, &sp);
        a->frames[k][0] = pc, a->frames[k][1] = sp;
    }
    a->count = k;
    a->last = e;
}
