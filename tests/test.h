/* SPDX-License-Identifier: MIT */
/* A minimal test harness: CHECK records a failure and goes on; main returns the failure count. */
#ifndef FAULTLINE_TESTS_TEST_H
#define FAULTLINE_TESTS_TEST_H
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Set by tests/CMakeLists.txt in a cross build whose tests run under an emulator: its program
 * (qemu-aarch64), and the folder in which it looks for the guest's absolute paths first (-L). */
#ifndef FL_TEST_EMULATOR
#define FL_TEST_EMULATOR ""
#endif
#ifndef FL_TEST_SYSROOT
#define FL_TEST_SYSROOT ""
#endif
/* Whether the tests run emulated (a few checks there test the emulator, not faultline). */
static inline int fl_test_emulated(void) { return FL_TEST_EMULATOR[0] != 0; }
/* The file a host tool (readelf, nm) must open for a path the guest sees: the emulator's
 * sysroot copy where there is one, as the emulator itself resolves it. */
static inline const char *fl_test_host_path(const char *path, char *buf, size_t cap) {
    if (FL_TEST_SYSROOT[0] && path[0] == '/' &&
        snprintf(buf, cap, "%s%s", FL_TEST_SYSROOT, path) < (int)cap && access(buf, F_OK) == 0)
        return buf;
    return path;
}

static int fl_test_failures;
static int fl_test_checks;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        fl_test_checks++;                                                                   \
        if (!(cond)) {                                                                      \
            fl_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);        \
        }                                                                                   \
    } while (0)
#define CHECK_EQ_U64(a, b)                                                                  \
    do {                                                                                    \
        unsigned long long fl_a_ = (unsigned long long)(a), fl_b_ = (unsigned long long)(b); \
        fl_test_checks++;                                                                   \
        if (fl_a_ != fl_b_) {                                                               \
            fl_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (0x%llx != 0x%llx)\n", __FILE__,  \
                    __LINE__, #a, #b, fl_a_, fl_b_);                                        \
        }                                                                                   \
    } while (0)
#define CHECK_STREQ(a, b)                                                                   \
    do {                                                                                    \
        const char *fl_a_ = (a), *fl_b_ = (b);                                              \
        fl_test_checks++;                                                                   \
        if (!fl_a_ || !fl_b_ || strcmp(fl_a_, fl_b_) != 0) {                                \
            fl_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n", __FILE__,   \
                    __LINE__, #a, #b, fl_a_ ? fl_a_ : "(null)", fl_b_ ? fl_b_ : "(null)");   \
        }                                                                                   \
    } while (0)
/* Ends main: prints "N passed, N failed" (checks) and returns nonzero on any failure. */
#define TEST_END()                                                                          \
    do {                                                                                    \
        printf("%d passed, %d failed\n", fl_test_checks - fl_test_failures, fl_test_failures); \
        return fl_test_failures ? 1 : 0;                                                    \
    } while (0)
#endif
