/* SPDX-License-Identifier: MIT */
/* Shared by the crasher's translation units. */
#ifndef FAULTLINE_TESTS_CRASHER_H
#define FAULTLINE_TESTS_CRASHER_H
#define NOINLINE __attribute__((noinline))
/* After a call: keeps the call from becoming a tail jump, which would remove the caller's frame. */
#define NOTAIL() __asm__ volatile("" ::: "memory")
void omit_a(int depth);
#endif
