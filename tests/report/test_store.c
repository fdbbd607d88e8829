/* SPDX-License-Identifier: MIT */
/* fl_list_reports: which files count as reports, their order, absolute paths. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample.h"
#include "test.h"

int main(void) {
    char dir[4096], path[4300];
    if (!sample_tmpdir(dir, sizeof dir)) {
        perror("mkdtemp");
        return 1;
    }
    char **paths = (char **)1;
    size_t n = 99;
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK_EQ_U64(fl_list_reports(path, &paths, &n), 0);
    CHECK(paths == NULL && n == 0);
    CHECK_EQ_U64(fl_list_reports(dir, &paths, &n), 0);
    CHECK(n == 0);
    fl_free_report_list(paths, n);

    /* Three reports whose capture times run opposite to their names (id seeds). */
    sample_t s[3];
    for (unsigned i = 0; i < 3; i++) {
        sample_opts_t o = {.id_seed = (uint8_t)i,
                           .time_unix_ns = 1700000000000000000ull - i * 1000};
        CHECK_EQ_U64(sample_write(dir, &o, &s[i]), 0);
    }
    /* A report cut before its header sorts by modification time: the newest of all. */
    snprintf(path, sizeof path, "%s/faultline-00000000000000000000000000000000.flr", dir);
    CHECK(sample_write_file(path, "\x0a\x09" "faultline\x10\x01", 13) == 0);
    /* Not reports: a writer's temporary file, other names, a directory, a symlink. */
    snprintf(path, sizeof path, "%s/.tmp-faultline-11111111111111111111111111111111.flr", dir);
    CHECK(sample_write_file(path, "x", 1) == 0);
    snprintf(path, sizeof path, "%s/faultline-notes.txt", dir);
    CHECK(sample_write_file(path, "x", 1) == 0);
    snprintf(path, sizeof path, "%s/faultline-.flr", dir);
    CHECK(sample_write_file(path, "x", 1) == 0);
    snprintf(path, sizeof path, "%s/faultline-dir.flr", dir);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/faultline-link.flr", dir);
    CHECK(symlink(s[0].path, path) == 0);

    /* Listed through a relative path: the results are absolute all the same. */
    char *slash = strrchr(dir, '/'), cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    *slash = '\0';
    CHECK(chdir(dir) == 0);
    *slash = '/';
    CHECK_EQ_U64(fl_list_reports(slash + 1, &paths, &n), 0);
    CHECK(chdir(cwd) == 0);
    CHECK_EQ_U64(n, 4);
    if (n == 4) {
        char *real = realpath(s[2].path, NULL);
        CHECK_STREQ(paths[0], real);
        free(real);
        real = realpath(s[1].path, NULL);
        CHECK_STREQ(paths[1], real);
        free(real);
        real = realpath(s[0].path, NULL);
        CHECK_STREQ(paths[2], real);
        free(real);
        CHECK(strstr(paths[3], "/faultline-00000000000000000000000000000000.flr") != NULL);
        for (size_t i = 0; i < n; i++)
            CHECK(paths[i][0] == '/');
    }
    fl_free_report_list(paths, n);
    fl_free_report_list(NULL, 0);

    /* Not a directory. */
    CHECK_EQ_U64(fl_list_reports(s[0].path, &paths, &n), FL_EIO);
    sample_rmtree(dir);
    TEST_END();
}
