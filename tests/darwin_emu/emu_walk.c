/* SPDX-License-Identifier: MIT */
/* Mode (b) of the emulation harness: the Darwin-built walker's entry in the test Mach-O. */
/* emu.py plays the kernel: after the fault it writes the faulting registers into an
 * emu_walk_args_t outside the image and the stack, and runs emu_walk on a stack of its own.
 * The walk is the crash path's: the image described from its header in memory
 * (fl_macho_image_describe), the stack read in place and everything else through a reader that
 * answers only for the image's mapped range (FL_EFAULT elsewhere, as vm_read_overwrite would
 * for unmapped memory). Up to five walks, those `passes` asks for: 0 frame pointers only
 * (use_cfi = false: the cost of a frame-pointer step), 1 the crash path's (unwind tables first),
 * 2 the same again with the CFI row cache warm, each into frames[pass]; emu.py counts the
 * instructions between the writes of `phase` and of each frame. 3 and 4 walk as 1 and 2 (3
 * after a flush of the row cache: cold again) but with env.frame_regs, into reg_frames and
 * frame_regs[pass - 3]: the registers the walker knows at each frame, which emu.py compares
 * with the traced truth. They are separate walks because frame_regs turns the cached fast path
 * off, which 1 and 2 must keep (their frames are checked, their instructions counted); emu.py
 * runs them in a second, uncounted call. */
#include <stddef.h>

#include "frames/frames.h"
#include "macho/macho.h"

#define EMU_FRAMES_MAX 512u
#define EMU_PASSES 3u     /* crash path: fp only, cold, warm */
#define EMU_REG_PASSES 2u /* with frame_regs: cold, warm */

typedef struct emu_walk_args {
    uint64_t regs[FL_REGS_MAX];  /* in: fl_regs_t, the architecture's order (regs_names.c) */
    uint64_t header;             /* in: runtime address of the mach_header_64 */
    uint64_t image_lo, image_hi; /* in: the image's mapped segments */
    uint64_t stack_lo, stack_hi; /* in: the faulting thread's stack */
    uint64_t max;                /* in: frames wanted (at most EMU_FRAMES_MAX) */
    uint64_t phase;              /* out: 2 * pass + 1 before describing the image, + 2 before
                                  * walking */
    int64_t describe_error;      /* out: fl_macho_image_describe's result (the last) */
    uint64_t count[EMU_PASSES];  /* out, per pass: frames */
    uint64_t truncated[EMU_PASSES];
    uint64_t stop_reason[EMU_PASSES]; /* the address of the walk's static stop reason */
    fl_frame_t frames[EMU_PASSES][EMU_FRAMES_MAX];
    uint64_t passes;             /* in: bit k set: run pass k (0..4) */
    /* out, for passes 3 and 4: as count, truncated, stop_reason and frames, and each frame's
     * registers (env.frame_regs) */
    uint64_t reg_count[EMU_REG_PASSES];
    uint64_t reg_truncated[EMU_REG_PASSES];
    uint64_t reg_stop_reason[EMU_REG_PASSES];
    fl_frame_t reg_frames[EMU_REG_PASSES][EMU_FRAMES_MAX];
    fl_dwarf_regs_t frame_regs[EMU_REG_PASSES][EMU_FRAMES_MAX];
} emu_walk_args_t;
/* emu.py's layout of the structure. */
_Static_assert(offsetof(emu_walk_args_t, header) == 320, "emu.py: header");
_Static_assert(offsetof(emu_walk_args_t, phase) == 368, "emu.py: phase");
_Static_assert(offsetof(emu_walk_args_t, count) == 384, "emu.py: count");
_Static_assert(offsetof(emu_walk_args_t, frames) == 456, "emu.py: frames");
_Static_assert(offsetof(emu_walk_args_t, passes) == 37320, "emu.py: passes");
_Static_assert(offsetof(emu_walk_args_t, reg_count) == 37328, "emu.py: reg_count");
_Static_assert(offsetof(emu_walk_args_t, reg_frames) == 37376, "emu.py: reg_frames");
_Static_assert(offsetof(emu_walk_args_t, frame_regs) == 61952, "emu.py: frame_regs");
_Static_assert(sizeof(emu_walk_args_t) == 340480, "emu.py: ARGS_SIZE");
_Static_assert(sizeof(fl_frame_t) == 24, "emu.py: frame size");
_Static_assert(sizeof(fl_dwarf_regs_t) == 272 && FL_DWARF_REGS == 33,
               "emu.py: fl_dwarf_regs_t (r[33], valid)");

void emu_walk(emu_walk_args_t *a);

static fl_image_list_t emu_images; /* ~1.4 MiB of zero fill: the crash path's static list */

static int image_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    uint64_t end;
    if (addr < r->origin || !fl_add_u64(addr, len, &end) || end > r->origin + r->size)
        return FL_EFAULT;
    fl_memcpy(dst, (const void *)(uintptr_t)addr, len);
    return 0;
}

__attribute__((used)) void emu_walk(emu_walk_args_t *a) {
    fl_reader_t image = {.read = image_read, .origin = a->image_lo,
                         .size = a->image_hi - a->image_lo};
    fl_reader_t mem;
    fl_reader_init_range(&mem, a->stack_lo, a->stack_hi, &image);
    fl_regs_t regs;
    for (unsigned i = 0; i < FL_REGS_MAX; i++) regs.r[i] = a->regs[i];
    unsigned max = a->max < EMU_FRAMES_MAX ? (unsigned)a->max : EMU_FRAMES_MAX;
    for (unsigned pass = 0; pass < EMU_PASSES + EMU_REG_PASSES; pass++) {
        if (!(a->passes >> pass & 1)) continue;
        bool regs_pass = pass >= EMU_PASSES;
        unsigned k = regs_pass ? pass - EMU_PASSES : pass;
        if (pass == EMU_PASSES) fl_frames_cfi_cache_flush(); /* pass 3 starts cold */
        /* The image list is built in each pass, as each capture does. */
        __atomic_store_n(&a->phase, 2 * pass + 1, __ATOMIC_SEQ_CST);
        emu_images.count = 1;
        a->describe_error = fl_macho_image_describe(&mem, a->header, &emu_images.image[0]);
        /* As the Darwin collector leaves it (fl_macho_dyld_collect): tables read in place. */
        emu_images.image[0].tables_lo = emu_images.image[0].start;
        emu_images.image[0].tables_hi = emu_images.image[0].text_end;
        fl_images_sort(&emu_images);
        fl_walk_env_t env = {.mem = &mem, .images = &emu_images, .stack_lo = a->stack_lo,
                             .stack_hi = a->stack_hi, .use_cfi = pass > 0,
                             .frame_regs = regs_pass ? a->frame_regs[k] : NULL};
        fl_walk_result_t res;
        __atomic_store_n(&a->phase, 2 * pass + 2, __ATOMIC_SEQ_CST);
        fl_frames_walk(&env, &regs, regs_pass ? a->reg_frames[k] : a->frames[k], max, &res);
        (regs_pass ? a->reg_count : a->count)[k] = res.count;
        (regs_pass ? a->reg_truncated : a->truncated)[k] = res.truncated;
        (regs_pass ? a->reg_stop_reason : a->stop_reason)[k] = (uint64_t)(uintptr_t)res.stop_reason;
    }
}
