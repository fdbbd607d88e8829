/* SPDX-License-Identifier: MIT */
/* fl_dir_names on Darwin: not available at crash time (getdirentries64 is private SPI, and
 * readdir may allocate), so what needs it is skipped there. Compiled only: never run here. */
#include "base/base.h"

int fl_dir_names(int dirfd, const char *path, int (*fn)(void *ctx, const char *name), void *ctx) {
    (void)dirfd, (void)path, (void)fn, (void)ctx;
    return FL_ENOSYS;
}
