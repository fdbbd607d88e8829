/* SPDX-License-Identifier: MIT */
/* This boot's id on Linux: /proc/sys/kernel/random/boot_id. */
#include <fcntl.h>
#include <unistd.h>

#include "report/report.h"

void fl_report_boot_id(char out[40]) {
    out[0] = 0;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, 36);
    close(fd);
    out[n == 36 ? 36 : 0] = 0;
}
