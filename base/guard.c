/* SPDX-License-Identifier: MIT */
/* Fault guards: a table of armed recovery points, found by thread id from a signal handler. */
#include "base/base.h"

/* Few threads capture at once (the crashing thread, a snapshot caller); a small table found by
 * tid avoids thread-local storage, which may be lazily allocated. */
#define GUARD_SLOTS 16
static fl_guard_t *volatile g_slots[GUARD_SLOTS];

void fl_guard_arm(fl_guard_t *g, int tid) {
    g->tid = tid;
    g->fired = 0;
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        fl_guard_t *expected = NULL;
        if (__atomic_compare_exchange_n(&g_slots[i], &expected, g, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return;
    }
    /* No free slot: the guard stays unregistered, so a fault is not recovered (the crash
     * handler then ends the process with the original signal). */
}

void fl_guard_disarm(fl_guard_t *g) {
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        fl_guard_t *expected = g;
        if (__atomic_compare_exchange_n(&g_slots[i], &expected, NULL, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            break;
    }
    g->tid = 0;
}

void fl_guard_recover(void) {
    int tid = (int)fl_sys_gettid();
    for (unsigned i = 0; i < GUARD_SLOTS; i++) {
        fl_guard_t *g = __atomic_load_n(&g_slots[i], __ATOMIC_SEQ_CST);
        if (g && g->tid == tid) {
            g->fired = 1;
            /* Disarm before jumping so a fault after the jump is not caught again. */
            __atomic_store_n(&g_slots[i], NULL, __ATOMIC_SEQ_CST);
            g->tid = 0;
            siglongjmp(g->env, 1);
        }
    }
}
