/* SPDX-License-Identifier: MIT */
/* bench_snapshot: fl_snapshot of a live process whose threads all sit at the bottom of a 64-deep
 * recursion, asleep: timed from inside (call -> return, with a split into the capture's phases)
 * and from outside (a parent sends SIGUSR2, the target's handler calls fl_snapshot), against
 * eu-stack -p and gdb -batch -p "thread apply all bt" run as whole commands by the same parent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "crash/crash.h" /* the capture's phases: fl_threads_suspend, fl_maps_read, ... */
#include "faultline/faultline.h"
#include "parked.h"
#include "reports.h"

#define RUNS 20u
#define DEPTH 64u
#define MAXRUNS 200u
#define EU_STACK "/usr/bin/eu-stack"
#define GDB "/usr/bin/gdb"
#define TOOL_TIMEOUT_MS 120000

/* ---- The target process ---- */

/* PH_MAPS..PH_SELF_RELEASE are a snapshot's own steps; PH_SUSPEND..PH_RELEASE a crash's way of
 * stopping and walking the threads; the others are references. */
enum { PH_LIST, PH_MAPS, PH_IMAGES, PH_SELF, PH_SELF_RELEASE, PH_SUSPEND, PH_WALK, PH_RELEASE,
       PH_WALK_FP, PH_SEND, PH_ANSWERS, NPH };
static const char *const k_phase_names[NPH] = {
    "list /proc/self/task (opendir+readdir)", "fl_maps_read",
    "fl_elf_images_collect (+ table windows)", "fl_threads_suspend, each thread walks itself",
    "fl_threads_release (threads that parked)", "crash's way: fl_threads_suspend, all park",
    "crash's way: walk every other thread", "crash's way: fl_threads_release",
    "reference: same walks, frame pointers only", "floor: send a signal to each thread",
    "floor: wait for every handler to answer"};

/* Written by the target, read by the parent after each acknowledged command. */
typedef struct shared {
    uint64_t snap_ns[MAXRUNS];       /* fl_snapshot call -> return */
    uint64_t phase_ns[NPH][MAXRUNS]; /* 'p' and 'f' commands */
    unsigned walked, frames;         /* threads walked and frames found in the last 'p' run */
    unsigned frames_fp;              /* the same, frame pointers only */
    unsigned self_walked;            /* threads that walked themselves in the last 'p' run */
    uint64_t cfi_steps, cfi_hits, cfi_misses, cfi_declined; /* of the 'i' runs' snapshots */
    int errors;
} shared_t;

static shared_t *g_sh;
static const char *g_dir;
static int g_cmd_fd = -1, g_ack_fd = -1;
static volatile int g_floor_answers; /* futex word */
static int g_tids[FL_MAX_THREADS_LIMIT];
static unsigned g_ntids;

static fl_thread_list_t g_list;
static fl_maps_t g_maps;
static char g_maps_scratch[64 * 1024];
static fl_image_list_t g_images;
static fl_frame_t g_frames[FL_DEFAULT_MAX_FRAMES];

typedef struct cmd {
    char op;
    unsigned count;
} cmd_t;

static void on_usr2(int sig) {
    (void)sig;
    int e = errno;
    char c = fl_snapshot("SIGUSR2") == 0 ? 's' : 'e';
    ssize_t w = write(g_ack_fd, &c, 1);
    (void)w;
    errno = e;
}

/* The floor's responder: what any signal round trip costs, without registers or parking. */
static void on_usr1(int sig) {
    (void)sig;
    __atomic_add_fetch(&g_floor_answers, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &g_floor_answers, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void list_tids(void) {
    int self = (int)syscall(SYS_gettid);
    g_ntids = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) && g_ntids < FL_MAX_THREADS_LIMIT) {
        int tid = atoi(e->d_name);
        if (tid > 0 && tid != self) g_tids[g_ntids++] = tid;
    }
    if (d) closedir(d);
}

/* Walks every captured thread but the caller over its own stack mapping, as the capture does;
 * returns the frames found. */
static unsigned walk_all(bool cfi, int maps_err) {
    unsigned frames = 0;
    for (unsigned i = 1; i < g_list.count; i++) {
        const fl_thread_t *t = &g_list.t[i];
        if (t->state != FL_THREAD_CAPTURED) continue;
        fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_images, .use_cfi = cfi};
        fl_reader_t stack;
        const fl_map_t *m = maps_err ? NULL : fl_maps_find(&g_maps, fl_regs_sp(&t->regs));
        if (m) {
            env.stack_lo = m->start;
            env.stack_hi = m->end;
            fl_reader_init_range(&stack, m->start, m->end, fl_memory_reader());
            env.mem = &stack;
        }
        fl_walk_result_t res;
        fl_frames_walk(&env, &t->regs, g_frames, FL_DEFAULT_MAX_FRAMES, &res);
        frames += res.count;
    }
    return frames;
}

/* One capture, phase by phase, as fl_crash_capture does it for a snapshot (without the
 * report), then the threads stopped and walked as it does for a crash. */
static void phases_once(unsigned k) {
    uint64_t t0 = bench_now_ns();
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    while (d && readdir(d)) n++;
    if (d) closedir(d);
    uint64_t t1 = bench_now_ns();
    int maps_err = fl_maps_read(&g_maps, g_maps_scratch, sizeof g_maps_scratch);
    uint64_t t2 = bench_now_ns();
    fl_elf_images_collect(fl_memory_reader(), &g_images);
    if (!maps_err) fl_images_map_tables(&g_images, &g_maps);
    uint64_t t3 = bench_now_ns();
    fl_selfwalk_t sw = {.images = &g_images, .maps = &g_maps, .max_frames = FL_DEFAULT_MAX_FRAMES};
    fl_threads_suspend(&g_list, FL_DEFAULT_MAX_THREADS, FL_DEFAULT_THREAD_TIMEOUT_NS, &sw);
    uint64_t t4 = bench_now_ns();
    fl_threads_release(&g_list);
    uint64_t t5 = bench_now_ns();
    unsigned self_walked = 0;
    for (unsigned i = 1; i < g_list.count; i++) self_walked += g_list.t[i].walked;
    struct timespec rest = {0, 5000000};
    nanosleep(&rest, NULL);
    uint64_t t6 = bench_now_ns();
    fl_threads_suspend(&g_list, FL_DEFAULT_MAX_THREADS, FL_DEFAULT_THREAD_TIMEOUT_NS, NULL);
    uint64_t t7 = bench_now_ns();
    unsigned frames = walk_all(true, maps_err);
    uint64_t t8 = bench_now_ns();
    unsigned frames_fp = walk_all(false, maps_err); /* (fl_frames_walk without CFI: FP only) */
    uint64_t t9 = bench_now_ns();
    fl_threads_release(&g_list);
    uint64_t t10 = bench_now_ns();
    uint64_t *p = &g_sh->phase_ns[0][k];
    p[PH_LIST * MAXRUNS] = t1 - t0;
    p[PH_MAPS * MAXRUNS] = t2 - t1;
    p[PH_IMAGES * MAXRUNS] = t3 - t2;
    p[PH_SELF * MAXRUNS] = t4 - t3;
    p[PH_SELF_RELEASE * MAXRUNS] = t5 - t4;
    p[PH_SUSPEND * MAXRUNS] = t7 - t6;
    p[PH_WALK * MAXRUNS] = t8 - t7;
    p[PH_WALK_FP * MAXRUNS] = t9 - t8;
    p[PH_RELEASE * MAXRUNS] = t10 - t9;
    g_sh->self_walked = self_walked;
    unsigned walked = 0;
    for (unsigned i = 1; i < g_list.count; i++) walked += g_list.t[i].state == FL_THREAD_CAPTURED;
    g_sh->walked = walked;
    g_sh->frames = frames;
    g_sh->frames_fp = frames_fp;
    if (n < 2 || walked + 1 != g_list.count || self_walked + 1 != g_list.count) g_sh->errors++;
}

static void floor_once(unsigned k) {
    __atomic_store_n(&g_floor_answers, 0, __ATOMIC_SEQ_CST);
    int pid = getpid();
    uint64_t t0 = bench_now_ns();
    for (unsigned i = 0; i < g_ntids; i++) syscall(SYS_tgkill, pid, g_tids[i], SIGUSR1);
    uint64_t t1 = bench_now_ns(), deadline = t1 + 2000000000ull;
    for (;;) {
        int have = __atomic_load_n(&g_floor_answers, __ATOMIC_SEQ_CST);
        if (have >= (int)g_ntids || bench_now_ns() > deadline) break;
        struct timespec ts = {0, 10000000};
        syscall(SYS_futex, &g_floor_answers, FUTEX_WAIT_PRIVATE, have, &ts, NULL, 0);
    }
    uint64_t t2 = bench_now_ns();
    if (__atomic_load_n(&g_floor_answers, __ATOMIC_SEQ_CST) < (int)g_ntids) g_sh->errors++;
    g_sh->phase_ns[PH_SEND][k] = t1 - t0;
    g_sh->phase_ns[PH_ANSWERS][k] = t2 - t1;
}

/* The target's main loop, at the bottom of its own recursion: commands from the parent. */
NOINLINE static void serve(void *arg) {
    (void)arg;
    for (;;) {
        cmd_t c;
        ssize_t n = read(g_cmd_fd, &c, sizeof c);
        if (n < 0 && errno == EINTR) continue;
        if (n != sizeof c || c.op == 'q') _exit(0);
        unsigned count = c.count < MAXRUNS ? c.count : MAXRUNS;
        for (unsigned k = 0; k < count; k++) {
            /* Each run starts from a process at rest: the threads the last one released are
             * asleep again. */
            struct timespec rest = {0, 5000000};
            nanosleep(&rest, NULL);
            if (c.op == 'i') {
                fl_cfi_stats_t a, b;
                fl_frames_cfi_stats(&a);
                uint64_t t0 = bench_now_ns();
                int e = fl_snapshot("bench");
                g_sh->snap_ns[k] = bench_now_ns() - t0;
                fl_frames_cfi_stats(&b);
                g_sh->cfi_steps += b.steps - a.steps;
                g_sh->cfi_hits += b.hits - a.hits;
                g_sh->cfi_misses += b.misses - a.misses;
                g_sh->cfi_declined += b.declined - a.declined;
                if (e) g_sh->errors++;
                if (k + 1 < count) bench_dir_clear(g_dir, false); /* the last one is checked */
            } else if (c.op == 'p') {
                phases_once(k);
            } else if (c.op == 'f') {
                floor_once(k);
            }
        }
        char a = 'k';
        if (write(g_ack_fd, &a, 1) != 1) _exit(1);
    }
}

/* Sets up the target (faultline, handlers, threads-1 parked threads) and serves commands. */
static void target(unsigned threads, const char *dir) {
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama scope 1: let eu-stack/gdb attach */
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL); /* the workers inherit it: SIGUSR2 goes to main */
    fl_options o = {.report_dir = dir, .app_name = "bench_snapshot", .app_version = "0"};
    if (fl_install(&o) != 0) _exit(100);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (bench_parked_start(threads - 1, DEPTH) != 0) _exit(102);
    list_tids();
    pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);
    char a = 'k';
    if (write(g_ack_fd, &a, 1) != 1) _exit(1);
    bench_parked_recurse(DEPTH, serve, NULL);
    _exit(0);
}

/* ---- The parent ---- */

typedef struct tgt {
    pid_t pid;
    int cmd, ack; /* our ends of the pipes */
} tgt_t;

static int read_byte(int fd, char *c) {
    for (;;) {
        ssize_t n = read(fd, c, 1);
        if (n == 1) return 0;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
}

static int command(tgt_t *t, char op, unsigned count) {
    cmd_t c = {.op = op, .count = count};
    char a;
    if (write(t->cmd, &c, sizeof c) != sizeof c || read_byte(t->ack, &a) != 0 || a != 'k') {
        fprintf(stderr, "bench_snapshot: ERROR: the target did not answer '%c'\n", op);
        return -1;
    }
    return 0;
}

static int start_target(tgt_t *t, unsigned threads, const char *dir) {
    int cmd[2], ack[2];
    if (pipe2(cmd, O_CLOEXEC) || pipe2(ack, O_CLOEXEC)) return -1;
    t->pid = fork();
    if (t->pid < 0) return -1;
    if (t->pid == 0) {
        close(cmd[1]);
        close(ack[0]);
        g_cmd_fd = cmd[0];
        g_ack_fd = ack[1];
        g_dir = dir;
        target(threads, dir);
    }
    close(cmd[0]);
    close(ack[1]);
    t->cmd = cmd[1];
    t->ack = ack[0];
    char a;
    if (read_byte(t->ack, &a) != 0 || a != 'k') {
        fprintf(stderr, "bench_snapshot: ERROR: the target with %u threads did not start\n", threads);
        kill(t->pid, SIGKILL);
        waitpid(t->pid, NULL, 0);
        close(t->cmd);
        close(t->ack);
        return -1;
    }
    return 0;
}

static void stop_target(tgt_t *t) {
    cmd_t c = {.op = 'q'};
    if (write(t->cmd, &c, sizeof c) != sizeof c) kill(t->pid, SIGKILL);
    int st;
    waitpid(t->pid, &st, 0);
    close(t->cmd);
    close(t->ack);
}

/* Runs argv as a whole command (fork, exec, wait), stdout into out_path; the elapsed time, or 0
 * if it could not run or failed. */
static uint64_t run_tool(char *const argv[], const char *out_path) {
    uint64_t t0 = bench_now_ns();
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open("/dev/null", O_RDWR);
        if (out < 0 || null < 0) _exit(127);
        dup2(null, 0);
        dup2(out, 1);
        dup2(null, 2);
        unsetenv("DEBUGINFOD_URLS"); /* no network look-ups for debug info */
        execv(argv[0], argv);
        _exit(127);
    }
    /* A tool that hangs (a debugger stuck on the target) is killed after TOOL_TIMEOUT_MS. */
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd >= 0) {
        struct pollfd p = {.fd = pfd, .events = POLLIN};
        if (poll(&p, 1, TOOL_TIMEOUT_MS) == 0) {
            fprintf(stderr, "bench_snapshot: %s did not finish within %d ms\n", argv[0], TOOL_TIMEOUT_MS);
            kill(pid, SIGKILL);
        }
        close(pfd);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    uint64_t t = bench_now_ns() - t0;
    /* eu-stack exits 1 when some frame had a (non-fatal) error, still printing every thread. */
    return WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? t : 0;
}

/* Lines of path starting with `thread_prefix` (threads) and with '#' (frames). */
static void count_lines(const char *path, const char *thread_prefix, unsigned *threads,
                        unsigned *frames) {
    *threads = *frames = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[4096];
    size_t pl = strlen(thread_prefix);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, thread_prefix, pl)) ++*threads;
        else if (line[0] == '#') ++*frames;
    }
    fclose(f);
}

enum { T_FL_RENAMED, T_FL_RETURNED, T_EU, T_EU_Q, T_GDB, NTOOLS };
static const char *const k_tool_names[NTOOLS] = {
    "faultline: SIGUSR2 -> report renamed", "faultline: SIGUSR2 -> fl_snapshot returned",
    "eu-stack -p PID", "eu-stack -q -p PID (no symbol names)",
    "gdb -batch -p PID -ex \"thread apply all bt\""};

typedef struct result {
    unsigned threads;
    unsigned in_runs;
    uint64_t in_p50, in_p90, in_first; /* in_first: the first snapshot of the process (cold) */
    uint64_t phase_p50[NPH];
    unsigned walked, self_walked, frames, frames_fp;
    uint64_t cfi_steps, cfi_hits, cfi_misses, cfi_declined;
    long long bytes;
    unsigned captured;
    unsigned runs[NTOOLS];
    uint64_t p50[NTOOLS], p90[NTOOLS];
    unsigned seen_threads[NTOOLS], seen_frames[NTOOLS];
} result_t;

static int g_errors;
static const char *g_fs = "unknown"; /* the report directories' file system */
static const char *g_skip_external; /* why eu-stack and gdb are not run, or NULL */
static char g_ptrace_scope[64] = "no Yama LSM (kernel.yama.ptrace_scope absent)";

/* One SIGUSR2 snapshot from outside: times until the report is renamed and until the target
 * says fl_snapshot returned. */
static int outside_once(tgt_t *t, int watch, uint64_t *renamed, uint64_t *returned) {
    *renamed = *returned = 0;
    uint64_t t0 = bench_now_ns();
    if (kill(t->pid, SIGUSR2) != 0) return -1;
    while (!*renamed || !*returned) {
        struct pollfd p[2] = {{.fd = watch, .events = POLLIN}, {.fd = t->ack, .events = POLLIN}};
        if (poll(p, 2, 10000) <= 0) return -1;
        if (!*returned && (p[1].revents & POLLIN)) {
            char c;
            if (read_byte(t->ack, &c) != 0 || c != 's') return -1;
            *returned = bench_now_ns() - t0;
        }
        if (!*renamed && (p[0].revents & POLLIN)) {
            uint64_t seen = bench_wait_renamed(watch, 0);
            if (seen) *renamed = seen - t0;
        }
    }
    return 0;
}

static void median(uint64_t *v, unsigned n, uint64_t *p50, uint64_t *p90) {
    *p50 = bench_percentile(v, n, 50);
    *p90 = bench_percentile(v, n, 90);
}

static result_t run_case(const char *base, unsigned threads, unsigned runs, unsigned ext_runs,
                         unsigned gdb_runs) {
    result_t r = {.threads = threads};
    char dir[1100], out[1200], pidstr[32];
    snprintf(dir, sizeof dir, "%s/t%u", base, threads);
    snprintf(out, sizeof out, "%s/tool-output-%u.txt", base, threads);
    if (mkdir(dir, 0700) != 0) {
        g_errors++;
        return r;
    }
    tgt_t t;
    if (start_target(&t, threads, dir) != 0) {
        g_errors++;
        return r;
    }
    /* From inside. */
    memset(g_sh, 0, sizeof *g_sh);
    if (command(&t, 'i', runs) == 0) {
        r.in_runs = runs;
        r.cfi_steps = g_sh->cfi_steps;
        r.cfi_hits = g_sh->cfi_hits;
        r.cfi_misses = g_sh->cfi_misses;
        r.cfi_declined = g_sh->cfi_declined;
        r.in_first = g_sh->snap_ns[0];
        median(g_sh->snap_ns, runs, &r.in_p50, &r.in_p90);
        char path[1400];
        bench_report_t rep;
        if (bench_report_find(dir, path, sizeof path) == 1 && bench_report_read(path, &rep) == 0) {
            r.bytes = rep.bytes;
            r.captured = rep.captured;
            if (rep.captured != threads || rep.min_frames < DEPTH) {
                fprintf(stderr, "bench_snapshot: ERROR: %u threads: %u captured, frames >= %u\n",
                        threads, rep.captured, rep.min_frames);
                g_errors++;
            }
        } else {
            g_errors++;
        }
        bench_dir_clear(dir, false);
    }
    if (command(&t, 'p', runs) == 0 && command(&t, 'f', runs) == 0) {
        uint64_t tmp[MAXRUNS];
        for (unsigned p = 0; p < NPH; p++) {
            memcpy(tmp, g_sh->phase_ns[p], runs * sizeof tmp[0]);
            r.phase_p50[p] = bench_percentile(tmp, runs, 50);
        }
        r.walked = g_sh->walked;
        r.self_walked = g_sh->self_walked;
        r.frames = g_sh->frames;
        r.frames_fp = g_sh->frames_fp;
    }
    g_errors += g_sh->errors;

    /* From outside, interleaved so that drift in the machine's load affects every tool alike. */
    snprintf(pidstr, sizeof pidstr, "%d", (int)t.pid);
    char *eu[] = {EU_STACK, "-p", pidstr, NULL};
    char *euq[] = {EU_STACK, "-q", "-p", pidstr, NULL};
    char *gdb[] = {GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p", pidstr,
                   "-ex", "thread apply all bt", NULL};
    static uint64_t v[NTOOLS][MAXRUNS];
    int watch = bench_watch_dir(dir);
    unsigned total = runs > ext_runs ? runs : ext_runs;
    for (unsigned k = 0; k < total && k < MAXRUNS; k++) {
        if (k < runs && watch >= 0) {
            uint64_t a, b;
            if (outside_once(&t, watch, &a, &b) == 0) {
                v[T_FL_RENAMED][r.runs[T_FL_RENAMED]++] = a;
                v[T_FL_RETURNED][r.runs[T_FL_RETURNED]++] = b;
                char path[1400];
                bench_report_t rep;
                if (k == 0 && bench_report_find(dir, path, sizeof path) == 1 &&
                    bench_report_read(path, &rep) == 0) {
                    r.seen_threads[T_FL_RETURNED] = rep.captured;
                    r.seen_frames[T_FL_RETURNED] = rep.min_frames;
                }
            } else {
                fprintf(stderr, "bench_snapshot: ERROR: SIGUSR2 snapshot %u failed\n", k);
                g_errors++;
            }
            bench_dir_clear(dir, false);
        }
        if (g_skip_external || k >= ext_runs) continue;
        static const int tools[] = {T_EU, T_EU_Q, T_GDB};
        char *const *argvs[] = {eu, euq, gdb};
        const char *prefix[] = {"TID ", "TID ", "Thread "};
        for (unsigned i = 0; i < 3; i++) {
            int tool = tools[i];
            if (tool == T_GDB && k >= gdb_runs) continue;
            uint64_t e = run_tool(argvs[i], out);
            unsigned th, fr;
            count_lines(out, prefix[i], &th, &fr);
            if (!e || th == 0) {
                fprintf(stderr, "bench_snapshot: ERROR: %s failed or saw no threads\n", argvs[i][0]);
                g_errors++;
                continue;
            }
            v[tool][r.runs[tool]++] = e;
            r.seen_threads[tool] = th;
            r.seen_frames[tool] = fr / th;
        }
    }
    if (watch >= 0) close(watch);
    unlink(out);
    for (unsigned i = 0; i < NTOOLS; i++)
        if (r.runs[i]) median(v[i], r.runs[i], &r.p50[i], &r.p90[i]);
    r.seen_threads[T_FL_RENAMED] = r.seen_threads[T_FL_RETURNED];
    r.seen_frames[T_FL_RENAMED] = r.seen_frames[T_FL_RETURNED];
    stop_target(&t);
    bench_dir_clear(dir, true);
    return r;
}

/* Why eu-stack and gdb cannot attach here, or NULL. */
static const char *external_check(void) {
    if (access(EU_STACK, X_OK) != 0 || access(GDB, X_OK) != 0)
        return EU_STACK " or " GDB " is missing";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = 0;
        fclose(f);
        snprintf(g_ptrace_scope, sizeof g_ptrace_scope, "kernel.yama.ptrace_scope = %d", scope);
    }
    if (scope >= 3) return "ptrace is disabled (kernel.yama.ptrace_scope = 3)";
    if (scope == 2 && geteuid() != 0) return "ptrace needs CAP_SYS_PTRACE (kernel.yama.ptrace_scope = 2)";
    /* Seccomp or a container may still refuse ptrace: a trial run against ourselves decides. */
    char pidstr[32], out[] = "/tmp/fl-bench-probe-XXXXXX";
    int fd = mkstemp(out);
    if (fd < 0) return "no temporary file for the trial run";
    close(fd);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    snprintf(pidstr, sizeof pidstr, "%d", (int)child);
    char *eu[] = {EU_STACK, "-1", "-p", pidstr, NULL};
    unsigned th, fr;
    uint64_t ok = run_tool(eu, out);
    count_lines(out, "TID ", &th, &fr);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    unlink(out);
    return ok && th ? NULL : "eu-stack could not attach to a child process (ptrace refused)";
}

/* `bench_snapshot profile THREADS COUNT`: COUNT snapshots in a row in this process, for
 * `perf record -g`. */
static NOINLINE void profile_loop(void *arg) {
    unsigned count = *(unsigned *)arg;
    uint64_t *v = calloc(count, 8);
    if (!v) return;
    for (unsigned k = 0; k < count; k++) {
        uint64_t t0 = bench_now_ns();
        if (fl_snapshot("profile") != 0) g_errors++;
        v[k] = bench_now_ns() - t0;
        bench_dir_clear(g_dir, false);
    }
    printf("%u snapshots of %u threads: median %.2f ms, p90 %.2f ms; errors %d\n", count,
           bench_parked_count_threads(), bench_percentile(v, count, 50) / 1e6,
           bench_percentile(v, count, 90) / 1e6, g_errors);
    free(v);
}

static int profile(unsigned threads, unsigned count, const char *base) {
    g_dir = base;
    fl_options o = {.report_dir = base, .app_name = "bench_snapshot", .app_version = "0"};
    if (fl_install(&o) != 0 || (threads > 1 && bench_parked_start(threads - 1, DEPTH) != 0)) return 1;
    bench_parked_recurse(DEPTH, profile_loop, &count);
    bench_dir_clear(base, true);
    return g_errors ? 1 : 0;
}

static const struct {
    unsigned threads, runs_div, ext_runs, gdb_runs;
} k_cases[] = {{16, 1, 10, 5}, {256, 1, 5, 3}, {1000, 2, 3, 0}};
#define NCASES (sizeof k_cases / sizeof k_cases[0])

int main(int argc, char **argv) {
    char base[1024];
    if (!bench_mkdtemp(base, sizeof base, "snapshot")) return 1;
    if (argc == 4 && !strcmp(argv[1], "profile"))
        return profile((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), base);
    unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : RUNS;
    if (runs < 1 || runs > MAXRUNS) runs = RUNS;
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) return 1;
    signal(SIGPIPE, SIG_IGN);
    g_skip_external = external_check();

    g_fs = bench_fs_name(base);
    result_t res[NCASES];
    for (unsigned i = 0; i < NCASES; i++) {
        unsigned r = runs / k_cases[i].runs_div;
        res[i] = run_case(base, k_cases[i].threads, r < 3 ? 3 : r, k_cases[i].ext_runs,
                          k_cases[i].gdb_runs);
    }
    rmdir(base);

    printf("## bench_snapshot (depth %u: every thread at the bottom of a %u-deep recursion, the "
           "others asleep in a futex wait; target forked, fl_install in it)\n\n", DEPTH, DEPTH);
    printf("From inside: fl_snapshot call -> return on the target's main thread.\n\n");
    printf("| threads | runs | median ms | p90 ms | first (cold) ms | report bytes | threads captured | CFI steps/snapshot | from the row cache | declined |\n");
    printf("|--------:|-----:|----------:|-------:|----------------:|-------------:|-----------------:|-------------------:|-------------------:|---------:|\n");
    for (unsigned i = 0; i < NCASES; i++) {
        const result_t *r = &res[i];
        printf("| %7u | %4u | %9.2f | %6.2f | %15.2f | %12lld | %16u | %18llu | %17.2f%% | %8llu |\n",
               r->threads, r->in_runs, r->in_p50 / 1e6, r->in_p90 / 1e6, r->in_first / 1e6,
               r->bytes, r->captured,
               (unsigned long long)(r->in_runs ? r->cfi_steps / r->in_runs : 0),
               r->cfi_hits + r->cfi_misses ? 100.0 * r->cfi_hits / (r->cfi_hits + r->cfi_misses) : 0.0,
               (unsigned long long)r->cfi_declined);
    }
    printf("\n(CFI steps: faultline's evaluator in every thread's walk; the first snapshot of each "
           "count (cold) is included in the cache figure.)\n");

    printf("\nWhere the time goes (medians, ms; the capture's steps called one by one, as "
           "fl_crash_capture does for a snapshot; 'rest' = fl_snapshot minus these: the report's "
           "encoding and writing, header, images; then the threads stopped and walked as a crash "
           "does it):\n\n");
    printf("| %-44s |", "phase");
    for (unsigned i = 0; i < NCASES; i++) printf(" %5u threads |", res[i].threads);
    printf("\n|----------------------------------------------|");
    for (unsigned i = 0; i < NCASES; i++) printf("--------------:|");
    printf("\n");
    for (unsigned p = 0; p < NPH; p++) {
        if (p == PH_SUSPEND) {
            printf("| %-44s |", "rest (fl_snapshot - the steps above)");
            for (unsigned i = 0; i < NCASES; i++) {
                uint64_t sum = 0;
                for (unsigned q = PH_MAPS; q <= PH_SELF_RELEASE; q++) sum += res[i].phase_p50[q];
                printf(" %13.3f |", ((double)res[i].in_p50 - (double)sum) / 1e6);
            }
            printf("\n");
        }
        printf("| %-44s |", k_phase_names[p]);
        for (unsigned i = 0; i < NCASES; i++) printf(" %13.3f |", res[i].phase_p50[p] / 1e6);
        printf("\n");
    }
    printf("| %-44s |", "threads that walked themselves (of all)");
    for (unsigned i = 0; i < NCASES; i++) printf(" %6u/%6u |", res[i].self_walked, res[i].walked);
    printf("\n");
    for (unsigned fp = 0; fp < 2; fp++) {
        printf("| %-44s |", fp ? "  frame pointers only: us, frames per thread" : "walk per thread: us, frames per thread");
        for (unsigned i = 0; i < NCASES; i++) {
            const result_t *r = &res[i];
            double w = r->walked ? r->walked : 1;
            printf(" %6.2f, %5.1f |", r->phase_p50[fp ? PH_WALK_FP : PH_WALK] / 1e3 / w,
                   (fp ? r->frames_fp : r->frames) / w);
        }
        printf("\n");
    }
    printf("\n'floor' = the same signal round trip with a minimal handler (SIGUSR1: count, "
           "futex wake), no registers, no parking: what the kernel's signal delivery costs here.\n\n");

    printf("From outside: whole commands run by the parent (fork, exec, wait); faultline: the parent "
           "sends SIGUSR2, the target's handler calls fl_snapshot.\n");
    if (g_skip_external) printf("eu-stack and gdb skipped: %s\n", g_skip_external);
    else printf("ptrace: %s; %s, %s\n", g_ptrace_scope, EU_STACK, GDB);
    printf("\n| threads | %-46s | runs | median ms | p90 ms | x faultline | threads seen | "
           "frames/thread |\n", "command");
    printf("|--------:|------------------------------------------------|-----:|----------:|-------:|"
           "------------:|-------------:|--------------:|\n");
    for (unsigned i = 0; i < NCASES; i++) {
        const result_t *r = &res[i];
        for (unsigned k = 0; k < NTOOLS; k++) {
            if (!r->runs[k]) continue;
            double ratio = r->p50[T_FL_RETURNED] ? (double)r->p50[k] / r->p50[T_FL_RETURNED] : 0;
            printf("| %7u | %-46s | %4u | %9.2f | %6.2f | %11.1f | %12u | %13u |\n", r->threads,
                   k_tool_names[k], r->runs[k], r->p50[k] / 1e6, r->p90[k] / 1e6, ratio,
                   r->seen_threads[k], r->seen_frames[k]);
        }
        bool same = !r->runs[T_EU] || (r->seen_threads[T_EU] == r->seen_threads[T_FL_RETURNED] &&
                                       (!r->runs[T_GDB] || r->seen_threads[T_GDB] == r->seen_threads[T_EU]));
        printf("| %7u | %-46s |      |           |        |             | %12s |               |\n",
               r->threads, "(threads seen by all: the same?)", same ? "yes" : "NO");
        if (!same) {
            fprintf(stderr, "bench_snapshot: ERROR: %u threads: the tools saw different numbers of threads\n",
                    r->threads);
            g_errors++;
        }
    }
    printf("\n(x faultline: median / the median of 'SIGUSR2 -> fl_snapshot returned'; frames/thread: "
           "the report's smallest count, the tools' average.)\n");
    printf("report directories under %s (file system: %s)\n", bench_tmp_root(), g_fs);
    printf("errors: %d (checks: every snapshot returned 0, the report lists every thread as captured "
           "with >= %u frames, all tools saw the same number of threads)\n\n", g_errors, DEPTH);

    char buf[200];
    for (unsigned i = 0; i < NCASES; i++) {
        const result_t *r = &res[i];
        char metric[64];
        snprintf(metric, sizeof metric, "snapshot, %u threads x 64", r->threads);
        snprintf(buf, sizeof buf, "%.2f ms median in-process call->return (p90 %.2f); from outside %.2f",
                 r->in_p50 / 1e6, r->in_p90 / 1e6, r->p50[T_FL_RETURNED] / 1e6);
        bench_goal(metric, buf, "(reported)", -1);
        if (!r->runs[T_EU]) continue;
        double euq = (double)r->p50[T_EU_Q] / r->p50[T_FL_RETURNED];
        double eu = (double)r->p50[T_EU] / r->p50[T_FL_RETURNED];
        snprintf(metric, sizeof metric, "snapshot vs eu-stack -q, %u threads", r->threads);
        snprintf(buf, sizeof buf, "%.1fx (eu-stack -q %.1f ms, faultline %.2f ms from outside)",
                 euq, r->p50[T_EU_Q] / 1e6, r->p50[T_FL_RETURNED] / 1e6);
        bench_goal(metric, buf, ">= 10x faster", euq >= 10);
        snprintf(metric, sizeof metric, "snapshot vs eu-stack -p, %u threads", r->threads);
        snprintf(buf, sizeof buf, "%.0fx (eu-stack %.1f ms)", eu, r->p50[T_EU] / 1e6);
        bench_goal(metric, buf, ">= 100x faster", eu >= 100);
        if (!r->runs[T_GDB]) continue;
        snprintf(metric, sizeof metric, "snapshot vs gdb, %u threads", r->threads);
        snprintf(buf, sizeof buf, "%.0fx (gdb %.0f ms)", (double)r->p50[T_GDB] / r->p50[T_FL_RETURNED],
                 r->p50[T_GDB] / 1e6);
        bench_goal(metric, buf, "(reported)", -1);
    }
    if (g_skip_external) bench_goal("snapshot vs eu-stack -q", g_skip_external, ">= 10x faster", -1);
    return g_errors ? 1 : 0;
}
