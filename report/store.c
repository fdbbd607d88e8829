/* SPDX-License-Identifier: MIT */
/* The report store: listing the finished reports in a report directory, oldest first. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "report/report.h"

/* The header is the first field after the 13-byte prefix; this much holds it in practice. */
#define HEADER_PEEK 8192u

typedef struct entry {
    char *path;
    uint64_t time_ns;
} entry_t;

int fl_report_peek(int dirfd, const char *name, fl_report_peek_t *out) {
    memset(out, 0, sizeof *out);
    uint64_t size;
    int fd = fl_open_regular(dirfd, name, O_NOFOLLOW, &size);
    if (fd < 0)
        return fd;
    uint8_t buf[HEADER_PEEK];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return FL_EIO;
    }
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_decode(buf, (size_t)n, &r, &truncated);
    if (err)
        return err;
    const Faultline__Header *h = r->header;
    if (h && h->report_id.len == sizeof out->id) {
        out->has_header = true;
        memcpy(out->id, h->report_id.data, sizeof out->id);
        out->time_unix_ns = h->time_unix_ns;
        out->pid = h->pid;
        out->kind = h->kind;
        snprintf(out->hostname, sizeof out->hostname, "%s", h->hostname ? h->hostname : "");
    }
    if (r->signal)
        out->signal = r->signal->number;
    fl_report_free(r);
    return 0;
}

/* The capture time from the report's header, or 0 when it cannot be had from the file's start. */
static uint64_t header_time(int dirfd, const char *name) {
    fl_report_peek_t p;
    return fl_report_peek(dirfd, name, &p) == 0 && p.has_header ? p.time_unix_ns : 0;
}

static int entry_cmp(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return strcmp(x->path, y->path);
}

int fl_list_reports(const char *report_dir, char ***paths, size_t *count) {
    if (!report_dir || !paths || !count)
        return FL_EINVAL;
    *paths = NULL;
    *count = 0;
    DIR *d = opendir(report_dir);
    if (!d)
        return errno == ENOENT ? 0 : FL_EIO;
    char *dir = realpath(report_dir, NULL);
    entry_t *v = NULL;
    size_t n = 0, cap = 0;
    int err = dir ? 0 : FL_EIO;
    struct dirent *de;
    while (!err && (de = readdir(d)) != NULL) {
        struct stat st;
        if (!fl_report_is_name(de->d_name) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            entry_t *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                err = FL_ENOMEM;
                break;
            }
            v = nv;
        }
        char *p;
        if (asprintf(&p, "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name) < 0) {
            err = FL_ENOMEM;
            break;
        }
        uint64_t t = header_time(dirfd(d), de->d_name);
        if (!t) /* no readable header: fall back to the file's modification time */
            t = (uint64_t)st.st_mtime * 1000000000u; /* whole seconds: st_mtim is not on Darwin */
        v[n++] = (entry_t){p, t};
    }
    closedir(d);
    free(dir);
    char **out = err || n == 0 ? NULL : malloc(n * sizeof *out);
    if (!err && n && !out)
        err = FL_ENOMEM;
    if (!err) {
        if (n)
            qsort(v, n, sizeof *v, entry_cmp);
        for (size_t i = 0; i < n; i++)
            out[i] = v[i].path;
        *paths = out;
        *count = n;
    } else {
        for (size_t i = 0; i < n; i++)
            free(v[i].path);
    }
    free(v);
    return err;
}

void fl_free_report_list(char **paths, size_t count) {
    if (!paths)
        return;
    for (size_t i = 0; i < count; i++)
        free(paths[i]);
    free(paths);
}
