/* SPDX-License-Identifier: MIT */
/* Darwin signal and si_code names as static strings (<sys/signal.h>'s values). AS-SAFE. */
#include <signal.h>

#include "report/report.h"

/* Crash-time code: no heap, no stdio. */
#pragma GCC poison malloc calloc realloc free printf fprintf snprintf sprintf

const char *fl_signal_name(int sig) {
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGEMT: return "SIGEMT";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGBUS: return "SIGBUS";
    case SIGSEGV: return "SIGSEGV";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGURG: return "SIGURG";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGCONT: return "SIGCONT";
    case SIGCHLD: return "SIGCHLD";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGIO: return "SIGIO";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGINFO: return "SIGINFO";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "";
    }
}

/* Darwin's codes for a signal sent by a process are large values (SI_USER is 0x10001), so they
 * cannot clash with the small signal-specific ones; 0 is "no code" (the exception server's
 * Signal, and signals the kernel raises without one). */
const char *fl_signal_code_name(int sig, int code) {
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TIMER: return "SI_TIMER";
    case SI_ASYNCIO: return "SI_ASYNCIO";
    case SI_MESGQ: return "SI_MESGQ";
    default: break;
    }
    switch (sig) {
    case SIGSEGV:
        return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR" : "";
    case SIGBUS:
        return code == BUS_ADRALN ? "BUS_ADRALN" : code == BUS_ADRERR ? "BUS_ADRERR"
               : code == BUS_OBJERR ? "BUS_OBJERR" : "";
    case SIGILL:
        switch (code) {
        case ILL_ILLOPC: return "ILL_ILLOPC";
        case ILL_ILLTRP: return "ILL_ILLTRP";
        case ILL_PRVOPC: return "ILL_PRVOPC";
        case ILL_ILLOPN: return "ILL_ILLOPN";
        case ILL_ILLADR: return "ILL_ILLADR";
        case ILL_PRVREG: return "ILL_PRVREG";
        case ILL_COPROC: return "ILL_COPROC";
        case ILL_BADSTK: return "ILL_BADSTK";
        default: return "";
        }
    case SIGFPE:
        switch (code) {
        case FPE_FLTDIV: return "FPE_FLTDIV";
        case FPE_FLTOVF: return "FPE_FLTOVF";
        case FPE_FLTUND: return "FPE_FLTUND";
        case FPE_FLTRES: return "FPE_FLTRES";
        case FPE_FLTINV: return "FPE_FLTINV";
        case FPE_FLTSUB: return "FPE_FLTSUB";
        case FPE_INTDIV: return "FPE_INTDIV";
        case FPE_INTOVF: return "FPE_INTOVF";
        default: return "";
        }
    case SIGTRAP:
        return code == TRAP_BRKPT ? "TRAP_BRKPT" : code == TRAP_TRACE ? "TRAP_TRACE" : "";
    default: return "";
    }
}
