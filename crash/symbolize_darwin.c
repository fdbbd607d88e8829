/* SPDX-License-Identifier: MIT */
/* fl_symbolize_local's Mach-O part: LC_SYMTAB of the image as loaded (the dyld shared cache's
 * images have no file of their own). Never run here: compiled with zig only (docs/stacks.md). */
#include <stdlib.h>

#include "crash/crash.h"
#include "macho/macho.h"

int fl_crash_os_image_symbol(const fl_image_t *img, uint64_t pc, char *name, size_t cap,
                             uint64_t *sym_addr, int *source) {
    fl_macho_image_t *mi = calloc(1, sizeof *mi);
    if (!mi) return FL_ENOMEM;
    /* Loaded: read through the safe reader, from the header (the __TEXT segment's start). */
    int e = fl_macho_image_init(mi, fl_memory_reader(), img->start, UINT64_MAX, true);
    uint64_t sym = 0;
    if (!e) e = fl_macho_symbol_find(mi, pc - mi->slide, name, cap, &sym);
    if (!e) {
        *sym_addr = sym + mi->slide;
        *source = FL_SYMBOL_MACHO;
    }
    free(mi);
    return e;
}
