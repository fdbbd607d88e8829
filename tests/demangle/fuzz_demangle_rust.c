/* SPDX-License-Identifier: MIT */
/* demangle: libFuzzer target over fl_demangle_rust. The input, up to its first NUL, is a name
 * (in a buffer of exactly its size, so that ASan sees any read past the NUL), demangled in both
 * forms into buffers of several sizes. Aborts on a broken promise: a result other than a length
 * or FL_ENOTFOUND, a length that is not the output's (NUL-terminated, shorter than cap), a
 * byte written past cap (a guard after the buffer), or the two forms disagreeing on whether
 * the name is Rust's. Termination is libFuzzer's -timeout.
 * Seeds: corpus/fuzz_demangle_rust/ (real names of both schemes, one per grammar feature, from
 * rust/crasher.rs's binaries and the toolchain's librustc_driver, and a few made by hand). Run:
 * scripts/fuzz.sh BUILD fuzz_demangle_rust. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle/demangle.h"
#include "faultline/faultline.h"
#include "fuzz.h"

static int one(const char *name, size_t cap, unsigned flags) {
    static char buf[8192 + 16];
    memset(buf, 0x5a, cap + 16);
    int n = fl_demangle_rust(name, buf, cap, flags);
    CHECK(n == FL_ENOTFOUND || n >= 0);
    if (n >= 0) {
        CHECK((size_t)n < cap);
        CHECK(buf[n] == 0 && strlen(buf) == (size_t)n);
    }
    for (size_t i = cap; i < cap + 16; i++) CHECK(buf[i] == 0x5a);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t len = strnlen((const char *)data, size);
    char *name = malloc(len + 1);
    if (!name) return 0;
    memcpy(name, data, len);
    name[len] = 0;
    static const size_t caps[] = {1, 2, 17, 256, 8192};
    int full = 0;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        int a = one(name, caps[i], FL_DEMANGLE_FULL);
        int b = one(name, caps[i], FL_DEMANGLE_SIMPLIFIED);
        CHECK((a >= 0) == (b >= 0));
        if (i == 0) full = a;
        CHECK((a >= 0) == (full >= 0)); /* whether it is a name does not depend on the room */
    }
    char c;
    CHECK(fl_demangle_rust(name, &c, 0, 0) == FL_EINVAL);
    free(name);
    return 0;
}
