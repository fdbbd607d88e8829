/* SPDX-License-Identifier: MIT */
/* arm64 pointer authentication: strips the signature from a code address (arm64e, pac-ret). */
#include "frames/unwind_internal.h"

/* XPACLRI (HINT #7) replaces the PAC field of x30 with the sign extension the kernel's address
 * configuration gives a plain pointer. It is a hint: on cores without pointer authentication it
 * is a no-op, and so is it on an address that carries no signature. Unlike a fixed mask, it is
 * right whatever the virtual-address size (macOS, iOS and Linux differ). */
uint64_t fl_unwind_strip_pac(uint64_t addr) {
    register uint64_t x30 __asm__("x30") = addr;
    __asm__("hint #7" : "+r"(x30));
    return x30;
}
