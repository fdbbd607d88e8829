/* SPDX-License-Identifier: MIT */
/* tools: libFuzzer target over the CLI's views of a report: the input decoded as a report
 * (fl_report_decode), rendered in every format `faultline show` has (text, apple, tombstone,
 * json, sentry) to memory and converted to a minidump (its streams must lie inside it), its
 * triage signature computed for several depths, the signature rules run on its strings, and
 * `faultline triage` (text and --json) run on it as a file. Symbol files are
 * looked up only under the report's own image paths (no --symbols, no cache, no debug
 * directory), as `show` does. Aborts on a broken promise: a text view carrying a control
 * character other than newline and tab (the report's strings must go through fl_tool_clean), a
 * JSON view that is not JSON
 * (fl_tool_json_parse; duplicate keys aside, which hostile annotations and registers make), a
 * signature longer than its buffer or given for a report without a thread with frames.
 *
 * Seeds: corpus/fuzz_render/ (sample reports of tests/report/sample.c with and without a Mach
 * exception, a report of the integration crasher; scripts/fuzz-seeds.sh). Run:
 * scripts/fuzz.sh BUILD fuzz_render. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "tools/tool.h"
#include "fuzz.h"

static char g_dir[] = "/tmp/fuzz_render.XXXXXX";
static char g_path[sizeof g_dir + 64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_dir);
    snprintf(g_path, sizeof g_path, "%s/faultline-00112233445566778899aabbccddeeff.flr", g_dir);
    /* Nothing from the environment: no cache, no global debug directory. */
    setenv("FAULTLINE_CACHE_DIR", "off", 1);
    setenv("FAULTLINE_DEBUG_DIR", "", 1);
    if (!freopen("/dev/null", "w", stdout)) abort(); /* triage prints there */
    return 0;
}

static void check_text(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) { /* (apple's layout has tabs) */
            fprintf(stderr, "control character 0x%02x at %zu in:\n%.*s\n", c, i, (int)len, text);
            abort();
        }
    }
}

static void check_json(const char *text, size_t len) {
    char err[256];
    fl_tool_jv_t *v = fl_tool_json_parse(text, len, err, sizeof err);
    if (!v && !strstr(err, "duplicate key") && !strstr(err, "too many values")) {
        fprintf(stderr, "not JSON (%s):\n%.*s\n", err, (int)len, text);
        abort();
    }
    fl_tool_json_free(v);
}

static void render(const Faultline__Report *r, bool truncated, fl_tool_symbolizer_t *sym) {
    static const fl_tool_format_t formats[] = {FL_TOOL_FMT_TEXT, FL_TOOL_FMT_APPLE,
                                               FL_TOOL_FMT_TOMBSTONE, FL_TOOL_FMT_JSON,
                                               FL_TOOL_FMT_SENTRY};
    for (unsigned i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        char *text = NULL;
        size_t len = 0;
        FILE *o = open_memstream(&text, &len);
        CHECK(o != NULL);
        fl_tool_render(o, formats[i], r, truncated, sym);
        CHECK(fclose(o) == 0);
        if (formats[i] == FL_TOOL_FMT_JSON || formats[i] == FL_TOOL_FMT_SENTRY) check_json(text, len);
        else check_text(text, len);
        free(text);
    }
}

static void normalize(const char *s) {
    char buf[FL_TOOL_SIG_NAME_MAX + 1], small[4];
    fl_tool_sig_normalize(s, buf, sizeof buf);
    CHECK(memchr(buf, 0, sizeof buf) != NULL);
    (void)fl_tool_sig_is_machinery(buf);
    fl_tool_sig_normalize(s, small, sizeof small);
    CHECK(memchr(small, 0, sizeof small) != NULL);
}

static void signature(const Faultline__Report *r, fl_tool_symbolizer_t *sym) {
    int th = fl_tool_sig_thread(r);
    CHECK(th >= -1 && th < (int)r->n_threads);
    static const unsigned depths[] = {1, FL_TOOL_SIG_FRAMES, FL_TOOL_SIG_FRAMES_MAX};
    for (unsigned i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        static char buf[FL_TOOL_SIG_MAX];
        int n = fl_tool_signature(r, sym, depths[i], buf, sizeof buf);
        CHECK((n < 0) == (th < 0));
        if (n >= 0) CHECK((size_t)n < sizeof buf && strlen(buf) == (size_t)n);
    }
    /* The rules on whatever names the report carries. */
    for (size_t i = 0; i < r->n_threads; i++) {
        normalize(r->threads[i]->name);
        normalize(r->threads[i]->unwind_stop);
    }
    for (size_t i = 0; i < r->n_annotations; i++) {
        normalize(r->annotations[i]->key);
        normalize(r->annotations[i]->value);
    }
    for (size_t i = 0; i < r->n_images; i++) normalize(r->images[i]->path);
    for (size_t i = 0; i < r->n_notes; i++) normalize(r->notes[i]->text);
}

/* `faultline minidump`: a minidump whose directory and streams lie inside it. */
static void minidump(const Faultline__Report *r) {
    uint8_t *md = NULL;
    size_t len = 0;
    int e = fl_tool_minidump(r, &md, &len);
    CHECK(e == 0 || e == FL_ENOSYS || e == FL_ENOMEM);
    if (e) return;
    uint32_t magic, n, dir;
    CHECK(len >= 32);
    memcpy(&magic, md, 4);
    memcpy(&n, md + 8, 4);
    memcpy(&dir, md + 12, 4);
    CHECK(magic == 0x504d444du && (uint64_t)dir + 12ull * n <= len);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size, rva;
        memcpy(&size, md + dir + 12 * i + 4, 4);
        memcpy(&rva, md + dir + 12 * i + 8, 4);
        CHECK((uint64_t)rva + size <= len);
    }
    free(md);
}

static void triage(const uint8_t *data, size_t size) {
    FILE *f = fopen(g_path, "wb");
    CHECK(f != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);
    char *text[] = {"--no-progress", "--no-cache", g_path, NULL};
    char *json[] = {"--json", "--frames", "32", "--no-cache", g_dir, NULL};
    CHECK(fl_tool_cmd_triage(3, text) <= 1);
    CHECK(fl_tool_cmd_triage(5, json) <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Faultline__Report *r = NULL;
    bool truncated = false;
    if (fl_report_decode(data, size, &r, &truncated) == 0) {
        fl_tool_symopts_t o = {0};
        fl_tool_symstore_t *st = fl_tool_symstore_new(&o);
        fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, r) : NULL;
        CHECK(sym != NULL);
        render(r, truncated, sym);
        minidump(r);
        signature(r, sym);
        fl_tool_symbolizer_free(sym);
        fl_tool_symstore_free(st);
        fl_report_free(r);
    }
    triage(data, size);
    return 0;
}
