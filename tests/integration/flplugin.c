/* SPDX-License-Identifier: MIT */
/* libflplugin.so, which crash_dlopen_busy loads and unloads in a loop: its constructor and
 * destructor sleep 1 ms each, so the loader's lock is held much of the time. */
#include <time.h>

__attribute__((constructor)) static void fl_plugin_load(void) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

__attribute__((destructor)) static void fl_plugin_unload(void) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

int fl_plugin_answer(void) { return 42; }
