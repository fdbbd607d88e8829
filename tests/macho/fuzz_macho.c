/* SPDX-License-Identifier: MIT */
/* macho: libFuzzer target over whole files: slices, images (as file and as loaded), sections,
 * function starts, symbols (scan and index, which must agree) and compact unwind lookups.
 * Build with -DFL_BUILD_FUZZERS=ON (clang); seed it with the fixtures, e.g.
 *   ctest --test-dir BUILD -R macho_fixtures
 *   mkdir corpus && cp BUILD/tests/macho/fixtures/{arm64,x86_64}/{exe-stripx,libfixture.dylib} \
 *      BUILD/tests/macho/fixtures/fat/exe corpus/   (distinct names per architecture)
 *   BUILD/tests/macho/fuzz_macho -max_total_time=60 corpus */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macho/macho.h"

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
        fl_macho_unwind_entry_t e;
        for (unsigned k = 0; k < 16; k++)
            fl_macho_unwind_find(&ui, lo + (len / 16) * k + img->slide, &e);
        unsigned count = 0;
        fl_macho_unwind_each(&ui, on_unwind, &count);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
