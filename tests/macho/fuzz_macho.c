/* SPDX-License-Identifier: MIT */
/* macho: libFuzzer target over whole files: slices, images (as file and as loaded), sections,
 * function starts, symbols (scan and index, which must agree) and compact unwind lookups; and
 * compact unwind encodings, those of the file's entries and arbitrary ones taken from the
 * input's words, each decoded for both architectures, formatted (into buffers too small too)
 * and stepped over a fake stack (fl_macho_unwind_decode, _rule_format, _step).
 * Seeds: corpus/fuzz_macho/ (small fixtures of both architectures, made by fixtures/build.sh;
 * scripts/fuzz-seeds.sh). Run: scripts/fuzz.sh BUILD fuzz_macho (a crash leaves crash-<sha1> in
 * BUILD/fuzz/fuzz_macho/: the input, replayed by passing it as the only argument). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"

#define STACK 0x7ff000000000ull
#define CODE 0x100000000ull

static uint64_t g_words[256];
static fl_reader_t g_stack;

/* One encoding: the decoded rule is well formed, its text fits any buffer, and a step either
 * fails leaving the registers alone or gives a caller above the callee's sp. code holds the
 * function's bytes (STACK_IND reads its sub immediate there). */
static void encoding(uint32_t cputype, uint32_t enc, const fl_reader_t *code) {
    fl_macho_unwind_rule_t rule;
    int e = fl_macho_unwind_decode(cputype, enc, &rule);
    if (e != 0) {
        if (e != FL_EBADDATA && e != FL_ENOSYS) abort();
        return;
    }
    if (rule.nregs > FL_MACHO_RULE_REGS_MAX || rule.kind > FL_MACHO_RULE_DWARF) abort();
    char buf[160];
    static const size_t caps[] = {1, 2, 7, 24, sizeof buf};
    for (unsigned i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        memset(buf, 'x', sizeof buf);
        size_t n = fl_macho_unwind_rule_format(&rule, buf, caps[i]);
        if (n >= caps[i] || strlen(buf) != n) abort();
    }
    bool arm64 = cputype == FL_MACHO_CPU_ARM64;
    fl_dwarf_regs_t r, before;
    for (unsigned i = 0; i < FL_DWARF_REGS; i++) r.r[i] = STACK + 8 * (32 + 3 * i);
    r.r[arm64 ? 32 : 16] = CODE + 0x10;
    r.r[30] = CODE + 0x40; /* lr on arm64 */
    r.valid = (1ull << FL_DWARF_REGS) - 1;
    before = r;
    e = fl_macho_unwind_step(&rule, code, CODE, &g_stack, &r);
    if (e != 0) {
        if (e != FL_ENOSYS && e != FL_EFAULT && e != FL_EBADDATA && e != FL_EINVAL) abort();
        if (memcmp(&r, &before, sizeof r) != 0) abort();
        return;
    }
    unsigned sp = arm64 ? 31 : 7;
    /* The stack unwinds upward (a frameless leaf of size 0 keeps sp). */
    if (!(r.valid >> sp & 1) || r.r[sp] < before.r[sp] ||
        (r.r[sp] == before.r[sp] && rule.kind != FL_MACHO_RULE_FRAMELESS))
        abort();
}

typedef struct entries {
    const fl_macho_image_t *img;
    unsigned n;
} entries_t;

static int on_entry(void *ctx, const fl_macho_unwind_entry_t *e) {
    entries_t *c = ctx;
    fl_reader_t none;
    fl_reader_init_buffer(&none, "", 0, CODE);
    encoding(c->img->cputype, e->encoding, &none);
    return ++c->n >= 64;
}

static int on_sect(void *ctx, const fl_macho_section_t *s) {
    (void)s;
    return ++*(unsigned *)ctx > 100000; /* fl_macho_image_sections promises a bound */
}

static int on_start(void *ctx, uint64_t a) {
    uint64_t *last = ctx;
    if (*last && a <= *last) abort(); /* ascending, as documented */
    *last = a;
    return 0;
}

static int on_unwind(void *ctx, const fl_macho_unwind_entry_t *e) {
    (void)e;
    return ++*(unsigned *)ctx > 1000;
}

static void image(const fl_macho_image_t *img, size_t size) {
    unsigned n = 0;
    if (fl_macho_image_sections(img, on_sect, &n) > 0) abort();
    uint64_t last = 0;
    fl_macho_function_starts(img, on_start, &last);
    fl_macho_symindex_t *ix = NULL;
    fl_macho_symindex_build(img, &ix);
    uint64_t lo = img->text_sect_vmaddr, len = img->text_sect_size;
    for (unsigned k = 0; k < 16; k++) {
        uint64_t x = lo + (len / 16) * k + k, a = 0, ia = 0, at;
        char name[32];
        const char *in = NULL;
        int s = fl_macho_symbol_find(img, x, name, sizeof name, &a);
        if (s == 0 && (a > x || !memchr(name, 0, sizeof name))) abort();
        if (ix) {
            int t = fl_macho_symindex_find(ix, x, &in, &ia);
            if (t != s || (t == 0 && (ia != a || strncmp(in, name, sizeof name - 1)))) abort();
        }
        if (fl_macho_image_vm_to_reader(img, x, 4, &at) == 0 && !img->loaded &&
            !fl_range_ok(at, 4, size))
            abort();
    }
    fl_macho_symindex_free(ix);
    fl_macho_unwind_info_t ui;
    if (fl_macho_unwind_info_init(img, &ui) == 0) {
        fl_macho_unwind_entry_t e, f;
        fl_macho_unwind_memo_t memo = {0};
        fl_macho_unwind_info_t mu = ui;
        mu.memo = &memo;
        for (unsigned k = 0; k < 32; k++) {
            uint64_t pc = lo + (len / 16) * (k % 2 ? k / 2 : 15 - k / 2) + img->slide;
            fl_macho_unwind_find(&ui, pc, &e);
            /* With the memo (an unsorted index may then name another page than a search
             * alone would): an answer covers pc. */
            if (fl_macho_unwind_find(&mu, pc, &f) == 0 && !(f.start <= pc && pc < f.end)) abort();
        }
        unsigned count = 0;
        fl_macho_unwind_each(&ui, on_unwind, &count);
        /* The table's own encodings, the first 64. */
        entries_t c = {img, 0};
        fl_macho_unwind_each(&ui, on_entry, &c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool init;
    if (!init) {
        for (unsigned i = 0; i < 256; i++)
            g_words[i] = (i & 1) ? CODE + 16 * i : STACK + 8 * ((i * 37) % 256) + 64;
        fl_reader_init_buffer(&g_stack, g_words, sizeof g_words, STACK);
        init = true;
    }
    /* Arbitrary encodings: the first words of the input, for both architectures, with the
     * input's start as the function's code. */
    fl_reader_t code;
    fl_reader_init_buffer(&code, data, size < 256 ? size : 256, CODE);
    for (size_t off = 0; off + 4 <= size && off < 64; off += 4) {
        uint32_t enc;
        memcpy(&enc, data + off, 4);
        encoding(FL_MACHO_CPU_X86_64, enc, &code);
        encoding(FL_MACHO_CPU_ARM64, enc, &code);
    }
    fl_reader_t r;
    fl_reader_init_buffer(&r, data, size, 0);
    fl_macho_slice_t sl[FL_MACHO_FAT_MAX];
    unsigned n = 0;
    if (fl_macho_slices(&r, size, sl, FL_MACHO_FAT_MAX, &n) != 0) return 0;
    for (unsigned i = 0; i < n; i++) {
        if (!fl_range_ok(sl[i].offset, sl[i].size, size)) abort();
        fl_macho_image_t img;
        if (fl_macho_image_init(&img, &r, sl[i].offset, sl[i].size, false) == 0) image(&img, size);
        /* The same bytes as if dyld had mapped them there (segments then read as memory). */
        fl_reader_t mem;
        fl_reader_init_buffer(&mem, data + sl[i].offset, sl[i].size, 0x100000000ull);
        if (fl_macho_image_init(&img, &mem, 0x100000000ull, UINT64_MAX, true) == 0)
            image(&img, size);
    }
    return 0;
}
