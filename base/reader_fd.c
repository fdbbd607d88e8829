/* SPDX-License-Identifier: MIT */
/* A reader over an open file descriptor (pread), apart from reader.c so that what walks stacks
 * (the Darwin walker run by emulation links reader.c alone) does not need pread. */
#include "base/base.h"

static int fd_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    for (size_t done = 0; done < len;) {
        if (addr + done > (uint64_t)INT64_MAX) return FL_EFAULT;
        long n = fl_sys_pread((int)r->origin, (char *)dst + done, len - done, (int64_t)(addr + done));
        if (n == -4 /* EINTR */) continue;
        if (n <= 0) return FL_EFAULT; /* past the end, or an error */
        done += (size_t)n;
    }
    return 0;
}

void fl_reader_init_fd(fl_reader_t *r, int fd) {
    fl_memset(r, 0, sizeof *r);
    r->read = fd_read;
    r->origin = (uint64_t)fd;
}
