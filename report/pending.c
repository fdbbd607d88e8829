/* SPDX-License-Identifier: MIT */
/* The report store on the next start: one owner at a time, stale temporary files, quarantine, caps. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "report/report.h"

#define LOCK_NAME ".store.lock"
#define QUARANTINE_DIR "quarantine"
#define REASON_SUFFIX ".reason"
#define READ_MAX ((size_t)64 << 20) /* as fl_report_read_file */
/* A temporary file whose writer's pid is dead is still left alone this long after its last
 * write: the pid may belong to another pid namespace sharing the directory. */
#define DEAD_WRITER_GRACE_NS (5ull * 1000000000ull)
#define NS_PER_S 1000000000ull

typedef struct entry {
    fl_store_report pub;
    char *name;
    fl_report_peek_t peek; /* what fl_report_state_note_removed needs */
    uint64_t sort_time;
    bool gone;
} entry_t;

struct fl_store {
    int dirfd, lockfd;
    char *dir;
    fl_store_options opts;
    entry_t *v;
    size_t n;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t mtime_ns(const struct stat *st) {
    return (uint64_t)st->st_mtime * NS_PER_S; /* whole seconds: st_mtim is not portable */
}

static void hex_id(char out[33], const uint8_t id[16]) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 16; i++) {
        out[2 * i] = digits[id[i] >> 4];
        out[2 * i + 1] = digits[id[i] & 15];
    }
    out[32] = '\0';
}

static bool is_tmp_name(const char *n) {
    size_t pl = strlen(FL_REPORT_TMP_PREFIX);
    return strncmp(n, FL_REPORT_TMP_PREFIX, pl) == 0 && fl_report_is_name(n + pl);
}

static bool is_quarantined_name(const char *n) {
    size_t len = strlen(n), sl = strlen(FL_REPORT_SUFFIX);
    return len > sl && n[0] != '.' && strcmp(n + len - sl, FL_REPORT_SUFFIX) == 0;
}

static bool is_reason_name(const char *n) {
    size_t len = strlen(n), sl = strlen(REASON_SUFFIX);
    return len > sl && strcmp(n + len - sl, REASON_SUFFIX) == 0;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The names in dirfd that `keep` accepts, read in one pass, so that the caller may rename and
 * delete while it walks them. */
static int list_names(int dirfd, bool (*keep)(const char *), char ***out, size_t *count) {
    *out = NULL;
    *count = 0;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return FL_EIO;
    }
    char **v = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!keep(de->d_name))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nv = realloc(v, ncap * sizeof *v);
            if (!nv) {
                err = FL_ENOMEM;
                break;
            }
            v = nv;
            cap = ncap;
        }
        if (!(v[n] = strdup(de->d_name))) {
            err = FL_ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (err) {
        free_names(v, n);
        return err;
    }
    *out = v;
    *count = n;
    return 0;
}

/* Reads a whole file of dirfd (at most READ_MAX bytes; one more is an error). */
static int read_all(int dirfd, const char *name, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    uint64_t size; /* (a report swapped for a FIFO must not block the store) */
    int fd = fl_open_regular(dirfd, name, O_NOFOLLOW, &size);
    if (fd < 0)
        return fd == FL_EIO && errno == ENOENT ? FL_ENOTFOUND : fd;
    if (size > READ_MAX) {
        close(fd);
        return FL_ERANGE;
    }
    size_t cap = (size_t)size + 1, n = 0; /* +1: a file that grew is seen to */
    uint8_t *buf = malloc(cap);
    int err = buf ? 0 : FL_ENOMEM;
    while (!err) {
        if (n == cap) {
            if (cap > READ_MAX) {
                err = FL_ERANGE;
                break;
            }
            size_t ncap = cap * 2 > READ_MAX + 1 ? READ_MAX + 1 : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                err = FL_ENOMEM;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            err = FL_EIO;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    if (err) {
        free(buf);
        return err;
    }
    *data = buf;
    *len = n;
    return 0;
}

/* Decodes a report's bytes into e (id, time, kind, signal, truncated); on failure writes why
 * into reason and returns FL_EBADDATA (or FL_ENOMEM). */
static int validate(const uint8_t *data, size_t len, entry_t *e, char *reason, size_t cap) {
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_decode(data, len, &r, &truncated);
    if (err == FL_ENOMEM)
        return err;
    if (err) {
        snprintf(reason, cap, "does not decode: %s", fl_strerror(err));
        return FL_EBADDATA;
    }
    const Faultline__Header *h = r->header;
    if (!h || h->report_id.len != sizeof e->peek.id) {
        snprintf(reason, cap, "cut short before its header (%zu bytes)", len);
        fl_report_free(r);
        return FL_EBADDATA;
    }
    fl_report_peek_t *p = &e->peek;
    p->has_header = true;
    memcpy(p->id, h->report_id.data, sizeof p->id);
    p->time_unix_ns = h->time_unix_ns;
    p->pid = h->pid;
    p->kind = h->kind;
    p->signal = r->signal ? r->signal->number : 0;
    hex_id(e->pub.id, p->id);
    e->pub.time_unix_ns = p->time_unix_ns;
    e->pub.kind = p->kind;
    e->pub.signal = p->signal;
    e->pub.truncated = truncated;
    e->pub.size = len;
    fl_report_free(r);
    return 0;
}

static void write_reason(int qfd, const char *base, const char *reason) {
    char name[512], text[FL_STORE_REASON_MAX + 1];
    snprintf(name, sizeof name, "%s%s", base, REASON_SUFFIX);
    size_t n = 0;
    for (const char *c = reason ? reason : ""; *c && n + 1 < FL_STORE_REASON_MAX; c++)
        text[n++] = *c == '\n' || *c == '\r' ? ' ' : *c;
    text[n++] = '\n';
    /* O_NONBLOCK: a FIFO planted under that name fails the open instead of waiting for a reader. */
    int fd = openat(qfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                    0600);
    if (fd < 0)
        return;
    /* Best effort: the report itself is already safe in quarantine/. */
    ssize_t w = write(fd, text, n);
    (void)w;
    close(fd);
}

/* Moves name (a report or a writer's temporary file) into quarantine/ as its report name, with
 * a .reason file beside it. */
static int move_to_quarantine(int dirfd, const char *name, const char *reason) {
    if (mkdirat(dirfd, QUARANTINE_DIR, 0700) != 0 && errno != EEXIST)
        return FL_EIO;
    int qfd = openat(dirfd, QUARANTINE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (qfd < 0)
        return FL_EIO;
    size_t pl = strlen(FL_REPORT_TMP_PREFIX);
    const char *base = strncmp(name, FL_REPORT_TMP_PREFIX, pl) == 0 ? name + pl : name;
    int err = 0;
    if (renameat(dirfd, name, qfd, base) != 0)
        err = errno == ENOENT ? FL_ENOTFOUND : FL_EIO;
    else
        write_reason(qfd, base, reason);
    int saved = errno;
    close(qfd);
    errno = saved;
    return err;
}

/* Renames the temporary files whose writer is gone into reports (or quarantines them). */
static int recover_tmp(fl_store *s, fl_store_stats *st) {
    char **names;
    size_t n;
    int err = list_names(s->dirfd, is_tmp_name, &names, &n);
    if (err)
        return err;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    uint64_t now = now_ns(), stale_ns = (uint64_t)s->opts.stale_tmp_seconds * NS_PER_S;
    pid_t self = getpid();
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i], *final = name + strlen(FL_REPORT_TMP_PREFIX);
        struct stat sb;
        if (fstatat(s->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        fl_report_peek_t p;
        bool header = fl_report_peek(s->dirfd, name, &p) == 0 && p.has_header;
        /* Rounded up to the next second, so that an age is never overstated. */
        uint64_t m = mtime_ns(&sb) + NS_PER_S, age = now > m ? now - m : 0;
        bool stale = age >= stale_ns;
        /* The writer writes its header first, so a live one is known by pid and host. */
        if (!stale && header && p.pid > 0 && p.pid != self && host[0] &&
            strcmp(p.hostname, host) == 0 && age >= DEAD_WRITER_GRACE_NS &&
            kill(p.pid, 0) != 0 && errno == ESRCH)
            stale = true;
        if (!stale) {
            st->tmp_in_progress++;
            continue;
        }
        struct stat fb;
        if (header && fstatat(s->dirfd, final, &fb, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
            renameat(s->dirfd, name, s->dirfd, final) == 0) {
            st->tmp_recovered++;
            continue;
        }
        if (move_to_quarantine(s->dirfd, name,
                               header ? "temporary file of a dead writer, and a report of the "
                                        "same name exists"
                                      : "temporary file of a writer that stopped before "
                                        "writing its header") == 0)
            st->quarantined++;
    }
    free_names(names, n);
    return 0;
}

static int newest_first(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    if (x->sort_time != y->sort_time)
        return x->sort_time > y->sort_time ? -1 : 1;
    return -strcmp(x->name, y->name);
}

typedef struct qfile {
    char *name;
    uint64_t size, ctime;
} qfile_t;

static int qfile_oldest_first(const void *a, const void *b) {
    const qfile_t *x = a, *y = b;
    if (x->ctime != y->ctime)
        return x->ctime < y->ctime ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Deletes the oldest quarantined files (by the time they were moved there, their ctime) beyond
 * the caps, keeping the newest, and .reason files whose report is gone. */
static void prune_quarantine(fl_store *s, fl_store_stats *st) {
    int qfd = openat(s->dirfd, QUARANTINE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (qfd < 0)
        return;
    char **names;
    size_t n;
    if (list_names(qfd, is_quarantined_name, &names, &n) == 0) {
        qfile_t *q = calloc(n ? n : 1, sizeof *q);
        size_t m = 0;
        uint64_t bytes = 0;
        for (size_t i = 0; q && i < n; i++) {
            struct stat sb;
            if (fstatat(qfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
                continue;
            q[m++] = (qfile_t){names[i], (uint64_t)sb.st_size, (uint64_t)sb.st_ctime};
            bytes += (uint64_t)sb.st_size;
        }
        if (q) {
            qsort(q, m, sizeof *q, qfile_oldest_first);
            for (size_t i = 0; i + 1 < m &&
                               (m - i > s->opts.max_quarantined || bytes > s->opts.max_bytes);
                 i++) {
                char reason[512];
                snprintf(reason, sizeof reason, "%s%s", q[i].name, REASON_SUFFIX);
                if (unlinkat(qfd, q[i].name, 0) == 0)
                    st->quarantine_pruned++;
                unlinkat(qfd, reason, 0);
                bytes -= q[i].size;
            }
        }
        free(q);
        free_names(names, n);
    }
    if (list_names(qfd, is_reason_name, &names, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            char base[512];
            struct stat sb;
            size_t bl = strlen(names[i]) - strlen(REASON_SUFFIX);
            if (bl >= sizeof base)
                continue;
            memcpy(base, names[i], bl);
            base[bl] = '\0';
            if (fstatat(qfd, base, &sb, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
                unlinkat(qfd, names[i], 0);
        }
        free_names(names, n);
    }
    close(qfd);
}

/* Lists, validates and caps the pending reports; s->v ends up oldest first. */
static int scan(fl_store *s, fl_store_stats *st) {
    char **names;
    size_t n;
    int err = list_names(s->dirfd, fl_report_is_name, &names, &n);
    if (err)
        return err;
    entry_t *all = calloc(n ? n : 1, sizeof *all);
    if (!all) {
        free_names(names, n);
        return FL_ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (fstatat(s->dirfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) {
            free(names[i]);
            continue;
        }
        entry_t *e = &all[m++];
        e->name = names[i];
        e->pub.size = (uint64_t)sb.st_size;
        /* A file whose header cannot be read sorts by its modification time. */
        if (fl_report_peek(s->dirfd, e->name, &e->peek) != 0 || !e->peek.has_header)
            memset(&e->peek, 0, sizeof e->peek);
        e->sort_time = e->peek.has_header ? e->peek.time_unix_ns : mtime_ns(&sb);
    }
    free(names);
    qsort(all, m, sizeof *all, newest_first);

    size_t kept = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < m && !err; i++) {
        entry_t *e = &all[i];
        if (kept > 0 && (kept >= s->opts.max_reports || bytes + e->pub.size > s->opts.max_bytes)) {
            if (e->peek.has_header)
                fl_report_state_note_removed(s->dirfd, &e->peek);
            if (unlinkat(s->dirfd, e->name, 0) == 0)
                st->pruned++;
            e->gone = true;
            continue;
        }
        uint8_t *data;
        size_t len;
        char reason[FL_STORE_REASON_MAX];
        int r = read_all(s->dirfd, e->name, &data, &len);
        if (r == 0) {
            r = validate(data, len, e, reason, sizeof reason);
            free(data);
        } else if (r == FL_ERANGE) {
            snprintf(reason, sizeof reason, "larger than %zu bytes", READ_MAX);
            r = FL_EBADDATA;
        }
        if (r == FL_EBADDATA) {
            if (move_to_quarantine(s->dirfd, e->name, reason) == 0)
                st->quarantined++;
            e->gone = true;
        } else if (r == FL_ENOMEM) {
            err = r;
        } else if (r) { /* vanished, or unreadable (permissions, I/O): left as it is */
            st->unreadable += r != FL_ENOTFOUND;
            e->gone = true;
        } else {
            kept++;
            bytes += e->pub.size;
        }
    }
    /* Keep the survivors, oldest first. */
    entry_t *keep = err ? NULL : calloc(kept ? kept : 1, sizeof *keep);
    if (!keep && !err)
        err = FL_ENOMEM;
    size_t k = 0;
    for (size_t i = m; i-- > 0;) {
        if (all[i].gone || err) {
            free(all[i].name);
            continue;
        }
        entry_t e = all[i];
        size_t dl = strlen(s->dir), nl = strlen(e.name);
        char *path = malloc(dl + nl + 2);
        if (!path) {
            free(e.name);
            err = FL_ENOMEM;
            continue;
        }
        snprintf(path, dl + nl + 2, "%s/%s", strcmp(s->dir, "/") ? s->dir : "", e.name);
        e.pub.path = path;
        keep[k++] = e;
        st->pending_bytes += e.pub.size;
        st->truncated += e.pub.truncated;
    }
    free(all);
    if (err) {
        for (size_t i = 0; i < k; i++) {
            free((char *)keep[i].pub.path);
            free(keep[i].name);
        }
        free(keep);
        return err;
    }
    s->v = keep;
    s->n = k;
    st->pending = k;
    return 0;
}

void fl_store_close(fl_store *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free((char *)s->v[i].pub.path);
        free(s->v[i].name);
    }
    free(s->v);
    free(s->dir);
    if (s->lockfd >= 0)
        close(s->lockfd); /* releases the flock */
    if (s->dirfd >= 0)
        close(s->dirfd);
    free(s);
}

int fl_store_open(const char *report_dir, const fl_store_options *opts, fl_store **out,
                  fl_store_stats *stats) {
    if (!report_dir || !out)
        return FL_EINVAL;
    *out = NULL;
    fl_store *s = calloc(1, sizeof *s);
    if (!s)
        return FL_ENOMEM;
    s->lockfd = -1;
    if (opts)
        s->opts = *opts;
    if (!s->opts.max_reports)
        s->opts.max_reports = FL_STORE_DEFAULT_MAX_REPORTS;
    if (!s->opts.max_bytes)
        s->opts.max_bytes = FL_STORE_DEFAULT_MAX_BYTES;
    if (!s->opts.max_quarantined)
        s->opts.max_quarantined = FL_STORE_DEFAULT_MAX_QUARANTINED;
    if (!s->opts.stale_tmp_seconds)
        s->opts.stale_tmp_seconds = FL_STORE_DEFAULT_STALE_TMP_SECONDS;
    fl_store_stats st = {0};
    int err = 0;
    s->dirfd = open(report_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0)
        err = errno == ENOENT ? FL_ENOTFOUND : FL_EIO;
    if (!err && !(s->dir = realpath(report_dir, NULL)))
        err = errno == ENOMEM ? FL_ENOMEM : FL_EIO;
    if (!err) {
        s->lockfd = openat(s->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (s->lockfd < 0)
            err = FL_EIO;
        else if (flock(s->lockfd, LOCK_EX | LOCK_NB) != 0)
            err = errno == EWOULDBLOCK ? FL_EBUSY : FL_EIO;
    }
    if (!err)
        err = recover_tmp(s, &st);
    if (!err)
        err = scan(s, &st);
    if (!err)
        prune_quarantine(s, &st);
    if (err) {
        int saved = errno;
        fl_store_close(s);
        errno = saved;
        return err;
    }
    if (stats)
        *stats = st;
    *out = s;
    return 0;
}

size_t fl_store_count(const fl_store *s) { return s ? s->n : 0; }

const fl_store_report *fl_store_get(const fl_store *s, size_t i) {
    return s && i < s->n ? &s->v[i].pub : NULL;
}

int fl_store_read(fl_store *s, size_t i, uint8_t **data, size_t *len) {
    if (!s || i >= s->n || !data || !len)
        return FL_EINVAL;
    *data = NULL;
    *len = 0;
    entry_t *e = &s->v[i];
    if (e->gone)
        return FL_ENOTFOUND;
    uint8_t *buf;
    size_t n;
    char reason[FL_STORE_REASON_MAX];
    int err = read_all(s->dirfd, e->name, &buf, &n);
    if (err == FL_ENOTFOUND)
        e->gone = true;
    if (err == FL_ERANGE) {
        snprintf(reason, sizeof reason, "larger than %zu bytes", READ_MAX);
        buf = NULL;
        err = FL_EBADDATA;
    } else if (!err) {
        entry_t check = *e;
        err = validate(buf, n, &check, reason, sizeof reason);
        if (!err) {
            e->pub.size = n;
            e->pub.truncated = check.pub.truncated;
        }
    }
    if (err == FL_EBADDATA) {
        free(buf);
        fl_report_state_note_removed(s->dirfd, &e->peek);
        if (move_to_quarantine(s->dirfd, e->name, reason) == 0)
            e->gone = true;
        return FL_EBADDATA;
    }
    if (err) {
        free(buf);
        return err;
    }
    *data = buf;
    *len = n;
    return 0;
}

int fl_store_remove(fl_store *s, size_t i) {
    if (!s || i >= s->n)
        return FL_EINVAL;
    entry_t *e = &s->v[i];
    if (e->gone)
        return FL_ENOTFOUND;
    fl_report_state_note_removed(s->dirfd, &e->peek);
    if (unlinkat(s->dirfd, e->name, 0) != 0) {
        if (errno != ENOENT)
            return FL_EIO;
        e->gone = true;
        return FL_ENOTFOUND;
    }
    e->gone = true;
    return 0;
}

int fl_store_quarantine(fl_store *s, size_t i, const char *reason) {
    if (!s || i >= s->n)
        return FL_EINVAL;
    entry_t *e = &s->v[i];
    if (e->gone)
        return FL_ENOTFOUND;
    fl_report_state_note_removed(s->dirfd, &e->peek);
    int err = move_to_quarantine(s->dirfd, e->name, reason);
    if (err == 0 || err == FL_ENOTFOUND)
        e->gone = true;
    return err;
}
