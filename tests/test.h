/* SPDX-License-Identifier: MIT */
/* A minimal test harness: CHECK records a failure and goes on; main returns the failure count. */
#ifndef FAULTLINE_TESTS_TEST_H
#define FAULTLINE_TESTS_TEST_H
#include <stdio.h>
#include <string.h>

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
