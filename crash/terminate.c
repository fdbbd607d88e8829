/* SPDX-License-Identifier: MIT */
/* The type of the C++ exception std::terminate is called with, kept for the abort's report. */
#include <dlfcn.h>
#include <stdlib.h>

#include "crash/crash.h"

typedef void (*terminate_fn)(void);
static terminate_fn g_previous;        /* the handler ours replaced, called after it */
static terminate_fn (*g_set)(terminate_fn); /* std::set_terminate */
static const void *(*g_current_type)(void); /* __cxa_current_exception_type */
static char g_type[256];
static int g_taken;

/* Runs where std::terminate runs (not in a signal handler): an uncaught exception, one thrown
 * out of a noexcept function or a destructor during unwinding. The Itanium C++ ABI's type_info is
 * {vptr, const char *__type_name}: the mangled type without "_Z" (a leading '*' marks a type
 * local to its file, which type_info::name skips). The first thread to terminate keeps its
 * type; then the previous handler (the C++ library's prints the type and what(), and aborts).
 * (Named fl_* for triage, which takes faultline's frames for crash machinery.) */
static void fl_terminate_handler(void) {
    const void *ti = g_current_type();
    const char *name = ti ? ((const char *const *)ti)[1] : NULL;
    if (name && !__atomic_exchange_n(&g_taken, 1, __ATOMIC_ACQ_REL)) {
        name += *name == '*';
        size_t n = fl_strnlen(name, sizeof g_type - 1);
        fl_memcpy(g_type, name, n);
        g_type[n] = 0;
    }
    if (g_previous) g_previous();
    abort(); /* (a terminate handler must not return) */
}

void *fl_crash_dl_found(void *p) {
    if (!p) { /* (the first returns the message, the second frees it) */
        dlerror();
        dlerror();
    }
    return p;
}

static void *lookup(const char *name) { return fl_crash_dl_found(dlsym(RTLD_DEFAULT, name)); }

void fl_crash_terminate_install(void) {
    /* Both C++ libraries (libstdc++, libc++abi) export these Itanium ABI names; a program
     * without C++ has neither, and a C++ library loaded later goes without. */
    g_set = (terminate_fn (*)(terminate_fn))lookup("_ZSt13set_terminatePFvvE");
    g_current_type = (const void *(*)(void))lookup("__cxa_current_exception_type");
    if (g_set && g_current_type && !g_previous) g_previous = g_set(fl_terminate_handler);
}

void fl_crash_terminate_uninstall(void) {
    if (!g_previous) return;
    terminate_fn now = g_set(g_previous);
    if (now != fl_terminate_handler) g_set(now); /* the program's own came after ours: kept */
    g_previous = NULL;
}

const char *fl_crash_terminate_type(void) {
    return __atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) && g_type[0] ? g_type : NULL;
}
