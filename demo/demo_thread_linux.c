/* SPDX-License-Identifier: MIT */
/* The demo's thread naming on Linux. */
#include <pthread.h>

void demo_name_this_thread(const char *name);
void demo_name_this_thread(const char *name) { pthread_setname_np(pthread_self(), name); }
