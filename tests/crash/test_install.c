/* SPDX-License-Identifier: MIT */
/* crash: fl_install/fl_uninstall contracts, the report directory, annotations, alternate stacks. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline/faultline.h"
#include "test.h"

static void app_handler(int sig) { (void)sig; }

static bool handler_is(int sig, void (*h)(int)) {
    struct sigaction cur;
    sigaction(sig, NULL, &cur);
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == h;
}

int main(void) {
    char tmp[] = "/tmp/fl-install-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/a/b/reports", tmp);

    CHECK(fl_install(NULL) == FL_EINVAL);
    fl_options bad = {.report_dir = ""};
    CHECK(fl_install(&bad) == FL_EINVAL);
    fl_options big = {.report_dir = dir, .max_frames = FL_MAX_FRAMES_LIMIT + 1};
    CHECK(fl_install(&big) == FL_EINVAL);
    /* Stack memory budgets past their limits (FL_STACK_BYTES_NONE is not a size). */
    fl_options stacks[] = {{.report_dir = dir, .stack_bytes = FL_STACK_BYTES_LIMIT + 1},
                           {.report_dir = dir, .crashed_stack_bytes = FL_STACK_BYTES_LIMIT + 1},
                           {.report_dir = dir, .stack_bytes = FL_STACK_BYTES_NONE},
                           {.report_dir = dir, .stack_bytes_total = FL_STACK_BYTES_TOTAL_LIMIT + 1}};
    for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; i++) CHECK(fl_install(&stacks[i]) == FL_EINVAL);

    /* An application handler installed before: ours replaces it, uninstall restores it. */
    signal(SIGSEGV, app_handler);
    signal(SIGBUS, SIG_DFL);
    fl_options o = {.report_dir = dir, .app_name = "t"};
    CHECK(fl_install(&o) == 0);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    struct sigaction cur;
    sigaction(SIGSEGV, NULL, &cur);
    CHECK((cur.sa_flags & SA_SIGINFO) && (cur.sa_flags & SA_ONSTACK));
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaction(sigs[i], NULL, &cur);
        CHECK(cur.sa_flags & SA_SIGINFO);
    }
    CHECK(fl_install(&o) == FL_EBUSY);
    stack_t ss;
    CHECK(sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size >= 16384);

    /* Annotations: replace, remove, limit. */
    CHECK(fl_annotate("k", "v1") == 0);
    CHECK(fl_annotate("k", "v2") == 0);
    CHECK(fl_annotate("k", NULL) == 0);
    CHECK(fl_annotate("", "x") == FL_EINVAL);
    CHECK(fl_annotate(NULL, "x") == FL_EINVAL);
    int last = 0;
    for (unsigned i = 0; i <= FL_MAX_ANNOTATIONS; i++) {
        char k[32];
        snprintf(k, sizeof k, "key%u", i);
        last = fl_annotate(k, "v");
        if (i < FL_MAX_ANNOTATIONS) CHECK(last == 0);
    }
    CHECK(last == FL_ERANGE);

    fl_uninstall();
    CHECK(handler_is(SIGSEGV, app_handler));
    CHECK(handler_is(SIGBUS, SIG_DFL));
    fl_uninstall(); /* twice: harmless */

    /* opts.signals: only those are caught; the others keep the application's action, before
     * and after fl_uninstall; a bit of a signal fl_install does not catch is refused. */
    fl_options some = {.report_dir = dir, .signals = 1ull << SIGSEGV | 1ull << SIGBUS};
    signal(SIGABRT, app_handler);
    CHECK(fl_install(&some) == 0);
    sigaction(SIGBUS, NULL, &cur);
    CHECK(cur.sa_flags & SA_SIGINFO);
    CHECK(handler_is(SIGABRT, app_handler) && handler_is(SIGILL, SIG_DFL));
    fl_uninstall();
    CHECK(handler_is(SIGABRT, app_handler) && handler_is(SIGSEGV, app_handler));
    signal(SIGABRT, SIG_DFL);
    fl_options odd = {.report_dir = dir, .signals = 1ull << SIGUSR1};
    CHECK(fl_install(&odd) == FL_EINVAL);

    /* A handler the application installed after us survives fl_uninstall. */
    CHECK(fl_install(&o) == 0);
    signal(SIGILL, app_handler);
    fl_uninstall();
    CHECK(handler_is(SIGILL, app_handler));

    /* An unwritable directory is refused at install, with a clear code. */
    if (geteuid() != 0) { /* root writes anywhere */
        char ro[600];
        snprintf(ro, sizeof ro, "%s/ro", tmp);
        mkdir(ro, 0500);
        fl_options r = {.report_dir = ro};
        CHECK(fl_install(&r) == FL_EIO);
    }
    CHECK(strcmp(fl_strerror(FL_EBUSY), "already installed or busy") == 0);
    TEST_END();
}
