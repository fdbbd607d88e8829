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

#define NAME_PREFIX "faultline-"
/* The header is the first field after the 13-byte prefix; this much holds it in practice. */
#define HEADER_PEEK 8192u

typedef struct entry {
    char *path;
    uint64_t time_ns;
} entry_t;

static bool is_report_name(const char *n) {
    size_t len = strlen(n), pl = strlen(NAME_PREFIX), sl = strlen(FL_REPORT_SUFFIX);
    return len > pl + sl && strncmp(n, NAME_PREFIX, pl) == 0 &&
           strcmp(n + len - sl, FL_REPORT_SUFFIX) == 0;
}

/* The capture time from the report's header, or 0 when it cannot be had from the file's start. */
static uint64_t header_time(int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint8_t buf[HEADER_PEEK];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    close(fd);
    Faultline__Report *r;
    bool truncated;
    if (n <= 0 || fl_report_decode(buf, (size_t)n, &r, &truncated) != 0)
        return 0;
    uint64_t t = r->header ? r->header->time_unix_ns : 0;
    fl_report_free(r);
    return t;
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
        if (!is_report_name(de->d_name) ||
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
            t = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
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
