/* SPDX-License-Identifier: MIT */
/* The run marker at install and exit, and fl_last_run: how the previous run ended. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"

#define SCAN_MAX 1024u    /* directory entries looked at */
#define UNCLEAN_KEEP 64u  /* unclean ended runs kept for fl_last_run */

#define STATE_LOCK_NAME ".state.lock"
#define LOCK_WAIT_NS 1000000000ull
#define LOCK_POLL_NS 2000000ull

/* Takes <dir>/.state.lock, polling for at most LOCK_WAIT_NS: its holders keep it for
 * microseconds, but one might be stopped, and the app must not hang on it. */
int fl_report_state_lock(int dirfd, int *fd) {
    *fd = openat(dirfd, STATE_LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (*fd < 0)
        return FL_EIO;
    for (uint64_t waited = 0;; waited += LOCK_POLL_NS) {
        if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_NS)
            break;
        struct timespec ts = {0, (long)LOCK_POLL_NS};
        nanosleep(&ts, NULL);
    }
    int err = errno == EWOULDBLOCK ? FL_EBUSY : FL_EIO;
    close(*fd);
    *fd = -1;
    return err;
}

typedef struct ended {
    char name[64];
    fl_run_record_t rec;
} ended_t;

static bool is_marker_name(const char *n) {
    return strncmp(n, FL_RUN_MARKER_PREFIX, strlen(FL_RUN_MARKER_PREFIX)) == 0 && strlen(n) < 64;
}

/* The markers of ended runs in dirfd (whose lock could be taken), at most SCAN_MAX, in a
 * malloc'd array; their locks are released again (the caller holds the state lock). */
static ended_t *scan_ended(int dirfd, size_t *count) {
    *count = 0;
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    ended_t *v = NULL;
    size_t n = 0, cap = 0, seen = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && seen < SCAN_MAX) {
        if (!is_marker_name(de->d_name))
            continue;
        seen++;
        int mfd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (mfd < 0)
            continue;
        struct stat st;
        fl_run_record_t rec;
        bool ok = fstat(mfd, &st) == 0 && S_ISREG(st.st_mode) && flock(mfd, LOCK_EX | LOCK_NB) == 0 &&
                  pread(mfd, &rec, sizeof rec, 0) == (ssize_t)sizeof rec &&
                  memcmp(rec.magic, FL_RUN_MARKER_MAGIC, sizeof rec.magic) == 0;
        close(mfd);
        if (!ok)
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            ended_t *nv = realloc(v, c * sizeof *nv);
            if (!nv)
                break;
            v = nv;
            cap = c;
        }
        snprintf(v[n].name, sizeof v[n].name, "%s", de->d_name);
        rec.boot_id[sizeof rec.boot_id - 1] = 0;
        v[n++].rec = rec;
    }
    closedir(d);
    *count = n;
    return v;
}

static int newer(const fl_run_record_t *a, const fl_run_record_t *b) {
    if (a->start_unix_ns != b->start_unix_ns)
        return a->start_unix_ns > b->start_unix_ns;
    return a->pid > b->pid;
}

static int by_age(const void *x, const void *y) { /* newest first */
    const ended_t *a = x, *b = y;
    return newer(&a->rec, &b->rec) ? -1 : newer(&b->rec, &a->rec) ? 1 : 0;
}

/* Every clean ended run but the newest, and unclean ones past UNCLEAN_KEEP. */
static void prune(int dirfd) {
    int lock;
    if (fl_report_state_lock(dirfd, &lock) != 0)
        return;
    size_t n;
    ended_t *v = scan_ended(dirfd, &n);
    if (v)
        qsort(v, n, sizeof *v, by_age);
    bool clean_seen = false;
    unsigned unclean = 0;
    for (size_t i = 0; i < n; i++) {
        bool clean = v[i].rec.state == FL_RUN_STATE_CLEAN && !v[i].rec.hang;
        bool keep = clean ? !clean_seen : unclean < UNCLEAN_KEEP;
        if (clean)
            clean_seen = true;
        else
            unclean++;
        if (!keep)
            unlinkat(dirfd, v[i].name, 0);
    }
    free(v);
    close(lock);
}

int fl_run_marker_create(int dirfd, uint64_t start_unix_ns, fl_run_marker_t *m) {
    m->fd = -1;
    m->pid = (int)getpid();
    prune(dirfd);
    fl_run_record_t rec;
    memset(&rec, 0, sizeof rec);
    memcpy(rec.magic, FL_RUN_MARKER_MAGIC, sizeof rec.magic);
    rec.pid = m->pid;
    rec.state = FL_RUN_STATE_RUNNING;
    rec.start_unix_ns = start_unix_ns;
    fl_report_boot_id(rec.boot_id);
    /* Written and locked under a temporary name, then renamed: a reader never sees a marker
     * without its lock or its record. */
    char tmp[80];
    snprintf(m->name, sizeof m->name, FL_RUN_MARKER_PREFIX "%016" PRIx64 "-%d", start_unix_ns, m->pid);
    snprintf(tmp, sizeof tmp, ".tmp%s", m->name);
    int wfd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (wfd < 0)
        return FL_EIO;
    bool written = pwrite(wfd, &rec, sizeof rec, 0) == (ssize_t)sizeof rec;
    close(wfd);
    /* Held read-only (see fl_run_marker_t), locked before it takes its name. */
    int fd = written ? openat(dirfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || renameat(dirfd, tmp, dirfd, m->name) != 0) {
        if (fd >= 0)
            close(fd);
        unlinkat(dirfd, tmp, 0);
        return FL_EIO;
    }
    m->fd = fd;
    m->dirfd = dirfd;
    return 0;
}

void fl_run_marker_close(fl_run_marker_t *m) {
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
}

int fl_report_dir_lock(const char *report_dir, int *dirfd, int *lock) {
    *dirfd = open(report_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dirfd < 0)
        return errno == ENOENT ? FL_ENOTFOUND : FL_EIO;
    int err = fl_report_state_lock(*dirfd, lock);
    if (err)
        close(*dirfd);
    return err;
}

int fl_last_run(const char *report_dir, fl_run_info *out) {
    if (!report_dir || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof *out);
    int dirfd, lock, err = fl_report_dir_lock(report_dir, &dirfd, &lock);
    if (err)
        return err;
    size_t n;
    ended_t *v = scan_ended(dirfd, &n);
    const ended_t *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const fl_run_record_t *r = &v[i].rec;
        if (!best || newer(r, &best->rec))
            best = &v[i];
        out->runs++;
        out->unclean += !(r->state == FL_RUN_STATE_CLEAN && !r->hang);
    }
    if (best) {
        const fl_run_record_t *r = &best->rec;
        const uint8_t *id = NULL;
        if (r->state == FL_RUN_STATE_CRASHED) {
            out->ending = FL_RUN_CRASHED;
            id = r->crash_id;
        } else if (r->hang) {
            out->ending = FL_RUN_HUNG;
            id = r->hang_id;
            out->hang_duration_ns = r->hang_duration_ns;
        } else {
            out->ending = r->state == FL_RUN_STATE_CLEAN ? FL_RUN_CLEAN : FL_RUN_KILLED;
        }
        for (unsigned i = 0; id && i < 16; i++)
            snprintf(out->report_id + 2 * i, 3, "%02x", id[i]);
        out->pid = r->pid;
        out->start_unix_ns = r->start_unix_ns;
        char now[40];
        fl_report_boot_id(now);
        out->boot_known = now[0] && r->boot_id[0];
        out->rebooted = out->boot_known && strcmp(now, r->boot_id) != 0;
    }
    /* Told once: the runs just read are gone. */
    for (size_t i = 0; i < n; i++)
        unlinkat(dirfd, v[i].name, 0);
    free(v);
    close(lock);
    close(dirfd);
    return best ? 0 : FL_ENOTFOUND;
}
