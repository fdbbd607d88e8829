/* SPDX-License-Identifier: MIT */
/* /proc/self/maps parsed with raw syscalls into a caller-owned table (no allocation). */
#include <errno.h>
#include <fcntl.h>

#include "base/base.h"

static const char *skip_spaces(const char *p, const char *end) {
    while (p < end && *p == ' ') p++;
    return p;
}

static const char *skip_field(const char *p, const char *end) {
    while (p < end && *p != ' ') p++;
    return skip_spaces(p, end);
}

/* "start-end perms offset dev inode   path" */
static void parse_line(fl_maps_t *m, const char *p, const char *end) {
    uint64_t start, stop, off;
    if (!fl_parse_hex(&p, end, &start) || p >= end || *p++ != '-') return;
    if (!fl_parse_hex(&p, end, &stop)) return;
    p = skip_spaces(p, end);
    if (end - p < 4) return;
    uint32_t perms = (p[0] == 'r' ? FL_MAP_R : 0) | (p[1] == 'w' ? FL_MAP_W : 0) |
                     (p[2] == 'x' ? FL_MAP_X : 0);
    p = skip_field(p, end);
    if (!fl_parse_hex(&p, end, &off)) return;
    p = skip_spaces(p, end);
    p = skip_field(p, end); /* dev */
    p = skip_field(p, end); /* inode */
    if (m->count >= FL_MAPS_MAX) {
        m->truncated = true;
        return;
    }
    fl_map_t *e = &m->map[m->count++];
    e->start = start;
    e->end = stop;
    e->offset = off;
    e->perms = perms;
    e->name_off = UINT32_MAX;
    size_t n = (size_t)(end - p);
    if (n && m->names_len + n + 1 <= sizeof m->names) {
        e->name_off = m->names_len;
        fl_memcpy(m->names + m->names_len, p, n);
        m->names[m->names_len + n] = 0;
        m->names_len += (uint32_t)n + 1;
    } else if (n) {
        m->truncated = true;
    }
}

static int read_maps(fl_maps_t *m, const char *path, char *scratch, size_t scratch_len) {
    long fd = fl_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return FL_EIO;
    size_t have = 0;
    bool skipping = false; /* inside a line longer than the scratch buffer */
    for (unsigned rounds = 0; rounds < 1u << 20; rounds++) {
        long n = fl_sys_read((int)fd, scratch + have, scratch_len - have);
        if (n == -EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++) {
            if (scratch[i] != '\n') continue;
            if (!skipping) parse_line(m, scratch + start, scratch + i);
            skipping = false;
            start = i + 1;
        }
        if (start == 0 && have == scratch_len) { /* one line fills the buffer: drop it */
            skipping = true;
            have = 0;
            continue;
        }
        for (size_t i = start; i < have; i++) scratch[i - start] = scratch[i];
        have -= start;
    }
    if (have && !skipping) parse_line(m, scratch, scratch + have);
    fl_sys_close((int)fd);
    return 0;
}

int fl_maps_read(fl_maps_t *m, char *scratch, size_t scratch_len) {
    m->count = 0;
    m->names_len = 0;
    m->truncated = false;
    if (scratch_len < 4096) return FL_EINVAL;
    int e = read_maps(m, "/proc/self/maps", scratch, scratch_len);
    /* /proc/self is the main thread's: once it has exited (pthread_exit in main) its maps are
     * empty, and the calling thread's (Linux 3.17+) are the process's. Not first: qemu-user
     * shows its guest's maps under /proc/self only. */
    if (m->count == 0) e = read_maps(m, "/proc/thread-self/maps", scratch, scratch_len);
    return e;
}
