/* SPDX-License-Identifier: MIT */
/* faultline-demo: installs faultline, crashes on a NULL header; on its next start shows the report. */
#include <faultline/faultline.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEMO_DEFAULT_DIR "./faultline-demo-reports"

/* Every demo_* function keeps its own frame, so the report shows the whole call chain. */
#if defined(__clang__)
#define DEMO_NOINLINE __attribute__((noinline))
#else
#define DEMO_NOINLINE __attribute__((noinline, noclone))
#endif

/* Names the calling thread (demo_thread_<platform>.c: the pthread_setname_np calls differ). */
void demo_name_this_thread(const char *name);

struct demo_request {
    unsigned id;
    const char *method;
    const char *path;
    const char *host_header; /* NULL when the client sent none: the bug the demo trips over */
};

/* Read at run time, so the compiler cannot see that the header is missing and fold the fault. */
static const char *volatile demo_client_host_header = NULL;

/* Returns the length of the host name in "Host: name"; dereferences a missing header. */
static DEMO_NOINLINE size_t demo_parse_header(const struct demo_request *req) {
    const char *h = req->host_header;
    size_t n = 0;
    while (h[n] != '\0' && h[n] != ':') /* no NULL check: SIGSEGV here */
        n++;
    return n;
}

static DEMO_NOINLINE int demo_handle_request(const struct demo_request *req) {
    printf("  request #%u: %s %s (the client sent no Host header)\n", req->id, req->method,
           req->path);
    fflush(stdout);
    size_t host_len = demo_parse_header(req);
    return host_len > 0 ? 200 : 400;
}

static DEMO_NOINLINE int demo_main_loop(void) {
    struct demo_request req = {1, "GET", "/index.html", demo_client_host_header};
    int status = demo_handle_request(&req);
    printf("  request #%u answered %d\n", req.id, status); /* never reached */
    return status == 200 ? 0 : 1;
}

/* A background worker, so the report shows more than the crashed thread: it waits for work on a
 * pipe that never delivers any. */
static int demo_work_pipe[2];
static DEMO_NOINLINE void demo_wait_for_work(void) {
    char c;
    while (read(demo_work_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
}
static DEMO_NOINLINE void *demo_worker(void *arg) {
    (void)arg;
    demo_name_this_thread("demo-worker");
    demo_wait_for_work();
    return NULL;
}

static int demo_crash(const char *dir) {
    fl_options opts = {.report_dir = dir, .app_name = "faultline-demo",
                       .app_version = FL_DEMO_VERSION};
    int err = fl_install(&opts);
    if (err != FL_OK) {
        fprintf(stderr, "faultline-demo: fl_install: %s\n", fl_strerror(err));
        return 2;
    }
    fl_annotate("scene", "demo");
    pthread_t worker;
    if (pipe(demo_work_pipe) == 0) pthread_create(&worker, NULL, demo_worker, NULL);
    usleep(10000); /* let it reach its read() */
    printf("faultline-demo %s: crash handler installed, reports go to %s\n", FL_DEMO_VERSION, dir);
    printf("  serving requests (demo_main_loop -> demo_handle_request -> demo_parse_header)\n");
    fflush(stdout);
    return demo_main_loop();
}

/* Runs `cli show path`; returns the CLI's exit status, or -1 if it could not run. */
static int demo_show(const char *cli, const char *path) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl(cli, cli, "show", path, (char *)NULL);
        fprintf(stderr, "faultline-demo: cannot run %s: %s\n", cli, strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The "next start": what an app does at launch to pick up the reports of its last crash. */
static int demo_next_start(const char *dir) {
    char **paths = NULL;
    size_t count = 0;
    int err = fl_list_reports(dir, &paths, &count);
    if (err != FL_OK) {
        fprintf(stderr, "faultline-demo: fl_list_reports(%s): %s\n", dir, fl_strerror(err));
        return 2;
    }
    printf("faultline-demo %s: next start, %zu pending report%s in %s\n", FL_DEMO_VERSION, count,
           count == 1 ? "" : "s", dir);
    int rc = count > 0 ? 0 : 1;
#ifdef FL_DEMO_CLI
    const char *cli = FL_DEMO_CLI;
#else
    const char *cli = NULL;
#endif
    for (size_t i = 0; i < count; i++) {
        printf("\n--- report %zu of %zu\n", i + 1, count);
        if (cli == NULL) {
            printf("%s (this build has no faultline CLI to print it with)\n", paths[i]);
            continue;
        }
        printf("$ %s show %s\n\n", cli, paths[i]);
        int st = demo_show(cli, paths[i]);
        if (st != 0) {
            fprintf(stderr, "faultline-demo: `faultline show` failed (status %d)\n", st);
            rc = 1;
        }
    }
    fl_free_report_list(paths, count);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "--next-start") == 0)
        return demo_next_start(argc >= 3 ? argv[2] : DEMO_DEFAULT_DIR);
    if (argc >= 2 && argv[1][0] == '-') {
        fprintf(stderr,
                "usage: %s [REPORT_DIR]               install faultline, then crash\n"
                "       %s --next-start [REPORT_DIR]  show the reports the crash left\n"
                "REPORT_DIR defaults to %s\n",
                argv[0], argv[0], DEMO_DEFAULT_DIR);
        return 2;
    }
    return demo_crash(argc >= 2 ? argv[1] : DEMO_DEFAULT_DIR);
}
