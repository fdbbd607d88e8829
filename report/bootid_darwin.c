/* SPDX-License-Identifier: MIT */
/* This boot's id on Darwin: the kern.bootsessionuuid sysctl. */
#include <sys/sysctl.h>

#include "report/report.h"

void fl_report_boot_id(char out[40]) {
    size_t len = 40;
    if (sysctlbyname("kern.bootsessionuuid", out, &len, NULL, 0) != 0 || len == 0 || len > 39)
        len = 0;
    out[len] = 0;
}
