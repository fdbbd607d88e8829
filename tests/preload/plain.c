/* SPDX-License-Identifier: MIT */
/* A program built without faultline, for `faultline run` and the preload library. Usage:
 *   plain segv | abort | exit N | cat | maps | sleep | threads
 *   plain assert | double-free | fortify   (glibc aborts the process with a message of its own:
 *     a failed assert(), its heap's check of a second free(), a fortified strcpy that overflows)
 *   plain own-chain | own-recover | own-exit | own-dfl | own-dfl-iso | own-dfl-raw   (a SIGSEGV
 *     handler of its own, installed in main: chains to the previous action and re-raises |
 *     recovers with siglongjmp | exits 5 | puts SIG_DFL back with signal() and re-raises, dropping
 *     the previous action, as zstd does | the same with ISO C's signal (glibc's __sysv_signal) |
 *     the same with the rt_sigaction system call, as Go's runtime would)
 *   plain own-dfl-bsd | own-dfl-sysv   (as own-dfl, with glibc's bsd_signal | sysv_signal)
 *   plain own-runtime   (a SIGSEGV handler of its own, as a language runtime's (the JVM's): a
 *     fault it does not handle goes to the action it found before its own if that is a handler,
 *     which then counts as handled, else it writes its own crash log and aborts)
 *   plain own-resethand | own-iso-raise   (a one-shot SIGSEGV handler, SA_RESETHAND | set with
 *     ISO C's signal, glibc's __sysv_signal, that raises the signal again: the kernel put
 *     SIG_DFL back before it ran; own-resethand first prints whether sigaction reads it back)
 *   plain own-sigset   (a SIGSEGV handler set with System V's sigset, as vim does, which puts
 *     SIG_DFL back with sigset and sends the signal to the process with kill)
 *   plain reset-dfl   (sets SIGSEGV's action to SIG_DFL, as node does at start, says whether
 *     sigaction and signal read SIG_DFL back, then faults)
 *   plain fds-closed | fds-reused DIR FILE   (closes every descriptor above 2, as a daemon does,
 *     but pipes if PLAIN_KEEP_PIPES is set (qemu-user keeps one of its own in the program's
 *     table), then faults | then first opens FILE for appending and DIR, four times each in
 *     turn, so that they take the lowest numbers, which the closed ones had, and faults)
 *   plain small-altstack   (gives itself an 8 KiB alternate signal stack, SIGSTKSZ's classic
 *     size, in place of the library's, then overflows its stack in recurse())
 *   plain fsize-limit   (limits the files it writes to 1 KiB, RLIMIT_FSIZE, then faults)
 *   plain main-exits   (starts a parked thread and one that faults after 200 ms, and ends its
 *     main thread with pthread_exit: the process lives on without it)
 *   plain lowest-fd   (exits with the number its open of /dev/null gets: 0 when it was started
 *     with stdin closed, unless a library holds that number)
 *   plain take-all | rt-dfl   (installs a handler of its own for every real-time signal, as Go's
 *     runtime takes every signal; for the highest one it can send itself (SIGRTMAX, but under
 *     qemu-user, which has no host signal for the last ones): says whether it reads its handler
 *     back, sends it with kill and with sigqueue (value 7) and says what its handler got,
 *     starts 3 parked threads, then faults | ignores every real-time signal, sends itself the
 *     highest it can, says which, puts its action to SIG_DFL and sends it again: the default
 *     action ends the process)
 *   plain uring   (makes an io_uring with a submission thread of the kernel's, IORING_SETUP_SQPOLL,
 *     then faults; exit 3 where io_uring cannot be set up, as under qemu-user)
 *   plain lines   (says "ready", then answers each line of stdin: "segv" faults, anything else
 *     is echoed; read again after an interruption; exits 0 at the end of input)
 *   plain seccomp-kill | seccomp-errno | seccomp-exec   (a seccomp filter on process_vm_readv,
 *     killing the process | failing the call with EPERM, then a fault | killing, then execs
 *     `plain segv`, so that the library installs under the filter; exit 3 where seccomp is not
 *     available, as under qemu-user) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#undef NDEBUG /* (the assert mode's: release builds define it) */
#include <assert.h>
#include <stddef.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern __sighandler_t __sysv_signal(int, __sighandler_t); /* ISO C's signal in glibc */
extern __sighandler_t sysv_signal(int, __sighandler_t);   /* and its other names */
extern __sighandler_t bsd_signal(int, __sighandler_t);
/* (glibc marks System V's sigset deprecated; vim uses it, so this program does too) */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static struct sigaction g_prev;
static sigjmp_buf g_jmp;

__attribute__((noinline)) static void fault(void) {
    volatile int *p = (volatile int *)(uintptr_t)16;
    *p = 1;
}

static void chain(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    static const char msg[] = "plain: own handler, passing the signal on\n";
    (void)!write(2, msg, sizeof msg - 1);
    sigaction(sig, &g_prev, NULL); /* as Python's faulthandler does */
    raise(sig);
}

static void runtime(int sig, siginfo_t *si, void *uc) {
    if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        if (g_prev.sa_flags & SA_SIGINFO) g_prev.sa_sigaction(sig, si, uc);
        else g_prev.sa_handler(sig);
        return;
    }
    static const char msg[] = "plain: own crash log\n";
    (void)!write(2, msg, sizeof msg - 1);
    abort();
}

static void recover(int sig) {
    (void)sig;
    siglongjmp(g_jmp, 1);
}

static void leave(int sig) {
    (void)sig;
    _exit(5);
}

static void dfl(int sig) {
    signal(sig, SIG_DFL);
    raise(sig);
}

/* As vim's fatal-signal handler (installed with sigset): SIG_DFL back with sigset, then the
 * signal sent to the process with kill. */
static void dfl_sigset(int sig) {
    sigset(sig, SIG_DFL);
    kill(getpid(), sig);
}

/* A one-shot handler (SA_RESETHAND, or ISO C's signal): the kernel has put SIG_DFL back when
 * it runs, so it just raises the signal again. */
static void raise_again(int sig) {
    raise(sig);
}

static void dfl_iso(int sig) {
    __sysv_signal(sig, SIG_DFL);
    raise(sig);
}

static void dfl_bsd(int sig) {
    bsd_signal(sig, SIG_DFL);
    raise(sig);
}

static void dfl_sysv(int sig) {
    sysv_signal(sig, SIG_DFL);
    raise(sig);
}

/* The kernel's struct sigaction starts with the handler on every Linux architecture; the rest
 * (flags, restorer, mask) stays zero. */
static void dfl_raw(int sig) {
    unsigned long k[4] = {(unsigned long)SIG_DFL, 0, 0, 0};
    syscall(SYS_rt_sigaction, sig, k, NULL, 8);
    raise(sig);
}

__attribute__((noinline)) static int recurse(int n) {
    volatile char pad[256];
    pad[0] = (char)n;
    return n == -1 ? 0 : recurse(n + 1) + pad[0];
}

static void *parked(void *arg) {
    (void)arg;
    pause();
    return NULL;
}

/* A filter on one system call, process_vm_readv (the safe reader's first choice): `action` for
 * it, every other call allowed. */
static bool filter_vm_readv(unsigned action) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

static void *usr1_later(void *arg) {
    (void)arg;
    usleep(100 * 1000);
    kill(getpid(), SIGUSR1);
    return NULL;
}

static volatile sig_atomic_t g_rt_count, g_rt_value;

static void rt_handler(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    (void)sig;
    g_rt_count++;
    if (info->si_code == SI_QUEUE) g_rt_value = info->si_value.sival_int;
}

static void *fault_later(void *arg) {
    (void)arg;
    usleep(200 * 1000);
    fault();
    return NULL;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "segv")) fault();
    if (!strcmp(m, "abort")) abort();
    if (!strcmp(m, "assert")) assert(argc > 7 && "the configuration names seven parts");
    if (!strcmp(m, "double-free")) {
        char *volatile p = malloc(24);
        free(p);
        free(p);
    }
    if (!strcmp(m, "fortify")) { /* what _FORTIFY_SOURCE makes of strcpy (argv[0] is longer) */
        char small[8];
        __builtin___strcpy_chk(small, argv[0], sizeof small);
        puts(small);
    }
    if (!strcmp(m, "exit")) return argc > 2 ? atoi(argv[2]) : 0;
    if (!strcmp(m, "cat")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) fwrite(buf, 1, n, stdout);
        return 0;
    }
    if (!strcmp(m, "maps")) {
        FILE *f = fopen("/proc/self/maps", "r");
        int c;
        while (f && (c = fgetc(f)) != EOF) putchar(c);
        return 0;
    }
    if (!strcmp(m, "sleep")) {
        puts("sleeping");
        fflush(stdout);
        pause();
        return 0;
    }
    if (!strcmp(m, "threads")) {
        pthread_t t[3];
        for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, parked, NULL);
        usleep(100 * 1000);
        fault();
    }
    if (!strcmp(m, "uring")) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_SQPOLL;
        p.sq_thread_idle = 10000;
        if (syscall(__NR_io_uring_setup, 8, &p) < 0) return 3;
        usleep(100 * 1000);
        fault();
    }
    if (!strcmp(m, "lines")) {
        char line[256];
        size_t n = 0;
        puts("ready");
        fflush(stdout);
        for (;;) {
            ssize_t r = read(0, line + n, 1);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return 0;
            if (line[n] != '\n' && n + 1 < sizeof line) {
                n++;
                continue;
            }
            line[n] = 0;
            n = 0;
            if (!strcmp(line, "segv")) fault();
            printf("%s\n", line);
            fflush(stdout);
        }
    }
    if (!strcmp(m, "take-all")) {
        struct sigaction sa, q;
        memset(&sa, 0, sizeof sa);
        sigfillset(&sa.sa_mask);
        sa.sa_sigaction = rt_handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaction(s, &sa, NULL);
        int s = SIGRTMAX;
        while (s > SIGRTMIN && kill(getpid(), s) != 0) s--;
        bool back = sigaction(s, NULL, &q) == 0 && (q.sa_flags & SA_SIGINFO) &&
                    q.sa_sigaction == rt_handler;
        sigqueue(getpid(), s, (union sigval){.sival_int = 7});
        for (int i = 0; i < 100 && g_rt_count < 2; i++) usleep(10 * 1000);
        printf("reads back %s, got %d, value %d\n", back ? "its own" : "another",
               (int)g_rt_count, (int)g_rt_value);
        fflush(stdout);
        pthread_t t[3];
        for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, parked, NULL);
        usleep(100 * 1000);
        fault();
    }
    if (!strcmp(m, "rt-dfl")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaction(s, &sa, NULL);
        int s = SIGRTMAX;
        while (s > SIGRTMIN && kill(getpid(), s) != 0) s--;
        printf("signal %d\n", s);
        fflush(stdout);
        sa.sa_handler = SIG_DFL;
        sigaction(s, &sa, NULL);
        kill(getpid(), s);
        usleep(500 * 1000);
        return 0;
    }
    if (!strcmp(m, "fds-closed") || (!strcmp(m, "fds-reused") && argc > 3)) {
        struct stat st;
        bool keep_pipes = getenv("PLAIN_KEEP_PIPES") != NULL;
        for (int fd = 3; fd < 1024; fd++)
            if (fstat(fd, &st) == 0 && !(keep_pipes && S_ISFIFO(st.st_mode))) close(fd);
        for (int i = 0; argc > 3 && i < 4; i++) {
            if (open(argv[3], O_WRONLY | O_APPEND) < 0) return 3;
            if (open(argv[2], O_RDONLY | O_DIRECTORY) < 0) return 3;
        }
        fault();
    }
    if (!strcmp(m, "seccomp-kill") || !strcmp(m, "seccomp-errno") || !strcmp(m, "seccomp-exec")) {
        if (!filter_vm_readv(!strcmp(m, "seccomp-errno") ? SECCOMP_RET_ERRNO | 1
                                                          : SECCOMP_RET_KILL_PROCESS))
            return 3;
        if (!strcmp(m, "seccomp-exec")) {
            char *again[] = {argv[0], "segv", NULL};
            execv("/proc/self/exe", again);
            return 4;
        }
        fault();
    }
    if (!strcmp(m, "dir-deleted") && argc > 3) { /* DIR gone|again|foreign */
        DIR *d = opendir(argv[2]);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
        if (!d || closedir(d) != 0 || rmdir(argv[2]) != 0) return 3;
        if (strcmp(argv[3], "gone") && mkdir(argv[2], 0777) != 0) return 3;
        if (!strcmp(argv[3], "foreign") && chown(argv[2], 65534, 65534) != 0) return 3;
        fault();
    }
    if (!strcmp(m, "drop-user")) { /* a daemon giving up root after start */
        if (setgid(65534) != 0 || setuid(65534) != 0) return 3;
        fault();
    }
    if (!strcmp(m, "block-all") || !strcmp(m, "block-all-usr1")) {
        /* The server idiom: every signal blocked in every thread, one thread in sigwait. */
        sigset_t all, cur;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        pthread_sigmask(SIG_BLOCK, NULL, &cur);
        printf("SEGV blocked %d, USR1 blocked %d\n", sigismember(&cur, SIGSEGV),
               sigismember(&cur, SIGUSR1));
        fflush(stdout);
        pthread_t t;
        pthread_create(&t, NULL, !strcmp(m, "block-all") ? fault_later : usr1_later, NULL);
        int sig = 0;
        sigwait(&all, &sig);
        printf("sigwait: %d\n", sig);
        return 0;
    }
    if (!strcmp(m, "lowest-fd")) return open("/dev/null", O_RDONLY);
    if (!strcmp(m, "main-exits")) {
        pthread_t t[2];
        pthread_create(&t[0], NULL, parked, NULL);
        pthread_create(&t[1], NULL, fault_later, NULL);
        pthread_exit(NULL);
    }
    if (!strcmp(m, "fsize-limit")) {
        struct rlimit rl = {1024, 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 3;
        fault();
    }
    if (!strcmp(m, "small-altstack")) {
        stack_t ss = {.ss_sp = malloc(8192), .ss_size = 8192};
        if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) return 3;
        return recurse(0);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (!strcmp(m, "own-chain")) {
        sa.sa_sigaction = chain;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, &g_prev);
        fault();
    }
    if (!strcmp(m, "own-runtime")) {
        sa.sa_sigaction = runtime;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, &g_prev);
        fault();
    }
    if (!strcmp(m, "own-recover")) {
        sa.sa_handler = recover;
        sigaction(SIGSEGV, &sa, NULL);
        if (sigsetjmp(g_jmp, 1) == 0) fault();
        puts("recovered");
        return 0;
    }
    if (!strcmp(m, "own-exit")) {
        sa.sa_handler = leave;
        sigaction(SIGSEGV, &sa, NULL);
        fault();
    }
    if (!strcmp(m, "own-resethand")) {
        sa.sa_handler = raise_again;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGSEGV, &sa, NULL);
        struct sigaction q;
        sigaction(SIGSEGV, NULL, &q);
        printf("reads back %s\n", q.sa_handler == raise_again && (q.sa_flags & SA_RESETHAND)
                                      ? "as set" : "otherwise");
        fflush(stdout);
        fault();
    }
    if (!strcmp(m, "own-iso-raise")) {
        __sysv_signal(SIGSEGV, raise_again);
        fault();
    }
    if (!strcmp(m, "own-sigset")) {
        sigset(SIGSEGV, dfl_sigset);
        fault();
    }
    if (!strcmp(m, "own-dfl") || !strcmp(m, "own-dfl-iso") || !strcmp(m, "own-dfl-raw") ||
        !strcmp(m, "own-dfl-bsd") || !strcmp(m, "own-dfl-sysv")) {
        sa.sa_handler = !strcmp(m, "own-dfl")       ? dfl
                        : !strcmp(m, "own-dfl-iso") ? dfl_iso
                        : !strcmp(m, "own-dfl-bsd") ? dfl_bsd
                        : !strcmp(m, "own-dfl-sysv") ? dfl_sysv
                                                    : dfl_raw;
        sigaction(SIGSEGV, &sa, NULL);
        fault();
    }
    if (!strcmp(m, "reset-dfl")) {
        struct sigaction q;
        sa.sa_handler = SIG_DFL;
        sigaction(SIGSEGV, &sa, NULL);
        bool dfl_read = sigaction(SIGSEGV, NULL, &q) == 0 && q.sa_handler == SIG_DFL &&
                        signal(SIGSEGV, SIG_DFL) == SIG_DFL;
        printf("SIG_DFL %s\n", dfl_read ? "read back" : "not read back");
        fflush(stdout);
        fault();
    }
    fprintf(stderr, "usage: plain segv|abort|assert|double-free|fortify|exit N|cat|maps|sleep|threads|own-chain|own-recover|"
                    "own-exit|own-dfl|own-dfl-iso|own-dfl-raw|own-dfl-bsd|own-dfl-sysv|own-runtime|own-sigset|own-resethand|"
                    "own-iso-raise|reset-dfl|fds-closed|"
                    "fds-reused DIR FILE|small-altstack|fsize-limit|main-exits|seccomp-kill|"
                    "seccomp-errno|seccomp-exec|lowest-fd|take-all|rt-dfl|lines|uring\n");
    return 2;
}
