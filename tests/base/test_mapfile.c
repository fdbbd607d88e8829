/* SPDX-License-Identifier: MIT */
/* base: fl_file_map survives its file shrinking (zeros and a line on stderr, not SIGBUS); other
 * SIGBUS still kill. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "test.h"

#define PAGES 16

static char g_dir[] = "/tmp/fl-mapfile-XXXXXX";

/* A file of PAGES pages of 'x' at name in g_dir; its descriptor (read-write). */
static int make_file(const char *name, char *path, size_t cap, size_t page) {
    snprintf(path, cap, "%s/%s", g_dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    char *buf = malloc(page);
    memset(buf, 'x', page);
    for (unsigned i = 0; fd >= 0 && i < PAGES; i++) CHECK(write(fd, buf, page) == (ssize_t)page);
    free(buf);
    return fd;
}

/* What the code under test wrote on stderr, captured in a file. */
static int g_err_fd = -1, g_saved_err = -1;
static void capture_stderr(void) {
    char p[64];
    snprintf(p, sizeof p, "%s/stderr", g_dir);
    g_err_fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    g_saved_err = dup(2);
    dup2(g_err_fd, 2);
}
static void captured(char *out, size_t cap) {
    dup2(g_saved_err, 2);
    ssize_t n = pread(g_err_fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = 0;
    close(g_err_fd);
    close(g_saved_err);
}

int main(void) {
    /* As the CLI does: SIGBUS is ours to take (in the sanitizer build ASan's runtime holds it). */
    fl_file_map_own_sigbus();
    CHECK(mkdtemp(g_dir) != NULL);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = PAGES * page;
    char path[128], err[2048];

    /* Ours: the file shrinks to a page and a half while mapped. */
    int fd = make_file("bin\x1b[31m", path, sizeof path, page);
    const volatile char *m;
    CHECK(fl_file_map(fd, size, path, (const void **)&m) == 0);
    CHECK(m[0] == 'x' && m[size - 1] == 'x');
    CHECK(ftruncate(fd, (off_t)(page + page / 2)) == 0);
    capture_stderr();
    char first = m[0], in_page = m[page + page / 2 + 1], past = m[5 * page], last = m[size - 1];
    captured(err, sizeof err);
    CHECK(first == 'x' && in_page == 0 && past == 0 && last == 0);
    /* One line, naming the file with its escape made harmless. */
    CHECK(strstr(err, "bin?[31m shrank while it was being read") != NULL);
    CHECK(strchr(err, '\x1b') == NULL);
    CHECK(strchr(err, '\n') == err + strlen(err) - 1);
    fl_file_unmap((const void *)m, size);
    close(fd);

    /* Someone else's mapping of a file (as libdw makes): BUS_ADRERR is taken too, unnamed. */
    fd = make_file("other", path, sizeof path, page);
    const volatile char *o = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(o != MAP_FAILED);
    CHECK(ftruncate(fd, 0) == 0);
    capture_stderr();
    char z = o[3 * page];
    captured(err, sizeof err);
    CHECK(z == 0 && strstr(err, "a mapped file shrank") != NULL);
    munmap((void *)o, size);
    close(fd);

    /* Any other SIGBUS still kills with SIGBUS. */
    pid_t pid = fork();
    if (pid == 0) {
        raise(SIGBUS);
        _exit(0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS);

    /* Errors: size 0, a descriptor that cannot be mapped. */
    const void *x;
    CHECK(fl_file_map(0, 0, "zero", &x) == FL_EINVAL && x == NULL);
    CHECK(fl_file_map(-1, page, "bad", &x) == FL_EIO);

    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0);
    TEST_END();
}
