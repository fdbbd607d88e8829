/* SPDX-License-Identifier: MIT */
/* fl_annotate: a fixed table of key/value slots, each guarded by a sequence counter for readers. */
#include <pthread.h>

#include "crash/crash.h"

typedef struct slot {
    volatile unsigned seq; /* odd while a writer is inside */
    volatile bool used;
    char key[FL_MAX_ANNOTATION_BYTES];
    char value[FL_MAX_ANNOTATION_BYTES];
} slot_t;

static slot_t g_slots[FL_MAX_ANNOTATIONS];
static pthread_mutex_t g_write_lock = PTHREAD_MUTEX_INITIALIZER;

static void slot_write(slot_t *s, const char *key, const char *value) {
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_SEQ_CST);
    if (value) {
        fl_strlcpy(s->key, key, sizeof s->key);
        fl_strlcpy(s->value, value, sizeof s->value);
    }
    s->used = value != NULL;
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_SEQ_CST);
}

int fl_annotate(const char *key, const char *value) {
    if (!key || !*key) return FL_EINVAL;
    char k[FL_MAX_ANNOTATION_BYTES];
    fl_strlcpy(k, key, sizeof k); /* compare as stored: long keys are truncated */
    int ret = FL_OK;
    pthread_mutex_lock(&g_write_lock);
    slot_t *free_slot = NULL, *found = NULL;
    for (unsigned i = 0; i < FL_MAX_ANNOTATIONS && !found; i++) {
        if (g_slots[i].used && fl_strcmp(g_slots[i].key, k) == 0) found = &g_slots[i];
        else if (!g_slots[i].used && !free_slot) free_slot = &g_slots[i];
    }
    if (found) slot_write(found, k, value);
    else if (!value) ret = FL_OK; /* removing an absent key */
    else if (free_slot) slot_write(free_slot, k, value);
    else ret = FL_ERANGE;
    pthread_mutex_unlock(&g_write_lock);
    return ret;
}

void fl_annotations_each(fl_annotation_fn fn, void *ctx) {
    static char key[FL_MAX_ANNOTATION_BYTES], value[FL_MAX_ANNOTATION_BYTES];
    for (unsigned i = 0; i < FL_MAX_ANNOTATIONS; i++) {
        slot_t *s = &g_slots[i];
        /* A writer may have been interrupted by the crash mid-update: retry a few times, then
         * skip the slot rather than wait for a thread that may never run again. */
        for (unsigned tries = 0; tries < 4; tries++) {
            unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
            if (seq & 1) continue;
            if (!s->used) break;
            fl_memcpy(key, s->key, sizeof key);
            fl_memcpy(value, s->value, sizeof value);
            key[sizeof key - 1] = value[sizeof value - 1] = 0;
            if (__atomic_load_n(&s->seq, __ATOMIC_SEQ_CST) != seq) continue;
            fn(ctx, key, value);
            break;
        }
    }
}
