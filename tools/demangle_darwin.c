/* SPDX-License-Identifier: MIT */
/* The Darwin CLI build links no C++ runtime (zig ships none for macOS), so names stay mangled. */
#include "tools/tool.h"

bool fl_tool_demangle(const char *name, char *buf, size_t cap) {
    (void)name, (void)buf, (void)cap;
    return false;
}
