/* SPDX-License-Identifier: MIT */
/* Read-only mappings of files the tools did not write, surviving the file shrinking under them. */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"

/* A file that shrinks while mapped (a `cp` over a binary in a symbols directory) makes reads past
 * its new end raise SIGBUS. The handler puts zero pages there instead and says so on stderr: the
 * parsers already treat every byte as hostile, so zeros cost a wrong answer at worst, not the
 * process. It also takes such faults in mappings made by others (libdw maps debug files itself)
 * when the kernel says "past the end of the object" (BUS_ADRERR); any other SIGBUS gets the
 * default action back and kills as before. */
#define MAPS_MAX 1024u
#define PATH_MAX_SHOWN 200u

typedef struct map_ent {
    uintptr_t lo, hi; /* lo: 0 for a free slot, published last */
    char path[PATH_MAX_SHOWN + 1];
} map_ent_t;

static map_ent_t g_maps[MAPS_MAX];
static int g_installed;
static uintptr_t g_page;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr, page = g_page;
    uintptr_t lo = a & ~(page - 1), hi = lo + page;
    const char *path = NULL;
    for (unsigned i = 0; i < MAPS_MAX && !path; i++) {
        uintptr_t l = __atomic_load_n(&g_maps[i].lo, __ATOMIC_ACQUIRE);
        if (l > 1 && a >= l && a < g_maps[i].hi) {
            hi = (g_maps[i].hi + page - 1) & ~(page - 1); /* the rest of the mapping at once */
            path = g_maps[i].path;
        }
    }
    if ((!path && si->si_code != BUS_ADRERR) ||
        mmap((void *)lo, hi - lo, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
            MAP_FAILED) {
        signal(SIGBUS, SIG_DFL); /* pending until the handler returns, then kills */
        raise(SIGBUS);
        return;
    }
    char msg[PATH_MAX_SHOWN + 128];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, path ? path : "a mapped file");
    fl_strbuf_puts(&sb, " shrank while it was being read: its bytes past the new end read as "
                        "zeros, and what was found in it may be incomplete");
    fl_log_stderr(msg);
}

static bool g_own; /* fl_file_map_own_sigbus */

void fl_file_map_own_sigbus(void) { g_own = true; }

int fl_file_map(int fd, uint64_t size, const char *path, const void **out) {
    *out = NULL;
    if (size == 0 || size > SIZE_MAX) return FL_EINVAL;
    if (!__atomic_exchange_n(&g_installed, 1, __ATOMIC_ACQ_REL)) {
        g_page = (uintptr_t)sysconf(_SC_PAGESIZE);
        struct sigaction sa = {0}, cur;
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        /* Only over the default action unless told otherwise: inside an application
         * (fl_symbolize_local) SIGBUS is the crash handler's, or the application's, and stays
         * theirs. */
        if (g_own || (sigaction(SIGBUS, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
                      cur.sa_handler == SIG_DFL))
            sigaction(SIGBUS, &sa, NULL);
    }
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return FL_EIO;
    for (unsigned i = 0; i < MAPS_MAX; i++) {
        map_ent_t *e = &g_maps[i];
        uintptr_t free_ = 0; /* claimed as 1 (ignored by the handler) until filled in */
        if (!__atomic_compare_exchange_n(&e->lo, &free_, 1, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        /* Printable ASCII only: the name goes to a terminal from a signal handler. */
        size_t n = 0;
        for (const char *c = path ? path : "?"; *c && n < PATH_MAX_SHOWN; c++, n++)
            e->path[n] = *c >= 0x20 && *c < 0x7f ? *c : '?';
        e->path[n] = 0;
        e->hi = (uintptr_t)m + (size_t)size;
        __atomic_store_n(&e->lo, (uintptr_t)m, __ATOMIC_RELEASE);
        break;
    } /* (all slots taken: still mapped; a shrink is then handled as anyone's mapping) */
    *out = m;
    return 0;
}

void fl_file_unmap(const void *map, uint64_t size) {
    if (!map) return;
    for (unsigned i = 0; i < MAPS_MAX; i++)
        if (__atomic_load_n(&g_maps[i].lo, __ATOMIC_ACQUIRE) == (uintptr_t)map)
            __atomic_store_n(&g_maps[i].lo, 0, __ATOMIC_RELEASE);
    munmap((void *)(uintptr_t)map, (size_t)size);
}
