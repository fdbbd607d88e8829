/* SPDX-License-Identifier: MIT */
/* What the privatised LLVM libunwind calls instead of the loader, the heap, stdio and locks. */
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>

#include "frames/cfi_linux.h"

/* Each shim replaces one libc symbol inside fl_unwind_private.o only (see
 * cmake/privatize-libunwind.sh); the application's own calls are untouched. */
#define SHIM(name) fl_lu_shim_##name
#define SHIM_DECL __attribute__((visibility("hidden")))

static const fl_image_list_t *volatile g_images;

void fl_unwind_shims_set_images(const fl_image_list_t *images) {
    __atomic_store_n(&g_images, images, __ATOMIC_RELEASE);
}

/* libunwind finds an address's .eh_frame_hdr by iterating the loaded objects. glibc's
 * dl_iterate_phdr takes the loader lock (a thread inside dlopen holds it: deadlock), so we hand
 * libunwind the images collected at crash time from the loader's list, read without the lock. */
SHIM_DECL int SHIM(dl_iterate_phdr)(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
    const fl_image_list_t *list = __atomic_load_n(&g_images, __ATOMIC_ACQUIRE);
    if (!list) return 0;
    for (unsigned i = 0; i < list->count; i++) {
        const fl_image_t *img = &list->image[i];
        if (!img->phdr_addr || !img->phnum) continue;
        struct dl_phdr_info info;
        fl_memset(&info, 0, sizeof info);
        info.dlpi_addr = img->slide;
        info.dlpi_name = img->path;
        info.dlpi_phdr = (const ElfW(Phdr) *)(uintptr_t)img->phdr_addr;
        info.dlpi_phnum = img->phnum;
        int r = cb(&info, sizeof info, data);
        if (r) return r;
    }
    return 0;
}

/* libunwind looks up glibc's _dl_find_object with dlsym on first use. Saying "absent" keeps it on
 * the path above, whose data we control, and keeps dlsym out of the crash path. */
SHIM_DECL void *SHIM(dlsym)(void *handle, const char *name) {
    (void)handle, (void)name;
    return NULL;
}

SHIM_DECL int SHIM(dladdr)(const void *addr, void *info) {
    (void)addr, (void)info;
    return 0;
}

/* libunwind allocates only to grow its FDE cache (for objects without .eh_frame_hdr). A bump
 * arena serves it without the heap; exhaustion returns NULL, which libunwind does not check, so
 * that fault lands in the walk's fault guard and the CFI step simply fails. */
static unsigned char g_arena[256 * 1024] __attribute__((aligned(16)));
static size_t g_arena_used;

SHIM_DECL void *SHIM(malloc)(size_t n) {
    n = (n + 15) & ~(size_t)15;
    size_t old = __atomic_fetch_add(&g_arena_used, n, __ATOMIC_RELAXED);
    if (old > sizeof g_arena || n > sizeof g_arena - old) return NULL;
    return g_arena + old;
}
SHIM_DECL void *SHIM(calloc)(size_t a, size_t b) {
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) return NULL;
    void *p = SHIM(malloc)(n);
    if (p) fl_memset(p, 0, n);
    return p;
}
SHIM_DECL void *SHIM(realloc)(void *p, size_t n) {
    (void)p, (void)n;
    return NULL;
}
SHIM_DECL void SHIM(free)(void *p) { (void)p; }

/* The FDE cache's reader/writer lock. Only faultline's own walks use this libunwind copy; a
 * bounded spin keeps a walk that races a snapshot from ever blocking. */
static volatile int g_lock;
static void lock(void) {
    for (unsigned i = 0; i < 1000000 && __atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE); i++) {
    }
}
SHIM_DECL int SHIM(pthread_rwlock_rdlock)(void *l) { (void)l; lock(); return 0; }
SHIM_DECL int SHIM(pthread_rwlock_wrlock)(void *l) { (void)l; lock(); return 0; }
SHIM_DECL int SHIM(pthread_rwlock_unlock)(void *l) {
    (void)l;
    __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
    return 0;
}

/* Logging: silent. */
SHIM_DECL void *SHIM(stderr) = NULL;
SHIM_DECL int SHIM(fprintf)(void *f, const char *fmt, ...) { (void)f, (void)fmt; return 0; }
SHIM_DECL int SHIM(__fprintf_chk)(void *f, int flag, const char *fmt, ...) {
    (void)f, (void)flag, (void)fmt;
    return 0;
}
SHIM_DECL size_t SHIM(fwrite)(const void *p, size_t a, size_t b, void *f) {
    (void)p, (void)a, (void)f;
    return b;
}
SHIM_DECL int SHIM(fflush)(void *f) { (void)f; return 0; }
SHIM_DECL int SHIM(snprintf)(char *s, size_t n, const char *fmt, ...) {
    (void)fmt;
    if (n) s[0] = 0;
    return 0;
}
SHIM_DECL char *SHIM(getenv)(const char *name) { (void)name; return NULL; }

/* libunwind aborts on unwind information it cannot handle. Inside a walk that is one failed
 * step, not the end of the process: jump back to the walk's fault guard. */
SHIM_DECL void SHIM(abort)(void) {
    fl_guard_recover();
    abort(); /* no guard armed: not on the crash path (install-time warm-up) */
}
SHIM_DECL void SHIM(__assert_fail)(const char *a, const char *f, unsigned l, const char *fn) {
    (void)a, (void)f, (void)l, (void)fn;
    SHIM(abort)();
}
