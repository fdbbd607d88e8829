/* SPDX-License-Identifier: MIT */
/* Stacks on demand: fl_backtrace and fl_thread_backtrace, over the crash path's walker. */
#include "crash/crash.h"

#pragma GCC poison malloc calloc realloc free

/* Frames one walk may need: max entries wanted, plus the walker's window on the outermost frames
 * of a deeper stack (a quarter of its buffer), plus our own frame. */
#define WALK_MAX (FL_MAX_FRAMES_LIMIT + FL_MAX_FRAMES_LIMIT / 3u + 8u)

/* What one walk reads at the call: the image list and the memory map, into prepared memory (BSS:
 * the kernel supplies the pages when a slot is first used; nothing is allocated). A slot is taken
 * with a compare-and-swap and never waited for: a call that finds them all taken (threads, or a
 * signal handler interrupting a call on the same thread) gets FL_EBUSY. */
typedef struct slot {
    volatile int busy;
    fl_image_list_t images;
    fl_maps_t maps;
    char scratch[64 * 1024];
    fl_frame_t frames[WALK_MAX];
} slot_t;
static slot_t g_slots[FL_BACKTRACE_CONCURRENCY];

static slot_t *slot_take(void) {
    for (unsigned i = 0; i < FL_BACKTRACE_CONCURRENCY; i++)
        if (!__atomic_exchange_n(&g_slots[i].busy, 1, __ATOMIC_ACQUIRE)) return &g_slots[i];
    return NULL;
}
static void slot_put(slot_t *s) { __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE); }

/* Images and maps as they are now: libraries loaded or unloaded since fl_install are seen, as
 * they are by a crash report. The loader's list is read at each call, and the images whose
 * entries did not change since the slot's previous call are kept as read then. */
static int slot_read(slot_t *s) {
    int maps_err = 0, img_err = 0;
    fl_crash_os_images(&s->images, &s->maps, s->scratch, sizeof s->scratch, true, &maps_err,
                       &img_err);
    if (maps_err) return FL_EIO; /* the stack's bounds are unknown */
    if (img_err && !s->images.count) return img_err;
    return 0;
}

/* The walker's buffer for `want` frames: with more than 8 it keeps only the first three quarters
 * of its buffer for the innermost frames (fl_frames_walk), so it gets a third more. */
static unsigned walk_size(size_t want) {
    size_t w = want + want / 3 + 2;
    return w > WALK_MAX ? WALK_MAX : (unsigned)w;
}

/* The innermost frames of a walk, from frame `skip` on, as pcs. */
static int copy_pcs(const fl_frame_t *f, const fl_walk_result_t *res, unsigned skip, uintptr_t *pcs,
                    size_t max) {
    unsigned n = res->omitted ? res->omitted_at : res->count;
    size_t out = 0;
    for (unsigned i = skip; i < n && out < max; i++) pcs[out++] = (uintptr_t)f[i].pc;
    return (int)out;
}

/* Walks the calling thread from regs, which the caller took in its own frame (still live). */
static int walk_current(slot_t *s, const fl_regs_t *regs, unsigned skip, uintptr_t *pcs,
                        size_t max) {
    uint64_t sp = fl_regs_sp(regs);
    fl_map_t tmp;
    const fl_map_t *sm = fl_crash_os_stack(&s->maps, sp, &tmp);
    fl_reader_t stack;
    /* concurrent: other threads run and may unload images while we walk. */
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &s->images, .concurrent = true,
                         .use_cfi = true, .maps = &s->maps};
    /* Our own stack, from sp up, is mapped while we run on it: plain copies. */
    fl_walk_env_stack(&env, sm, sp, &stack, true);
    fl_walk_result_t res;
    fl_frames_walk(&env, regs, s->frames, walk_size(max + skip), &res);
    return copy_pcs(s->frames, &res, skip, pcs, max);
}

static int check_args(const uintptr_t *pcs, size_t *max) {
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    if (!pcs && *max) return FL_EINVAL;
    if (*max > FL_MAX_FRAMES_LIMIT) *max = FL_MAX_FRAMES_LIMIT;
    return 0;
}

/* noinline: frame 0 of the walk is this function (skipped), frame 1 its caller. */
__attribute__((noinline)) int fl_backtrace(uintptr_t *pcs, size_t max) {
    int e = check_args(pcs, &max);
    if (e) return e;
    if (!max) return 0;
    slot_t *s = slot_take();
    if (!s) return FL_EBUSY;
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    fl_regs_get_current(&regs);
    e = slot_read(s);
    int n = e ? e : walk_current(s, &regs, 1, pcs, max);
    slot_put(s);
    return n;
}

__attribute__((noinline)) int fl_thread_backtrace(long tid, uintptr_t *pcs, size_t max) {
    int e = check_args(pcs, &max);
    if (e) return e;
    if (tid <= 0 || tid > 0x7fffffffL) return FL_EINVAL;
    slot_t *s = slot_take();
    if (!s) return FL_EBUSY;
    int n;
    if (tid == fl_crash_os_thread_self()) {
        /* Ourselves: what fl_backtrace gives (no signal to our own thread). */
        fl_regs_t regs;
        fl_memset(&regs, 0, sizeof regs);
        fl_regs_get_current(&regs);
        e = slot_read(s);
        n = e ? e : walk_current(s, &regs, 1, pcs, max);
    } else if ((e = slot_read(s)) != 0) {
        n = e;
    } else if (!fl_crash_inline_begin()) {
        /* The capture machinery serves one request at a time: a snapshot, a crash or another
         * fl_thread_backtrace has it. (The images and maps were read before: held only while
         * the thread is asked.) */
        n = FL_EBUSY;
    } else {
        fl_selfwalk_t sw = {.images = &s->images, .maps = &s->maps, .max_frames = walk_size(max)};
        fl_walk_result_t res;
        e = fl_crash_os_thread_walk(tid, &sw, s->frames, sw.max_frames, &res);
        n = e ? e : copy_pcs(s->frames, &res, 0, pcs, max);
        fl_crash_inline_end();
    }
    slot_put(s);
    return n;
}
