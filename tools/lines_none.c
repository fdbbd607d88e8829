/* SPDX-License-Identifier: MIT */
/* A CLI built without libdw (the Darwin cross-build) reads no DWARF: names only, no file:line. */
#include "tools/tool.h"

bool fl_tool_have_dwarf(void) { return false; }

int fl_tool_dwarf_lines(const char *path, fl_tool_line_fn fn, void *ctx) {
    (void)path, (void)fn, (void)ctx;
    return FL_ENOSYS;
}
