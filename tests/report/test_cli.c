/* SPDX-License-Identifier: MIT */
/* The faultline CLI on sample reports (argv: faultline, python3, check_cli_json.py). Frames point
 * into this very executable, recorded at made-up load addresses, so symbolication is checked
 * against functions whose names and offsets are known. */
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample.h"
#include "test.h"

static const char *g_cli;
static char g_dir[4096];

volatile int g_sink;
__attribute__((noinline)) void fl_cli_target_a(void) {
    for (int i = 0; i < 4; i++)
        g_sink += i;
}
__attribute__((noinline)) void fl_cli_target_b(void) {
    for (int i = 0; i < 5; i++)
        g_sink ^= i;
}
__attribute__((noinline)) void fl_cli_target_c(void) {
    for (int i = 0; i < 6; i++)
        g_sink -= i;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *bias) {
    (void)size;
    *(uint64_t *)bias = info->dlpi_addr;
    return 1; /* the executable comes first */
}

/* Runs the CLI with up to 6 arguments; returns its exit status, output in *out / *err. */
static int cli(char **out, char **err, const char *a0, const char *a1, const char *a2,
               const char *a3, const char *a4, const char *a5) {
    char *argv[] = {(char *)g_cli, (char *)a0, (char *)a1, (char *)a2, (char *)a3, (char *)a4,
                    (char *)a5, NULL};
    return sample_run(argv, NULL, out, err);
}

/* A copy of the line of frame k in the block of the given thread header (static buffer). */
static const char *frame_line(const char *out, const char *thread_header, unsigned k) {
    static char line[512];
    char prefix[16];
    snprintf(prefix, sizeof prefix, "\n%-4u", k);
    const char *p = out ? strstr(out, thread_header) : NULL;
    p = p ? strstr(p, prefix) : NULL;
    if (!p)
        return "";
    p++;
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
    return line;
}

static bool has(const char *hay, const char *needle) { return hay && strstr(hay, needle); }

static void test_show_text(const char *report, const char *symdir_a, const char *symdir_b) {
    char *out, *err;
    int rc = cli(&out, &err, "show", report, NULL, NULL, NULL, NULL);
    CHECK_EQ_U64(rc, 0);
    static const char *const blocks[] = {
        "Process:             /opt/sample/bin/sample-app [4242]\n",
        "Identifier:          sample-app\n",
        "Version:             1.2.3 (45)\n",
        "Date/Time:           2024-05-01T12:00:00.123Z\n",
        ("OS Version:          Linux 6.1.0-18-amd64 "
         "(#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01))\n"), /* (one line, cut in two) */
        "Report Id:           00112233445566778899aabbccddeeff\n",
        "Report Kind:         crash\n",
        "Exception Type:      SIGSEGV (SEGV_MAPERR)\n",
        "Exception Address:   0x0000000000000010\n",
        "Crashed Thread:      0 (tid 1001) main\n",
        "Threads:             3 listed of 5\n",
        "Annotations:\n  scenario: sample\n",
        "\nThread 0 (tid 1001) main: [Crashed]\n",
        "\nThread 1 (tid 1002) worker-1:\n",
        "    (more frames not captured)\n",
        "\nThread 0 crashed with ",
        "\nBinary Images:\n",
        "\nNotes:\n  - image list truncated at 20 images\n",
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(blocks); i++)
        if (!has(out, blocks[i])) {
            CHECK(!"block missing from show");
            fprintf(stderr, "missing: %s", blocks[i]);
        }
    char reg[32];
    snprintf(reg, sizeof reg, "%8s: 0x", fl_regs_name(0));
    CHECK(has(out, reg));
    CHECK(!has(out, "truncated;"));
    CHECK(!has(out, "\x01")); /* control characters from the report are not passed through */

    const char *t0 = "Thread 0 (tid 1001)";
    CHECK(has(frame_line(out, t0, 0), " fl_cli_target_a + 4"));
    CHECK(has(frame_line(out, t0, 1), " fl_cli_target_b + 6"));
    /* A return address at a function's first byte belongs to the call before it. */
    CHECK(!has(frame_line(out, t0, 2), "fl_cli_target_c"));
    CHECK(has(frame_line(out, t0, 3), " ???"));   /* build-id differs from the file's */
    CHECK(has(frame_line(out, t0, 4), " ???"));   /* not found without --symbols */
    CHECK(has(frame_line(out, t0, 5), " ???"));
    CHECK(has(frame_line(out, t0, 6), "6   ???")); /* in no image */
    CHECK(has(frame_line(out, t0, 6), "0x0000000000000010 ???"));
    free(out);
    free(err);

    /* --symbols: DIR/<basename> in one directory, DIR/.build-id/xx/rest.debug in the other. */
    CHECK_EQ_U64(cli(&out, &err, "show", "--symbols", symdir_a, "--symbols", symdir_b, report), 0);
    CHECK(has(frame_line(out, t0, 3), " ???"));
    CHECK(has(frame_line(out, t0, 4), " fl_cli_target_b + 6"));
    CHECK(has(frame_line(out, t0, 5), " fl_cli_target_b + 6"));
    free(out);
    free(err);
    /* By name only: the copy named "renamed" is not found. */
    CHECK_EQ_U64(cli(&out, &err, "show", "--symbols", symdir_a, report, NULL, NULL), 0);
    CHECK(has(frame_line(out, t0, 4), " fl_cli_target_b + 6"));
    CHECK(has(frame_line(out, t0, 5), " ???"));
    free(out);
    free(err);
    /* By build-id: both are (they share this executable's build-id). */
    CHECK_EQ_U64(cli(&out, &err, "show", "--symbols", symdir_b, report, NULL, NULL), 0);
    CHECK(has(frame_line(out, t0, 3), " ???"));
    CHECK(has(frame_line(out, t0, 4), " fl_cli_target_b + 6"));
    CHECK(has(frame_line(out, t0, 5), " fl_cli_target_b + 6"));
    free(out);
    free(err);
}

static void test_show_json(const char *report, const char *symdir_a, const char *symdir_b,
                           const char *python, const char *checker, const char *build_id,
                           const char *expect) {
    char *out, *err, arg[4200];
    snprintf(arg, sizeof arg, "--symbols=%s", symdir_b);
    CHECK_EQ_U64(cli(&out, &err, "show", "--json", "--symbols", symdir_a, arg, report), 0);
    char json[4200];
    snprintf(json, sizeof json, "%s/out.json", g_dir);
    CHECK(out && sample_write_file(json, out, strlen(out)) == 0);
    free(out);
    free(err);
    char *argv[] = {(char *)python, (char *)checker, json, (char *)build_id, (char *)expect, NULL};
    int rc = sample_run(argv, NULL, &out, &err);
    CHECK_EQ_U64(rc, 0);
    if (rc)
        fprintf(stderr, "check_cli_json.py (%s):\n%s%s", expect, out, err);
    free(out);
    free(err);
}

static void test_errors(const sample_t *s, const uint8_t *data, size_t len) {
    char *out, *err, path[4200];
    snprintf(path, sizeof path, "%s/notes.txt", g_dir);
    CHECK(sample_write_file(path, "hello, world! not a report\n", 27) == 0);
    CHECK_EQ_U64(cli(&out, &err, "show", path, NULL, NULL, NULL, NULL), 1);
    CHECK(has(err, "not a faultline report") && out && !out[0]);
    free(out);
    free(err);
    snprintf(path, sizeof path, "%s/missing.flr", g_dir);
    CHECK_EQ_U64(cli(&out, &err, "show", "--json", path, NULL, NULL, NULL), 1);
    CHECK(has(err, "cannot read") && has(err, "No such file or directory"));
    free(out);
    free(err);

    uint8_t *v3 = malloc(len);
    memcpy(v3, data, len);
    v3[12] = FL_REPORT_FORMAT_VERSION + 1;
    snprintf(path, sizeof path, "%s/v3.flr", g_dir);
    CHECK(sample_write_file(path, v3, len) == 0);
    free(v3);
    CHECK_EQ_U64(cli(&out, &err, "show", path, NULL, NULL, NULL, NULL), 1);
    CHECK(has(err, "newer"));
    free(out);
    free(err);

    static const char *const bad[][3] = {
        {NULL, NULL, NULL}, {"show", NULL, NULL}, {"frob", NULL, NULL},
        {"show", "--bogus", "x"}, {"show", "a", "b"}, {"show", "x", "--symbols"},
        {"list", NULL, NULL}};
    for (size_t i = 0; i < FL_ARRAY_LEN(bad); i++) {
        CHECK_EQ_U64(cli(&out, &err, bad[i][0], bad[i][1], bad[i][2], NULL, NULL, NULL), 2);
        CHECK(has(err, "usage: faultline show"));
        free(out);
        free(err);
    }
    CHECK_EQ_U64(cli(&out, &err, "--help", NULL, NULL, NULL, NULL, NULL), 0);
    CHECK(has(out, "usage: faultline show"));
    free(out);
    free(err);

    /* Cut inside the third thread: two threads and no image survive. */
    uint64_t cut = 0;
    unsigned threads = 0;
    for (unsigned i = 0; i < s->item_count && threads < 2; i++)
        if (s->item[i].field == 5 && ++threads == 2)
            cut = s->item[i].end + 7;
    snprintf(path, sizeof path, "%s/cut.flr", g_dir);
    CHECK(sample_write_file(path, data, cut) == 0);
    CHECK_EQ_U64(cli(&out, &err, "show", path, NULL, NULL, NULL, NULL), 0);
    CHECK(has(out, "Report was truncated; 2 threads, 0 images decoded"));
    CHECK(has(out, "Exception Type:      SIGSEGV (SEGV_MAPERR)"));
    free(out);
    free(err);
}

/* A thread that was not captured shows its state, in the text and in the JSON. */
static void test_not_captured(void) {
    char dir[4200], *out, *err;
    snprintf(dir, sizeof dir, "%s/blocked", g_dir);
    CHECK(mkdir(dir, 0700) == 0);
    sample_t s;
    sample_opts_t o = {.last_state = 1 /* STATE_BLOCKED */};
    CHECK_EQ_U64(sample_write(dir, &o, &s), 0);
    CHECK_EQ_U64(cli(&out, &err, "show", s.path, NULL, NULL, NULL, NULL), 0);
    CHECK(has(out, "\nThread 2 (tid 1003) io: [not captured: blocked]\n\nThread 0 crashed"));
    free(out);
    free(err);
    CHECK_EQ_U64(cli(&out, &err, "show", "--json", s.path, NULL, NULL, NULL), 0);
    const char *t2 = out ? strstr(out, "\"tid\": 1003") : NULL;
    CHECK(t2 && has(t2, "\"state\": \"blocked\",\n      \"registers\": {},\n      \"frames\": [],"));
    CHECK(has(out, "\"threads_total\": 5,"));
    free(out);
    free(err);
}

static void test_list(void) {
    char dir[4200], *out, *err;
    snprintf(dir, sizeof dir, "%s/list", g_dir);
    CHECK(mkdir(dir, 0700) == 0);
    sample_t late, early;
    sample_opts_t o = {.id_seed = 1, .time_unix_ns = 1714564800123456789ull};
    CHECK_EQ_U64(sample_write(dir, &o, &late), 0);
    o = (sample_opts_t){.id_seed = 2, .time_unix_ns = 1714564700000000000ull};
    CHECK_EQ_U64(sample_write(dir, &o, &early), 0);
    CHECK_EQ_U64(cli(&out, &err, "list", dir, NULL, NULL, NULL, NULL), 0);
    const char *a = out ? strstr(out, strrchr(early.path, '/')) : NULL;
    const char *b = out ? strstr(out, strrchr(late.path, '/')) : NULL;
    CHECK(a && b && a < b); /* oldest first */
    CHECK(has(out, "  2024-05-01T11:58:20.000Z  SIGSEGV (SEGV_MAPERR)  "
                   "/opt/sample/bin/sample-app [4242]\n"));
    free(out);
    free(err);
    /* A directory that does not exist is an error, as for triage (a typo is not "no reports"). */
    snprintf(dir, sizeof dir, "%s/absent", g_dir);
    CHECK_EQ_U64(cli(&out, &err, "list", dir, NULL, NULL, NULL, NULL), 1);
    CHECK(out && !out[0] && err && strstr(err, "cannot list") && strstr(err, "No such file"));
    free(out);
    free(err);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s FAULTLINE PYTHON3 CHECK_CLI_JSON_PY\n", argv[0]);
        return 2;
    }
    g_cli = argv[1];
    if (!sample_tmpdir(g_dir, sizeof g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n > 0 ? n : 0] = '\0';
    fl_elf_file_t *f;
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned id_len = 0;
    CHECK(fl_elf_file_open(self, &f) == 0 && fl_elf_file_build_id(f, id, sizeof id, &id_len) == 0);
    fl_elf_file_close(f);
    CHECK(id_len >= 8);
    char hex[2 * FL_BUILD_ID_MAX + 1];
    for (unsigned i = 0; i < id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    uint64_t bias = 0;
    dl_iterate_phdr(first_object, &bias);

    /* Image 0: this executable. 1: the same file under a wrong build-id. 2: a copy found only
     * in a --symbols directory by name, 3: only by build-id. Each at a made-up load address. */
    const char *base = strrchr(self, '/') + 1;
    fl_image_t img[4];
    for (unsigned i = 0; i < 4; i++) {
        memset(&img[i], 0, sizeof img[i]);
        img[i].slide = 0x555500000000ull + i * 0x100000000ull;
        img[i].start = img[i].slide;
        img[i].end = img[i].slide + 0x40000000ull;
        img[i].text_start = img[i].start;
        img[i].text_end = img[i].end;
        img[i].build_id_kind = FL_BUILD_ID_GNU;
        img[i].build_id_len = (uint8_t)id_len;
        memcpy(img[i].build_id, id, id_len);
    }
    img[0].is_main = true;
    fl_strlcpy(img[0].path, self, sizeof img[0].path);
    fl_strlcpy(img[1].path, self, sizeof img[1].path);
    img[1].build_id[0] ^= 0xff;
    snprintf(img[2].path, sizeof img[2].path, "/nonexistent/faultline-test/%s", base);
    snprintf(img[3].path, sizeof img[3].path, "/nonexistent/faultline-test/renamed");
    uint64_t va = (uint64_t)(uintptr_t)fl_cli_target_a - bias;
    uint64_t vb = (uint64_t)(uintptr_t)fl_cli_target_b - bias;
    uint64_t vc = (uint64_t)(uintptr_t)fl_cli_target_c - bias;
    fl_frame_t frames[] = {
        {img[0].slide + va + 4, 0x7ffd00001000, FL_FRAME_CONTEXT, 0},
        {img[0].slide + vb + 6, 0x7ffd00001040, FL_FRAME_CFI, 0},
        {img[0].slide + vc, 0x7ffd00001080, FL_FRAME_FP, 0},
        {img[1].slide + va + 4, 0x7ffd000010c0, FL_FRAME_CFI, 0},
        {img[2].slide + vb + 6, 0x7ffd00001100, FL_FRAME_CFI, 0},
        {img[3].slide + vb + 6, 0x7ffd00001140, FL_FRAME_CFI, 0},
        {0x10, 0x7ffd00001180, FL_FRAME_SCAN, 0},
    };
    sample_opts_t o = {.images = img, .image_count = 4, .frames0 = frames,
                       .frame_count0 = FL_ARRAY_LEN(frames)};
    sample_t s;
    CHECK_EQ_U64(sample_write(g_dir, &o, &s), 0);

    char syma[4200], symb[4200], path[4300];
    snprintf(syma, sizeof syma, "%s/syms-a", g_dir);
    snprintf(symb, sizeof symb, "%s/syms-b", g_dir);
    CHECK(mkdir(syma, 0700) == 0 && mkdir(symb, 0700) == 0);
    snprintf(path, sizeof path, "%s/%s", syma, base);
    CHECK(symlink(self, path) == 0);
    snprintf(path, sizeof path, "%s/.build-id", symb);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/.build-id/%.2s", symb, hex);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", symb, hex, hex + 2);
    CHECK(symlink(self, path) == 0);

    size_t len = 0;
    uint8_t *data = (uint8_t *)sample_read_file(s.path, &len);
    CHECK(data && len == s.size);
    test_show_text(s.path, syma, symb);
    test_show_json(s.path, syma, symb, argv[2], argv[3], hex, "full");
    if (data) {
        test_errors(&s, data, len);
        char cut[4200];
        snprintf(cut, sizeof cut, "%s/cut.flr", g_dir);
        test_show_json(cut, syma, symb, argv[2], argv[3], hex, "truncated");
    }
    test_not_captured();
    test_list();
    free(data);
    sample_rmtree(g_dir);
    TEST_END();
}
