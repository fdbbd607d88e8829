/* SPDX-License-Identifier: MIT */
/* Swift's old mangling (_T, Swift 1-3): not decoded yet. */
#include "demangle/swift_int.h"

int sw_parse_old(sw_ctx *c) {
    (void)c;
    return -1;
}
