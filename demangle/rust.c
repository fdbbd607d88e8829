/* SPDX-License-Identifier: MIT */
/* Rust symbol names (not yet: every name is left as it is). */
#include "demangle/demangle.h"
#include "faultline/faultline.h"

int fl_demangle_rust(const char *sym, char *out, size_t cap, unsigned flags) {
    (void)sym, (void)out, (void)flags;
    return cap ? FL_ENOTFOUND : FL_EINVAL;
}
