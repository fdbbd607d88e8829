/* SPDX-License-Identifier: MIT */
/* Stopping the other threads in-process: a real-time signal to each, whose handler records the
 * thread's registers and parks it on a futex until the capture releases it. No ptrace, no helper
 * process (see docs/threads.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <ucontext.h>

#include "crash/crash.h"

/* Per-entry token: the request generation and where the entry stands. A responder claims its
 * entry with a compare-and-swap from PENDING, the capture gives up on it with one from PENDING:
 * exactly one wins, so a late answer can never write into an entry the capture has moved on from
 * (or into the same slot of a later capture, whose generation differs). */
enum { PENDING = 1, ANSWERING = 2, ANSWERED = 3, ABANDONED = 0 };
#define TOKEN(gen, phase) ((int)(((unsigned)(gen) << 2) | (unsigned)(phase)))

static bool token_swap(volatile int *token, int from, int to) {
    return __atomic_compare_exchange_n(token, &from, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
/* The responder's claim on its entry; false for a late answer (the requester has moved on). */
static bool claim(volatile int *token, int gen) {
    return token_swap(token, TOKEN(gen, PENDING), TOKEN(gen, ANSWERING));
}
/* The requester giving up on an entry; true if it had not answered (false: it answered, or is
 * answering, meanwhile). */
static bool abandon(volatile int *token, int gen) {
    return token_swap(token, TOKEN(gen, PENDING), ABANDONED);
}
/* An entry a responder claimed just before the requester gave up: it finishes in microseconds
 * (a walk of its own stack, in milliseconds at most); wait for that, bounded (`rounds` x 10 us). */
static bool settle(volatile int *token, int gen, int rounds) {
    for (int i = 0; i < rounds && __atomic_load_n(token, __ATOMIC_ACQUIRE) == TOKEN(gen, ANSWERING); i++)
        fl_sys_nanosleep(10000);
    return __atomic_load_n(token, __ATOMIC_ACQUIRE) == TOKEN(gen, ANSWERED);
}

static int g_signal FL_STARTUP_DATA;  /* the real-time signal chosen at install; 0 = none free */
static struct sigaction g_previous FL_STARTUP_DATA; /* its action before install */
static volatile int g_installed FL_STARTUP_DATA; /* the handler is ours to remove */
static volatile int g_generation;    /* of the latest request, never 0 once used */
static volatile int g_release;       /* the generation whose parked threads may go (futex word) */
static volatile int g_answers;       /* answers to the current request (futex word) */
static volatile int g_answers_want;  /* the count the capture waits for (0: not yet known) */
static volatile int g_request_pid;   /* the process the requests come from (this one, since a fork) */
static volatile int g_unanswered;    /* a request went unanswered: its signal may still arrive */
static fl_thread_list_t *volatile g_list;
/* Marks the value of every request (with a generation and an index below it): a program's own
 * sigqueue of the same signal to itself, whose value is an int or a user-space pointer, never
 * has it. */
#define REQUEST_TAG (1ull << 63)
/* The program's own action for the capture signal, set through the preload library's sigaction
 * (fl_threads_app_sigaction) while the responder stays in place; a seqlock (g_app_seq odd while
 * it changes), read in the responder. */
static struct sigaction g_app;
static volatile unsigned g_app_seq;

/* Threads walking their own stacks (fl_selfwalk_t): the request's images and maps, and the frames
 * pool, max_frames per entry, mapped at the first snapshot that needs it and kept. */
static const fl_selfwalk_t *volatile g_selfwalk;
static fl_frame_t *g_pool;
static size_t g_pool_frames;        /* its size, in frames */
static volatile int g_selfwalk_off; /* a walk outlived its capture: never again (see suspend) */
#define FL_SELFWALK_POOL_MAX (64u << 20)    /* bytes */
#define FL_SELFWALK_HEADROOM (32u * 1024u)  /* stack the walk needs (about 10 KiB measured) */

static uint64_t now_ns(void) {
    uint64_t t = 0;
    fl_sys_clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

/* Alternate stacks offered at install to threads that were already running (generation 0). */
#define FL_OFFERS_MAX 256u
static struct offer {
    int tid;
    volatile int token; /* PENDING -> ANSWERING -> ANSWERED (taken) or ABANDONED; 0 = unused */
    bool taken;
    void *stack;
} g_offers[FL_OFFERS_MAX];
static volatile int g_offer_answers;

static void take_offer(unsigned idx, ucontext_t *uc) {
    if (idx >= FL_OFFERS_MAX) return;
    struct offer *o = &g_offers[idx];
    if (o->tid != (int)fl_sys_gettid() || !claim(&o->token, 0)) return;
    /* Same rule as fl_thread_init: a stack of the application's of our size or more stays. */
    stack_t old;
    o->taken = false;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_ONSTACK) &&
        ((old.ss_flags & SS_DISABLE) || old.ss_size < FL_ALTSTACK_SIZE)) {
        stack_t ss = {.ss_sp = o->stack, .ss_size = FL_ALTSTACK_SIZE, .ss_flags = 0};
        o->taken = sigaltstack(&ss, NULL) == 0;
        /* rt_sigreturn restores the alternate stack saved in the context at delivery: the new
         * one must be written there too, or it is undone when this handler returns. */
        if (o->taken) uc->uc_stack = ss;
    }
    __atomic_store_n(&o->token, TOKEN(0, ANSWERED), __ATOMIC_RELEASE);
    __atomic_add_fetch(&g_offer_answers, 1, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_offer_answers, 1);
}

/* Walks the calling thread's own stack from its registers in entry t (index idx) into the pool.
 * Other threads run meanwhile: the walk is `concurrent` (see selfwalk_prepare for when that is
 * possible). Its own stack cannot change or go away under it. False if it cannot walk here (the
 * entry parks instead). */
static bool walk_self(const fl_selfwalk_t *sw, fl_thread_t *t, unsigned idx) {
    if (!sw || (size_t)(idx + 1) * sw->max_frames > g_pool_frames) return false;
    volatile char here = 0; /* how much stack this handler has left */
    const fl_map_t *hm = fl_maps_find(sw->maps, (uintptr_t)&here);
    if (!hm || (uintptr_t)&here - hm->start < FL_SELFWALK_HEADROOM) return false;
    uint64_t sp = fl_regs_sp(&t->regs);
    const fl_map_t *sm = fl_maps_stack(sw->maps, sp);
    if (!sm || !(sm->perms & FL_MAP_R)) return false;
    fl_reader_t stack;
    fl_reader_init_range(&stack, sm->start, sm->end, fl_memory_reader());
    fl_walk_env_t env = {.mem = &stack, .images = sw->images, .stack_lo = sm->start < sp ? sm->start : sp,
                         .stack_hi = sm->end, .concurrent = true, .use_cfi = true,
                         .maps = sw->maps};
    fl_frame_t *f = g_pool + (size_t)idx * sw->max_frames;
    fl_walk_result_t res;
    fl_frames_walk(&env, &t->regs, f, sw->max_frames, &res);
    t->frames = f;
    t->frame_count = res.count;
    t->frames_truncated = res.truncated;
    t->frames_omitted = res.omitted;
    t->frames_omitted_at = res.omitted_at;
    t->unwind_stop = res.stop_reason;
    t->walked = true;
    return true;
}

/* A capture signal that is not our request, to the program's own action (fl_threads_app_sigaction),
 * as the kernel would have applied it: its mask (less the fault signals, which must still reach
 * the crash handler) around its handler, SA_RESETHAND, SIG_IGN, and the default (termination),
 * which the signal sent again does once this handler returns. */
static void forward(int sig, siginfo_t *info, void *uc) {
    struct sigaction a;
    unsigned seq;
    for (int i = 0;; i++) {
        seq = __atomic_load_n(&g_app_seq, __ATOMIC_ACQUIRE);
        fl_memcpy(&a, &g_app, sizeof a);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (!(seq & 1) && __atomic_load_n(&g_app_seq, __ATOMIC_RELAXED) == seq) break;
        if (i == 1000) return; /* (a writer stopped mid-change by this very signal) */
    }
    bool info_fn = a.sa_flags & SA_SIGINFO;
    struct sigaction dfl;
    fl_memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    if (!info_fn && a.sa_handler == SIG_IGN) return;
    if (!info_fn && a.sa_handler == SIG_DFL) {
        if (fl_crash_set_action(sig, &dfl, NULL) == 0)
            fl_sys_tgkill((int)fl_sys_getpid(), (int)fl_sys_gettid(), sig);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) fl_threads_app_sigaction(&dfl, NULL);
    sigset_t m = a.sa_mask, was;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (fl_crash_signals[i] != SIGABRT) sigdelset(&m, fl_crash_signals[i]);
    pthread_sigmask(SIG_BLOCK, &m, &was);
    if (info_fn) a.sa_sigaction(sig, info, uc);
    else a.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
}

bool fl_threads_stands_in(int sig) {
    return sig > 0 && sig == __atomic_load_n(&g_signal, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&g_installed, __ATOMIC_ACQUIRE);
}

int fl_threads_app_sigaction(const struct sigaction *act, struct sigaction *old) {
    struct sigaction was;
    /* (One writer at a time: the program's calls for one signal do not race in practice, and
     * the seqlock keeps a reader from a torn copy either way.) */
    unsigned seq = __atomic_load_n(&g_app_seq, __ATOMIC_ACQUIRE) & ~1u;
    fl_memcpy(&was, &g_app, sizeof was);
    if (act) {
        __atomic_store_n(&g_app_seq, seq + 1, __ATOMIC_RELEASE);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        fl_memcpy(&g_app, act, sizeof g_app);
        __atomic_store_n(&g_app_seq, seq + 2, __ATOMIC_RELEASE);
    }
    if (old) *old = was;
    return 0;
}

static void responder(int sig, siginfo_t *info, void *uc) {
    /* Requests are queued with the mark; any other signal is the program's. Only our own
     * requests are answered: queued by this process, with a generation and an index. (The pid
     * the last request was sent from, not getpid(): a system call in every thread of a capture
     * costs 1,000 of them at 1,000 threads; a fork's requests carry its own pid.) */
    uint64_t v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
    if (info->si_code != SI_QUEUE || !(v & REQUEST_TAG)) {
        forward(sig, info, uc);
        return;
    }
    if (info->si_pid != __atomic_load_n(&g_request_pid, __ATOMIC_ACQUIRE)) return;
    int gen = (int)((v & ~REQUEST_TAG) >> 32);
    unsigned idx = (unsigned)v;
    if (gen == 0) {
        take_offer(idx, uc);
        return;
    }
    fl_thread_list_t *l = __atomic_load_n(&g_list, __ATOMIC_ACQUIRE);
    if (!l || idx >= FL_ARRAY_LEN(l->t)) return;
    fl_thread_t *t = &l->t[idx];
    if (t->tid != (int)fl_sys_gettid() || !claim(&t->token, gen))
        return; /* a late answer: the capture has moved on */
    fl_regs_from_ucontext(&t->regs, uc);
    fl_sys_prctl_get_name(t->name);
    bool walked = walk_self(__atomic_load_n(&g_selfwalk, __ATOMIC_ACQUIRE), t, idx);
    __atomic_store_n(&t->token, TOKEN(gen, ANSWERED), __ATOMIC_RELEASE);
    /* Only the answer the capture waits for wakes it (one futex call, not one per thread): it
     * publishes the count it wants, then looks at g_answers; we add to g_answers, then look at
     * the count wanted (both sequentially consistent: one of us sees the other). */
    int have = __atomic_add_fetch(&g_answers, 1, __ATOMIC_SEQ_CST);
    int want = __atomic_load_n(&g_answers_want, __ATOMIC_SEQ_CST);
    if (want && have >= want) fl_sys_futex_wake(&g_answers, 1);
    if (walked) return; /* nothing of ours needs this stack to stand still */
    /* Park, so the stack stays as the registers describe it while the capture walks it. Bounded:
     * if the capturing thread died without releasing us, we go on after FL_THREADS_PARK_MAX_NS. */
    uint64_t start = now_ns();
    for (;;) {
        int r = __atomic_load_n(&g_release, __ATOMIC_ACQUIRE);
        if (r - gen >= 0) {
            /* Released: wake two more (fl_threads_release wakes two; the waking fans out). */
            fl_sys_futex_wake(&g_release, 2);
            break;
        }
        uint64_t waited = now_ns() - start;
        if (waited >= FL_THREADS_PARK_MAX_NS) break;
        fl_sys_futex_wait(&g_release, r, 100000000ull);
    }
}

/* Whether signal s can be sent to our threads, tried with s ignored so that the request is
 * checked and then dropped. An emulator can accept sigaction() for a signal it has no host signal
 * for (qemu-user: the last real-time signals) and refuse to send it (EINVAL). Leaves s ignored
 * when it answers true, else as `old`. */
static bool sendable(int s, const struct sigaction *old) {
    struct sigaction ign = *old;
    ign.sa_handler = SIG_IGN;
    if (fl_crash_set_action(s, &ign, NULL) != 0) return false;
    siginfo_t si;
    fl_memset(&si, 0, sizeof si);
    si.si_signo = s;
    si.si_code = SI_QUEUE;
    si.si_pid = (int)fl_sys_getpid();
    /* generation 0, an index past the offers: should a blocked s stay pending, the responder
     * drops it. Sent to the first thread (tid = pid), which any thread may signal: an ignored
     * signal is dropped at sending, whoever it is for, and the answer is about the number. */
    si.si_value.sival_ptr = (void *)(uintptr_t)(REQUEST_TAG | UINT32_MAX);
    if (fl_sys_rt_tgsigqueueinfo(si.si_pid, si.si_pid, s, &si) == 0) return true;
    fl_crash_set_action(s, old, NULL);
    return false;
}

int fl_threads_install(void) {
    struct sigaction sa;
    /* SA_RESTART: most interrupted system calls resume by themselves after a snapshot. Crash
     * signals stay unblocked so a fault in here still reaches the crash handler. */
    fl_crash_sigaction_init(&sa, responder, SA_RESTART);
    /* The highest real-time signal nobody uses: applications that use some tend to count up
     * from SIGRTMIN. */
    for (int s = SIGRTMAX; s >= SIGRTMIN; s--) {
        struct sigaction old;
        if (fl_crash_set_action(s, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL || !sendable(s, &old))
            continue;
        if (fl_crash_set_action(s, &sa, NULL) != 0) {
            fl_crash_set_action(s, &old, NULL);
            continue;
        }
        g_previous = old;
        g_app = old;
        g_signal = s;
        g_installed = 1;
        return 0;
    }
    g_signal = 0; /* the capture then lists the other threads as omitted, and says why */
    return 0;
}

void fl_threads_uninstall(void) {
    if (!g_installed) return;
    /* A request that went unanswered may still be delivered: ignore it rather than let the
     * default action (termination) run. */
    struct sigaction ign;
    fl_memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    fl_crash_set_action(g_signal, g_unanswered ? &ign : &g_app, NULL);
    g_installed = 0;
    g_signal = 0;
}

int fl_threads_signal(void) { return g_signal; }

/* Appends every thread id in /proc/self/task except `self` to t[*count..max), counting all of
 * them in *total. */
typedef struct enum_ctx {
    fl_thread_t *t;
    unsigned *count, *total, max;
    int self;
} enum_ctx_t;

static int enumerate_one(void *ctx, const char *name) {
    enum_ctx_t *c = ctx;
    int tid = 0;
    for (; *name >= '0' && *name <= '9' && tid < 100000000; name++) tid = tid * 10 + (*name - '0');
    if (*name || tid <= 0 || tid == c->self) return 0; /* ".", ".." */
    ++*c->total;
    if (*c->count >= c->max) return 0;
    fl_thread_t *e = &c->t[(*c->count)++];
    e->tid = tid;
    e->state = FL_THREAD_OMITTED;
    e->crashed = false;
    e->walked = false;
    e->name[0] = 0;
    return 0;
}

/* The threads from /proc/self/task; where it cannot be read (no /proc in a chroot or
 * container, or no descriptor left), the main thread and those faultline's pthread_create
 * started (*from_record set): 0 then. */
static int enumerate(fl_thread_t *t, unsigned *count, unsigned *total, int self, unsigned max,
                     bool *from_record) {
    enum_ctx_t c = {t, count, total, max, self};
    unsigned before = *count;
    int e = fl_dir_names(AT_FDCWD, "/proc/self/task", enumerate_one, &c);
    if (e >= 0 || *count != before) return e;
    static int tids[FL_MAX_THREADS_LIMIT];
    unsigned n = fl_crash_started_threads(tids, FL_ARRAY_LEN(tids));
    char name[12];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, name, sizeof name);
    fl_strbuf_putu(&sb, (uint64_t)fl_sys_getpid());
    enumerate_one(&c, name);
    for (unsigned i = 0; i < n; i++) {
        fl_strbuf_init(&sb, name, sizeof name);
        fl_strbuf_putu(&sb, (uint64_t)tids[i]);
        enumerate_one(&c, name);
    }
    *from_record = true;
    return 0;
}

/* A request from this process (SI_QUEUE): the responder checks the sender before anything else. */
static void request_init(siginfo_t *si, int pid) {
    __atomic_store_n(&g_request_pid, pid, __ATOMIC_RELEASE);
    fl_memset(si, 0, sizeof *si);
    si->si_signo = g_signal;
    si->si_code = SI_QUEUE;
    si->si_pid = pid;
    si->si_uid = (uid_t)fl_sys_getuid();
}

/* Reads /proc/self/task/<tid>/<file> into buf (NUL-terminated); bytes read or -errno. */
static long read_task_file(int tid, const char *file, char *buf, size_t cap) {
    char path[64];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, path, sizeof path);
    fl_strbuf_puts(&sb, "/proc/self/task/");
    fl_strbuf_putu(&sb, (uint64_t)tid);
    fl_strbuf_puts(&sb, "/");
    fl_strbuf_puts(&sb, file);
    int fd = (int)fl_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return fd;
    long n = fl_sys_read(fd, buf, cap - 1);
    fl_sys_close(fd);
    if (n < 0) return n;
    buf[n] = 0;
    return n;
}

/* Whether thread tid holds our request blocked: our signal is in its blocked set (SigBlk) and a
 * signal waits in its pending set (SigPnd). Blocked alone is not enough: while a signal is being
 * delivered the mask can block everything for a moment (qemu-user blocks every host signal while
 * it hands one to the guest), and nothing is pending then. Any pending signal rather than ours:
 * under qemu the request waits as the host signal qemu maps ours to, whose number we do not know.
 * -errno if the thread is gone (-ENOENT also for a zombie, which never answers). */
static int blocks_signal(int tid, int sig) {
    char buf[2048];
    long n = read_task_file(tid, "status", buf, sizeof buf);
    if (n < 0) return (int)n;
    static const char *const names[2] = {"SigPnd:\t", "SigBlk:\t"};
    uint64_t mask[2] = {0, 0};
    for (const char *p = buf; *p; p++) {
        if (p != buf && p[-1] != '\n') continue;
        /* A zombie: the main thread after pthread_exit stays listed until the process ends */
        if (fl_memcmp(p, "State:\t", 7) == 0 && (p[7] == 'Z' || p[7] == 'X')) return -ENOENT;
        for (int k = 0; k < 2; k++) {
            const char *h = p + 8;
            if (fl_memcmp(p, names[k], 8) == 0 && !fl_parse_hex(&h, buf + n, &mask[k])) return 0;
        }
    }
    return mask[0] != 0 && ((mask[1] >> (sig - 1)) & 1);
}

/* Whether thread tid is a worker the kernel runs in the process (io_uring's submission and
 * worker threads: PF_IO_WORKER, or any PF_KTHREAD) rather than one of the program's: the
 * flags, field 9 of its stat, after the name in parentheses (which may hold anything). */
static bool kernel_worker(int tid) {
    char buf[512];
    long n = read_task_file(tid, "stat", buf, sizeof buf);
    const char *p = buf + (n > 0 ? n : 0);
    while (p > buf && p[-1] != ')') p--;
    for (int field = 2; field < 9 && *p; p++) /* (p at the space that ends field 2) */
        if (*p == ' ') field++;
    uint64_t flags = 0;
    while (*p >= '0' && *p <= '9' && flags < (1ull << 40)) flags = flags * 10 + (uint64_t)(*p++ - '0');
    return p > buf && (flags & (0x10u /* PF_IO_WORKER */ | 0x200000u /* PF_KTHREAD */));
}

int fl_threads_syscall_regs(int tid, uint64_t out[3]) {
    char buf[256];
    if (kernel_worker(tid)) return FL_ENOSYS;
    long n = read_task_file(tid, "syscall", buf, sizeof buf);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9') return FL_ENOTFOUND; /* "running", "-1 ..." */
    const char *p = buf, *end = buf + n;
    uint64_t nr = 0, v[8];
    for (; p < end && *p >= '0' && *p <= '9' && nr < (1u << 20); p++) nr = nr * 10 + (uint64_t)(*p - '0');
    for (unsigned i = 0; i < 8; i++) {
        if (end - p < 3 || p[0] != ' ' || p[1] != '0' || p[2] != 'x') return FL_EBADDATA;
        p += 3;
        if (!fl_parse_hex(&p, end, &v[i])) return FL_EBADDATA;
    }
    out[0] = nr;
    out[1] = v[6]; /* sp */
    out[2] = v[7]; /* pc */
    return 0;
}

static void read_name(fl_thread_t *t) {
    char buf[32];
    long n = read_task_file(t->tid, "comm", buf, sizeof buf);
    if (n <= 0) return;
    if (buf[n - 1] == '\n') buf[n - 1] = 0;
    fl_strlcpy(t->name, buf, sizeof t->name);
}

/* Waits until *count reaches `want` or the deadline passed. Responders wake the waiter when
 * *count reaches *want_word (g_answers_want), or, for each answer, when want_word is NULL. */
static void wait_count(volatile int *count, int want, uint64_t deadline, volatile int *want_word) {
    if (want_word) __atomic_store_n(want_word, want > 0 ? want : 1, __ATOMIC_SEQ_CST);
    for (;;) {
        int have = __atomic_load_n(count, __ATOMIC_SEQ_CST);
        uint64_t now = now_ns();
        if (have >= want || now >= deadline) return;
        uint64_t left = deadline - now;
        fl_sys_futex_wait(count, have, left < 10000000ull ? left : 10000000ull);
    }
}

/* The frames pool, max_frames for each of `entries`: mapped by the first snapshot (the pages
 * are only touched as threads use them), at most FL_SELFWALK_POOL_MAX; entries past it park.
 * NULL if threads cannot walk themselves: a concurrent walk reads the tables through the safe
 * reader, which must then be process_vm_readv (the pipe carries one read at a time), and has no
 * LLVM libunwind (so not when FAULTLINE_CFI=llvm asks for it). */
static const fl_selfwalk_t *selfwalk_prepare(const fl_selfwalk_t *sw, unsigned entries) {
    if (!sw || g_selfwalk_off || fl_memory_method() != FL_MEMORY_VM_READV ||
        fl_frames_cfi_mode_current() == FL_CFI_MODE_LLVM)
        return NULL;
    if (!g_pool) {
        size_t n = (size_t)entries * sw->max_frames;
        if (n * sizeof(fl_frame_t) > FL_SELFWALK_POOL_MAX) n = FL_SELFWALK_POOL_MAX / sizeof(fl_frame_t);
        void *p;
        if (fl_sys_mmap_anon(n * sizeof(fl_frame_t), &p) != 0) return NULL;
        g_pool = p;
        g_pool_frames = n;
    }
    return sw;
}

/* Entry 0 is the caller, filled in by the capture. */
static void list_begin(fl_thread_list_t *l, int self) {
    l->count = 1;
    l->total = 1;
    l->t[0].tid = self;
    l->t[0].state = FL_THREAD_CAPTURED;
    l->t[0].walked = false;
    l->signal_taken = false;
    l->from_record = false;
    l->enum_error = 0;
}

static int request(fl_thread_list_t *l, unsigned pool_entries, uint64_t timeout_ns,
                   const fl_selfwalk_t *selfwalk, uint64_t spin_ns);

int fl_threads_suspend(fl_thread_list_t *l, unsigned max, uint64_t timeout_ns,
                       const fl_selfwalk_t *selfwalk) {
    int self = (int)fl_sys_gettid();
    list_begin(l, self);
    l->enum_error = enumerate(l->t, &l->count, &l->total, self, max ? max : 1, &l->from_record);
    return request(l, max ? max : 1, timeout_ns, selfwalk, 0);
}

int fl_threads_suspend_one(fl_thread_list_t *l, int tid, unsigned pool_entries,
                           uint64_t timeout_ns, const fl_selfwalk_t *selfwalk) {
    list_begin(l, (int)fl_sys_gettid());
    fl_thread_t *t = &l->t[l->count++];
    l->total++;
    t->tid = tid;
    t->state = FL_THREAD_OMITTED;
    t->crashed = false;
    t->walked = false;
    t->name[0] = 0;
    return request(l, pool_entries, timeout_ns, selfwalk, FL_THREADS_ONE_SPIN_NS);
}

/* Polls *count until it reaches want or until `until`, without asking to be woken (see
 * request). */
static void spin_count(volatile int *count, int want, uint64_t until) {
    for (unsigned i = 0;; i++) {
        if (__atomic_load_n(count, __ATOMIC_SEQ_CST) >= want) return;
        if ((i & 63) == 0 && now_ns() >= until) return;
    }
}

/* Asks entries 1..count of l, as fl_threads_suspend describes; the frames pool is sized for
 * pool_entries entries when it is first mapped. With spin_ns, first polls that long for the
 * answers before it sleeps: a responder wakes the requester only once it has said how many
 * answers it waits for (g_answers_want), and that futex wake is most of what a thread that walks
 * itself spends in its handler (tens of microseconds on a virtual machine, against 1-2 for its
 * walk): for one thread (fl_thread_backtrace) the requester pays for it instead. */
static int request(fl_thread_list_t *l, unsigned pool_entries, uint64_t timeout_ns,
                   const fl_selfwalk_t *selfwalk, uint64_t spin_ns) {
    int pid = (int)fl_sys_getpid();
    __atomic_store_n(&g_selfwalk, selfwalk_prepare(selfwalk, pool_entries), __ATOMIC_RELEASE);

    int gen = __atomic_add_fetch(&g_generation, 1, __ATOMIC_SEQ_CST) & 0x1fffffff;
    if (!gen) gen = __atomic_add_fetch(&g_generation, 1, __ATOMIC_SEQ_CST) & 0x1fffffff;
    l->generation = gen;
    __atomic_store_n(&g_answers, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_answers_want, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_list, l, __ATOMIC_RELEASE);

    /* Our responder must still be the signal's action: an application may have taken it. */
    struct sigaction cur;
    if (!g_signal || fl_crash_set_action(g_signal, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
        cur.sa_sigaction != responder) {
        l->signal_taken = g_signal != 0;
        for (unsigned i = 1; i < l->count; i++) read_name(&l->t[i]);
        return 0;
    }

    siginfo_t si;
    request_init(&si, pid);
    int sent = 0;
    for (unsigned i = 1; i < l->count; i++) {
        fl_thread_t *t = &l->t[i];
        __atomic_store_n(&t->token, TOKEN(gen, PENDING), __ATOMIC_RELEASE);
        si.si_value.sival_ptr = (void *)(uintptr_t)(REQUEST_TAG | (uint64_t)(unsigned)gen << 32 | i);
        long r = fl_sys_rt_tgsigqueueinfo(pid, t->tid, g_signal, &si);
        if (r == 0) {
            sent++;
            continue;
        }
        __atomic_store_n(&t->token, ABANDONED, __ATOMIC_RELEASE);
        t->state = r == -ESRCH ? FL_THREAD_EXITED : FL_THREAD_TIMEOUT;
    }

    /* Most threads answer within microseconds. Those that have not after a short while are
     * checked: a thread that blocks the signal will never answer, so waiting for it is pointless;
     * one that has exited neither. The rest get until the deadline. */
    uint64_t start = now_ns(), deadline = start + timeout_ns;
    uint64_t check = start + (timeout_ns < FL_THREADS_CHECK_NS ? timeout_ns : FL_THREADS_CHECK_NS);
    if (spin_ns) spin_count(&g_answers, sent, start + (spin_ns < timeout_ns ? spin_ns : timeout_ns));
    wait_count(&g_answers, sent, check, &g_answers_want);
    for (unsigned i = 1; i < l->count; i++) {
        fl_thread_t *t = &l->t[i];
        if (__atomic_load_n(&t->token, __ATOMIC_ACQUIRE) != TOKEN(gen, PENDING)) continue;
        int b = blocks_signal(t->tid, g_signal);
        if ((b == 1 || b == -ENOENT) && abandon(&t->token, gen)) {
            t->state = b == 1 ? FL_THREAD_BLOCKED : FL_THREAD_EXITED;
            sent--;
        }
    }
    wait_count(&g_answers, sent, deadline, &g_answers_want);
    for (unsigned i = 1; i < l->count; i++) {
        fl_thread_t *t = &l->t[i];
        if (abandon(&t->token, gen)) {
            __atomic_store_n(&g_unanswered, 1, __ATOMIC_SEQ_CST);
            t->state = blocks_signal(t->tid, g_signal) == -ENOENT ? FL_THREAD_EXITED : FL_THREAD_TIMEOUT;
        } else if (__atomic_load_n(&t->token, __ATOMIC_ACQUIRE) != ABANDONED) {
            /* it answered (the state set earlier applies to entries given up before) */
            bool done = settle(&t->token, gen, g_selfwalk ? 100000 : 1000);
            t->state = done ? FL_THREAD_CAPTURED : FL_THREAD_TIMEOUT;
            /* A walk still going after a second may yet write into the pool, which the next
             * snapshot would reuse: no more walks of one's own in this process. */
            if (!done && g_selfwalk) __atomic_store_n(&g_selfwalk_off, 1, __ATOMIC_SEQ_CST);
        }
        if (t->state != FL_THREAD_CAPTURED) read_name(t);
    }
    return 0;
}

/* The kernel wakes a futex's waiters one by one (4-10 us each here): waking every parked thread
 * from here would cost the capture that much per thread. It wakes two, and each thread released
 * wakes two more (responder): the capture goes on at once, the threads resume in a few rounds. */
void fl_threads_release(fl_thread_list_t *l) {
    __atomic_store_n(&g_release, l->generation, __ATOMIC_RELEASE);
    fl_sys_futex_wake(&g_release, 2);
}

int fl_threads_offer_altstacks(uint64_t timeout_ns) {
    /* glibc clears this when the process starts its first thread: the common case of an install
     * at the top of main() lists no threads. */
    if (!g_signal || __libc_single_threaded) return 0;
    int self = (int)fl_sys_gettid(), pid = (int)fl_sys_getpid();
    /* The running threads, read as a capture reads them (into a small list of our own). */
    static fl_thread_t threads[FL_OFFERS_MAX];
    unsigned count = 0, total = 0;
    bool from_record = false;
    if (enumerate(threads, &count, &total, self, FL_OFFERS_MAX, &from_record) != 0 && count == 0)
        return 0;
    siginfo_t si;
    request_init(&si, pid);
    __atomic_store_n(&g_offer_answers, 0, __ATOMIC_SEQ_CST);
    int sent = 0;
    for (unsigned i = 0; i < count; i++) {
        struct offer *o = &g_offers[i];
        o->tid = threads[i].tid;
        o->stack = fl_crash_altstack_map();
        if (!o->stack) break;
        __atomic_store_n(&o->token, TOKEN(0, PENDING), __ATOMIC_RELEASE);
        si.si_value.sival_ptr = (void *)(uintptr_t)(REQUEST_TAG | i);
        if (fl_sys_rt_tgsigqueueinfo(pid, o->tid, g_signal, &si) == 0) sent++;
        else __atomic_store_n(&o->token, ABANDONED, __ATOMIC_RELEASE);
    }
    /* As in a capture: a thread that blocks the signal is not waited for. But a thread still being
     * created blocks every signal until it runs (glibc's pthread_create; qemu-user's clone for
     * longer): one that seems to block it after 2 ms gets until 20 ms. */
    uint64_t start = now_ns();
    wait_count(&g_offer_answers, sent, start + 2000000ull, NULL);
    for (unsigned i = 0; i < FL_OFFERS_MAX && g_offers[i].stack; i++) {
        if (__atomic_load_n(&g_offers[i].token, __ATOMIC_ACQUIRE) == TOKEN(0, PENDING) &&
            blocks_signal(g_offers[i].tid, g_signal) != 0) {
            wait_count(&g_offer_answers, sent, start + 20000000ull, NULL);
            break;
        }
    }
    for (unsigned i = 0; i < FL_OFFERS_MAX && g_offers[i].stack; i++) {
        struct offer *o = &g_offers[i];
        if (__atomic_load_n(&o->token, __ATOMIC_ACQUIRE) == TOKEN(0, PENDING) &&
            blocks_signal(o->tid, g_signal) != 0 && abandon(&o->token, 0)) {
            __atomic_store_n(&g_unanswered, 1, __ATOMIC_SEQ_CST);
            sent--;
        }
    }
    wait_count(&g_offer_answers, sent, start + timeout_ns, NULL);
    int taken = 0;
    for (unsigned i = 0; i < FL_OFFERS_MAX && g_offers[i].stack; i++) {
        struct offer *o = &g_offers[i];
        bool silent = abandon(&o->token, 0);
        if (silent) __atomic_store_n(&g_unanswered, 1, __ATOMIC_SEQ_CST);
        bool given_up = silent || __atomic_load_n(&o->token, __ATOMIC_ACQUIRE) == ABANDONED;
        bool answered = !given_up && settle(&o->token, 0, 1000);
        if (answered && o->taken) taken++;
        else if (answered || given_up) fl_crash_altstack_unmap(o->stack);
        /* (still ANSWERING after 10 ms: leave the mapping, the thread may be installing it) */
        o->stack = NULL;
        o->tid = 0;
        __atomic_store_n(&o->token, ABANDONED, __ATOMIC_RELEASE);
    }
    return taken;
}
