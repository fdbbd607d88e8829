/* SPDX-License-Identifier: MIT */
/* What fl_install prepares on Linux: reader, images, alternate stacks, signal handlers. */
#include <dlfcn.h>
#include <string.h>

#include "crash/crash.h"

static fl_memory_method_t memory_method_from_env(void) {
    const char *m = fl_env_get("FAULTLINE_MEMORY_METHOD");
    if (m && strcmp(m, "pipe") == 0) return FL_MEMORY_PIPE;
    if (m && strcmp(m, "vm_readv") == 0) return FL_MEMORY_VM_READV;
    return FL_MEMORY_NONE;
}

int fl_crash_platform_install(void) {
    int e;
    if ((e = fl_memory_init(memory_method_from_env())) != 0 || (e = fl_elf_images_prepare()) != 0)
        return e;
    if ((e = fl_crash_thread_init(false)) != 0 && e != FL_EBUSY) return e;
#ifdef __GLIBC__
    /* glibc's message for abort (capture_linux.c): found now, read at a crash */
    fl_crash_os_abort_message_at(
        fl_crash_dl_found(dlvsym(RTLD_DEFAULT, "__abort_msg", "GLIBC_PRIVATE")));
#endif
    if ((e = fl_threads_install()) != 0) return e;
    /* Threads that already run get their stack through the capture signal's handler. */
    fl_threads_offer_altstacks(FL_OFFER_WAIT_NS);
    if ((e = fl_crash_handlers_install()) != 0) {
        fl_threads_uninstall();
        return e;
    }
    fl_crash_altstacks_auto(true);
    return 0;
}

void fl_crash_platform_uninstall(void) {
    fl_crash_altstacks_auto(false);
    fl_crash_handlers_uninstall();
    fl_threads_uninstall();
}
