/* SPDX-License-Identifier: MIT */
/* Shared by the crasher's translation units. */
#ifndef FAULTLINE_TESTS_CRASHER_H
#define FAULTLINE_TESTS_CRASHER_H
#include <stddef.h>

#define NOINLINE __attribute__((noinline))
/* After a call: keeps the call from becoming a tail jump, which would remove the caller's frame. */
#define NOTAIL() __asm__ volatile("" ::: "memory")
void omit_a(int depth);

/* Scenarios in assembly for one architecture (crasher_leaf_<arch>.c), looked up after crasher.c's. */
typedef struct {
    const char *name;
    void (*run)(const char *dir);
} crasher_scenario_t;
extern const crasher_scenario_t crasher_arch_scenarios[];
extern const unsigned crasher_arch_scenario_count;
void scenario_pac(const char *dir); /* arm64: crasher_pac_arm64.c */
/* Machine code for the jit scenario (crasher_leaf_<arch>.c): jit_thunk(fn) stores a frame record,
 * calls fn, and returns; the return address into it lies jit_thunk_ret bytes from its start. */
extern const unsigned char jit_thunk[];
extern const unsigned jit_thunk_len, jit_thunk_ret;

/* The main thread's crash for scenarios about other threads: null_a -> null_b -> null_c (SIGSEGV). */
void null_a(void);

/* Helpers (crasher_worst.c). */
void crasher_sleep_ms(long ms);
/* Starts a detached thread that runs fn(i), named "<name>-<i>", or "<name>" for i < 0 (NULL:
 * not named); stack_size 0: the default. Exits 4 on failure. */
void crasher_start_thread(void (*fn)(int), const char *name, int i, size_t stack_size);
/* Sleeps forever (but not noreturn: a caller's return address stays inside the caller). */
void crasher_park(void);
/* Waits until *counter reaches n (exits 5 after 20 s). */
void crasher_wait_count(volatile int *counter, int n);
/* An integer from the environment, or `def`. */
int crasher_env_int(const char *name, int def);

/* Worst-case scenarios (crasher_worst.c, crasher_threads.c); each gets the report directory and
 * crashes. */
void scenario_malloc_lock(const char *dir);
void scenario_heap_invalid(const char *dir);
void scenario_heap_double_free(const char *dir);
void scenario_heap_bad_header(const char *dir);
void scenario_dlopen_busy(const char *dir);
void scenario_barrier(const char *dir);
void scenario_emfile(const char *dir);
void scenario_dir_removed(const char *dir);
void scenario_dir_readonly(const char *dir);
void scenario_dir_full(const char *dir);
void scenario_threads_1000(const char *dir);
void scenario_blocked_thread(const char *dir);
void scenario_stuck_thread(const char *dir);
void scenario_busy_threads(const char *dir);
#endif
