/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the Swift demangler on arbitrary names, both forms, small and large caps.
 * A finding: a crash, a sanitizer report, output past its cap, a missing NUL, or a length that
 * disagrees with the text. */
#include "demangle/demangle.h"
#include "faultline/faultline.h"
#include "fuzz.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 8192) return 0;
    char sym[8193];
    memcpy(sym, data, size);
    sym[size] = 0;
    static const size_t caps[] = {1, 7, 64, 4096};
    for (unsigned f = 0; f < 2; f++) {
        for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
            char out[4096 + 16];
            memset(out, 0x5a, sizeof out);
            int r = fl_demangle_swift(sym, out, caps[i], f ? FL_DEMANGLE_SIMPLIFIED : FL_DEMANGLE_FULL);
            CHECK(r == FL_ENOTFOUND || (r >= 0 && (size_t)r < caps[i]));
            CHECK(memchr(out, 0, caps[i]) != NULL);
            if (r >= 0) CHECK(strlen(out) == (size_t)r);
            for (size_t j = caps[i]; j < sizeof out; j++) CHECK(out[j] == 0x5a);
        }
    }
    return 0;
}
