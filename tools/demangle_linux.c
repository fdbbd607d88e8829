/* SPDX-License-Identifier: MIT */
/* C++ demangling for the CLI with the Itanium ABI demangler of libstdc++ (Swift and Rust: demangle/). */
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

bool fl_tool_demangle_cxx(const char *name, char *buf, size_t cap) {
    if (strncmp(name, "_Z", 2) != 0 || cap == 0) return false;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (!d || status != 0) {
        free(d);
        return false;
    }
    size_t n = strlen(d);
    if (n >= cap) n = cap - 1; /* very long template names are cut, never dropped */
    memcpy(buf, d, n);
    buf[n] = 0;
    free(d);
    return true;
}
