/* SPDX-License-Identifier: MIT */
/* A program's own SIGSEGV handler installed before faultline's (tests/realprog, perl-own-before):
 * preloaded after libfaultline-preload.so, its constructor runs first. The handler says so, puts
 * the default action back and returns: a fault repeats and kills the process, a sent signal is
 * sent again. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void say(const char *s) {
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void own_handler(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    say("own-handler: called\n");
    signal(sig, SIG_DFL);
    if (info->si_code <= 0) raise(sig);
}

__attribute__((constructor)) static void own_install(void) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigaction(SIGSEGV, NULL, &old);
    say(old.sa_handler == SIG_DFL ? "own-handler: installed first\n"
                                  : "own-handler: installed after another handler\n");
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}
