/* SPDX-License-Identifier: MIT */
/* Offline symbolication: report frames against ELF and Mach-O files whose identity matches the report's. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/tool.h"

#define DSYM_SCAN_MAX 4096u /* directory entries looked at per --symbols directory */
#define STORE_MAX 65536u    /* distinct image identities one store keeps */

/* One image identity and recorded path: what was found for it, shared by every report that
 * has it. The path is part of the key because the search starts from it (a recorded path
 * that holds the file must not lend it to another path with the same id). */
typedef struct ident {
    int kind; /* Faultline__Image__BuildIdKind */
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned len;
    char *path;
    fl_tool_symindex_t *ix; /* NULL: no matching file (or the index could not be built) */
} ident_t;

struct fl_tool_symstore {
    fl_tool_symopts_t o;
    ident_t **tab; /* open addressing by identity */
    size_t cap, n;
    ident_t none;  /* for images without an id, and when the table is full */
};

struct fl_tool_symbolizer {
    fl_tool_symstore_t *st;
    const Faultline__Report *r;
    ident_t **ids; /* per report image, resolved on first use */
    fl_tool_perfmap_t *jit; /* loaded at the first frame in no image */
    bool jit_tried;
    /* The frame resolved last, and whether it is a call a runtime injected (the views resolve
     * a thread's frames in order: the frame under it need not resolve it again). */
    const Faultline__Thread *last_th;
    size_t last_index;
    bool last_injected;
};

fl_tool_symstore_t *fl_tool_symstore_new(const fl_tool_symopts_t *opts) {
    fl_tool_symstore_t *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->o = *opts;
    st->cap = 64;
    st->tab = calloc(st->cap, sizeof *st->tab);
    if (!st->tab) {
        free(st);
        return NULL;
    }
    return st;
}

void fl_tool_symstore_free(fl_tool_symstore_t *st) {
    if (!st) return;
    for (size_t i = 0; i < st->cap; i++)
        if (st->tab[i]) {
            fl_tool_symindex_free(st->tab[i]->ix);
            free(st->tab[i]->path);
            free(st->tab[i]);
        }
    free(st->tab);
    free(st);
}

fl_tool_symbolizer_t *fl_tool_symbolizer_new(fl_tool_symstore_t *st, const Faultline__Report *r) {
    fl_tool_symbolizer_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ids = calloc(r->n_images ? r->n_images : 1, sizeof *s->ids);
    if (!s->ids) {
        free(s);
        return NULL;
    }
    s->st = st;
    s->r = r;
    return s;
}

void fl_tool_symbolizer_free(fl_tool_symbolizer_t *s) {
    if (!s) return;
    fl_tool_perfmap_free(s->jit);
    free(s->ids);
    free(s);
}

/* ---- Finding the file ---- */

/* The slice of b that is the recorded image, or -1. */
static int matching_slice(fl_tool_bin_t *b, const Faultline__Image *img) {
    if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID)
        return fl_tool_bin_find_uuid(b, img->build_id.data, img->build_id.len);
    fl_elf_file_t *elf = fl_tool_bin_elf(b);
    if (!elf) return -1;
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned n = 0;
    if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU) {
        if (fl_elf_file_build_id(elf, id, sizeof id, &n) != 0) return -1;
    } else if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_HASH ||
               img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_SECTION) {
        if (fl_elf_file_text_hash(elf, (int)img->build_id_kind, id) != 0) return -1;
        n = 16;
    } else {
        return -1;
    }
    return n == img->build_id.len && memcmp(id, img->build_id.data, n) == 0 ? 0 : -1;
}

/* The search state: the first match of the best quality the format allows ends it; else the
 * first match of the best quality seen is kept. */
typedef struct search {
    const fl_tool_symopts_t *o;
    const Faultline__Image *img;
    fl_tool_bin_t *best;
    unsigned slice;
    int quality;
    char *path;
    bool done;
    /* .gnu_debuglink of matches that lack lines: tried after the direct candidates. */
    char *links[4];
    uint32_t crcs[4];
    char *link_dirs[4];
    unsigned nlinks;
} search_t;

static int best_possible(const search_t *st) {
    if (st->img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID)
        return FL_TOOL_Q_SYMTAB;
    return fl_tool_have_dwarf() ? FL_TOOL_Q_LINES : FL_TOOL_Q_SYMTAB;
}

static void note_debuglink(search_t *st, fl_tool_bin_t *b, const char *path) {
    fl_elf_file_t *elf = fl_tool_bin_elf(b);
    const char *link = elf ? fl_elf_file_debuglink(elf) : NULL;
    uint32_t crc;
    if (!link || !link[0] || strchr(link, '/') || st->nlinks == 4 ||
        fl_elf_file_debuglink_crc(elf, &crc) != 0)
        return;
    char *dir = strdup(path), *name = strdup(link);
    if (!dir || !name) {
        free(dir);
        free(name);
        return;
    }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    st->links[st->nlinks] = name;
    st->link_dirs[st->nlinks] = dir;
    st->crcs[st->nlinks++] = crc;
}

/* Whether the file's CRC-32 is crc (the .gnu_debuglink check; a debug file need not carry the
 * build-id note). */
static bool file_crc_is(const char *path, uint32_t crc) {
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return false;
    const void *m;
    bool ok = false;
    if (fl_file_map(fd, fsize, path, &m) == 0) {
        ok = fl_tool_crc32(0, m, (size_t)fsize) == crc;
        fl_file_unmap(m, fsize);
    }
    close(fd);
    return ok;
}

static void consider(search_t *st, fl_tool_bin_t *b, int slice, const char *path) {
    int q = fl_tool_bin_quality(b, (unsigned)slice);
    if (q < FL_TOOL_Q_LINES && fl_tool_bin_kind(b) == FL_TOOL_BIN_ELF) note_debuglink(st, b, path);
    if (st->best && q <= st->quality) {
        fl_tool_bin_close(b);
        return;
    }
    char *p = strdup(path);
    if (!p) {
        fl_tool_bin_close(b);
        return;
    }
    fl_tool_bin_close(st->best);
    free(st->path);
    st->best = b;
    st->slice = (unsigned)slice;
    st->quality = q;
    st->path = p;
    st->done = q >= best_possible(st);
}

static void try_path(search_t *st, const char *path) {
    fl_tool_bin_t *b;
    if (st->done || fl_tool_bin_open(path, &b) != 0) return;
    int i = matching_slice(b, st->img);
    if (i < 0) {
        fl_tool_bin_close(b);
        return;
    }
    consider(st, b, i, path);
}

static void try_fmt(search_t *st, const char *fmt, const char *a, const char *b, const char *c) {
    char *path;
    if (st->done || asprintf(&path, fmt, a, b, c) < 0) return;
    try_path(st, path);
    free(path);
}

/* A .gnu_debuglink candidate: identified by the CRC, and by the build-id when it has one. */
static void try_link(search_t *st, const char *path, uint32_t crc) {
    fl_tool_bin_t *b;
    if (st->done || fl_tool_bin_open(path, &b) != 0) return;
    if (fl_tool_bin_kind(b) != FL_TOOL_BIN_ELF || !file_crc_is(path, crc)) {
        fl_tool_bin_close(b);
        return;
    }
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned n;
    if (st->img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU &&
        fl_tool_bin_id(b, 0, id, sizeof id, &n) == 0 &&
        (n != st->img->build_id.len || memcmp(id, st->img->build_id.data, n) != 0)) {
        fl_tool_bin_close(b);
        return;
    }
    consider(st, b, 0, path);
}

/* Every DIR/ *.dSYM/Contents/Resources/DWARF/ file: a bundle renamed or made for another name
 * still matches by UUID. */
static void try_dsyms(search_t *st, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    for (unsigned n = 0; !st->done && n < DSYM_SCAN_MAX && (e = readdir(d)); n++) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".dSYM") != 0) continue;
        char *dwarf;
        if (asprintf(&dwarf, "%s/%s/Contents/Resources/DWARF", dir, e->d_name) < 0) break;
        DIR *dd = opendir(dwarf);
        struct dirent *f;
        for (unsigned m = 0; dd && !st->done && m < DSYM_SCAN_MAX && (f = readdir(dd)); m++)
            if (f->d_name[0] != '.') try_fmt(st, "%s/%s%s", dwarf, f->d_name, "");
        if (dd) closedir(dd);
        free(dwarf);
    }
    closedir(d);
}

/* The user's --symbols directories come before the recorded path, which often holds a stripped
 * copy of the same build. */
static void find_file(const fl_tool_symstore_t *store, const Faultline__Image *img, search_t *st) {
    const fl_tool_symopts_t *o = &store->o;
    const char *base = fl_tool_basename(img->path);
    bool macho = img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID;
    bool gnu = img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU &&
               img->build_id.len >= 2;
    char hex[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(hex, img->build_id.data, img->build_id.len);
    for (size_t i = 0; i < o->ndirs && !st->done; i++) {
        const char *dir = o->dirs[i];
        /* The .build-id tree is named by GNU build-id; a text hash has no entry there. */
        if (gnu) try_fmt(st, "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
        if (base[0]) try_fmt(st, "%s/%s%s", dir, base, "");
        if (macho && base[0]) try_fmt(st, "%s/%s.dSYM/Contents/Resources/DWARF/%s", dir, base, base);
        if (macho) try_dsyms(st, dir);
    }
    /* Only an absolute path: a relative one from a report would be taken from wherever the CLI
     * runs ("../../etc/passwd"). */
    if (img->path && img->path[0] == '/' && !img->path_truncated) try_path(st, img->path);
    /* gdb's order for a debug link: next to the file, its .debug/, the global directory. */
    for (unsigned k = 0; k < st->nlinks && !st->done; k++) {
        const char *d = st->link_dirs[k], *n = st->links[k];
        char *p;
        if (asprintf(&p, "%s/%s", d, n) >= 0) {
            try_link(st, p, st->crcs[k]);
            free(p);
        }
        if (!st->done && asprintf(&p, "%s/.debug/%s", d, n) >= 0) {
            try_link(st, p, st->crcs[k]);
            free(p);
        }
        if (!st->done && o->system_dir && d[0] == '/' && asprintf(&p, "%s%s/%s", o->system_dir, d, n) >= 0) {
            try_link(st, p, st->crcs[k]);
            free(p);
        }
        for (size_t i = 0; i < o->ndirs && !st->done; i++)
            if (asprintf(&p, "%s/%s", o->dirs[i], n) >= 0) {
                try_link(st, p, st->crcs[k]);
                free(p);
            }
    }
    if (gnu && o->system_dir) try_fmt(st, "%s/.build-id/%.2s/%s.debug", o->system_dir, hex, hex + 2);
}

static void resolve(fl_tool_symstore_t *store, const Faultline__Image *img, ident_t *id) {
    search_t st = {.o = &store->o, .img = img};
    find_file(store, img, &st);
    if (st.best) {
        /* A text hash folds 4 KiB into 16 bytes: too weak to key a cache entry on. */
        const char *cache =
            img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_HASH ||
                    img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_SECTION
                ? NULL
                : store->o.cache_dir;
        int e = fl_tool_symindex_get(st.best, st.slice, st.path, cache, &id->ix);
        if (e)
            fprintf(stderr, "faultline: %s: cannot index its symbols: %s\n", fl_tool_clean(st.path),
                    fl_strerror(e));
        fl_tool_bin_close(st.best);
    }
    free(st.path);
    for (unsigned k = 0; k < st.nlinks; k++) {
        free(st.links[k]);
        free(st.link_dirs[k]);
    }
}

static uint64_t ident_hash(int kind, const uint8_t *p, size_t n, const char *path) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    for (; *path; path++) h = (h ^ (unsigned char)*path) * 1099511628211ull;
    return h;
}

static bool store_grow(fl_tool_symstore_t *st) {
    size_t cap = st->cap * 2;
    ident_t **t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < st->cap; i++) {
        ident_t *e = st->tab[i];
        if (!e) continue;
        size_t k = ident_hash(e->kind, e->id, e->len, e->path) & (cap - 1);
        while (t[k]) k = (k + 1) & (cap - 1);
        t[k] = e;
    }
    free(st->tab);
    st->tab = t;
    st->cap = cap;
    return true;
}

/* The store's entry for the image's identity, resolved (files searched) when new. */
static ident_t *lookup_ident(fl_tool_symstore_t *st, const Faultline__Image *img) {
    /* Without a recorded id nothing proves a file is the one that was loaded, and a wrong file
     * gives confidently wrong names: no symbols then. */
    size_t len = img->build_id.len;
    if (len == 0 || len > FL_BUILD_ID_MAX) return &st->none;
    int kind = img->build_id_kind;
    if (st->n * 2 >= st->cap && (st->n >= STORE_MAX || !store_grow(st))) return &st->none;
    const char *path = img->path ? img->path : "";
    size_t k = ident_hash(kind, img->build_id.data, len, path) & (st->cap - 1);
    for (; st->tab[k]; k = (k + 1) & (st->cap - 1)) {
        ident_t *e = st->tab[k];
        if (e->kind == kind && e->len == len && memcmp(e->id, img->build_id.data, len) == 0 &&
            strcmp(e->path, path) == 0)
            return e;
    }
    ident_t *e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(path))) {
        free(e);
        return &st->none;
    }
    e->kind = kind;
    e->len = (unsigned)len;
    memcpy(e->id, img->build_id.data, len);
    st->tab[k] = e;
    st->n++;
    resolve(st, img, e);
    return e;
}

/* The JIT map for the report: the one named, else perf's /tmp/perf-PID.map when it can be the
 * report's process's: written on this host (the report's host name), by this user or root,
 * last modified between the process's start and shortly after its crash (a map of an earlier
 * or later process with the same pid is not). */
static fl_tool_perfmap_t *jit_map(const fl_tool_symopts_t *o, const Faultline__Report *r) {
    if (o->perf_map) return o->perf_map[0] ? fl_tool_perfmap_load(o->perf_map, -1, 0, 0) : NULL;
    const Faultline__Header *h = r->header;
    char host[256] = "", path[64];
    if (!h || h->pid <= 0 || !h->time_unix_ns || gethostname(host, sizeof host - 1) != 0 ||
        strcmp(host, h->hostname) != 0)
        return NULL;
    snprintf(path, sizeof path, "/tmp/perf-%" PRId32 ".map", h->pid);
    uint64_t from = h->process_start_unix_ns > 1000000000u ? h->process_start_unix_ns - 1000000000u : 0;
    return fl_tool_perfmap_load(path, (long)geteuid(), from, h->time_unix_ns + 10000000000u);
}

/* Frame f, looked up at its pc (exact) or at pc-1 (a return address). */
static void resolve_frame(fl_tool_symbolizer_t *s, const Faultline__Frame *f, bool exact,
                          fl_tool_sym_t *out) {
    /* (Not a compound literal: name[] need not be cleared.) */
    out->image = -1;
    out->symbol = out->mangled = out->file = NULL;
    out->offset = 0;
    out->line = 0;
    out->name[0] = 0;
    out->jit = false;
    const Faultline__Report *r = s->r;
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        if (img->start < img->end && f->pc >= img->start && f->pc < img->end) {
            out->image = (int)i;
            break;
        }
    }
    /* A signal return trampoline is named as gdb names it (and looked up at its pc: the handler
     * returned into it, no call precedes it); the frame it interrupted has an exact pc. */
    if (f->signal_trampoline) out->symbol = "<signal handler called>";
    if (out->image < 0 && !f->signal_trampoline) {
        if (!s->jit_tried) s->jit = jit_map(&s->st->o, r);
        s->jit_tried = true;
        uint64_t start, back = !exact && f->pc;
        const char *name = fl_tool_perfmap_find(s->jit, f->pc - back, &start);
        if (name) {
            snprintf(out->name, sizeof out->name, "%s", name);
            out->symbol = out->name;
            out->offset = f->pc - start;
            out->jit = true;
        }
    }
    if (out->image < 0 || f->signal_trampoline) return;
    const Faultline__Image *img = r->images[out->image];
    if (!s->ids[out->image]) s->ids[out->image] = lookup_ident(s->st, img);
    const fl_tool_symindex_t *ix = s->ids[out->image]->ix;
    if (!ix) return;
    uint64_t back = !exact && f->pc > img->start;
    /* Unsigned wrap-around makes this right for a negative load bias too. */
    uint64_t addr = f->pc - back - img->slide;
    fl_tool_loc_t loc;
    if (fl_tool_symindex_lookup(ix, addr, true, &loc) && loc.name[0]) {
        out->mangled = loc.name;
        out->symbol = fl_tool_symbol_display(loc.name, FL_DEMANGLE_SIMPLIFIED, out->name,
                                             sizeof out->name);
        out->offset = addr - loc.sym_addr + back;
    }
    out->file = loc.file;
    out->line = loc.line;
}

/* Runtimes that turn a fault into a call of their own, made to look as if the faulting
 * instruction had called it (its address pushed as the return address, or put in the link
 * register): the frame under such a call holds the faulting pc itself, not a return address. */
static bool injected_call(const char *name) {
    return name && strcmp(name, "runtime.sigpanic") == 0; /* Go (signal_amd64.go preparePanic) */
}

static bool exact_pc(const Faultline__Thread *th, size_t k) {
    const Faultline__Frame *f = th->frames[k];
    return k == 0 || f->method == FAULTLINE__FRAME__METHOD__METHOD_CONTEXT || f->interrupted;
}

void fl_tool_symbolize(fl_tool_symbolizer_t *s, const Faultline__Thread *th, size_t index,
                       fl_tool_sym_t *out) {
    bool exact = exact_pc(th, index);
    if (!exact && s->last_th == th && s->last_index + 1 == index) {
        exact = s->last_injected;
    } else if (!exact) {
        resolve_frame(s, th->frames[index - 1], exact_pc(th, index - 1), out);
        exact = injected_call(out->mangled);
    }
    resolve_frame(s, th->frames[index], exact, out);
    s->last_th = th;
    s->last_index = index;
    s->last_injected = injected_call(out->mangled);
}
