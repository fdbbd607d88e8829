/* SPDX-License-Identifier: MIT */
/* x86_64 has no pointer authentication: code addresses are stored as they are. */
#include "frames/unwind_internal.h"

uint64_t fl_unwind_strip_pac(uint64_t addr) { return addr; }
