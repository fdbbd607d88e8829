/* SPDX-License-Identifier: MIT */
/* Offline symbolication: report frames against ELF files whose build-id matches the report's. */
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "tools/tool.h"

typedef struct image_file {
    bool tried;
    fl_elf_file_t *f; /* NULL: no matching file */
} image_file_t;

struct fl_tool_symbolizer {
    const Faultline__Report *r;
    char *const *dirs;
    size_t ndirs;
    image_file_t *files; /* one per report image, looked up on first use */
};

fl_tool_symbolizer_t *fl_tool_symbolizer_new(const Faultline__Report *r, char *const *dirs,
                                             size_t ndirs) {
    fl_tool_symbolizer_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->files = calloc(r->n_images ? r->n_images : 1, sizeof *s->files);
    if (!s->files) {
        free(s);
        return NULL;
    }
    s->r = r;
    s->dirs = dirs;
    s->ndirs = ndirs;
    return s;
}

void fl_tool_symbolizer_free(fl_tool_symbolizer_t *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->r->n_images; i++)
        if (s->files[i].f)
            fl_elf_file_close(s->files[i].f);
    free(s->files);
    free(s);
}

static bool id_matches(const fl_elf_file_t *f, const Faultline__Image *img) {
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned n = 0;
    if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU) {
        if (fl_elf_file_build_id(f, id, sizeof id, &n) != 0)
            return false;
    } else if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_HASH) {
        if (fl_elf_file_text_hash(f, id) != 0)
            return false;
        n = 16;
    } else {
        return false;
    }
    return n == img->build_id.len && memcmp(id, img->build_id.data, n) == 0;
}

static fl_elf_file_t *open_matching(const char *path, const Faultline__Image *img) {
    fl_elf_file_t *f;
    if (fl_elf_file_open(path, &f) != 0)
        return NULL;
    if (id_matches(f, img))
        return f;
    fl_elf_file_close(f);
    return NULL;
}

static fl_elf_file_t *find_file(const fl_tool_symbolizer_t *s, const Faultline__Image *img) {
    /* Without a recorded id nothing proves a file is the one that was loaded, and a wrong file
     * gives confidently wrong names: no symbols then. */
    if (img->build_id.len == 0)
        return NULL;
    fl_elf_file_t *f = img->path && img->path[0] ? open_matching(img->path, img) : NULL;
    const char *base = fl_tool_basename(img->path);
    char hex[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(hex, img->build_id.data, img->build_id.len);
    for (size_t i = 0; !f && i < s->ndirs; i++) {
        char *path;
        /* The .build-id tree is named by GNU build-id; a text hash has no entry there. */
        if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU &&
            img->build_id.len >= 2 &&
            asprintf(&path, "%s/.build-id/%.2s/%s.debug", s->dirs[i], hex, hex + 2) >= 0) {
            f = open_matching(path, img);
            free(path);
        }
        if (!f && base[0] && asprintf(&path, "%s/%s", s->dirs[i], base) >= 0) {
            f = open_matching(path, img);
            free(path);
        }
    }
    return f;
}

void fl_tool_symbolize(fl_tool_symbolizer_t *s, const Faultline__Frame *f, size_t index,
                       fl_tool_sym_t *out) {
    *out = (fl_tool_sym_t){.image = -1};
    const Faultline__Report *r = s->r;
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        if (img->start < img->end && f->pc >= img->start && f->pc < img->end) {
            out->image = (int)i;
            break;
        }
    }
    if (out->image < 0)
        return;
    const Faultline__Image *img = r->images[out->image];
    image_file_t *file = &s->files[out->image];
    if (!file->tried) {
        file->tried = true;
        file->f = find_file(s, img);
    }
    if (!file->f)
        return;
    uint64_t back =
        index > 0 && f->method != FAULTLINE__FRAME__METHOD__METHOD_CONTEXT && f->pc > img->start;
    const char *name;
    uint64_t off;
    /* Unsigned wrap-around makes this right for a negative load bias too. */
    if (fl_elf_file_symbolize(file->f, f->pc - back - img->slide, &name, &off) == 0 && name &&
        name[0]) {
        out->symbol = name;
        out->offset = off + back;
    }
}
