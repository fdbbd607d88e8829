/* SPDX-License-Identifier: MIT */
/* The Mach exception server: a primary thread runs every capture, a secondary its faults. */
#include <mach/mach.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"

/* Our own message to the same port: "run request slot N". */
#define REQUEST_ID 0x666c7271 /* 'flrq' */
typedef struct request_msg {
    mach_msg_header_t head;
    uint32_t slot;
} request_msg_t;

/* What a receive may bring, with room for the kernel's trailer. */
typedef union rcv_buf {
    mach_msg_header_t head;
    fl_mach_exc_request_t exc; /* base/mach_layouts.h, decoded by fl_mach_exc_decode */
    request_msg_t req;
    uint8_t bytes[1024];
} rcv_buf_t;

#define FL_MACH_MASK_BASE (EXC_MASK_BAD_ACCESS | EXC_MASK_BAD_INSTRUCTION | EXC_MASK_ARITHMETIC | \
                           EXC_MASK_SOFTWARE | EXC_MASK_BREAKPOINT)
#define FL_MACH_BEHAVIOR ((exception_behavior_t)(EXCEPTION_DEFAULT | MACH_EXCEPTION_CODES))

/* Requests from other threads (a crash signal, fl_snapshot). A slot is FREE -> FILLING (the
 * requester copies the request in) -> QUEUED (message sent) -> RUNNING (primary) -> DONE (result
 * read by the requester, who frees it). A requester that stops waiting takes a QUEUED slot back
 * to FREE (the primary then skips its message) or marks a RUNNING one ABANDONED (the primary frees
 * it when done). Everything a capture reads is copied into the slot, so a requester that gave up
 * leaves nothing dangling. */
enum { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE, SLOT_ABANDONED };
#define SLOTS 8u
#define REASON_MAX 1024u
static struct slot {
    volatile int state;
    int result;
    fl_capture_request_t req;
    fl_regs_t regs;
    siginfo_t info;
    char reason[REASON_MAX];
} g_slots[SLOTS];

static mach_port_t g_port;   /* receive + send: the task's exception port, and our requests */
static mach_port_t g_backup; /* receive + send: the primary thread's own exception port */
static semaphore_t g_done;   /* signalled (to all) whenever a slot is done */
static pthread_t g_primary, g_secondary;
static volatile uint32_t g_primary_thread, g_secondary_thread;
static pid_t g_pid;               /* the installing process: a fork child has no server */
static volatile int g_running;
static volatile int g_dead;       /* the primary faulted; the secondary answered for it */
static volatile int g_status;     /* kern_return_t of the task exception-port swap */
static volatile int g_ports_restored;
static exception_mask_t g_mask;
static struct {
    mach_msg_type_number_t count;
    exception_mask_t masks[EXC_TYPES_COUNT];
    mach_port_t handlers[EXC_TYPES_COUNT];
    exception_behavior_t behaviors[EXC_TYPES_COUNT];
    thread_state_flavor_t flavors[EXC_TYPES_COUNT];
} g_saved;

/* What the primary is answering, so that the secondary can answer it if the primary faults. */
enum { CURRENT_NONE, CURRENT_EXCEPTION, CURRENT_REQUEST };
static struct {
    volatile int kind;
    fl_mach_msg_header_t head; /* CURRENT_EXCEPTION: the request's header (its reply port) */
    unsigned slot;          /* CURRENT_REQUEST */
} g_current;

static uint64_t now_ns(void) {
    uint64_t ns = 0;
    fl_sys_clock_gettime(CLOCK_MONOTONIC, &ns);
    return ns;
}

int fl_mach_server_status(void) { return g_status; }

/* Port names mean nothing in a fork child, where the server's threads do not exist. */
bool fl_mach_server_owns(uint32_t thread) {
    return thread != MACH_PORT_NULL && getpid() == g_pid &&
           (thread == g_primary_thread || thread == g_secondary_thread);
}

/* Puts back the saved ports for the exception types whose port is still ours: a handler the
 * application (or a debugger) installed after us is left alone. */
void fl_mach_server_restore_ports(void) {
    if (g_status != KERN_SUCCESS || __atomic_exchange_n(&g_ports_restored, 1, __ATOMIC_SEQ_CST))
        return;
    task_t task = mach_task_self();
    exception_mask_t masks[EXC_TYPES_COUNT], ours = 0;
    mach_port_t handlers[EXC_TYPES_COUNT];
    exception_behavior_t behaviors[EXC_TYPES_COUNT];
    thread_state_flavor_t flavors[EXC_TYPES_COUNT];
    mach_msg_type_number_t count = EXC_TYPES_COUNT;
    if (task_get_exception_ports(task, g_mask, masks, &count, handlers, behaviors, flavors) ==
        KERN_SUCCESS) {
        for (mach_msg_type_number_t i = 0; i < count && i < EXC_TYPES_COUNT; i++) {
            if (handlers[i] == g_port) ours |= masks[i];
            if (MACH_PORT_VALID(handlers[i])) mach_port_deallocate(task, handlers[i]);
        }
    } else {
        ours = g_mask; /* cannot tell: put everything back */
    }
    if (!ours) return;
    task_set_exception_ports(task, ours, MACH_PORT_NULL, EXCEPTION_DEFAULT, THREAD_STATE_NONE);
    for (mach_msg_type_number_t i = 0; i < g_saved.count && i < EXC_TYPES_COUNT; i++) {
        exception_mask_t m = g_saved.masks[i] & ours;
        if (m && MACH_PORT_VALID(g_saved.handlers[i]))
            task_set_exception_ports(task, m, g_saved.handlers[i], g_saved.behaviors[i],
                                     g_saved.flavors[i]);
    }
}

static void reply(const fl_mach_msg_header_t *req, kern_return_t ret) {
    if (!MACH_PORT_VALID(req->remote_port)) return;
    fl_mach_exc_reply_t r;
    fl_mach_exc_reply_init(&r, req, ret);
    mach_msg((mach_msg_header_t *)&r, MACH_SEND_MSG, sizeof r, 0, MACH_PORT_NULL,
             MACH_MSG_TIMEOUT_NONE, MACH_PORT_NULL);
}

static void release_ports(const fl_mach_exc_t *x) {
    if (MACH_PORT_VALID(x->thread)) mach_port_deallocate(mach_task_self(), x->thread);
    if (MACH_PORT_VALID(x->task)) mach_port_deallocate(mach_task_self(), x->task);
}

/* After a crash report: the previous exception ports and signal actions back, so that the signal
 * the kernel raises next goes where it would have gone without us. */
static void finish_crash(void) {
    fl_mach_server_restore_ports();
    fl_crash_restore_signal_actions();
    fl_crash_finish();
}

static void serve_exception(const fl_mach_exc_t *x) {
    /* Exception ports are inherited across fork and exec, so a child's exceptions can come here:
     * only our own task's are ours. Others, and a traced signal, get KERN_FAILURE at once. */
    if (x->task == mach_task_self() && x->crash) {
        fl_capture_request_t req = {.kind = 1, .exception = &x->e, .thread = x->thread};
        g_current.head = x->head;
        __atomic_store_n(&g_current.kind, CURRENT_EXCEPTION, __ATOMIC_SEQ_CST);
        if (x->e.type == EXC_GUARD) {
            /* Whether a guard violation ends the process is the kernel's decision, taken after
             * the handlers answered: report it without using up the one crash report, and stay
             * installed in case the process goes on. */
            if (!fl_crash_claimed()) fl_crash_capture(&req);
        } else if (fl_crash_claim_once()) {
            fl_crash_capture(&req);
            finish_crash();
        }
        /* Else a crash is already captured, or claimed by a signal handler whose request waits
         * behind this message: answering now lets that thread's signal come and wait for it. */
        __atomic_store_n(&g_current.kind, CURRENT_NONE, __ATOMIC_SEQ_CST);
    }
    /* KERN_FAILURE: the kernel goes on to the next handler (the host's) and, when none takes it,
     * raises the BSD signal (ux_exception). */
    reply(&x->head, KERN_FAILURE);
    release_ports(x);
}

static void complete(unsigned slot, int result) {
    struct slot *s = &g_slots[slot];
    s->result = result;
    int expected = SLOT_RUNNING;
    if (!__atomic_compare_exchange_n(&s->state, &expected, SLOT_DONE, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_SEQ_CST); /* abandoned: nobody reads it */
    semaphore_signal_all(g_done);
}

static void serve_request(const request_msg_t *m) {
    unsigned slot = m->slot;
    if (slot >= SLOTS) return;
    struct slot *s = &g_slots[slot];
    int expected = SLOT_QUEUED;
    if (!__atomic_compare_exchange_n(&s->state, &expected, SLOT_RUNNING, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return; /* taken back by a requester that stopped waiting */
    g_current.slot = slot;
    __atomic_store_n(&g_current.kind, CURRENT_REQUEST, __ATOMIC_SEQ_CST);
    int result;
    if (s->req.kind == 1) { /* a crash signal: its handler claimed the report */
        result = fl_crash_capture(&s->req);
        finish_crash();
    } else {
        result = fl_crash_claimed() ? FL_EBUSY : fl_crash_capture(&s->req);
    }
    __atomic_store_n(&g_current.kind, CURRENT_NONE, __ATOMIC_SEQ_CST);
    complete(slot, result);
}

/* Receives one message on port (with a timeout in ms when `timeout_ms` >= 0): its size, or 0. */
static mach_msg_size_t receive(mach_port_t port, rcv_buf_t *buf, int timeout_ms,
                               mach_msg_return_t *mr) {
    fl_memset(&buf->head, 0, sizeof buf->head);
    mach_msg_option_t opt = MACH_RCV_MSG | (timeout_ms >= 0 ? MACH_RCV_TIMEOUT : 0);
    *mr = mach_msg(&buf->head, opt, 0, sizeof *buf, port,
                   timeout_ms >= 0 ? (mach_msg_timeout_t)timeout_ms : MACH_MSG_TIMEOUT_NONE,
                   MACH_PORT_NULL);
    return *mr == MACH_MSG_SUCCESS ? buf->head.msgh_size : 0;
}

static void block_signals(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *primary_main(void *arg) {
    (void)arg;
    static rcv_buf_t buf; /* only this thread receives into it */
    pthread_setname_np("faultline exception server");
    block_signals(); /* inherited already (fl_mach_server_start); kept explicit */
    for (;;) {
        mach_msg_return_t mr;
        mach_msg_size_t n = receive(g_port, &buf, -1, &mr);
        if (mr == MACH_RCV_TOO_LARGE) continue; /* the kernel dropped it */
        if (mr != MACH_MSG_SUCCESS) break;      /* the port was destroyed: fl_mach_server_stop */
        fl_mach_exc_t x;
        if (buf.head.msgh_id == REQUEST_ID && n >= sizeof(request_msg_t))
            serve_request(&buf.req);
        else if (fl_mach_exc_decode(&buf, n, &x) == 0)
            serve_exception(&x);
        else
            mach_msg_destroy(&buf.head); /* not ours: release any rights it carried */
    }
    return NULL;
}

/* The primary faulted (its exceptions alone come to this port): make it safe for the secondary
 * to fault in turn, keep the partial report, answer what the primary was answering and what is
 * queued behind it. The primary's own exception is never answered: its thread stays stopped, so
 * that the process ends with the application's crash rather than with ours. */
static void take_over(void) {
    __atomic_store_n(&g_dead, 1, __ATOMIC_SEQ_CST);
    fl_mach_server_restore_ports();
    fl_log_stderr("crash handler faulted; the report may be incomplete");
    fl_crash_abandon();
    fl_crash_restore_signal_actions();
    fl_crash_finish();
    int kind = __atomic_load_n(&g_current.kind, __ATOMIC_SEQ_CST);
    if (kind == CURRENT_EXCEPTION) reply(&g_current.head, KERN_FAILURE);
    else if (kind == CURRENT_REQUEST) complete(g_current.slot, FL_EIO);
    /* Bounded drain of what was queued for the primary: ports are restored, so nothing new
     * arrives but requests, which now fail at once (g_dead). */
    static rcv_buf_t buf;
    for (unsigned i = 0; i < 4u * SLOTS + 64u; i++) {
        fl_mach_exc_t x;
        mach_msg_return_t mr;
        mach_msg_size_t n = receive(g_port, &buf, 0, &mr);
        if (mr != MACH_MSG_SUCCESS) break;
        if (buf.head.msgh_id == REQUEST_ID && n >= sizeof(request_msg_t) && buf.req.slot < SLOTS) {
            int expected = SLOT_QUEUED;
            if (__atomic_compare_exchange_n(&g_slots[buf.req.slot].state, &expected, SLOT_RUNNING,
                                            false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                complete(buf.req.slot, FL_ESTATE);
        } else if (fl_mach_exc_decode(&buf, n, &x) == 0) {
            reply(&x.head, KERN_FAILURE);
            release_ports(&x);
        } else {
            mach_msg_destroy(&buf.head);
        }
    }
}

static void *secondary_main(void *arg) {
    (void)arg;
    static rcv_buf_t buf;
    pthread_setname_np("faultline exception server (backup)");
    block_signals();
    for (;;) {
        mach_msg_return_t mr;
        mach_msg_size_t n = receive(g_backup, &buf, -1, &mr);
        if (mr == MACH_RCV_TOO_LARGE) continue;
        if (mr != MACH_MSG_SUCCESS) break;
        fl_mach_exc_t x;
        if (fl_mach_exc_decode(&buf, n, &x) != 0) {
            mach_msg_destroy(&buf.head);
            continue;
        }
        take_over();
        break;
    }
    return NULL;
}

/* Both ports: a receive right with a send right under the same name. */
static kern_return_t make_port(mach_port_t *port) {
    kern_return_t kr = mach_port_allocate(mach_task_self(), MACH_PORT_RIGHT_RECEIVE, port);
    if (kr != KERN_SUCCESS) return kr;
    kr = mach_port_insert_right(mach_task_self(), *port, *port, MACH_MSG_TYPE_MAKE_SEND);
    if (kr != KERN_SUCCESS) mach_port_mod_refs(mach_task_self(), *port, MACH_PORT_RIGHT_RECEIVE, -1);
    return kr;
}

static void drop_port(mach_port_t *port) {
    if (!MACH_PORT_VALID(*port)) return;
    /* Destroying the receive right wakes its receiver with MACH_RCV_PORT_DIED; the send right
     * under the same name becomes a dead name, released next. */
    mach_port_mod_refs(mach_task_self(), *port, MACH_PORT_RIGHT_RECEIVE, -1);
    mach_port_deallocate(mach_task_self(), *port);
    *port = MACH_PORT_NULL;
}

int fl_mach_server_start(void) {
    if (g_running) return FL_EBUSY;
    task_t task = mach_task_self();
    g_pid = getpid();
    g_dead = 0;
    g_status = KERN_FAILURE;
    g_ports_restored = 0;
    g_current.kind = CURRENT_NONE;
    for (unsigned i = 0; i < SLOTS; i++) g_slots[i].state = SLOT_FREE;
    if (make_port(&g_port) != KERN_SUCCESS) return FL_EIO;
    if (make_port(&g_backup) != KERN_SUCCESS ||
        semaphore_create(task, &g_done, SYNC_POLICY_FIFO, 0) != KERN_SUCCESS) {
        drop_port(&g_backup);
        drop_port(&g_port);
        return FL_EIO;
    }
    /* The threads start with every signal blocked (they inherit the creator's mask), so no
     * handler ever runs on them, not even before they block signals themselves. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    bool started = pthread_create(&g_primary, NULL, primary_main, NULL) == 0;
    if (started && pthread_create(&g_secondary, NULL, secondary_main, NULL) != 0) {
        drop_port(&g_port); /* ends the primary */
        pthread_join(g_primary, NULL);
        started = false;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        drop_port(&g_backup);
        drop_port(&g_port);
        semaphore_destroy(task, g_done);
        return FL_ENOMEM;
    }
    g_primary_thread = pthread_mach_thread_np(g_primary);
    g_secondary_thread = pthread_mach_thread_np(g_secondary);
    g_running = 1;

    /* The primary's own exceptions go to the secondary first (thread-level ports come before the
     * task's). Then the task's ports: the previous ones are saved for restoring. EXC_GUARD is
     * only taken where the kernel knows it (KERN_INVALID_ARGUMENT otherwise). */
    if (thread_set_exception_ports(g_primary_thread, FL_MACH_MASK_BASE | EXC_MASK_GUARD, g_backup,
                                   FL_MACH_BEHAVIOR, THREAD_STATE_NONE) != KERN_SUCCESS)
        thread_set_exception_ports(g_primary_thread, FL_MACH_MASK_BASE, g_backup, FL_MACH_BEHAVIOR,
                                   THREAD_STATE_NONE);
    kern_return_t kr = KERN_INVALID_ARGUMENT;
    exception_mask_t masks[] = {FL_MACH_MASK_BASE | EXC_MASK_GUARD, FL_MACH_MASK_BASE};
    for (unsigned i = 0; i < FL_ARRAY_LEN(masks) && kr == KERN_INVALID_ARGUMENT; i++) {
        g_mask = masks[i];
        g_saved.count = EXC_TYPES_COUNT;
        kr = task_swap_exception_ports(task, g_mask, g_port, FL_MACH_BEHAVIOR, THREAD_STATE_NONE,
                                       g_saved.masks, &g_saved.count, g_saved.handlers,
                                       g_saved.behaviors, g_saved.flavors);
    }
    if (kr != KERN_SUCCESS) g_saved.count = 0;
    /* Without the task's ports (refused, e.g. by a sandbox) the server still captures for the
     * signal handlers and fl_snapshot; every report then says so (fl_mach_server_status). */
    g_status = kr;
    return 0;
}

void fl_mach_server_stop(void) {
    if (!g_running) return;
    fl_mach_server_restore_ports();
    for (mach_msg_type_number_t i = 0; i < g_saved.count && i < EXC_TYPES_COUNT; i++)
        if (MACH_PORT_VALID(g_saved.handlers[i]))
            mach_port_deallocate(mach_task_self(), g_saved.handlers[i]);
    g_saved.count = 0;
    g_running = 0;
    drop_port(&g_port);
    drop_port(&g_backup);
    /* A primary that faulted stays stopped in its exception for good: it cannot be joined. */
    if (__atomic_load_n(&g_dead, __ATOMIC_SEQ_CST))
        pthread_detach(g_primary);
    else
        pthread_join(g_primary, NULL);
    pthread_join(g_secondary, NULL);
    g_primary_thread = g_secondary_thread = MACH_PORT_NULL;
    semaphore_destroy(mach_task_self(), g_done);
}

int fl_mach_server_submit(const fl_capture_request_t *req) {
    if (!__atomic_load_n(&g_running, __ATOMIC_SEQ_CST) || getpid() != g_pid) return FL_ENOSYS;
    if (__atomic_load_n(&g_dead, __ATOMIC_SEQ_CST)) return FL_ESTATE;
    if (fl_mach_server_owns(pthread_mach_thread_np(pthread_self()))) return FL_EBUSY;
    unsigned slot = SLOTS;
    for (unsigned i = 0; i < SLOTS && slot == SLOTS; i++) {
        int expected = SLOT_FREE;
        if (__atomic_compare_exchange_n(&g_slots[i].state, &expected, SLOT_FILLING, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            slot = i;
    }
    if (slot == SLOTS) return FL_EBUSY;
    struct slot *s = &g_slots[slot];
    s->req = *req;
    s->req.exception = NULL;
    if (req->regs) {
        s->regs = *req->regs;
        s->req.regs = &s->regs;
    }
    if (req->info) {
        s->info = *req->info;
        s->req.info = &s->info;
    }
    if (req->reason) {
        fl_strlcpy(s->reason, req->reason, sizeof s->reason);
        s->req.reason = s->reason;
    }
    __atomic_store_n(&s->state, SLOT_QUEUED, __ATOMIC_SEQ_CST);

    request_msg_t msg;
    fl_memset(&msg, 0, sizeof msg);
    msg.head.msgh_bits = MACH_MSGH_BITS(MACH_MSG_TYPE_COPY_SEND, 0);
    msg.head.msgh_remote_port = g_port;
    msg.head.msgh_local_port = MACH_PORT_NULL;
    msg.head.msgh_size = sizeof msg;
    msg.head.msgh_id = REQUEST_ID;
    msg.slot = slot;
    /* A full queue (exceptions of many crashing threads) or a dead port: give the slot back. */
    if (mach_msg(&msg.head, MACH_SEND_MSG | MACH_SEND_TIMEOUT, sizeof msg, 0, MACH_PORT_NULL, 100,
                 MACH_PORT_NULL) != MACH_MSG_SUCCESS) {
        __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_SEQ_CST);
        return FL_EBUSY;
    }

    uint64_t start = now_ns();
    for (;;) {
        int state = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
        if (state == SLOT_DONE) {
            int result = s->result;
            __atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_SEQ_CST);
            return result;
        }
        uint64_t waited = now_ns() - start;
        if (waited >= FL_MACH_SERVER_WAIT_NS) {
            int expected = SLOT_QUEUED;
            if (__atomic_compare_exchange_n(&s->state, &expected, SLOT_FREE, false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return FL_EIO;
            expected = SLOT_RUNNING;
            if (__atomic_compare_exchange_n(&s->state, &expected, SLOT_ABANDONED, false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return FL_EIO;
            continue; /* it just became DONE */
        }
        /* Short waits: a semaphore_signal_all that came before this wait began is not seen. */
        uint64_t left = FL_MACH_SERVER_WAIT_NS - waited;
        if (left > 50000000u) left = 50000000u;
        mach_timespec_t ts = {0, (clock_res_t)left};
        semaphore_timedwait(g_done, ts);
    }
}
