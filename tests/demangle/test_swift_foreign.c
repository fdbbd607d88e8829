/* SPDX-License-Identifier: MIT */
/* The CLI offers every name to the Swift demangler first, so it must decline every name that is
 * not Swift: here, every symbol of the C and C++ runtime libraries (nm lists them; they hold no
 * Swift code), libtiff-style "_T..." C names among them. */
#include "demangle/demangle.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static long offer(const char *lib, long *accepted) {
    char cmd[1024], path[512] = "";
    snprintf(cmd, sizeof cmd, "gcc -print-file-name=%s 2>/dev/null", lib);
    FILE *p = popen(cmd, "r");
    if (p && fgets(path, sizeof path, p)) path[strcspn(path, "\n")] = 0;
    if (p) pclose(p);
    if (!path[0] || strcmp(path, lib) == 0) return 0; /* not installed here */
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>/dev/null", path);
    p = popen(cmd, "r");
    if (!p) return 0;
    char line[4096], out[4096];
    long n = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        char *name = strrchr(line, ' ');
        name = name ? name + 1 : line;
        name[strcspn(name, "@")] = 0;
        n++;
        for (unsigned f = 0; f < 2; f++) {
            if (fl_demangle_swift(name, out, sizeof out, f) >= 0) {
                ++*accepted;
                fprintf(stderr, "accepted %s -> %s\n", name, out);
            }
        }
    }
    pclose(p);
    return n;
}

int main(void) {
    long accepted = 0, n = 0;
    n += offer("libc.so.6", &accepted);
    n += offer("libm.so.6", &accepted);
    n += offer("libstdc++.so.6", &accepted);
    n += offer("libgcc_s.so.1", &accepted);
    printf("%ld foreign names, %ld accepted as Swift\n", n, accepted);
    CHECK(n > 1000); /* nm and the libraries were there: the check below means something */
    CHECK(accepted == 0);
    /* and names shaped like the old scheme's prefix */
    const char *c_names[] = {"_TIFFmalloc", "_TIFFClampDoubleToUInt32", "_Tcl_Alloc", "_T", "_TZ",
                             "_Thread_local", "_$s", "$S"};
    char out[256];
    for (size_t i = 0; i < sizeof c_names / sizeof c_names[0]; i++)
        CHECK(fl_demangle_swift(c_names[i], out, sizeof out, 0) < 0);
    TEST_END();
}
