/* SPDX-License-Identifier: MIT */
/* tools: libFuzzer target over the symbol index (tools/symindex.c) and its on-disk cache, in two
 * modes picked by the input's first byte:
 *  - bit 7 clear: the rest is a cache entry, loaded the way fl_tool_symindex_get loads one
 *    (cache_load: open, map, check the layout, the identity and the check hash), then looked up
 *    at every range's edges, every line row and addresses from the input. Bit 0 writes the right
 *    check hash into the header first, so that mutations get past it (an entry whose hash is
 *    wrong is only ever rejected, which bit 0 clear still covers); bit 1 asks for another
 *    identity, quality or fingerprint than the header's (bits 2-3 say which), which must be
 *    rejected.
 *  - bit 7 set: the rest is a binary (ELF, thin or fat Mach-O) opened as the CLI opens one
 *    (fl_tool_bin_open) and indexed by fl_tool_symindex_get with a cache directory: built, stored,
 *    then loaded back from the cache, and both must answer every lookup alike. The index is
 *    built without DWARF lines (lines_none.c is compiled in: libdw is not ours to fuzz here);
 *    it holds link names, which only the views demangle (demangle_darwin.c stands in for
 *    libstdc++'s C++ demangler all the same).
 * symindex.c is compiled into this file to reach its static loader and its hash. Aborts on a
 * broken promise: an entry loaded against the wrong identity, a lookup that returns a name or
 * file outside the string table, or not NUL-terminated inside it, a cached index that answers
 * otherwise than the one built.
 *
 * Seeds: corpus/fuzz_symindex/ (entries that `faultline symbolicate` cached for small ELF files,
 * behind 0x01; small ELF and Mach-O files behind 0x80; scripts/fuzz-seeds.sh). Run:
 * scripts/fuzz.sh BUILD fuzz_symindex. */
#include "tools/symindex.c"

#include "fuzz.h"

static char g_dir[] = "/tmp/fuzz_symindex.XXXXXX";
static char g_path[sizeof g_dir + 16], g_bin[sizeof g_dir + 16], g_cache[sizeof g_dir + 16];

/* Each binary starts with an empty cache, so that what it finds there is its own entry. */
static void cleanup_cache(void) { fuzz_rmtree(g_cache); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_dir);
    snprintf(g_path, sizeof g_path, "%s/e.fsi", g_dir);
    snprintf(g_bin, sizeof g_bin, "%s/bin", g_dir);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_dir);
    return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(n == 0 || fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

/* A string the index returned: inside its string table and terminated there. */
static void check_str(const fl_tool_symindex_t *ix, const char *s) {
    if (!s) return;
    CHECK(s >= ix->strings && s < ix->strings + ix->h->strbytes);
    CHECK(memchr(s, 0, (size_t)(ix->strings + ix->h->strbytes - s)) != NULL);
}

static void lookup(const fl_tool_symindex_t *ix, uint64_t addr) {
    for (int lines = 0; lines < 2; lines++) {
        fl_tool_loc_t loc;
        bool found = fl_tool_symindex_lookup(ix, addr, lines, &loc);
        CHECK(found == (loc.name != NULL));
        check_str(ix, loc.name);
        check_str(ix, loc.file);
        if (!lines) CHECK(loc.file == NULL);
    }
}

/* The same answers from two indexes of one image. */
static void same(const fl_tool_symindex_t *a, const fl_tool_symindex_t *b, uint64_t addr) {
    for (int lines = 0; lines < 2; lines++) {
        fl_tool_loc_t x, y;
        CHECK(fl_tool_symindex_lookup(a, addr, lines, &x) == fl_tool_symindex_lookup(b, addr, lines, &y));
        CHECK((x.name == NULL) == (y.name == NULL) && (!x.name || strcmp(x.name, y.name) == 0));
        CHECK(x.sym_addr == y.sym_addr && x.line == y.line);
        CHECK((x.file == NULL) == (y.file == NULL) && (!x.file || strcmp(x.file, y.file) == 0));
    }
}

static void binary(const uint8_t *data, size_t n) {
    write_file(g_bin, data, n);
    cleanup_cache();
    fl_tool_bin_t *b = NULL;
    int e = fl_tool_bin_open(g_bin, &b);
    CHECK((e == 0) == (b != NULL));
    if (!b) return;
    for (unsigned i = 0; i < fl_tool_bin_count(b) && i < 4; i++) {
        CHECK(fl_tool_bin_arch(b, i) != NULL);
        (void)fl_tool_bin_error(b, i);
        uint8_t id[FL_BUILD_ID_MAX];
        unsigned id_len = 0;
        if (fl_tool_bin_id(b, i, id, sizeof id, &id_len) == 0) CHECK(id_len <= sizeof id);
        (void)fl_tool_bin_quality(b, i);
        fl_tool_symindex_t *built = NULL, *again = NULL;
        e = fl_tool_symindex_get(b, i, g_bin, g_cache, &built);
        CHECK((e == 0) == (built != NULL));
        if (!built) continue;
        for (size_t k = 0; k < built->h->nranges && k < 64; k++) {
            check_str(built, built->strings + built->ranges[k].name);
            lookup(built, built->ranges[k].start);
        }
        /* The second time it comes from the cache, when the image has an identity. */
        CHECK(fl_tool_symindex_get(b, i, g_bin, g_cache, &again) == 0);
        for (size_t k = 0; k < built->h->nranges && k < 64; k++) {
            same(built, again, built->ranges[k].start);
            same(built, again, built->ranges[k].end - 1);
            same(built, again, built->ranges[k].end);
        }
        same(built, again, 0);
        fl_tool_symindex_free(again);
        fl_tool_symindex_free(built);
    }
    fl_tool_bin_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = in[0];
    if (flags & 0x80) {
        binary(in + 1, size - 1);
        return 0;
    }
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    CHECK(buf != NULL);
    if (n) memcpy(buf, in + 1, n);
    /* What the caller asks for: by default the header's own identity, so that a valid entry
     * loads. */
    uint8_t id[FL_BUILD_ID_MAX] = {0};
    unsigned id_len = 0;
    int quality = 0;
    uint32_t fp = 0;
    if (n >= sizeof(ix_hdr_t)) {
        ix_hdr_t h;
        memcpy(&h, buf, sizeof h);
        id_len = h.id_len <= FL_BUILD_ID_MAX ? h.id_len : FL_BUILD_ID_MAX;
        memcpy(id, h.id, id_len);
        quality = (int)h.quality;
        fp = (uint32_t)h.fingerprint;
        if (flags & 1) {
            fl_tool_symindex_t tmp = {.mem = buf, .size = n};
            h.check = ix_check(&tmp);
            memcpy(buf, &h, sizeof h);
        }
        if (flags & 2) {
            switch (flags >> 2 & 3) {
            case 0: id[0] ^= 1; if (!id_len) id_len = 1; break;
            case 1: quality ^= 1; break;
            case 2: fp ^= 1; break;
            default: id_len = id_len ? id_len - 1 : 1; break;
            }
        }
    }
    write_file(g_path, buf, n);
    free(buf);

    fl_tool_symindex_t *ix = cache_load(g_path, id, id_len, quality, fp);
    if (!ix) return 0;
    CHECK(!(flags & 2)); /* another identity never loads */
    CHECK(ix->from_cache && ix->h->quality <= FL_TOOL_Q_LINES);
    CHECK(fl_tool_symindex_count(ix) == ix->h->nranges && fl_tool_symindex_lines(ix) == ix->h->nlines);
    for (size_t i = 0; i < ix->h->nranges && i < 64; i++) {
        const ix_range_t *r = &ix->ranges[i];
        lookup(ix, r->start);
        lookup(ix, r->end - 1);
        lookup(ix, r->end);
    }
    for (size_t i = 0; i < ix->h->nlines && i < 64; i++) lookup(ix, ix->lines[i].addr);
    for (size_t off = 1; off + 8 <= size && off < 512; off += 61) {
        uint64_t a;
        memcpy(&a, in + off, 8);
        lookup(ix, a);
    }
    lookup(ix, 0);
    lookup(ix, UINT64_MAX);
    fl_tool_symindex_free(ix);
    return 0;
}
