/* SPDX-License-Identifier: MIT */
/* Mach exception messages: decoding, the reply, and the signal a report gives (every platform). */
#include <signal.h>

#include "crash/crash.h"

#pragma GCC poison malloc calloc realloc free

int fl_mach_exc_decode(const void *msg, size_t len, fl_mach_exc_t *out) {
    fl_mach_exc_request_t m;
    const size_t codes = __builtin_offsetof(fl_mach_exc_request_t, code);
    fl_memset(&m, 0, sizeof m);
    fl_memcpy(&m, msg, len < sizeof m ? len : sizeof m);
    fl_memset(out, 0, sizeof *out);
    if (len < codes || m.head.id != FL_MACH_EXCEPTION_RAISE_ID ||
        !(m.head.bits & FL_MACH_MSGH_BITS_COMPLEX) || m.descriptor_count != 2 ||
        m.thread.type != FL_MACH_MSG_PORT_DESCRIPTOR || m.task.type != FL_MACH_MSG_PORT_DESCRIPTOR ||
        m.code_count > FL_MACH_EXCEPTION_CODE_MAX || len < codes + 8u * m.code_count)
        return FL_EBADDATA;
    out->head = m.head;
    out->thread = m.thread.name;
    out->task = m.task.name;
    out->e.type = m.exception;
    out->e.code_count = m.code_count;
    for (unsigned i = 0; i < m.code_count; i++) out->e.codes[i] = (uint64_t)m.code[i];
    /* A signal turned into EXC_SOFTWARE/EXC_SOFT_SIGNAL (only for a process traced with
     * PT_ATTACHEXC) is no crash. */
    out->crash = !(m.exception == FL_EXC_SOFTWARE && m.code_count &&
                   out->e.codes[0] == FL_EXC_SOFT_SIGNAL);
    return 0;
}

void fl_mach_exc_reply_init(fl_mach_exc_reply_t *r, const fl_mach_msg_header_t *req, int32_t ret) {
    static const uint8_t ndr[FL_MACH_NDR_SIZE] = {0, 0, 0, 0, 1 /* little-endian */, 0, 0, 0};
    fl_memset(r, 0, sizeof *r);
    r->head.bits = req->bits & FL_MACH_MSGH_BITS_REMOTE_MASK; /* MACH_MSGH_BITS(remote, 0) */
    r->head.remote_port = req->remote_port; /* the kernel's send-once reply right */
    r->head.size = sizeof *r;
    r->head.id = req->id + FL_MIG_REPLY_ID_OFFSET;
    fl_memcpy(r->ndr, ndr, sizeof ndr);
    r->ret = ret;
}

/* Per bsd/uxkern/ux_exception.c's ux_exception() after the machine-dependent
 * machine_exception(); read from xnu's sources, not observed. */
bool fl_crash_exception_signal(const fl_report_mach_exception_t *e, int arch, int tid,
                               fl_report_signal_t *s) {
    uint64_t code0 = e->code_count ? e->codes[0] : 0;
    int sig = 0;
    switch (e->type) {
    case FL_EXC_BAD_ACCESS:
        sig = code0 == FL_KERN_INVALID_ADDRESS ||
                      (arch == FL_REGS_ARCH_X86_64 && code0 == FL_EXC_I386_GPFLT)
                  ? SIGSEGV
                  : SIGBUS;
        break;
    case FL_EXC_BAD_INSTRUCTION: sig = SIGILL; break;
    case FL_EXC_ARITHMETIC: sig = SIGFPE; break;
    case FL_EXC_BREAKPOINT: sig = SIGTRAP; break;
    case FL_EXC_SOFTWARE:
        sig = code0 == FL_EXC_UNIX_BAD_SYSCALL ? SIGSYS
              : code0 == FL_EXC_UNIX_BAD_PIPE  ? SIGPIPE
              : code0 == FL_EXC_UNIX_ABORT     ? SIGABRT
                                               : 0;
        break;
    default: break;
    }
    if (!sig) return false;
    *s = (fl_report_signal_t){.number = sig, .crashed_tid = tid};
    if (e->type == FL_EXC_BAD_ACCESS && e->code_count > 1) {
        s->address = e->codes[1];
        s->has_address = true;
    }
    return true;
}
