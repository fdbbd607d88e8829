/* SPDX-License-Identifier: MIT */
/* What fl_install prepares on Darwin: reader, images, exception server, signal handlers. */
#include "crash/crash.h"
#include "macho/macho.h"

int fl_crash_platform_install(void) {
    int e;
    if ((e = fl_memory_init(FL_MEMORY_NONE)) != 0 || (e = fl_macho_images_prepare()) != 0)
        return e;
    if ((e = fl_crash_thread_init(false)) != 0 && e != FL_EBUSY) return e;
    /* The server first: the signal handlers hand their captures to it. */
    if ((e = fl_mach_server_start()) != 0) return e;
    if ((e = fl_crash_handlers_install()) != 0) {
        fl_mach_server_stop();
        return e;
    }
    return 0;
}

void fl_crash_platform_uninstall(void) {
    fl_crash_handlers_uninstall();
    fl_mach_server_stop();
}
