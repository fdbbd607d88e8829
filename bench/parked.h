/* SPDX-License-Identifier: MIT */
/* Benchmarks: processes whose threads all sit at the bottom of a deep noinline recursion, asleep. */
#ifndef FAULTLINE_BENCH_PARKED_H
#define FAULTLINE_BENCH_PARKED_H

#include <stddef.h>

#define PARKED_STACK_SIZE (256u * 1024u) /* per thread: small, so 1,000 threads stay cheap */

/* Calls fn(arg) at the bottom of a recursion of `depth` noinline frames (at least 1), so that a
 * stack walk from inside fn sees depth frames of bench_parked_recurse above the caller. */
unsigned bench_parked_recurse(unsigned depth, void (*fn)(void *), void *arg);

/* Starts n threads, each of which recurses `depth` frames deep and then sleeps in a futex wait
 * that never ends. Returns once every one of them is asleep (state S in /proc/self/task), or -1
 * (with a message on stderr) if a thread could not be created or did not fall asleep in 10 s.
 * Threads inherit the caller's signal mask. NOT AS-SAFE. */
int bench_parked_start(unsigned n, unsigned depth);

/* Counts the threads of this process (entries of /proc/self/task). NOT AS-SAFE. */
unsigned bench_parked_count_threads(void);

#endif
