/* SPDX-License-Identifier: MIT */
/* The Darwin CLI build links no C++ runtime (zig ships none for macOS), so C++ names stay mangled (Swift and Rust ones are demangled: demangle/). */
#include "tools/tool.h"

bool fl_tool_demangle_cxx(const char *name, char *buf, size_t cap) {
    (void)name, (void)buf, (void)cap;
    return false;
}
