/* SPDX-License-Identifier: MIT */
/* fl_last_crash: which crash the app has not been told of yet, kept in <dir>/.state. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"

#define STATE_NAME ".state"
#define STATE_TMP_NAME ".state.tmp"
#define STATE_MAGIC "faultline-state 1"

/* A crash, ordered by (time, id). */
typedef struct mark {
    uint64_t time;
    uint8_t id[16];
    int signal;
} mark_t;

/* announced: the newest crash fl_last_crash returned. removed: the newest crash that left the
 * pending set after it, and how many did. */
typedef struct state {
    mark_t announced, removed;
    unsigned removed_count;
} state_t;

static int mark_cmp(const mark_t *a, const mark_t *b) {
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return memcmp(a->id, b->id, sizeof a->id);
}

static void hex_id(char out[33], const uint8_t id[16]) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 16; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[32] = '\0';
}

static bool parse_id(const char *hex, uint8_t id[16]) {
    if (strlen(hex) != 32)
        return false;
    for (unsigned i = 0; i < 32; i++) {
        char c = hex[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return false;
        id[i / 2] = (uint8_t)(i % 2 ? id[i / 2] | v : v << 4);
    }
    return true;
}

/* A missing or unreadable state is an empty one: at worst a crash is told twice. */
static void read_state(int dirfd, state_t *st) {
    memset(st, 0, sizeof *st);
    uint64_t size;
    int fd = fl_open_regular(dirfd, STATE_NAME, O_NOFOLLOW, &size); /* (a FIFO planted there must not block) */
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char line[256], hex[64];
    if (fgets(line, sizeof line, f) && strncmp(line, STATE_MAGIC, strlen(STATE_MAGIC)) == 0) {
        while (fgets(line, sizeof line, f)) {
            mark_t m = {0};
            unsigned count;
            if (sscanf(line, "announced %" SCNu64 " %63s", &m.time, hex) == 2 &&
                parse_id(hex, m.id))
                st->announced = m;
            else if (sscanf(line, "removed %u %" SCNu64 " %63s %d", &count, &m.time, hex,
                            &m.signal) == 4 &&
                     parse_id(hex, m.id)) {
                st->removed = m;
                st->removed_count = count;
            }
        }
    }
    fclose(f);
}

/* Replaces the state in one rename, so a reader never sees half of it. */
static int write_state(int dirfd, const state_t *st) {
    char a[33], r[33], text[256];
    hex_id(a, st->announced.id);
    hex_id(r, st->removed.id);
    int n = snprintf(text, sizeof text,
                     STATE_MAGIC "\nannounced %" PRIu64 " %s\nremoved %u %" PRIu64 " %s %d\n",
                     st->announced.time, a, st->removed_count, st->removed.time, r,
                     st->removed.signal);
    /* O_NONBLOCK: a FIFO planted under that name fails the open instead of waiting for a reader. */
    int fd = openat(dirfd, STATE_TMP_NAME,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return FL_EIO;
    bool ok = n > 0 && (size_t)n < sizeof text && write(fd, text, (size_t)n) == n;
    ok = close(fd) == 0 && ok;
    if (!ok || renameat(dirfd, STATE_TMP_NAME, dirfd, STATE_NAME) != 0) {
        unlinkat(dirfd, STATE_TMP_NAME, 0);
        return FL_EIO;
    }
    return 0;
}

int fl_report_state_note_removed(int dirfd, const fl_report_peek_t *p) {
    if (!p->has_header || p->kind != 1 /* Header.KIND_CRASH */)
        return 0;
    mark_t m = {.time = p->time_unix_ns, .signal = p->signal};
    memcpy(m.id, p->id, sizeof m.id);
    int lock, err = fl_report_state_lock(dirfd, &lock);
    if (err)
        return err;
    state_t st;
    read_state(dirfd, &st);
    if (mark_cmp(&m, &st.announced) > 0) {
        if (!st.removed_count || mark_cmp(&m, &st.removed) > 0)
            st.removed = m;
        st.removed_count++;
        err = write_state(dirfd, &st);
    }
    close(lock);
    return err;
}

int fl_last_crash(const char *report_dir, fl_crash_info *out) {
    if (!report_dir || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof *out);
    int dirfd, lock, err = fl_report_dir_lock(report_dir, &dirfd, &lock);
    if (err)
        return err;
    state_t st;
    read_state(dirfd, &st);

    /* The newest crash report still pending, and how many are newer than the last one told. */
    mark_t best = {0};
    bool found = false, removed_pending = false;
    unsigned count = 0;
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        err = FL_EIO;
    }
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        fl_report_peek_t p;
        if (!fl_report_is_name(de->d_name) || fl_report_peek(dirfd, de->d_name, &p) != 0 ||
            !p.has_header || p.kind != 1)
            continue;
        mark_t m = {.time = p.time_unix_ns, .signal = p.signal};
        memcpy(m.id, p.id, sizeof m.id);
        if (mark_cmp(&m, &st.announced) <= 0)
            continue;
        count++;
        /* Noted as removed but still here: its remover died before deleting it. */
        if (st.removed_count && mark_cmp(&m, &st.removed) == 0)
            removed_pending = true;
        if (!found || mark_cmp(&m, &best) > 0) {
            best = m;
            found = true;
        }
    }
    if (d)
        closedir(d);
    bool pending = found;
    if (!err && st.removed_count && mark_cmp(&st.removed, &st.announced) > 0) {
        count += st.removed_count - removed_pending;
        if (!found || mark_cmp(&st.removed, &best) > 0) {
            best = st.removed;
            pending = removed_pending;
            found = true;
        }
    }
    if (!err && !found)
        err = FL_ENOTFOUND;
    if (!err) {
        hex_id(out->id, best.id);
        out->time_unix_ns = best.time;
        out->signal = best.signal;
        out->count = count ? count : 1;
        out->pending = pending;
        st.announced = best;
        st.removed_count = 0;
        memset(&st.removed, 0, sizeof st.removed);
        /* Not being able to remember only means the same crash is told again next time. */
        write_state(dirfd, &st);
    }
    close(lock);
    close(dirfd);
    return err;
}
