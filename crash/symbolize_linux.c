/* SPDX-License-Identifier: MIT */
/* fl_symbolize_local's ELF part: the image's file on disk, its .symtab, else its .dynsym. */
#include <string.h>

#include "crash/crash.h"

int fl_crash_os_image_symbol(const fl_image_t *img, uint64_t pc, char *name, size_t cap,
                             uint64_t *sym_addr, int *source) {
    if (img->is_vdso || !img->path[0]) return FL_ENOTFOUND; /* no file: the vdso */
    fl_elf_file_t *f;
    int e = fl_elf_file_open(img->path, &f);
    if (e) return e;
    /* A file replaced on disk since it was loaded would name the wrong symbols: when both carry
     * a GNU build-id, they must be the same. */
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned len = 0;
    if (img->build_id_kind == FL_BUILD_ID_GNU &&
        fl_elf_file_build_id(f, id, sizeof id, &len) == 0 &&
        (len != img->build_id_len || memcmp(id, img->build_id, len) != 0)) {
        fl_elf_file_close(f);
        return FL_EBADDATA;
    }
    const char *s;
    uint64_t off;
    e = fl_elf_file_symbolize(f, pc - img->slide, &s, &off);
    if (!e) {
        fl_strlcpy(name, s, cap);
        *sym_addr = pc - off;
        *source = fl_elf_file_has_section(f, ".symtab") ? FL_SYMBOL_SYMTAB : FL_SYMBOL_DYNSYM;
    }
    fl_elf_file_close(f);
    return e;
}
