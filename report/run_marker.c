/* SPDX-License-Identifier: MIT */
/* The run marker's crash-time writes: the state and the hang region, in place. AS-SAFE. */
#include <fcntl.h>
#include <stddef.h>

#include "report/report.h"

/* Crash-time code: no heap, no stdio. */
#pragma GCC poison malloc calloc realloc free printf fprintf snprintf sprintf

static bool mine(const fl_run_marker_t *m) {
    return m && m->fd >= 0 && fl_sys_getpid() == m->pid;
}

/* Writes len bytes at off of the marker, through a descriptor opened for this write only. */
static void put(const fl_run_marker_t *m, const void *p, size_t len, uint64_t off) {
    int fd = (int)fl_sys_openat(m->dirfd, m->name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return;
    fl_sys_pwrite(fd, p, len, (int64_t)off);
    fl_sys_close(fd);
}

void fl_run_marker_set_state(const fl_run_marker_t *m, unsigned state, const uint8_t id[16]) {
    if (!mine(m))
        return;
    uint32_t cur = 0;
    if (state == FL_RUN_STATE_CLEAN &&
        fl_sys_pread(m->fd, &cur, sizeof cur, offsetof(fl_run_record_t, state)) == sizeof cur &&
        cur == FL_RUN_STATE_CRASHED)
        return; /* a crash in an exit handler that ran before ours stays a crash */
    if (id)
        put(m, id, 16, offsetof(fl_run_record_t, crash_id));
    uint32_t s = state;
    put(m, &s, sizeof s, offsetof(fl_run_record_t, state));
}

void fl_run_marker_set_hang(const fl_run_marker_t *m, bool in_progress, unsigned sequence,
                            const uint8_t id[16], uint64_t start_unix_ns, uint64_t duration_ns) {
    if (!mine(m))
        return;
    struct {
        uint32_t hang, sequence;
        uint8_t id[16];
        uint64_t start, duration;
    } h = {in_progress, sequence, {0}, start_unix_ns, duration_ns};
    _Static_assert(sizeof h == sizeof(fl_run_record_t) - offsetof(fl_run_record_t, hang),
                   "the hang region ends the record");
    if (id)
        fl_memcpy(h.id, id, 16);
    put(m, &h, sizeof h, offsetof(fl_run_record_t, hang));
}

bool fl_run_marker_remove(fl_run_marker_t *m) {
    if (!mine(m))
        return false;
    /* Unlinked and closed: the file's blocks are freed only once no descriptor holds it. */
    bool gone = fl_sys_unlinkat(m->dirfd, m->name, 0) == 0;
    fl_sys_close(m->fd);
    m->fd = -1;
    return gone;
}
