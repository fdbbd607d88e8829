/* SPDX-License-Identifier: MIT */
/* macho: where dyld's all-image-infos and the executable are, recorded at install (Darwin). */
#include <crt_externs.h>
#include <libproc.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach/mach.h>
#include <unistd.h>

#include "macho/dyld_images.h"

#pragma GCC poison malloc calloc realloc free

/* Written once by fl_macho_images_prepare at install time, only read afterwards. */
static struct {
    bool prepared;
    bool exe_truncated;
    uint64_t infos;      /* address of dyld_all_image_infos */
    uint64_t infos_size;
    uint64_t exe_header; /* the main executable's mach_header_64 */
    char exe[FL_IMAGE_PATH_MAX];
} g_prep;

int fl_macho_images_prepare(void) {
    if (fl_memory_method() == FL_MEMORY_NONE) {
        int e = fl_memory_init(FL_MEMORY_NONE);
        if (e) return e;
    }
    struct task_dyld_info info;
    mach_msg_type_number_t count = TASK_DYLD_INFO_COUNT;
    kern_return_t kr = task_info(mach_task_self(), TASK_DYLD_INFO, (task_info_t)&info, &count);
    if (kr != KERN_SUCCESS || info.all_image_info_format != TASK_DYLD_ALL_IMAGE_INFO_64)
        return FL_ENOSYS;
    g_prep.infos = info.all_image_info_addr;
    g_prep.infos_size = info.all_image_info_size;
    g_prep.exe_header = (uint64_t)(uintptr_t)_NSGetMachExecuteHeader();
    /* The kernel's path of the executable (absolute, symbolic links resolved); dyld's own copy
     * as it was given on exec otherwise. */
    char buf[FL_IMAGE_PATH_MAX];
    int n = proc_pidpath(getpid(), buf, sizeof buf);
    if (n <= 0) {
        uint32_t size = sizeof buf;
        if (_NSGetExecutablePath(buf, &size) != 0) {
            buf[0] = 0;
            g_prep.exe_truncated = true;
        }
    }
    buf[sizeof buf - 1] = 0;
    fl_strlcpy(g_prep.exe, buf, sizeof g_prep.exe);
    __atomic_store_n(&g_prep.prepared, true, __ATOMIC_RELEASE);
    return 0;
}

const char *fl_macho_exe_path(void) { return g_prep.exe; }

int fl_macho_images_collect(const fl_reader_t *mem, fl_image_list_t *out) {
    if (!__atomic_load_n(&g_prep.prepared, __ATOMIC_ACQUIRE)) {
        out->count = 0;
        return FL_ESTATE;
    }
    fl_macho_dyld_t d = {.infos = g_prep.infos, .infos_size = g_prep.infos_size,
                         .exe_header = g_prep.exe_header, .exe = g_prep.exe};
    return fl_macho_dyld_collect(mem, &d, out);
}
