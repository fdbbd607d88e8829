/* SPDX-License-Identifier: MIT */
/* tools: libFuzzer target over JIT symbol maps (tools/perfmap.c, perf's /tmp/perf-PID.map format
 * that `show` reads for frames in no image). The input is parsed as a map; then the entries must
 * be sorted, each covering a non-empty range with a NUL-terminated name of at most 512 bytes
 * inside the names buffer, and lookups at every entry's edges and at addresses from the input
 * must return a covering entry's name (or none). perfmap.c is compiled into this file to see its
 * entries. Seeds: corpus/fuzz_perfmap/ (lines as node --perf-basic-prof writes them, and
 * malformed ones). Run: scripts/fuzz.sh BUILD fuzz_perfmap. */
#include "tools/perfmap.c"

#include "fuzz.h"

static void lookup(const fl_tool_perfmap_t *m, uint64_t pc) {
    uint64_t start = 0;
    const char *name = fl_tool_perfmap_find(m, pc, &start);
    if (!name) return;
    CHECK(name >= m->names);
    bool covered = false;
    for (size_t i = 0; i < m->n; i++)
        if (m->names + m->e[i].name == name && m->e[i].start == start && pc < m->e[i].end)
            covered = true;
    CHECK(covered && start <= pc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fl_tool_perfmap_t *m = fl_tool_perfmap_parse((const char *)data, size);
    if (!m) return 0;
    for (size_t i = 0; i < m->n; i++) {
        const entry_t *e = &m->e[i];
        CHECK(e->start < e->end && e->name < size);
        size_t len = strnlen(m->names + e->name, size - e->name + 1);
        CHECK(len > 0 && len <= MAP_NAME_MAX && e->name + len <= size);
        CHECK(i == 0 || m->e[i - 1].start <= e->start);
    }
    for (size_t i = 0; i < m->n && i < 64; i++) {
        lookup(m, m->e[i].start);
        lookup(m, m->e[i].end - 1);
        lookup(m, m->e[i].end);
    }
    for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
        uint64_t pc;
        memcpy(&pc, data + i, 8);
        lookup(m, pc);
    }
    fl_tool_perfmap_free(m);
    return 0;
}
