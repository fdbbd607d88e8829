/* SPDX-License-Identifier: MIT */
/* macho: symbol lookup (scan and index) and function starts against llvm-objdump --syms and
 * --function-starts, in files, fat slices, stripped files and a loaded layout. */
#include <stdlib.h>
#include <unistd.h>

#include "macho/macho.h"
#include "oracle.h"
#include "test.h"

static const char *g_objdump, *g_dir;
static unsigned g_unterminated; /* function-starts tables the oracle read from a patched copy */

typedef struct {
    int rc;
    char name[256];
    uint64_t addr;
} answer_t;

/* What llvm-objdump's listing says fl_macho_symbol_find must answer for x (the header's rule,
 * computed from the oracle's sections, symbols and function starts). */
typedef struct {
    const or_headers_t *h;
    const or_sym_t *sym;
    size_t nsym;
    const uint64_t *start;
    size_t nstart;
} oracle_t;

static answer_t expect(const oracle_t *o, uint64_t x) {
    answer_t a = {FL_ENOTFOUND, "", 0};
    const or_section_t *sect = NULL;
    for (unsigned i = 0; i < o->h->nsect && !sect; i++)
        if (x >= o->h->sect[i].addr && x - o->h->sect[i].addr < o->h->sect[i].size)
            sect = &o->h->sect[i];
    if (!sect) return a;
    char name[40];
    snprintf(name, sizeof name, "%s,%s", sect->segname, sect->sectname);
    const or_sym_t *best = NULL;
    for (size_t i = 0; i < o->nsym; i++) {
        const or_sym_t *s = &o->sym[i];
        if (strcmp(s->sect, name) || s->addr < sect->addr || s->addr > x) continue;
        if (!best || s->addr > best->addr) best = s; /* ties: the first listed */
    }
    if (!best) return a;
    for (size_t i = 0; i < o->nstart; i++)
        if (o->start[i] > best->addr && o->start[i] <= x) return a;
    a.rc = 0;
    snprintf(a.name, sizeof a.name, "%s", best->name);
    a.addr = best->addr;
    return a;
}

static answer_t scan(const fl_macho_image_t *img, uint64_t x) {
    answer_t a = {0, "", 0};
    a.rc = fl_macho_symbol_find(img, x, a.name, sizeof a.name, &a.addr);
    if (a.rc) a.addr = 0;
    return a;
}

typedef struct {
    uint64_t *v;
    size_t n, cap;
} starts_t;

static int collect_start(void *ctx, uint64_t a) {
    starts_t *c = ctx;
    if (c->n < c->cap) c->v[c->n] = a;
    c->n++;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    unsigned queries, named, unnamed_starts;
} stats_t;

/* All checks for one image: function starts, then every queried address through the scan (against
 * the oracle), the index (against the scan) and, when given, a loaded copy (against the file). */
/* llvm-objdump 14 decodes LC_FUNCTION_STARTS until a zero delta without stopping at datasize
 * (MachOObjectFile::ReadULEB128s), and zig 0.11 leaves the terminator out when the deltas fill
 * datasize exactly: objdump then goes on into the symbol table. So the oracle reads a copy with a
 * zero byte right after the table. Returns the path to use (path itself if nothing follows). */
static const char *starts_oracle_path(const char *path, const uint8_t *file, size_t size,
                                      const fl_macho_image_t *img, char tmp[64]) {
    uint64_t end = img->header + img->function_starts_off + img->function_starts_size;
    if (end >= size || file[end] == 0) return path;
    snprintf(tmp, 64, "/tmp/fl-macho-starts-XXXXXX");
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    CHECK(f != NULL);
    if (!f) return path;
    fwrite(file, 1, end, f);
    fputc(0, f);
    fwrite(file + end + 1, 1, size - end - 1, f);
    fclose(f);
    g_unterminated++;
    return tmp;
}

static void check_symbols(const char *label, const char *path, const char *arch,
                          const uint8_t *file, size_t size, const fl_macho_image_t *img,
                          const fl_macho_image_t *loaded, unsigned step, stats_t *st) {
    or_headers_t *h = calloc(1, sizeof *h);
    CHECK(or_headers(g_objdump, path, arch, h));
    oracle_t o = {h, NULL, 0, NULL, 0};
    uint64_t *start = NULL;
    o.nsym = or_syms(g_objdump, path, arch, (or_sym_t **)&o.sym);
    char tmp[64] = "";
    const char *spath = starts_oracle_path(path, file, size, img, tmp);
    o.nstart = or_function_starts(g_objdump, spath, arch, &start);
    if (*tmp) unlink(tmp);
    o.start = start;
    CHECK(o.nstart > 0);

    /* Function starts: the same list, in order. */
    starts_t ours = {calloc(o.nstart, sizeof(uint64_t)), 0, o.nstart};
    CHECK_EQ_U64(fl_macho_function_starts(img, collect_start, &ours), 0);
    CHECK_EQ_U64(ours.n, o.nstart);
    for (size_t i = 0; i < o.nstart && i < ours.n; i++) CHECK_EQ_U64(ours.v[i], o.start[i]);
    free(ours.v);

    /* Queries: each symbol's first, second and last byte (the last before the next function
     * start, symbol or section end), each function start and its neighbours, section edges. */
    size_t cap = o.nsym * 3 + o.nstart * 3 + h->nsect * 3 + 8, nq = 0;
    uint64_t *q = calloc(cap, sizeof *q);
    for (size_t i = 0; i < o.nsym; i += step) {
        uint64_t a = o.sym[i].addr, end = UINT64_MAX;
        for (unsigned k = 0; k < h->nsect; k++)
            if (a >= h->sect[k].addr && a - h->sect[k].addr < h->sect[k].size)
                end = h->sect[k].addr + h->sect[k].size;
        for (size_t k = 0; k < o.nstart; k++)
            if (o.start[k] > a && o.start[k] < end) end = o.start[k];
        for (size_t k = 0; k < o.nsym; k++)
            if (o.sym[k].addr > a && o.sym[k].addr < end) end = o.sym[k].addr;
        q[nq++] = a;
        q[nq++] = a + 1;
        if (end != UINT64_MAX) q[nq++] = end - 1;
    }
    for (size_t i = 0; i < o.nstart; i += step) {
        q[nq++] = o.start[i];
        q[nq++] = o.start[i] + 1;
        q[nq++] = o.start[i] - 1;
    }
    for (unsigned k = 0; k < h->nsect; k++) {
        q[nq++] = h->sect[k].addr;
        q[nq++] = h->sect[k].addr + h->sect[k].size - 1;
        q[nq++] = h->sect[k].addr + h->sect[k].size;
    }
    q[nq++] = img->text_vmaddr; /* the header: in no section */
    q[nq++] = 0;
    q[nq++] = UINT64_MAX;
    qsort(q, nq, sizeof *q, cmp_u64);

    fl_macho_symindex_t *ix = NULL;
    CHECK_EQ_U64(fl_macho_symindex_build(img, &ix), 0);
    size_t in_sect = 0;
    for (size_t i = 0; i < o.nsym; i++) {
        char name[40];
        for (unsigned k = 0; k < h->nsect; k++) {
            snprintf(name, sizeof name, "%s,%s", h->sect[k].segname, h->sect[k].sectname);
            if (!strcmp(name, o.sym[i].sect) && o.sym[i].addr >= h->sect[k].addr &&
                o.sym[i].addr - h->sect[k].addr < h->sect[k].size) {
                in_sect++;
                break;
            }
        }
    }
    if (ix) CHECK_EQ_U64(fl_macho_symindex_count(ix), in_sect);

    unsigned failures_before = (unsigned)fl_test_failures;
    for (size_t i = 0; i < nq; i++) {
        if (i && q[i] == q[i - 1]) continue;
        uint64_t x = q[i];
        answer_t want = expect(&o, x), got = scan(img, x);
        st->queries++;
        if (got.rc == 0) st->named++;
        for (size_t k = 0; k < o.nstart; k++)
            if (o.start[k] == x && got.rc == FL_ENOTFOUND) st->unnamed_starts++;
        if (got.rc != want.rc || got.addr != want.addr || strcmp(got.name, want.name)) {
            CHECK_EQ_U64(got.rc, want.rc);
            CHECK_EQ_U64(got.addr, want.addr);
            CHECK_STREQ(got.name, want.name);
            fprintf(stderr, "  %s: scan at 0x%llx\n", label, (unsigned long long)x);
        }
        if (ix) {
            const char *n = NULL;
            uint64_t a = 0;
            int rc = fl_macho_symindex_find(ix, x, &n, &a);
            if (rc != got.rc || (rc == 0 && (a != got.addr || !n || strcmp(n, got.name)))) {
                CHECK_EQ_U64(rc, got.rc);
                CHECK_EQ_U64(a, got.addr);
                CHECK_STREQ(rc ? "" : n, got.name);
                fprintf(stderr, "  %s: index at 0x%llx\n", label, (unsigned long long)x);
            }
        }
        if (loaded) {
            answer_t l = scan(loaded, x);
            if (l.rc != got.rc || l.addr != got.addr || strcmp(l.name, got.name)) {
                CHECK_EQ_U64(l.rc, got.rc);
                CHECK_STREQ(l.name, got.name);
                fprintf(stderr, "  %s: loaded at 0x%llx\n", label, (unsigned long long)x);
            }
        }
        if ((unsigned)fl_test_failures > failures_before + 30) break; /* enough to diagnose */
    }
    CHECK(st->queries > 0);
    fl_macho_symindex_free(ix);
    free(q);
    free(start);
    free((void *)o.sym);
    free(h);
}

static void check_file(const char *rel, unsigned step, bool loaded_too, stats_t *st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_slice_t sl[FL_MACHO_FAT_MAX];
    unsigned n = 0;
    CHECK_EQ_U64(fl_macho_slices(&r, size, sl, FL_MACHO_FAT_MAX, &n), 0);
    for (unsigned i = 0; i < n; i++) {
        fl_macho_image_t img, limg;
        CHECK_EQ_U64(fl_macho_image_init(&img, &r, sl[i].offset, sl[i].size, false), 0);
        const char *arch = n > 1 ? fl_macho_arch_name(sl[i].cputype, sl[i].cpusubtype) : NULL;
        uint8_t *mem = NULL;
        fl_reader_t lr;
        if (loaded_too) {
            uint64_t origin = 0, msize = 0, slide = 0x12344000;
            mem = or_layout_loaded(&img, file, slide, &origin, &msize);
            fl_reader_init_buffer(&lr, mem, msize, origin);
            CHECK_EQ_U64(fl_macho_image_init(&limg, &lr, origin, UINT64_MAX, true), 0);
        }
        stats_t s = {0, 0, 0};
        char label[300];
        snprintf(label, sizeof label, "%s%s%s", rel, arch ? ":" : "", arch ? arch : "");
        check_symbols(label, path, arch, file, size, &img, loaded_too ? &limg : NULL, step, &s);
        printf("%s: %u addresses, %u named, %u function starts unnamed\n", label, s.queries,
               s.named, s.unnamed_starts);
        st->queries += s.queries;
        st->named += s.named;
        st->unnamed_starts += s.unnamed_starts;
        free(mem);
    }
    free(file);
}

/* Cut names, and the exact answers for a few known functions of the fixture. */
static void check_known(const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, size, false), 0);
    or_sym_t *syms;
    size_t n = or_syms(g_objdump, path, NULL, &syms);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(syms[i].name, "_fix_large_switch")) at = syms[i].addr;
    CHECK(at != 0);
    char name[8];
    uint64_t a = 0;
    memset(name, 'x', sizeof name);
    CHECK_EQ_U64(fl_macho_symbol_find(&img, at + 8, name, sizeof name, &a), 0);
    CHECK_STREQ(name, "_fix_la"); /* cut to cap - 1 */
    CHECK_EQ_U64(a, at);
    char one[1] = {'x'};
    CHECK_EQ_U64(fl_macho_symbol_find(&img, at, one, 1, &a), 0);
    CHECK(one[0] == 0);
    free(syms);
    free(file);
}

/* Without LC_FUNCTION_STARTS to stop it, a stripped file's only symbol (__mh_execute_header,
 * n_sect 1 but at the header, before __text) must still not name the code. */
static void check_outside_section(const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, rel);
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, size, false), 0);
    img.function_starts_size = 0;
    fl_macho_symindex_t *ix = NULL;
    CHECK_EQ_U64(fl_macho_symindex_build(&img, &ix), 0);
    CHECK_EQ_U64(fl_macho_symindex_count(ix), 0);
    char name[64];
    const char *n;
    uint64_t a;
    uint64_t end = img.text_sect_vmaddr + img.text_sect_size;
    for (uint64_t x = img.text_sect_vmaddr; x < end; x += 64) {
        CHECK_EQ_U64(fl_macho_symbol_find(&img, x, name, sizeof name, &a), FL_ENOTFOUND);
        CHECK_EQ_U64(fl_macho_symindex_find(ix, x, &n, &a), FL_ENOTFOUND);
    }
    fl_macho_symindex_free(ix);
    free(file);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LLVM_OBJDUMP FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    g_objdump = argv[1];
    g_dir = argv[2];
    static const char *const arch[] = {"arm64", "x86_64"};
    for (unsigned a = 0; a < 2; a++) {
        char rel[256];
        stats_t st = {0, 0, 0};
        snprintf(rel, sizeof rel, "%s/exe", arch[a]);
        check_file(rel, 1, true, &st);
        CHECK(st.named > 200 && st.unnamed_starts == 0); /* every function has a name */
        snprintf(rel, sizeof rel, "%s/exe-omitfp", arch[a]);
        check_file(rel, 1, false, &st);
        snprintf(rel, sizeof rel, "%s/libfixture.dylib", arch[a]);
        check_file(rel, 1, true, &st);
        CHECK(st.unnamed_starts == 0);

        /* Stripped of locals: the 49 static functions have no name and must not take their
         * neighbour's. */
        stats_t sx = {0, 0, 0};
        snprintf(rel, sizeof rel, "%s/exe-stripx", arch[a]);
        check_file(rel, 1, false, &sx);
        CHECK(sx.unnamed_starts >= 49 && sx.named > 100);
        stats_t sl = {0, 0, 0};
        snprintf(rel, sizeof rel, "%s/libfixture-stripx.dylib", arch[a]);
        check_file(rel, 1, false, &sl);
        CHECK(sl.unnamed_starts >= 17 && sl.named > 30);
        /* Fully stripped: nothing has a name. */
        stats_t ss = {0, 0, 0};
        snprintf(rel, sizeof rel, "%s/exe-strip", arch[a]);
        check_file(rel, 1, false, &ss);
        CHECK(ss.named == 0 && ss.unnamed_starts > 100);

        stats_t sb = {0, 0, 0};
        snprintf(rel, sizeof rel, "%s/big", arch[a]);
        check_file(rel, 7, false, &sb);
        CHECK(sb.named > 2000);
        snprintf(rel, sizeof rel, "%s/exe", arch[a]);
        check_known(rel);
        snprintf(rel, sizeof rel, "%s/exe-strip", arch[a]);
        check_outside_section(rel);
    }
    stats_t sf = {0, 0, 0};
    check_file("fat/exe", 1, false, &sf);
    CHECK(sf.named > 400);
    printf("%u function-starts tables followed by a nonzero byte (oracle on a patched copy)\n",
           g_unterminated);
    TEST_END();
}
