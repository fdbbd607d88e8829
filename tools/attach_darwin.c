/* SPDX-License-Identifier: MIT */
/* `faultline run` on Darwin: the preload library is a Linux build (docs/preload.md), so there is
 * nothing to tell about a program it could not reach. */
#include "tools/tool.h"

const char *fl_tool_not_attachable(const char *name) {
    (void)name;
    return NULL;
}
