/* SPDX-License-Identifier: MIT */
/* macho: real fixtures cut and mutated, and synthetic headers: every malformed input gives an
 * error code (never a crash), and the index agrees with the scan whenever it builds. */
#include <stdlib.h>

#include "macho/macho.h"
#include "oracle.h"
#include "test.h"

/* Little-endian and big-endian fields of a buffer under test. */
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static void put32be(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static uint32_t get32be(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Offsets of the fixture's load commands (found here, independently of the parser). */
typedef struct {
    uint32_t off[256], cmd[256];
    unsigned n;
} cmds_t;

static void find_cmds(const uint8_t *f, cmds_t *c) {
    uint32_t ncmds = get32(f + 16), off = 32;
    c->n = 0;
    for (uint32_t i = 0; i < ncmds && c->n < 256; i++) {
        c->off[c->n] = off;
        c->cmd[c->n++] = get32(f + off);
        off += get32(f + off + 4);
    }
}

static uint32_t cmd_off(const cmds_t *c, uint32_t cmd, unsigned nth) {
    for (unsigned i = 0; i < c->n; i++)
        if (c->cmd[i] == cmd && nth-- == 0) return c->off[i];
    return 0;
}

#define LC_SYMTAB 0x2u
#define LC_DYSYMTAB 0xbu
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u

/* Runs every entry point on the buffer (an exact-size copy, so that an over-read is caught by
 * the sanitizers and valgrind). Returns fl_macho_image_init's result for the first slice (or
 * fl_macho_slices' error); *sym_rc gets the worst symbol-lookup result. */
static unsigned g_probes, g_index_checks;

static int scan_sects(void *ctx, const fl_macho_section_t *s) {
    (void)s;
    ++*(unsigned *)ctx;
    return 0;
}
static int count_start(void *ctx, uint64_t a) {
    (void)a;
    ++*(unsigned *)ctx;
    return 0;
}

static int probe(const uint8_t *data, size_t size, int *sym_rc) {
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    fl_reader_t r;
    fl_reader_init_buffer(&r, buf, size, 0);
    fl_macho_slice_t sl[FL_MACHO_FAT_MAX];
    unsigned n = 0;
    int rc = fl_macho_slices(&r, size, sl, FL_MACHO_FAT_MAX, &n);
    int first = rc;
    if (sym_rc) *sym_rc = 0;
    g_probes++;
    for (unsigned i = 0; rc == 0 && i < n; i++) {
        CHECK(fl_range_ok(sl[i].offset, sl[i].size, size));
        fl_macho_image_t img;
        int e = fl_macho_image_init(&img, &r, sl[i].offset, sl[i].size, false);
        if (i == 0) first = e;
        if (e) continue;
        CHECK(img.nsegments <= FL_MACHO_SEGMENTS_MAX);
        unsigned count = 0;
        CHECK(fl_macho_image_sections(&img, scan_sects, &count) <= 0);
        count = 0;
        int fs = fl_macho_function_starts(&img, count_start, &count);
        CHECK(fs == 0 || fs == FL_ENOTFOUND || fs == FL_EBADDATA);
        CHECK(count <= img.function_starts_size);
        uint64_t at;
        for (unsigned s = 0; s < img.nsegments; s++) {
            int v = fl_macho_image_vm_to_reader(&img, img.segments[s].vmaddr, 16, &at);
            CHECK(v == FL_ERANGE || (v == 0 && fl_range_ok(at, 16, size)));
        }
        fl_macho_symindex_t *ix = NULL;
        int b = fl_macho_symindex_build(&img, &ix);
        CHECK(b == 0 || b == FL_EBADDATA);
        /* Addresses across __text: starts, middles, ends. */
        uint64_t lo = img.text_sect_vmaddr, len = img.text_sect_size;
        for (unsigned k = 0; k <= 64; k++) {
            uint64_t x = lo + (len / 64) * k + (k & 3);
            char name[64];
            uint64_t a = 0;
            int s = fl_macho_symbol_find(&img, x, name, sizeof name, &a);
            CHECK(s == 0 || s == FL_ENOTFOUND || s == FL_EBADDATA);
            if (sym_rc && s < *sym_rc) *sym_rc = s;
            if (s == 0) CHECK(a <= x && memchr(name, 0, sizeof name) != NULL);
            if (ix) {
                const char *in = NULL;
                uint64_t ia = 0;
                int t = fl_macho_symindex_find(ix, x, &in, &ia);
                g_index_checks++;
                /* The scan may fail on a table the index refused to build on; if it built, the
                 * two agree. */
                CHECK_EQ_U64(t, s);
                if (t == 0 && s == 0) {
                    CHECK_EQ_U64(ia, a);
                    CHECK(strncmp(in, name, sizeof name - 1) == 0);
                }
            }
        }
        fl_macho_symindex_free(ix);
    }
    free(buf);
    return first;
}

static uint8_t *g_file, *g_fat;
static size_t g_size, g_fat_size;
static cmds_t g_cmds;

/* A mutable copy of the thin fixture. */
static uint8_t *copy(void) {
    uint8_t *m = malloc(g_size);
    memcpy(m, g_file, g_size);
    return m;
}

static void expect_init(uint8_t *m, size_t size, int want, const char *what) {
    int rc = probe(m, size, NULL);
    if (rc != want) fprintf(stderr, "  %s: %d, expected %d\n", what, rc, want);
    CHECK_EQ_U64(rc, want);
    free(m);
}

static void truncations(void) {
    /* Every length through the load commands, then a step through the rest: __LINKEDIT runs to
     * the end of the file, so every cut file is malformed. */
    uint32_t cmds_end = 32 + get32(g_file + 20);
    unsigned bad = 0;
    for (size_t len = 0; len < g_size; len += len < cmds_end + 64 ? 1 : 97) {
        int rc = probe(g_file, len, NULL);
        bad += rc == FL_EBADDATA;
        CHECK_EQ_U64(rc, FL_EBADDATA);
    }
    printf("thin truncations: %u rejected\n", bad);
    bad = 0;
    for (size_t len = 0; len < g_fat_size; len += len < 8192 ? 7 : 211) {
        int rc = probe(g_fat, len, NULL);
        bad += rc == FL_EBADDATA;
        CHECK_EQ_U64(rc, FL_EBADDATA);
    }
    printf("fat truncations: %u rejected\n", bad);
}

static void header_and_commands(void) {
    uint8_t *m;
    m = copy(), put32(m + 16, 0xffffffffu);
    expect_init(m, g_size, FL_EBADDATA, "ncmds huge");
    m = copy(), put32(m + 16, FL_MACHO_NCMDS_MAX + 1);
    expect_init(m, g_size, FL_EBADDATA, "ncmds over the limit");
    m = copy(), put32(m + 16, get32(m + 16) + 1);
    expect_init(m, g_size, FL_EBADDATA, "ncmds one more than there are");
    m = copy(), put32(m + 20, 0xfffffff0u);
    expect_init(m, g_size, FL_EBADDATA, "sizeofcmds huge");
    m = copy(), put32(m + 20, get32(m + 20) - 8);
    expect_init(m, g_size, FL_EBADDATA, "sizeofcmds short of the commands");
    m = copy(), put32(m + 20, 0);
    expect_init(m, g_size, FL_EBADDATA, "sizeofcmds 0");
    m = copy(), put32(m + 16, 0);
    expect_init(m, g_size, 0, "no commands at all"); /* valid, if useless */
    /* Each command in turn: cmdsize 0, below 8, unaligned, past sizeofcmds, and one that makes
     * the next command start inside it (the rest must still be rejected or parsed, never
     * trusted into a crash). */
    uint32_t sizeofcmds = get32(g_file + 20);
    for (unsigned i = 0; i < g_cmds.n; i++) {
        uint32_t o = g_cmds.off[i], cs = get32(g_file + o + 4);
        m = copy(), put32(m + o + 4, 0);
        expect_init(m, g_size, FL_EBADDATA, "cmdsize 0");
        m = copy(), put32(m + o + 4, 4);
        expect_init(m, g_size, FL_EBADDATA, "cmdsize 4");
        m = copy(), put32(m + o + 4, cs + 2);
        expect_init(m, g_size, FL_EBADDATA, "cmdsize unaligned");
        m = copy(), put32(m + o + 4, sizeofcmds - (o - 32) + 8);
        expect_init(m, g_size, FL_EBADDATA, "cmdsize past sizeofcmds");
        m = copy(), put32(m + o + 4, 0xfffffff8u);
        expect_init(m, g_size, FL_EBADDATA, "cmdsize huge");
        m = copy(), put32(m + o + 4, cs > 16 ? cs - 8 : cs + 8);
        int rc = probe(m, g_size, NULL);
        CHECK(rc == 0 || rc == FL_EBADDATA);
        free(m);
    }
    /* The last command 2 bytes longer, into the bytes after the commands (sizeofcmds grown to
     * match): everything else about it would parse. */
    uint32_t lo = g_cmds.off[g_cmds.n - 1];
    m = copy(), put32(m + lo + 4, get32(m + lo + 4) + 2), put32(m + 20, sizeofcmds + 4);
    expect_init(m, g_size, FL_EBADDATA, "last cmdsize unaligned");
    m = copy(), put32(m + lo + 4, get32(m + lo + 4) + 4), put32(m + 20, sizeofcmds + 4);
    expect_init(m, g_size, 0, "last cmdsize 4 longer (aligned)");
    /* Commands too short for what they are. */
    static const uint32_t kinds[] = {LC_SEGMENT_64, LC_UUID, LC_SYMTAB, LC_DYSYMTAB,
                                     LC_FUNCTION_STARTS};
    for (unsigned k = 0; k < FL_ARRAY_LEN(kinds); k++) {
        uint32_t o = cmd_off(&g_cmds, kinds[k], 0);
        CHECK(o != 0);
        if (!o) continue;
        uint32_t cs = get32(g_file + o + 4);
        /* Shrink it to 8 and pad the difference with a harmless unknown command. */
        m = copy(), put32(m + o + 4, 8), put32(m + o + 8, 0x7fffffffu), put32(m + o + 12, cs - 8);
        put32(m + 16, get32(m + 16) + 1);
        expect_init(m, g_size, FL_EBADDATA, "command shorter than its struct");
    }
    /* A second LC_SYMTAB and a second LC_UUID. */
    m = copy(), put32(m + cmd_off(&g_cmds, LC_DYSYMTAB, 0), LC_SYMTAB);
    expect_init(m, g_size, FL_EBADDATA, "two LC_SYMTAB");
    uint32_t uo = cmd_off(&g_cmds, LC_UUID, 0), so = cmd_off(&g_cmds, LC_SYMTAB, 0);
    m = copy(), memcpy(m + so, m + uo, 24);
    expect_init(m, g_size, FL_EBADDATA, "two LC_UUID (and no LC_SYMTAB)");
    /* Unknown commands are skipped. */
    m = copy(), put32(m + cmd_off(&g_cmds, LC_UUID, 0), 0x7ffffffeu);
    expect_init(m, g_size, 0, "an unknown command");
}

static void segments_and_tables(void) {
    uint8_t *m;
    uint32_t text = cmd_off(&g_cmds, LC_SEGMENT_64, 1); /* 0 is __PAGEZERO */
    CHECK(memcmp(g_file + text + 8, "__TEXT", 7) == 0);
    m = copy(), put64(m + text + 40, g_size); /* fileoff at EOF, filesize > 0 */
    expect_init(m, g_size, FL_EBADDATA, "segment fileoff past EOF");
    m = copy(), put64(m + text + 48, g_size + 1);
    expect_init(m, g_size, FL_EBADDATA, "segment filesize past EOF");
    m = copy(), put64(m + text + 40, UINT64_MAX - 4);
    expect_init(m, g_size, FL_EBADDATA, "segment file range overflows");
    m = copy(), put64(m + text + 24, UINT64_MAX - 4);
    expect_init(m, g_size, FL_EBADDATA, "segment vm range overflows");
    m = copy(), put32(m + text + 64, get32(m + text + 64) + 1);
    expect_init(m, g_size, FL_EBADDATA, "nsects beyond cmdsize");
    m = copy(), put32(m + text + 64, 0xffffffffu);
    expect_init(m, g_size, FL_EBADDATA, "nsects huge");
    /* The first section (__text): address overflow, bytes past EOF. */
    m = copy(), put64(m + text + 72 + 32, UINT64_MAX - 8);
    expect_init(m, g_size, FL_EBADDATA, "section vm range overflows");
    m = copy(), put32(m + text + 72 + 48, (uint32_t)g_size);
    expect_init(m, g_size, FL_EBADDATA, "section bytes past EOF");
    /* The loaded view has no __TEXT to find its slide from. */
    {
        m = copy();
        memcpy(m + text + 8, "__TEXX", 6);
        fl_reader_t r;
        fl_reader_init_buffer(&r, m, g_size, 0);
        fl_macho_image_t img;
        CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, UINT64_MAX, true), FL_EBADDATA);
        CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, g_size, false), 0);
        free(m);
    }

    uint32_t st = cmd_off(&g_cmds, LC_SYMTAB, 0);
    m = copy(), put32(m + st + 12, FL_MACHO_NSYMS_MAX + 1);
    expect_init(m, g_size, FL_EBADDATA, "nsyms over the limit");
    m = copy(), put32(m + st + 12, 0xffffffffu);
    expect_init(m, g_size, FL_EBADDATA, "nsyms huge");
    m = copy(), put32(m + st + 12, (uint32_t)(g_size / 16));
    expect_init(m, g_size, FL_EBADDATA, "symbols past EOF");
    m = copy(), put32(m + st + 8, 0xfffffff0u);
    expect_init(m, g_size, FL_EBADDATA, "symoff absurd");
    m = copy(), put32(m + st + 16, 0xfffffff0u);
    expect_init(m, g_size, FL_EBADDATA, "stroff absurd");
    m = copy(), put32(m + st + 20, 0xffffffffu);
    expect_init(m, g_size, FL_EBADDATA, "strsize absurd");
    uint32_t fs = cmd_off(&g_cmds, LC_FUNCTION_STARTS, 0);
    m = copy(), put32(m + fs + 8, (uint32_t)g_size);
    expect_init(m, g_size, FL_EBADDATA, "function starts past EOF");
    m = copy(), put32(m + fs + 12, 0xffffffffu);
    expect_init(m, g_size, FL_EBADDATA, "function starts size absurd");

    /* Contents: garbled tables parse (init only reads commands) and fail at lookup. */
    int sym_rc;
    uint32_t symoff = get32(g_file + st + 8), nsyms = get32(g_file + st + 12);
    uint32_t strsize = get32(g_file + st + 20);
    m = copy();
    for (uint32_t i = 0; i < nsyms; i++) put32(m + symoff + 16 * i, strsize + i);
    CHECK_EQ_U64(probe(m, g_size, &sym_rc), 0);
    CHECK_EQ_U64(sym_rc, FL_EBADDATA); /* every n_strx outside the string table */
    free(m);
    m = copy();
    uint32_t stroff = get32(g_file + st + 16);
    memset(m + stroff, 'A', strsize); /* no NUL anywhere: every name runs off the table */
    CHECK_EQ_U64(probe(m, g_size, &sym_rc), 0);
    CHECK_EQ_U64(sym_rc, FL_EBADDATA);
    free(m);
    m = copy();
    uint32_t fsoff = get32(g_file + fs + 8), fssize = get32(g_file + fs + 12);
    memset(m + fsoff, 0xff, fssize); /* one ULEB128 that never ends */
    CHECK_EQ_U64(probe(m, g_size, &sym_rc), 0);
    CHECK_EQ_U64(sym_rc, FL_EBADDATA);
    free(m);
    m = copy();
    memset(m + fsoff, 0x80, fssize - 1); /* a ULEB128 longer than 64 bits */
    m[fsoff + fssize - 1] = 1;
    CHECK_EQ_U64(probe(m, g_size, &sym_rc), 0);
    CHECK_EQ_U64(sym_rc, FL_EBADDATA);
    free(m);
    m = copy();
    for (uint32_t i = 0; i < nsyms; i++) m[symoff + 16 * i + 5] = (uint8_t)(i * 37); /* n_sect */
    CHECK_EQ_U64(probe(m, g_size, NULL), 0);
    free(m);
}

static void fat(void) {
    uint8_t *m;
    size_t n = g_fat_size;
#define FATCOPY() (m = malloc(n), memcpy(m, g_fat, n))
    CHECK_EQ_U64(get32be(g_fat), 0xcafebabeu);
    uint32_t nfat = get32be(g_fat + 4);
    CHECK_EQ_U64(nfat, 2);
    FATCOPY(), put32be(m + 4, 0xffffffffu);
    expect_init(m, n, FL_EBADDATA, "nfat_arch huge");
    FATCOPY(), put32be(m + 4, FL_MACHO_FAT_MAX + 1);
    expect_init(m, n, FL_EBADDATA, "nfat_arch over the limit");
    FATCOPY(), put32be(m + 4, 0);
    expect_init(m, n, FL_EBADDATA, "nfat_arch 0");
    FATCOPY(), put32be(m + 4, 0x34); /* a Java class file's major version */
    expect_init(m, n, FL_EBADDATA, "a Java class file");
    /* fat_arch: cputype, cpusubtype, offset, size, align (big-endian) at 8 + 20 * i. */
    FATCOPY(), put32be(m + 8 + 8, (uint32_t)n);
    expect_init(m, n, FL_EBADDATA, "slice offset past EOF");
    FATCOPY(), put32be(m + 8 + 12, (uint32_t)n);
    expect_init(m, n, FL_EBADDATA, "slice size past EOF");
    FATCOPY(), put32be(m + 8 + 20 + 8, get32be(m + 8 + 8));
    expect_init(m, n, FL_EBADDATA, "slices overlapping");
    FATCOPY(), memcpy(m + 8 + 20, m + 8, 20);
    expect_init(m, n, FL_EBADDATA, "the same slice twice");
    FATCOPY(), put32be(m + 8 + 8, get32be(m + 8 + 8) + get32be(m + 8 + 12) - 16);
    expect_init(m, n, FL_EBADDATA, "slice shifted into the next");
    FATCOPY(), put32be(m + 8 + 8, 0);
    expect_init(m, n, FL_EBADDATA, "slice over the fat header");
    FATCOPY(), put32be(m + 8, 0x0100000cu == get32be(m + 8) ? 0x01000007u : 0x0100000cu);
    expect_init(m, n, FL_EBADDATA, "fat entry names another cputype");
    /* FAT_MAGIC_64 with offsets whose sum overflows. */
    uint8_t f64[64] = {0};
    put32be(f64, 0xcafebabfu);
    put32be(f64 + 4, 1);
    put32be(f64 + 8, 0x0100000cu);
    put32be(f64 + 16, 0xffffffffu), put32be(f64 + 20, 0xffffff00u); /* offset */
    put32be(f64 + 24, 0), put32be(f64 + 28, 0x1000);                /* size */
    CHECK_EQ_U64(probe(f64, sizeof f64, NULL), FL_EBADDATA);
    /* A fat file whose only slice is 32-bit, and one with a 32-bit and a 64-bit slice. */
    uint8_t *two = malloc(n);
    memcpy(two, g_fat, n);
    uint32_t off0 = get32be(two + 8 + 8);
    put32(two + off0, 0xfeedfaceu); /* slice 0 becomes a 32-bit Mach-O */
    fl_reader_t r;
    fl_reader_init_buffer(&r, two, n, 0);
    fl_macho_slice_t sl[4];
    unsigned cnt = 0;
    CHECK_EQ_U64(fl_macho_slices(&r, n, sl, 4, &cnt), 0);
    CHECK_EQ_U64(cnt, 1);
    CHECK_EQ_U64(sl[0].offset, get32be(two + 8 + 20 + 8));
    put32be(two + 4, 1);
    CHECK_EQ_U64(fl_macho_slices(&r, n, sl, 4, &cnt), FL_ENOSYS);
    free(two);
}

static void magics_and_synthetic(void) {
    uint8_t *m;
    m = copy(), put32(m, 0xfeedfaceu);
    expect_init(m, g_size, FL_ENOSYS, "32-bit magic");
    m = copy(), put32(m, 0xcefaedfeu);
    expect_init(m, g_size, FL_ENOSYS, "32-bit byte-swapped magic");
    m = copy(), put32(m, 0xcffaedfeu);
    expect_init(m, g_size, FL_ENOSYS, "64-bit byte-swapped magic");
    m = copy(), put32(m, 0x464c457fu);
    expect_init(m, g_size, FL_EBADDATA, "an ELF file");
    /* Direct init of a 32-bit header. */
    uint8_t h32[28] = {0};
    put32(h32, 0xfeedfaceu);
    fl_reader_t r;
    fl_reader_init_buffer(&r, h32, sizeof h32, 0);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, 4096, false), FL_EFAULT); /* 32 > 28 bytes */
    uint8_t h[32 + 40 * 72] = {0};
    put32(h, 0xfeedfacfu);
    put32(h + 4, FL_MACHO_CPU_ARM64);
    put32(h + 12, 2);
    fl_reader_init_buffer(&r, h, sizeof h, 0);
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, 31, false), FL_EBADDATA);
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 8, UINT64_MAX - 4, false), FL_EBADDATA);
    /* 40 empty segments: 32 kept, the rest noted as truncated. */
    put32(h + 16, 40);
    put32(h + 20, 40 * 72);
    for (unsigned i = 0; i < 40; i++) {
        uint8_t *c = h + 32 + 72 * i;
        put32(c, LC_SEGMENT_64);
        put32(c + 4, 72);
        c[8] = '_', c[9] = (uint8_t)('A' + i);
        put64(c + 24, 0x1000ull * i), put64(c + 32, 0x1000);
    }
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, sizeof h, false), 0);
    CHECK_EQ_U64(img.nsegments, FL_MACHO_SEGMENTS_MAX);
    CHECK(img.segments_truncated);
    CHECK_EQ_U64(img.segments[31].vmaddr, 31 * 0x1000);
    CHECK(!img.has_symtab && !img.has_uuid);
    char name[8];
    uint64_t a;
    CHECK_EQ_U64(fl_macho_symbol_find(&img, 0x1000, name, sizeof name, &a), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_function_starts(&img, count_start, &(unsigned){0}), FL_ENOTFOUND);
}

/* A loaded image whose __LINKEDIT cannot be read: lookups report the fault. */
static void unreadable_linkedit(void) {
    fl_reader_t r;
    fl_reader_init_buffer(&r, g_file, g_size, 0);
    fl_macho_image_t fimg;
    CHECK_EQ_U64(fl_macho_image_init(&fimg, &r, 0, g_size, false), 0);
    uint64_t origin = 0, size = 0, slide = 0x4000;
    uint8_t *mem = or_layout_loaded(&fimg, g_file, slide, &origin, &size);
    const fl_macho_segment_t *le = &fimg.segments[fimg.nsegments - 1];
    CHECK(strcmp(le->name, "__LINKEDIT") == 0);
    fl_reader_t lr;
    fl_reader_init_buffer(&lr, mem, le->vmaddr - fimg.text_vmaddr, origin);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &lr, origin, UINT64_MAX, true), 0);
    char name[64];
    uint64_t a;
    CHECK_EQ_U64(fl_macho_symbol_find(&img, img.text_sect_vmaddr, name, sizeof name, &a),
                 FL_EFAULT);
    fl_macho_symindex_t *ix = NULL;
    CHECK_EQ_U64(fl_macho_symindex_build(&img, &ix), FL_EFAULT);
    CHECK(ix == NULL);
    free(mem);
}

/* An empty symbol table (nsyms 0) whose symoff points anywhere: the header (outside __LINKEDIT,
 * through which the loaded view maps it) or past the file. No symbols, so every lookup is
 * FL_ENOTFOUND, from the scan and the index alike, in the file and in the loaded view (issue 15,
 * point 7: the scan said FL_EBADDATA there, the index FL_ENOTFOUND). */
static void empty_symtab(void) {
    static const uint32_t symoffs[] = {0, 0xfffffff0u};
    uint32_t st = cmd_off(&g_cmds, LC_SYMTAB, 0);
    for (unsigned k = 0; k < sizeof symoffs / sizeof symoffs[0]; k++) {
        uint8_t *m = copy();
        put32(m + st + 8, symoffs[k]);
        put32(m + st + 12, 0);
        fl_reader_t r, lr;
        fl_reader_init_buffer(&r, m, g_size, 0);
        fl_macho_image_t views[2];
        int e = fl_macho_image_init(&views[0], &r, 0, g_size, false);
        CHECK_EQ_U64(e, 0);
        uint64_t origin = 0, size = 0;
        uint8_t *mem = e ? NULL : or_layout_loaded(&views[0], m, 0x4000, &origin, &size);
        CHECK(mem != NULL);
        if (mem) {
            fl_reader_init_buffer(&lr, mem, size, origin);
            e = fl_macho_image_init(&views[1], &lr, origin, UINT64_MAX, true);
            CHECK_EQ_U64(e, 0);
        }
        for (unsigned v = 0; v < 2 && mem && !e; v++) {
            const fl_macho_image_t *img = &views[v];
            fl_macho_symindex_t *ix = NULL;
            CHECK_EQ_U64(fl_macho_symindex_build(img, &ix), 0);
            CHECK(ix && fl_macho_symindex_count(ix) == 0);
            for (uint64_t x = img->text_sect_vmaddr; x < img->text_sect_vmaddr + img->text_sect_size;
                 x += 4) {
                char name[64];
                const char *in = NULL;
                uint64_t a = 0;
                CHECK_EQ_U64(fl_macho_symbol_find(img, x, name, sizeof name, &a), FL_ENOTFOUND);
                if (ix) CHECK_EQ_U64(fl_macho_symindex_find(ix, x, &in, &a), FL_ENOTFOUND);
            }
            fl_macho_symindex_free(ix);
        }
        free(mem);
        free(m);
    }
}

/* Deterministic random corruption of the header, the commands and the tables. */
static void random_flips(void) {
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    uint32_t st = cmd_off(&g_cmds, LC_SYMTAB, 0);
    uint32_t regions[3][2] = {{0, 32 + get32(g_file + 20)},
                              {get32(g_file + st + 8), get32(g_file + st + 12) * 16},
                              {get32(g_file + st + 16), get32(g_file + st + 20)}};
    unsigned ok = 0, rejected = 0;
    for (unsigned iter = 0; iter < 3000; iter++) {
        uint8_t *m = copy();
        for (unsigned k = 0; k < 1 + iter % 8; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const uint32_t *reg = regions[(seed >> 60) % 3];
            m[reg[0] + (seed >> 20) % reg[1]] ^= (uint8_t)(1u << ((seed >> 8) & 7));
        }
        int rc = probe(m, g_size, NULL);
        CHECK(rc == 0 || rc == FL_EBADDATA || rc == FL_ENOSYS);
        rc == 0 ? ok++ : rejected++;
        free(m);
    }
    printf("random corruption: %u parsed, %u rejected\n", ok, rejected);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/arm64/exe", argv[1]);
    g_file = or_read_file(path, &g_size);
    snprintf(path, sizeof path, "%s/fat/exe", argv[1]);
    g_fat = or_read_file(path, &g_fat_size);
    CHECK(g_file && g_fat);
    if (!g_file || !g_fat) TEST_END();
    find_cmds(g_file, &g_cmds);
    int sym_rc;
    CHECK_EQ_U64(probe(g_file, g_size, &sym_rc), 0); /* the unmodified files are fine */
    CHECK(sym_rc == 0 || sym_rc == FL_ENOTFOUND);
    CHECK_EQ_U64(probe(g_fat, g_fat_size, NULL), 0);
    truncations();
    header_and_commands();
    segments_and_tables();
    fat();
    magics_and_synthetic();
    unreadable_linkedit();
    empty_symtab();
    random_flips();
    printf("%u inputs probed, %u index-vs-scan comparisons\n", g_probes, g_index_checks);
    free(g_file);
    free(g_fat);
    TEST_END();
}
