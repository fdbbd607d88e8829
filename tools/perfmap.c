/* SPDX-License-Identifier: MIT */
/* JIT symbol maps in perf's convention (/tmp/perf-PID.map, lines "START SIZE NAME" in hex): names
 * for the frames of code a JIT wrote, which lie in no image (NOT AS-SAFE; the CLI's). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/tool.h"

#define MAP_BYTES_MAX ((size_t)64 << 20) /* node writes ~50 bytes a function */
#define MAP_ENTRIES_MAX ((size_t)1 << 22)
#define MAP_NAME_MAX 512u     /* longer names are cut */
#define MAP_OVERLAP_SCAN 64u  /* entries before a pc's that are checked for covering it too */

typedef struct entry {
    uint64_t start, end;
    uint32_t name; /* offset in names */
    uint32_t seq;  /* line order: code moves, and a later line for an address is the newer */
} entry_t;

struct fl_tool_perfmap {
    entry_t *e;
    size_t n;
    char *names;
};

/* A hex number of 1 to 16 digits (an optional 0x), then at least one blank. */
static bool field(const char **p, const char *end, uint64_t *v) {
    const char *s = *p;
    if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
    uint64_t r = 0;
    unsigned digits = 0;
    for (; s < end; s++, digits++) {
        char c = *s;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16) break;
        if (digits == 16) return false;
        r = r << 4 | d;
    }
    if (!digits || s == end || (*s != ' ' && *s != '\t')) return false;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    *v = r;
    *p = s;
    return true;
}

static int by_start(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

fl_tool_perfmap_t *fl_tool_perfmap_parse(const char *data, size_t len) {
    if (len > MAP_BYTES_MAX) len = MAP_BYTES_MAX;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += data[i] == '\n';
    if (lines > MAP_ENTRIES_MAX) lines = MAP_ENTRIES_MAX;
    fl_tool_perfmap_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->e = malloc(lines * sizeof *m->e);
    m->names = malloc(len + 1);
    if (!m->e || !m->names) {
        fl_tool_perfmap_free(m);
        return NULL;
    }
    memcpy(m->names, data, len);
    m->names[len] = 0;
    for (size_t at = 0; at < len && m->n < lines;) {
        const char *line = m->names + at, *nl = memchr(line, '\n', len - at);
        const char *end = nl ? nl : m->names + len, *p = line;
        size_t next = (size_t)(end - m->names) + 1;
        uint64_t start, size;
        if (field(&p, end, &start) && field(&p, end, &size) && size && start + size > start) {
            const char *q = memchr(p, 0, (size_t)(end - p)); /* (a name ends at a NUL) */
            if (!q) q = end;
            while (q > p && (q[-1] == '\r' || q[-1] == ' ' || q[-1] == '\t')) q--;
            if (q > p) {
                char *name = m->names + (p - m->names);
                if ((size_t)(q - p) > MAP_NAME_MAX) q = p + MAP_NAME_MAX;
                name[q - p] = 0; /* (within the line: its newline or the buffer's end) */
                m->e[m->n] = (entry_t){start, start + size, (uint32_t)(p - m->names), (uint32_t)m->n};
                m->n++;
            }
        }
        at = next;
    }
    qsort(m->e, m->n, sizeof *m->e, by_start);
    return m;
}

/* The file's bytes if it passes load's checks, else NULL. */
static char *read_checked(int fd, long owner, uint64_t from_ns, uint64_t to_ns, size_t *len) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAP_BYTES_MAX)
        return NULL;
    uint64_t mtime = (uint64_t)st.st_mtime * 1000000000u; /* (whole seconds, as POSIX has it) */
    if ((owner >= 0 && (long)st.st_uid != owner && st.st_uid != 0) ||
        (from_ns && mtime + 1000000000u <= from_ns) || (to_ns && mtime > to_ns))
        return NULL;
    size_t want = (size_t)st.st_size, got = 0;
    char *buf = malloc(want + 1);
    while (buf && got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    *len = got;
    return buf;
}

fl_tool_perfmap_t *fl_tool_perfmap_load(const char *path, long owner, uint64_t from_ns,
                                        uint64_t to_ns) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return NULL;
    size_t len = 0;
    char *buf = read_checked(fd, owner, from_ns, to_ns, &len);
    close(fd);
    fl_tool_perfmap_t *m = buf ? fl_tool_perfmap_parse(buf, len) : NULL;
    free(buf);
    return m;
}

const char *fl_tool_perfmap_find(const fl_tool_perfmap_t *m, uint64_t pc, uint64_t *start) {
    if (!m || !m->n || pc < m->e[0].start) return NULL;
    size_t lo = 0, hi = m->n; /* the last entry starting at or below pc: lo */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->e[mid].start <= pc) lo = mid;
        else hi = mid;
    }
    const entry_t *best = NULL;
    for (size_t k = 0; k < MAP_OVERLAP_SCAN && k <= lo; k++) {
        const entry_t *e = &m->e[lo - k];
        if (pc < e->end && (!best || e->seq > best->seq)) best = e;
    }
    if (!best) return NULL;
    *start = best->start;
    return m->names + best->name;
}

void fl_tool_perfmap_free(fl_tool_perfmap_t *m) {
    if (!m) return;
    free(m->e);
    free(m->names);
    free(m);
}
