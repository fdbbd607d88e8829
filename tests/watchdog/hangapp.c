/* SPDX-License-Identifier: MIT */
/* A main loop under the watchdog, for run_watchdog.py: hangs, recoveries, kills, crashes, exits. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faultline/faultline.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    } /* EINTR: the capture signal may interrupt it */
}

/* The loop: a beat every 5 ms for ms milliseconds. */
static void beat_for(unsigned ms) {
    double end = now_s() + ms / 1000.0;
    while (now_s() < end) {
        fl_heartbeat();
        sleep_ms(5);
    }
    fl_heartbeat();
}

/* A loop whose iterations are 250 ms of this thread's CPU time: a stop does not shorten the
 * iteration it interrupts, so after SIGCONT the next beat is up to 250 ms away. */
static void work_for(unsigned ms) {
    double end = now_s() + ms / 1000.0;
    while (now_s() < end) {
        fl_heartbeat();
        struct timespec c0, c;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
        while ((c.tv_sec - c0.tv_sec) * 1e3 + (c.tv_nsec - c0.tv_nsec) / 1e6 < 250);
    }
    fl_heartbeat();
}

/* The known functions the hang is found in (run_watchdog.py checks them against nm). */
__attribute__((noinline)) void wd_stuck_spin(unsigned ms) {
    double end = now_s() + ms / 1000.0;
    while (now_s() < end) {
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) void wd_stuck_sleep(unsigned ms) {
    sleep_ms(ms);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

__attribute__((noinline)) void wd_stuck_forever(void) {
    for (;;) pause();
}

static void crash_now(void) {
    volatile int *p = NULL;
    *p = 1;
}

static void crash_at_exit(void) { crash_now(); }

static int usage(void) {
    fprintf(stderr, "usage: hangapp DIR MODE [threshold_ms check_ms block_ms after_ms]\n"
                    "modes: spin twice sleep forever beat work crash exitcrash quickexit lastrun\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *dir = argv[1], *mode = argv[2];
    unsigned threshold = argc > 3 ? (unsigned)atoi(argv[3]) : 800;
    unsigned check = argc > 4 ? (unsigned)atoi(argv[4]) : 200;
    unsigned block = argc > 5 ? (unsigned)atoi(argv[5]) : 2000;
    unsigned after = argc > 6 ? (unsigned)atoi(argv[6]) : 1500;

    if (strcmp(mode, "lastrun") == 0) {
        fl_run_info ri;
        int e = fl_last_run(dir, &ri);
        static const char *const names[] = {"?", "clean", "crashed", "hung", "killed"};
        if (e) {
            printf("lastrun error=%d\n", e);
            return 0;
        }
        printf("lastrun ending=%s pid=%d report=%s hang_ms=%llu boot_known=%d rebooted=%d runs=%u "
               "unclean=%u\n",
               ri.ending >= 1 && ri.ending <= 4 ? names[ri.ending] : "?", ri.pid,
               ri.report_id[0] ? ri.report_id : "-",
               (unsigned long long)(ri.hang_duration_ns / 1000000u), ri.boot_known, ri.rebooted,
               ri.runs, ri.unclean);
        return 0;
    }
    if (strcmp(mode, "exitcrash") == 0) atexit(crash_at_exit); /* runs after faultline's */

    fl_options o = {.report_dir = dir};
    int e = fl_install(&o);
    if (e) {
        fprintf(stderr, "fl_install: %s\n", fl_strerror(e));
        return 1;
    }
    fl_watchdog_options w = {.threshold_ms = threshold, .check_ms = check};
    if ((e = fl_watchdog_start(&w)) != 0) {
        fprintf(stderr, "fl_watchdog_start: %s\n", fl_strerror(e));
        return 1;
    }
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    beat_for(300);
    if (strcmp(mode, "spin") == 0) {
        wd_stuck_spin(block);
        beat_for(after);
    } else if (strcmp(mode, "twice") == 0) {
        wd_stuck_spin(block);
        beat_for(after);
        wd_stuck_sleep(block);
        beat_for(after);
    } else if (strcmp(mode, "sleep") == 0) {
        wd_stuck_sleep(block);
        beat_for(after);
    } else if (strcmp(mode, "forever") == 0) {
        wd_stuck_forever();
    } else if (strcmp(mode, "beat") == 0) {
        beat_for(block);
    } else if (strcmp(mode, "work") == 0) {
        work_for(block);
    } else if (strcmp(mode, "crash") == 0) {
        crash_now();
    } else if (strcmp(mode, "exitcrash") == 0) {
        /* exit() below: faultline marks the run clean, then crash_at_exit crashes. */
    } else if (strcmp(mode, "forkcrash") == 0 || strcmp(mode, "forkstop") == 0) {
        /* A fork child is no run of its own: its crash or its exit leaves the parent's marker
         * alone, and stopping the watchdog it has not got returns at once. */
        pid_t child = fork();
        if (child == 0) {
            if (mode[4] == 'c') crash_now();
            fl_watchdog_stop();
            fl_uninstall();
            exit(0);
        }
        int st;
        waitpid(child, &st, 0);
        printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        fflush(stdout);
        if (mode[4] == 'c') _exit(0); /* the parent's run: killed, whatever the child did */
    } else if (strcmp(mode, "quickexit") == 0) {
        _exit(0); /* no exit handlers: not a clean exit as far as the marker knows */
    } else {
        return usage();
    }
    printf("done\n");
    fflush(stdout);
    return 0; /* return from main: a clean exit */
}
