/* SPDX-License-Identifier: MIT */
/* fl_demangle_rust over stdin, one name a line, for the oracle test: the demangled name, or the line as it is when it declines; --simplified for that form. No cap but 1 MiB: the test compares whole names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle/demangle.h"

int main(int argc, char **argv) {
    unsigned flags = argc > 1 && strcmp(argv[1], "--simplified") == 0 ? FL_DEMANGLE_SIMPLIFIED
                                                                        : FL_DEMANGLE_FULL;
    static char line[1 << 20], out[1 << 20];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        int n = fl_demangle_rust(line, out, sizeof out, flags);
        if (n >= 0 && (size_t)n != strlen(out)) {
            fprintf(stderr, "length %d != %zu for %s\n", n, strlen(out), line);
            return 1;
        }
        puts(n >= 0 ? out : line);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
