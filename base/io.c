/* SPDX-License-Identifier: MIT */
/* Whole writes, diagnostic lines and opening untrusted files, on top of each platform's calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

int fl_fd_above_std(int fd) {
    if (fd < 0 || fd > 2) return fd;
    int moved = (int)fl_sys_dupfd_cloexec(fd, 3);
    fl_sys_close(fd);
    return moved < 0 ? -1 : moved;
}

int fl_make_dirs(const char *path, int mode, int *sys_errno) {
    char buf[1024];
    size_t n = fl_strlcpy(buf, path, sizeof buf);
    if (n >= sizeof buf) return FL_ERANGE;
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char saved = buf[i];
        buf[i] = 0;
        long r = fl_sys_mkdirat(AT_FDCWD, buf, mode);
        buf[i] = saved;
        if (r != 0 && r != -EEXIST) {
            if (sys_errno) *sys_errno = (int)-r;
            return FL_EIO;
        }
    }
    return 0;
}

long fl_sys_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    unsigned stalls = 0;
    while (len) {
        long n = fl_sys_write(fd, p, len);
        if (n == -EINTR || n == 0) {
            if (++stalls > 100) return -EIO; /* bounded: never spin on a stuck descriptor */
            continue;
        }
        if (n < 0) return n;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void fl_env_runtimes_prepare(void) {
    static const char off[] = "verify_asan_link_order=0";
    const char *old = fl_env_get("ASAN_OPTIONS");
    if (!fl_env_get("GOTRACEBACK")) setenv("GOTRACEBACK", "crash", 1);
    size_t n = old && *old ? fl_strlen(old) + 1 : 0;
    char buf[4096];
    for (size_t i = 0; n && i + sizeof off - 1 < n; i++) /* (there already: a parent's) */
        if (fl_memcmp(old + i, off, sizeof off - 1) == 0) return;
    if (sizeof buf - sizeof off < n) return;
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, buf, sizeof buf);
    fl_strbuf_puts(&sb, off);
    if (n) {
        fl_strbuf_puts(&sb, ":");
        fl_strbuf_puts(&sb, old);
    }
    setenv("ASAN_OPTIONS", buf, 1);
}

const char *fl_report_dir_default(char *buf, size_t cap) {
    const char *xdg = fl_env_get("XDG_STATE_HOME"), *home = fl_env_get("HOME");
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, buf, cap);
    if (xdg && xdg[0] == '/') {
        fl_strbuf_puts(&sb, xdg);
    } else if (home && home[0] == '/') {
        fl_strbuf_puts(&sb, home);
        fl_strbuf_puts(&sb, "/.local/state");
    } else {
        /* A name anyone can predict in a directory anyone can write: another user may have
         * made it first, to read or replace the reports. Used only if it is this user's own,
         * private directory, made now if need be (tmux's rule for its socket directory). */
        const char *tmp = fl_env_get("TMPDIR");
        struct stat st;
        fl_strbuf_puts(&sb, tmp && tmp[0] == '/' ? tmp : "/tmp");
        fl_strbuf_puts(&sb, "/faultline-");
        fl_strbuf_putu(&sb, (uint64_t)getuid());
        if (sb.len + 1 >= cap) return NULL;
        if ((mkdir(buf, 0700) != 0 && errno != EEXIST) || lstat(buf, &st) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
            fl_strbuf_t m;
            char msg[1200];
            fl_strbuf_init(&m, msg, sizeof msg);
            fl_strbuf_puts(&m, "not using ");
            fl_strbuf_puts(&m, buf);
            fl_strbuf_puts(&m, " for reports: not a directory of this user's alone");
            fl_log_stderr(msg);
            return NULL;
        }
    }
    fl_strbuf_puts(&sb, "/faultline/reports");
    return sb.len + 1 < cap ? buf : NULL;
}

void fl_log_stderr(const char *msg) {
    char line[1280];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, line, sizeof line - 1);
    fl_strbuf_puts(&sb, "faultline: ");
    /* (paths and names from the environment or the program: nothing may drive the terminal) */
    sb.len += fl_clean_term(line + sb.len, sizeof line - 1 - sb.len, msg);
    line[sb.len++] = '\n';
    (void)fl_sys_write_all(2, line, sb.len);
}

int fl_open_regular(int dirfd, const char *path, int flags, uint64_t *size) {
    int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags);
    if (fd < 0) return FL_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return FL_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return FL_ENOTFILE;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}
