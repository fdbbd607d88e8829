/* SPDX-License-Identifier: MIT */
/* fl_dir_names on Linux: getdents64 records, read on a descriptor of the directory's own. */
#include <fcntl.h>

#include "base/base.h"

int fl_dir_names(int dirfd, const char *path, int (*fn)(void *ctx, const char *name), void *ctx) {
    /* 8-byte aligned: the records' 64-bit fields are read in place. */
    _Alignas(8) char buf[4096];
    int fd = (int)fl_sys_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) return FL_EIO;
    int rc = 0;
    /* Bounded: each round consumes entries (a million of them at most). */
    for (unsigned round = 0; round < 100000 && !rc; round++) {
        long n = fl_sys_getdents64(fd, buf, sizeof buf);
        if (n <= 0) {
            if (n < 0) rc = FL_EIO;
            break;
        }
        /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name (NUL-terminated) */
        for (long off = 0; off + 19 < n && !rc;) {
            unsigned short reclen;
            fl_memcpy(&reclen, buf + off + 16, sizeof reclen);
            if (reclen < 20 || off + reclen > n) break;
            buf[off + reclen - 1] = 0; /* (the kernel pads with NULs; a bound all the same) */
            rc = fn(ctx, buf + off + 19);
            off += reclen;
        }
    }
    fl_sys_close(fd);
    return rc;
}
