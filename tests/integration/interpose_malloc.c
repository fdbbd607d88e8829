/* SPDX-License-Identifier: MIT */
/* Interposes the heap for crasher_nomalloc: once the crash path is armed, any allocation (or
 * free) ends the process with exit status 77 instead of the expected signal, failing the test. */
#include <stddef.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

volatile int fl_test_forbid_malloc;

static void forbidden(const char *what) {
    if (!fl_test_forbid_malloc) return;
    static const char msg[] = "FORBIDDEN heap call on the crash path: ";
    write(2, msg, sizeof msg - 1);
    size_t n = 0;
    while (what[n]) n++;
    write(2, what, n);
    write(2, "\n", 1);
    _exit(77);
}

void *malloc(size_t n) { forbidden("malloc"); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { forbidden("calloc"); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { forbidden("realloc"); return __libc_realloc(p, n); }
void free(void *p) { forbidden("free"); __libc_free(p); }
