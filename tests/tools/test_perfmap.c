/* SPDX-License-Identifier: MIT */
/* JIT symbol maps (tools/perfmap.c): perf's line format as node and the JVM's agent write it,
 * malformed lines, the newest line for an address, the bounds, and what load refuses. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "tools/tool.h"

static const char *at(const fl_tool_perfmap_t *m, uint64_t pc, uint64_t *start) {
    uint64_t s = 0;
    const char *name = fl_tool_perfmap_find(m, pc, &s);
    if (start) *start = s;
    return name ? name : "(none)";
}

int main(void) {
    static const char text[] =
        "7fc36c026680 e0 JS:^mid /tmp/j/jit.js:3:13\n"
        "7fc36c0270c0 268 JS:*mid /tmp/j/jit.js:3:13\r\n" /* CRLF */
        "0x1000\t0x10\tnamed  with  spaces \n"             /* 0x, tabs, trailing blanks cut */
        "zz 10 not hex\n"
        "2000 10\n"                                          /* no name */
        "3000 0 empty range\n"
        "fffffffffffffff0 20 wraps\n"
        "12345678901234567 10 seventeen digits\n"
        "4000 100 old\n"
        "4000 100 new\n"                                     /* code moved: the newer wins */
        "4040 10 inner\n"
        "5000 10 last line without a newline";
    fl_tool_perfmap_t *m = fl_tool_perfmap_parse(text, sizeof text - 1);
    CHECK(m != NULL);
    uint64_t s;
    CHECK_STREQ(at(m, 0x7fc36c026680, &s), "JS:^mid /tmp/j/jit.js:3:13");
    CHECK_EQ_U64(s, 0x7fc36c026680);
    CHECK_STREQ(at(m, 0x7fc36c02675f, NULL), "JS:^mid /tmp/j/jit.js:3:13");
    CHECK_STREQ(at(m, 0x7fc36c026760, NULL), "(none)"); /* the range's end */
    CHECK_STREQ(at(m, 0x7fc36c027327, NULL), "JS:*mid /tmp/j/jit.js:3:13");
    CHECK_STREQ(at(m, 0x1008, NULL), "named  with  spaces");
    CHECK_STREQ(at(m, 0x2000, NULL), "(none)");
    CHECK_STREQ(at(m, 0x3000, NULL), "(none)");
    CHECK_STREQ(at(m, 0xfffffffffffffff8, NULL), "(none)");
    CHECK_STREQ(at(m, 0x4010, NULL), "new");
    CHECK_STREQ(at(m, 0x4048, NULL), "inner"); /* listed after both: newer */
    CHECK_STREQ(at(m, 0x4050, NULL), "new");
    CHECK_STREQ(at(m, 0x5004, NULL), "last line without a newline");
    CHECK_STREQ(at(m, 0xfff, NULL), "(none)");
    fl_tool_perfmap_free(m);

    /* A name ends at a NUL byte; one that starts with it is no name. */
    static const char nul[] = "6000 10 ab\0cd\n7000 10 \0x\n";
    m = fl_tool_perfmap_parse(nul, sizeof nul - 1);
    CHECK(m != NULL);
    CHECK_STREQ(at(m, 0x6001, NULL), "ab");
    CHECK_STREQ(at(m, 0x7001, NULL), "(none)");
    fl_tool_perfmap_free(m);

    /* Long names are cut at 512 bytes; an empty map finds nothing. */
    char big[1100];
    int n = snprintf(big, sizeof big, "10 10 ");
    memset(big + n, 'x', 1000);
    big[n + 1000] = 0;
    m = fl_tool_perfmap_parse(big, strlen(big));
    CHECK(m && strlen(at(m, 0x10, NULL)) == 512);
    fl_tool_perfmap_free(m);
    m = fl_tool_perfmap_parse("", 0);
    CHECK(m && strcmp(at(m, 0, NULL), "(none)") == 0);
    fl_tool_perfmap_free(m);

    /* load: a regular file, not a link or a FIFO (which must not block), written in the window. */
    char dir[] = "/tmp/test_perfmap.XXXXXX", path[64], link[64], fifo[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/perf-1.map", dir);
    snprintf(link, sizeof link, "%s/link.map", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.map", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("100 10 f\n", f);
    fclose(f);
    CHECK(symlink(path, link) == 0 && mkfifo(fifo, 0600) == 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    m = fl_tool_perfmap_load(path, (long)geteuid(), t - 60000000000u, t + 60000000000u);
    CHECK(m && strcmp(at(m, 0x105, NULL), "f") == 0);
    fl_tool_perfmap_free(m);
    CHECK(fl_tool_perfmap_load(path, -1, t + 60000000000u, 0) == NULL); /* written before it began */
    CHECK(fl_tool_perfmap_load(path, -1, 0, t - 60000000000u) == NULL); /* after it ended */
    CHECK(fl_tool_perfmap_load(link, -1, 0, 0) == NULL);
    CHECK(fl_tool_perfmap_load(fifo, -1, 0, 0) == NULL);
    CHECK(fl_tool_perfmap_load(dir, -1, 0, 0) == NULL);
    unlink(path), unlink(link), unlink(fifo), rmdir(dir);
    TEST_END();
}
