/* SPDX-License-Identifier: MIT */
/* Linux signal and si_code names as static strings. AS-SAFE. */
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
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
#ifdef SIGSTKFLT
    case SIGSTKFLT: return "SIGSTKFLT";
#endif
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
    case SIGPWR: return "SIGPWR";
    case SIGSYS: return "SIGSYS";
    default: return "";
    }
}

/* Signal-specific codes are the kernel's ABI (include/uapi/asm-generic/siginfo.h), the same on
 * every Linux architecture; tables rather than <signal.h> names because older C libraries lack
 * the newer ones (SEGV_MTESERR, TRAP_PERF, ...). Index = si_code. */
static const char *const segv_codes[] = {
    NULL, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI",
    "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR", "SEGV_CPERR"};
static const char *const bus_codes[] = {
    NULL, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"};
static const char *const ill_codes[] = {
    NULL, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC",
    "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"};
static const char *const fpe_codes[] = {
    NULL, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES",
    "FPE_FLTINV", "FPE_FLTSUB", NULL, NULL, NULL, NULL, NULL, "FPE_FLTUNK", "FPE_CONDTRAP"};
static const char *const trap_codes[] = {
    NULL, "TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF"};
static const char *const sys_codes[] = {NULL, "SYS_SECCOMP", "SYS_USER_DISPATCH"};

#define LOOKUP(table, code) \
    ((unsigned)(code) < FL_ARRAY_LEN(table) && (table)[code] ? (table)[code] : "")

const char *fl_signal_code_name(int sig, int code) {
    /* Codes <= 0 and SI_KERNEL say who sent the signal and mean the same for every signal. */
    switch (code) {
    case 0: return "SI_USER";
    case 0x80: return "SI_KERNEL";
    case -1: return "SI_QUEUE";
    case -2: return "SI_TIMER";
    case -3: return "SI_MESGQ";
    case -4: return "SI_ASYNCIO";
    case -5: return "SI_SIGIO";
    case -6: return "SI_TKILL";
    case -7: return "SI_DETHREAD";
    default: break;
    }
    if (code < 0)
        return "";
    switch (sig) {
    case SIGSEGV: return LOOKUP(segv_codes, code);
    case SIGBUS: return LOOKUP(bus_codes, code);
    case SIGILL: return LOOKUP(ill_codes, code);
    case SIGFPE: return LOOKUP(fpe_codes, code);
    case SIGTRAP: return LOOKUP(trap_codes, code);
    case SIGSYS: return LOOKUP(sys_codes, code);
    default: return "";
    }
}
