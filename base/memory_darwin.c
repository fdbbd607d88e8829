/* SPDX-License-Identifier: MIT */
/* The safe reader on Darwin: vm_read_overwrite on our own task, which the kernel validates. */
#include <mach/mach.h>

#include "base/base.h"

#pragma GCC poison malloc calloc realloc free

/* The kernel copies through its own mapping of the source pages: an unmapped or unreadable
 * source range gives KERN_INVALID_ADDRESS or KERN_PROTECTION_FAILURE, never an exception in our
 * thread. It is a MIG call (a mach_msg to the kernel through the calling thread's MIG reply port);
 * the crash path makes it from the exception server's thread, which signals never interrupt (see
 * docs/darwin.md for the one path that may). All failures are FL_EFAULT to the caller. */
static int mach_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    (void)r;
    if (!len) return 0;
    uint64_t end;
    if (!fl_add_u64(addr, len, &end)) return FL_EFAULT;
    vm_size_t got = 0;
    kern_return_t kr = vm_read_overwrite(mach_task_self(), (vm_address_t)addr, (vm_size_t)len,
                                         (vm_address_t)(uintptr_t)dst, &got);
    return kr == KERN_SUCCESS && got == len ? 0 : FL_EFAULT;
}

static const fl_reader_t g_reader = {.read = mach_read};
static fl_memory_method_t g_method;

/* The method works if it reads back a value we know and refuses page 0, which is never mapped in
 * a 64-bit Darwin process (__PAGEZERO covers the low 4 GiB of executables). */
int fl_memory_init(fl_memory_method_t force) {
    if (force != FL_MEMORY_NONE && force != FL_MEMORY_MACH) return FL_ENOSYS;
    volatile uint64_t known = 0x6661756c746c696eull;
    uint64_t got = 0;
    if (fl_read(&g_reader, (uint64_t)(uintptr_t)&known, &got, sizeof got) != 0 || got != known ||
        fl_read(&g_reader, 8, &got, sizeof got) == 0)
        return FL_ENOSYS;
    g_method = FL_MEMORY_MACH;
    return 0;
}

fl_memory_method_t fl_memory_method(void) { return g_method; }

void fl_memory_refresh_pid(void) {}

const fl_reader_t *fl_memory_reader(void) { return &g_reader; }

int fl_memory_region(uint64_t addr, uint64_t *start, uint64_t *end, uint32_t *perms) {
    vm_address_t a = (vm_address_t)addr;
    vm_size_t size = 0;
    vm_region_basic_info_data_64_t info;
    mach_msg_type_number_t count = VM_REGION_BASIC_INFO_COUNT_64;
    mach_port_t object = MACH_PORT_NULL; /* obsolete out-parameter: the kernel returns NULL */
    kern_return_t kr = vm_region_64(mach_task_self(), &a, &size, VM_REGION_BASIC_INFO_64,
                                    (vm_region_info_t)&info, &count, &object);
    if (kr != KERN_SUCCESS) return FL_ENOTFOUND; /* KERN_INVALID_ADDRESS: nothing at or above */
    *start = a;
    if (!fl_add_u64(a, size, end)) *end = UINT64_MAX;
    *perms = ((info.protection & VM_PROT_READ) ? FL_MAP_R : 0) |
             ((info.protection & VM_PROT_WRITE) ? FL_MAP_W : 0) |
             ((info.protection & VM_PROT_EXECUTE) ? FL_MAP_X : 0);
    return 0;
}
