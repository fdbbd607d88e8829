/* SPDX-License-Identifier: MIT */
/* The little of libc the emulated programs need (no libSystem in the emulator): what compilers
 * emit calls to for copies and clears. Built with -ffreestanding (no call back into itself).
 * Eight bytes at a time (both targets allow unaligned loads), so that the walker's instruction
 * counts are not dominated by a byte loop where libSystem would use vector code. */
#include <stddef.h>
#include <stdint.h>

typedef uint64_t __attribute__((may_alias, aligned(1))) word_t;

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void bzero(void *dst, size_t n);
void __bzero(void *dst, size_t n);

void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (; n >= 8; n -= 8, d += 8, s += 8) *(word_t *)d = *(const word_t *)s;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s || d >= s + n) {
        memcpy(dst, src, n);
    } else {
        while (n--) d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    uint64_t w = (unsigned char)c * 0x0101010101010101ull;
    for (; n >= 8; n -= 8, d += 8) *(word_t *)d = w;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

void bzero(void *dst, size_t n) { memset(dst, 0, n); }
void __bzero(void *dst, size_t n) { memset(dst, 0, n); }
