/* SPDX-License-Identifier: MIT */
/* libFuzzer over `faultline unwind STATE`'s input: the JSON reader and the state's checks
 * (FL_BUILD_FUZZERS=ON with clang). Seeds: corpus/fuzz_unwind_state/ (docs/examples). Run:
 * scripts/fuzz.sh BUILD fuzz_unwind_state (which passes -close_fd_mask=2: the messages).
 * Files a state names are opened relative to a scratch directory holding nothing but one small
 * memory file, "m.bin"; a state that names other paths only gets "cannot read" errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tools/tool.h"

static char g_dir[] = "/tmp/fuzz_unwind_state.XXXXXX";
static char g_state[sizeof g_dir + 16], g_mem[sizeof g_dir + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_dir);
    snprintf(g_state, sizeof g_state, "%s/s.json", g_dir);
    snprintf(g_mem, sizeof g_mem, "%s/m.bin", g_dir);
    FILE *f = fopen(g_mem, "wb");
    if (!f) abort();
    for (int i = 0; i < 4096; i++) fputc(i & 0xff, f);
    fclose(f);
    if (!freopen("/dev/null", "w", stdout)) abort(); /* (-close_fd_mask=2 silences messages) */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(g_state, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    char *argv[] = {"--format", "json", "--max-frames", "64", g_state, NULL};
    (void)fl_tool_cmd_unwind(5, argv);
    /* The JSON reader alone, straight from memory. */
    char err[256];
    fl_tool_json_free(fl_tool_json_parse((const char *)data, size, err, sizeof err));
    return 0;
}
