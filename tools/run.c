/* SPDX-License-Identifier: MIT */
/* `faultline run`: a program under libfaultline-preload.so; its crash report printed when it dies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"
#include "report/report.h"
#include "tools/tool.h"

#define PRELOAD_NAME "libfaultline-preload.so"
#define EXIT_USAGE 2

static volatile pid_t g_child;

/* Signals meant for the program that reach us (kill from elsewhere) go on to it; the terminal's
 * own (^C, ^\) reach it directly, as its process group is ours. */
static void forward(int sig) {
    if (g_child > 0) kill(g_child, sig);
}

static const int k_forwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};

/* The preload library: --preload, $FAULTLINE_PRELOAD, next to this executable as a build tree
 * (../preload/) or an installation (../lib/faultline/) has it, or where this build installs it. */
static bool find_preload(const char *given, char *out, size_t cap) {
    const char *env = getenv("FAULTLINE_PRELOAD");
    const char *pick = given ? given : env && *env ? env : NULL;
    if (pick) return realpath(pick, out) != NULL && strlen(out) < cap;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        const char *rel[] = {"/../preload/", "/../lib/faultline/", "/../lib64/faultline/",
                             "/../" FL_INSTALL_LIBDIR "/faultline/"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char p[PATH_MAX + 64];
            snprintf(p, sizeof p, "%s%s" PRELOAD_NAME, self, rel[i]);
            if (access(p, R_OK) == 0 && realpath(p, out) && strlen(out) < cap) return true;
        }
    }
    if (access(FL_INSTALL_FULL_LIBDIR "/faultline/" PRELOAD_NAME, R_OK) == 0) {
        snprintf(out, cap, "%s", FL_INSTALL_FULL_LIBDIR "/faultline/" PRELOAD_NAME);
        return true;
    }
    return false;
}

/* The newest report in dir written by pid at or after since_ns; its name into out. */
/* The reports written in dir since since_ns: pid's latest into out (true if any), and how many
 * other processes wrote (*others), the first OTHERS_SHOWN of them named in others_out. */
#define OTHERS_SHOWN 8
typedef struct other {
    char name[256]; /* (a directory entry's name) */
    int pid, sig;
} other_t;

static bool find_report(const char *dir, pid_t pid, uint64_t since_ns, char *out, size_t cap,
                        other_t *others_out, unsigned *others) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    *others = 0;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return false;
    }
    uint64_t best = 0;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        fl_report_peek_t p;
        if (!fl_report_is_name(e->d_name) || fl_report_peek(dfd, e->d_name, &p) != 0 ||
            !p.has_header || p.time_unix_ns < since_ns)
            continue;
        if (p.pid != pid) {
            if (*others < OTHERS_SHOWN) {
                other_t *o = &others_out[*others];
                snprintf(o->name, sizeof o->name, "%s", e->d_name);
                o->pid = p.pid;
                o->sig = p.signal;
            }
            ++*others;
            continue;
        }
        if (p.time_unix_ns < best) continue;
        best = p.time_unix_ns;
        found = snprintf(out, cap, "%s/%s", dir, e->d_name) < (int)cap;
    }
    closedir(d);
    return found;
}

static bool is_crash_signal(int sig) {
    for (unsigned i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (fl_crash_signals[i] == sig) return true;
    return false;
}

int fl_tool_cmd_run(int argc, char **argv) {
    fl_tool_cli_t c;
    if (!fl_tool_cli_init(&c, argc)) return 1;
    const char *dir = NULL, *signals = NULL, *preload = NULL;
    bool inherit = true;
    fl_tool_format_t format = FL_TOOL_FMT_TEXT;
    int i = 0, rc = EXIT_USAGE;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        int k = fl_tool_cli_option(&c, argc, argv, &i);
        if (k == 0) k = fl_tool_cli_format(argc, argv, &i, &format);
        if (k < 0) goto usage;
        if (k > 0) continue;
        const char **val = strcmp(a, "--report-dir") == 0 ? &dir
                           : strcmp(a, "--signals") == 0  ? &signals
                           : strcmp(a, "--preload") == 0  ? &preload
                                                          : NULL;
        if (val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "faultline run: %s needs a value\n", a);
                goto usage;
            }
            *val = argv[++i];
        } else if (strcmp(a, "--no-inherit") == 0) {
            inherit = false;
        } else if (a[0] == '-') {
            fprintf(stderr, "faultline run: unknown option %s\n", fl_tool_clean(a));
            goto usage;
        } else {
            break; /* the program (the "--" may be left out) */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "faultline run: no program to run\n");
        goto usage;
    }
    uint64_t sigmask = 0; /* (--signals, checked here rather than by the library in the program) */
    if (signals && !fl_crash_signals_parse(signals, &sigmask)) {
        fprintf(stderr, "faultline run: --signals %s: only SEGV, BUS, ILL, FPE, ABRT, TRAP and SYS "
                        "(by name or number)\n", fl_tool_clean(signals));
        goto usage;
    }
    char lib[PATH_MAX], dbuf[1024], dabs[PATH_MAX];
    if (!find_preload(preload, lib, sizeof lib)) {
        fprintf(stderr, "faultline run: %s not found (looked %s%s); give it with --preload PATH\n",
                PRELOAD_NAME, preload ? "at " : "next to this executable and in ",
                preload ? fl_tool_clean(preload) : FL_INSTALL_FULL_LIBDIR "/faultline");
        fl_tool_cli_free(&c);
        return 1;
    }
    if (!dir) dir = getenv("FAULTLINE_REPORT_DIR");
    if (!dir || !*dir) dir = fl_report_dir_default(dbuf, sizeof dbuf);
    if (!dir) {
        fprintf(stderr, "faultline run: no report directory: give one with --report-dir DIR\n");
        fl_tool_cli_free(&c);
        return 1;
    }
    /* Absolute, so that the program's chdir cannot move it; made now (as the library would)
     * so that it can be resolved. */
    if (dir[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(dabs, sizeof dabs, "%s/%s", cwd, dir) >= (int)sizeof dabs) {
            fprintf(stderr, "faultline run: report directory path too long\n");
            fl_tool_cli_free(&c);
            return 1;
        }
        dir = dabs;
    }
    /* Said now: the program then runs as it would without faultline. */
    const char *unattached = fl_tool_not_attachable(argv[i]);
    if (unattached)
        fprintf(stderr, "faultline run: %s %s: the loader will not preload faultline into it, so "
                        "it runs without crash reports (docs/preload.md)\n",
                fl_tool_clean(argv[i]), unattached);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

    const char *old = getenv("LD_PRELOAD");
    size_t plen = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *pre = malloc(plen);
    if (!pre) {
        fl_tool_cli_free(&c);
        return 1;
    }
    snprintf(pre, plen, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");

    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    /* Blocked from before the fork until the handlers are in place: a signal that arrives as
     * the program starts is then forwarded (or, ^C and ^\, ignored) rather than ending us with
     * the program left running. */
    sigset_t held, mask;
    sigemptyset(&held);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGQUIT);
    for (size_t k = 0; k < sizeof k_forwarded / sizeof k_forwarded[0]; k++)
        sigaddset(&held, k_forwarded[k]);
    sigprocmask(SIG_BLOCK, &held, &mask);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "faultline run: fork: %s\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &mask, NULL);
        free(pre);
        fl_tool_cli_free(&c);
        return 1;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &mask, NULL);
        setenv("LD_PRELOAD", pre, 1);
        fl_env_runtimes_prepare(); /* (ASan programs would not start; Go's crashes: base.h) */
        setenv("FAULTLINE_REPORT_DIR", dir, 1);
        if (signals) setenv("FAULTLINE_SIGNALS", signals, 1);
        if (!inherit) setenv("FAULTLINE_INHERIT", "0", 1);
        execvp(argv[i], argv + i);
        int e = errno;
        fprintf(stderr, "faultline run: cannot run %s: %s\n", fl_tool_clean(argv[i]), strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    g_child = pid;
    free(pre);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    for (size_t k = 0; k < sizeof k_forwarded / sizeof k_forwarded[0]; k++)
        sigaction(k_forwarded[k], &fwd, NULL);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (WIFEXITED(status)) {
        rc = WEXITSTATUS(status);
    } else {
        int sig = WTERMSIG(status);
        rc = 128 + sig;
        char path[PATH_MAX + 128];
        const char *prog = fl_tool_clean(argv[i]), *name = fl_signal_name(sig);
        /* Any fatal signal may have a report (--signals decides which do); only the crash
         * signals' absence of one is worth a line. */
        other_t others[OTHERS_SHOWN];
        unsigned n_others = 0;
        if (find_report(dir, pid, start_ns, path, sizeof path, others, &n_others)) {
            fprintf(stderr, "faultline run: %s (pid %d) died of %s; its report: %s\n\n", prog,
                    (int)pid, name, fl_tool_clean(path));
            fl_tool_render_file(stderr, format, path, &c.sym);
        } else if (is_crash_signal(sig) && unattached) {
            fprintf(stderr, "faultline run: %s (pid %d) died of %s; no report: faultline was "
                            "not attached (the program %s)\n",
                    prog, (int)pid, name, unattached);
        } else if (is_crash_signal(sig)) {
            /* The signal was left out; the library could not use the directory (it said so on
             * stderr); or the program's own handler, installed after ours, did not pass it on. */
            const char *why = signals && *signals && !(sigmask >> sig & 1)
                                  ? "--signals does not include it" /* ("": all, as unset) */
                              : access(dir, W_OK | X_OK) != 0
                                  ? "faultline could not use the directory (its line above says why)"
                                  : "most likely a handler of the program's own took the signal "
                                    "without passing it on, or else the library could not write "
                                    "it (a line from it above says why; docs/preload.md)";
            fprintf(stderr, "faultline run: %s (pid %d) died of %s and wrote no report in %s: %s\n",
                    prog, (int)pid, name, fl_tool_clean(dir), why);
        }
        /* A wrapper (timeout, a shell) that passes its child's death on by raising the same
         * signal leaves its own report: the child's, the crash, is among these. */
        if (n_others) {
            fprintf(stderr, "faultline run: %u report%s from other processes since %s started "
                            "(its children, or others sharing %s):\n",
                    n_others, n_others == 1 ? "" : "s", fl_tool_clean(argv[i]), fl_tool_clean(dir));
            for (unsigned k = 0; k < n_others && k < OTHERS_SHOWN; k++)
                fprintf(stderr, "  %s/%s (pid %d, %s)\n", fl_tool_clean(dir),
                        fl_tool_clean(others[k].name), others[k].pid,
                        others[k].sig ? fl_signal_name(others[k].sig) : "no signal");
            if (n_others > OTHERS_SHOWN) fprintf(stderr, "  ...\n");
        }
    }
    fl_tool_cli_free(&c);
    return rc;
usage:
    fl_tool_cli_free(&c);
    return fl_tool_usage(NULL);
}
