/* SPDX-License-Identifier: MIT */
/* Benchmarks: report directories and report contents (see reports.h). */
#include "reports.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bench.h"
#include "faultline.pb-c.h"
#include "faultline/faultline.h"

const char *bench_fs_name(const char *path) {
    struct statfs sf;
    if (statfs(path, &sf) != 0) return "unknown";
    switch ((unsigned long)sf.f_type) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlayfs";
    default: return "other";
    }
}

int bench_dir_count(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

void bench_dir_clear(const char *dir, bool rmdir_too) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[1400];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    if (rmdir_too) rmdir(dir);
}

int bench_report_find(const char *dir, char *path, size_t cap) {
    char **paths = NULL;
    size_t n = 0;
    if (fl_list_reports(dir, &paths, &n) != 0) return -1;
    if (n && cap) snprintf(path, cap, "%s", paths[0]);
    fl_free_report_list(paths, n);
    return (int)n;
}

int bench_report_read(const char *path, bench_report_t *r) {
    memset(r, 0, sizeof *r);
    struct stat st;
    r->bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    Faultline__Report *rep = NULL;
    bool truncated = false;
    int e = fl_report_read_file(path, &rep, &truncated);
    if (e) {
        fprintf(stderr, "bench: %s: %s\n", path, fl_strerror(e));
        return -1;
    }
    r->complete = !truncated && rep->complete;
    r->threads = (unsigned)rep->n_threads;
    r->threads_total = rep->threads_total;
    r->min_frames = ~0u;
    for (size_t i = 0; i < rep->n_threads; i++) {
        const Faultline__Thread *t = rep->threads[i];
        if (t->state != FAULTLINE__THREAD__STATE__STATE_CAPTURED) continue;
        r->captured++;
        unsigned f = (unsigned)t->n_frames;
        if (f < r->min_frames) r->min_frames = f;
        if (f > r->max_frames) r->max_frames = f;
    }
    if (!r->captured) r->min_frames = 0;
    fl_report_free(rep);
    return 0;
}

int bench_watch_dir(const char *dir) {
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0) return -1;
    if (inotify_add_watch(fd, dir, IN_MOVED_TO) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

unsigned long long bench_wait_renamed(int fd, int timeout_ms) {
    uint64_t deadline = bench_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            uint64_t t = bench_now_ns();
            for (ssize_t off = 0; off < n;) {
                const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
                if (ev->mask & IN_MOVED_TO) return t;
                off += (ssize_t)(sizeof *ev + ev->len);
            }
            continue;
        }
        uint64_t now = bench_now_ns();
        if (now >= deadline) return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1);
    }
}
