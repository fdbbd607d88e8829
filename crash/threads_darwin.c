/* SPDX-License-Identifier: MIT */
/* Every thread of the task on Darwin: task_threads, thread_suspend, thread_get_state. */
#include <mach/mach.h>
#include <pthread.h>

#include "crash/crash.h"

#pragma GCC poison malloc calloc realloc free

int fl_mach_thread_id(uint32_t thread) {
    thread_identifier_info_data_t info;
    mach_msg_type_number_t count = THREAD_IDENTIFIER_INFO_COUNT;
    if (thread_info(thread, THREAD_IDENTIFIER_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS)
        return 0;
    return (int)(uint32_t)info.thread_id;
}

/* The name the kernel keeps for the thread (pthread_setname_np stores it there too), so that
 * nothing of libpthread's, and none of its locks, is needed. */
static void read_name(uint32_t thread, char *name, size_t cap) {
    thread_extended_info_data_t info;
    mach_msg_type_number_t count = THREAD_EXTENDED_INFO_COUNT;
    name[0] = 0;
    if (thread_info(thread, THREAD_EXTENDED_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS)
        return;
    info.pth_name[sizeof info.pth_name - 1] = 0;
    fl_strlcpy(name, info.pth_name, cap);
}

static void fill(fl_thread_t *t, uint32_t port) {
    t->port = port;
    t->tid = fl_mach_thread_id(port);
    t->crashed = false;
    read_name(port, t->name, sizeof t->name);
}

int fl_mach_threads_suspend(fl_thread_list_t *l, unsigned max, uint32_t self,
                            const fl_regs_t *self_regs) {
    uint32_t caller = pthread_mach_thread_np(pthread_self());
    l->count = 1;
    l->total = 1;
    l->enum_error = 0;
    l->ports = 0;
    l->nports = 0;
    fl_thread_t *t0 = &l->t[0];
    fill(t0, self);
    t0->suspended = false;
    if (self_regs) {
        t0->regs = *self_regs;
        t0->state = FL_THREAD_CAPTURED;
    } else {
        /* A thread stopped in an exception: the kernel gives the state it faulted with. */
        t0->state = fl_regs_from_mach_thread(&t0->regs, self) == 0 ? FL_THREAD_CAPTURED
                                                                   : FL_THREAD_EXITED;
    }

    thread_act_array_t threads = NULL;
    mach_msg_type_number_t n = 0;
    kern_return_t kr = task_threads(mach_task_self(), &threads, &n);
    if (kr != KERN_SUCCESS) {
        l->enum_error = kr;
        return FL_EIO;
    }
    l->ports = (uint64_t)(uintptr_t)threads;
    l->nports = n;
    if (!max) max = 1;
    /* Stop them all first, then read them: the images and stacks are then read in one state. */
    for (mach_msg_type_number_t i = 0; i < n; i++) {
        uint32_t p = threads[i];
        if (p == self || p == caller || fl_mach_server_owns(p)) continue;
        l->total++;
        if (l->count >= max) continue;
        fl_thread_t *t = &l->t[l->count++];
        t->port = p;
        t->suspended = thread_suspend(p) == KERN_SUCCESS;
    }
    for (unsigned i = 1; i < l->count; i++) {
        fl_thread_t *t = &l->t[i];
        fill(t, t->port);
        /* A thread that could not be stopped has ended since task_threads. */
        t->state = t->suspended && fl_regs_from_mach_thread(&t->regs, t->port) == 0
                       ? FL_THREAD_CAPTURED
                       : FL_THREAD_EXITED;
    }
    return 0;
}

void fl_mach_threads_release(fl_thread_list_t *l) {
    for (unsigned i = 1; i < l->count && i < FL_MAX_THREADS_LIMIT; i++) {
        if (l->t[i].suspended) thread_resume(l->t[i].port);
        l->t[i].suspended = false;
    }
    thread_act_array_t threads = (thread_act_array_t)(uintptr_t)l->ports;
    if (threads) {
        /* task_threads gave a send right for each thread, the caller's included. */
        for (mach_msg_type_number_t i = 0; i < l->nports; i++)
            mach_port_deallocate(mach_task_self(), threads[i]);
        vm_deallocate(mach_task_self(), (vm_address_t)threads, l->nports * sizeof threads[0]);
    }
    l->ports = 0;
    l->nports = 0;
}
