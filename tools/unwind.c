/* SPDX-License-Identifier: MIT */
/* `faultline unwind STATE`: re-walks a thread state captured elsewhere with the crash path's
 * walker (docs/unwind-state.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames/frames.h"
#include "macho/macho.h"
#include "tools/tool.h"

#define STATE_FILE_MAX (256ull << 20) /* the state file, and each memory file */
#define MEMORY_TOTAL_MAX (1ull << 30) /* all ranges, the images' segments included */
#define RANGES_MAX 4096u
#define IMAGES_MAX 256u
#define FRAMES_DEFAULT 512u
#define FRAMES_MAX 65536u

typedef struct range {
    uint64_t addr, len;
    uint8_t *bytes;
} range_t;

/* The state's memory: ranges sorted by address, read through an fl_reader_t (first member, so
 * that the callback finds them). */
typedef struct memory {
    fl_reader_t r;
    range_t *range;
    size_t n;
    uint64_t total;
} memory_t;

typedef struct state {
    char err[512];
    const char *path;
    int arch;
    fl_regs_t regs;
    bool have_pc, have_sp;
    uint64_t stack_lo, stack_hi;
    bool have_stack;
    memory_t mem;
    fl_image_list_t *images;
    fl_tool_bin_t *bins[IMAGES_MAX];
    uint64_t loads[IMAGES_MAX];
    unsigned nbins;
} state_t;

static int mem_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    const memory_t *m = (const memory_t *)(const void *)r;
    size_t lo = 0, hi = m->n; /* the last range starting at or below addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->range[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return FL_EFAULT;
    const range_t *g = &m->range[lo - 1];
    if (addr - g->addr > g->len || len > g->len - (addr - g->addr)) return FL_EFAULT;
    memcpy(dst, g->bytes + (addr - g->addr), len);
    return 0;
}

static bool fail(state_t *s, const fl_tool_jv_t *at, const char *fmt, const char *arg) {
    char msg[400];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    if (at) snprintf(s->err, sizeof s->err, "line %u, column %u: %s", at->line, at->col, msg);
    else snprintf(s->err, sizeof s->err, "%s", msg);
    return false;
}

static bool add_range(state_t *s, const fl_tool_jv_t *at, uint64_t addr, uint64_t len,
                      uint8_t *bytes) {
    memory_t *m = &s->mem;
    if (!len) return free(bytes), true;
    if (m->n >= RANGES_MAX) return free(bytes), fail(s, at, "more than 4096 memory ranges", 0);
    if (addr + len < addr) return free(bytes), fail(s, at, "memory range wraps around", 0);
    if (len > MEMORY_TOTAL_MAX - m->total)
        return free(bytes), fail(s, at, "more than 1 GiB of memory in all", 0);
    range_t *n = realloc(m->range, (m->n + 1) * sizeof *n);
    if (!n) return free(bytes), fail(s, at, "out of memory", 0);
    m->range = n;
    size_t i = m->n;
    while (i && n[i - 1].addr > addr) {
        n[i] = n[i - 1];
        i--;
    }
    n[i] = (range_t){addr, len, bytes};
    m->n++;
    m->total += len;
    if ((i && n[i - 1].addr + n[i - 1].len > addr) || (i + 1 < m->n && addr + len > n[i + 1].addr))
        return fail(s, at, "memory ranges overlap", 0);
    return true;
}

/* A whole file of at most `cap` bytes that must be a regular file. */
static int read_file(const char *path, uint64_t cap, uint8_t **out, uint64_t *len) {
    uint64_t size;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &size);
    if (fd < 0) return fd;
    if (size > cap) {
        close(fd);
        return FL_ERANGE;
    }
    uint8_t *buf = malloc(size ? size : 1);
    uint64_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* shrank meanwhile: what was read */
        got += (uint64_t)n;
    }
    int e = errno;
    close(fd);
    if (!buf) return FL_ENOMEM;
    if (got < size && got == 0 && size) {
        free(buf);
        errno = e;
        return FL_EIO;
    }
    *out = buf;
    *len = got;
    return 0;
}

static const char *err_text(int err) { return err == FL_EIO ? strerror(errno) : fl_strerror(err); }

/* A relative path is taken from the state file's directory. */
static void resolve(const state_t *s, const char *name, char *buf, size_t cap) {
    const char *slash = strrchr(s->path, '/');
    if (name[0] == '/' || !slash) snprintf(buf, cap, "%s", name);
    else snprintf(buf, cap, "%.*s/%s", (int)(slash - s->path), s->path, name);
}

static bool u64_of(state_t *s, const fl_tool_jv_t *v, const char *what, uint64_t *out) {
    if (!v) return fail(s, NULL, "%s is missing", what);
    if (fl_tool_json_u64(v, out))
        return fail(s, v, "%s must be a \"0x...\" string or an unsigned integer", what);
    return true;
}

static bool only_keys(state_t *s, const fl_tool_jv_t *obj, const char *const *keys, const char *what) {
    if (!obj || obj->kind != FL_TOOL_JSON_OBJECT) return fail(s, obj, "%s must be an object", what);
    for (size_t i = 0; i < obj->n; i++) {
        bool known = false;
        for (const char *const *k = keys; *k; k++) known |= strcmp(*k, obj->keys[i]) == 0;
        if (!known) return fail(s, obj->items[i], "unknown field \"%s\"", obj->keys[i]);
    }
    return true;
}

static bool parse_registers(state_t *s, const fl_tool_jv_t *regs) {
    if (!regs || regs->kind != FL_TOOL_JSON_OBJECT) return fail(s, regs, "registers must be an object", 0);
    unsigned count = fl_regs_arch_count(s->arch);
    for (size_t i = 0; i < regs->n; i++) {
        unsigned k = 0;
        while (k < count && strcmp(fl_regs_arch_name(s->arch, k), regs->keys[i]) != 0) k++;
        if (k == count) return fail(s, regs->items[i], "no register \"%s\" on this architecture", regs->keys[i]);
        if (!u64_of(s, regs->items[i], regs->keys[i], &s->regs.r[k])) return false;
        /* (pc 0 is a state like any other: a call through a NULL function pointer) */
        s->have_pc |= strcmp(regs->keys[i], s->arch == FL_REGS_ARCH_X86_64 ? "rip" : "pc") == 0;
        s->have_sp |= strcmp(regs->keys[i], s->arch == FL_REGS_ARCH_X86_64 ? "rsp" : "sp") == 0;
    }
    return true;
}

static bool parse_memory(state_t *s, const fl_tool_jv_t *list) {
    static const char *const keys[] = {"address", "hex", "file", 0};
    if (!list) return true;
    if (list->kind != FL_TOOL_JSON_ARRAY) return fail(s, list, "memory must be an array", 0);
    for (size_t i = 0; i < list->n; i++) {
        const fl_tool_jv_t *e = list->items[i], *hex, *file;
        uint64_t addr, len;
        uint8_t *bytes = NULL;
        if (!only_keys(s, e, keys, "a memory range") || !u64_of(s, fl_tool_json_get(e, "address"), "address", &addr))
            return false;
        hex = fl_tool_json_get(e, "hex");
        file = fl_tool_json_get(e, "file");
        if (!hex == !file) return fail(s, e, "a memory range has either \"hex\" or \"file\"", 0);
        if (hex) {
            if (hex->kind != FL_TOOL_JSON_STRING || hex->len % 2)
                return fail(s, hex, "hex must be a string of whole bytes", 0);
            len = hex->len / 2;
            if (!(bytes = malloc(len ? len : 1))) return fail(s, hex, "out of memory", 0);
            for (uint64_t k = 0; k < len; k++) {
                int hi = fl_tool_hex_digit(hex->str[2 * k]), lo = fl_tool_hex_digit(hex->str[2 * k + 1]);
                if (hi < 0 || lo < 0) return free(bytes), fail(s, hex, "hex holds a non-hex digit", 0);
                bytes[k] = (uint8_t)(hi << 4 | lo);
            }
        } else {
            char path[4096];
            if (file->kind != FL_TOOL_JSON_STRING) return fail(s, file, "file must be a string", 0);
            resolve(s, file->str, path, sizeof path);
            int err = read_file(path, STATE_FILE_MAX, &bytes, &len);
            if (err) {
                char msg[300];
                snprintf(msg, sizeof msg, "%.200s: %s", path, err == FL_ERANGE ? "larger than 256 MiB" : err_text(err));
                return fail(s, file, "%s", msg);
            }
        }
        if (!add_range(s, e, addr, len, bytes)) return false;
    }
    return true;
}

/* Maps a Mach-O slice's segments at vmaddr + slide (file bytes, then zeros to vmsize). */
static bool map_macho(state_t *s, const fl_tool_jv_t *at, const fl_macho_image_t *mi, uint64_t load) {
    uint64_t slide = load - mi->text_vmaddr;
    for (unsigned k = 0; k < mi->nsegments; k++) {
        const fl_macho_segment_t *g = &mi->segments[k];
        if (!g->vmsize || (!g->filesize && !g->vmaddr)) continue; /* __PAGEZERO */
        if (g->vmsize > MEMORY_TOTAL_MAX || g->filesize > g->vmsize)
            return fail(s, at, "a segment of the image is too large or malformed", 0);
        uint8_t *b = calloc(1, g->vmsize);
        if (!b) return fail(s, at, "out of memory", 0);
        if (g->filesize && fl_read(mi->r, mi->header + g->fileoff, b, g->filesize)) {
            free(b);
            return fail(s, at, "a segment of the image lies outside its file", 0);
        }
        if (!add_range(s, at, g->vmaddr + slide, g->vmsize, b)) return false;
    }
    return true;
}

/* Maps an ELF file's PT_LOADs at vaddr + bias, bias = load - (first PT_LOAD's page). */
static bool map_elf(state_t *s, const fl_tool_jv_t *at, const char *path, uint64_t load,
                    uint64_t *phdr_addr, unsigned *phnum, uint64_t *bias_out) {
    uint8_t *file;
    uint64_t size;
    int err = read_file(path, MEMORY_TOTAL_MAX, &file, &size);
    if (err) return fail(s, at, "cannot read the image: %s", err_text(err));
    uint64_t phoff;
    uint16_t phentsize, n;
    bool ok = false, first = true;
    uint64_t bias = 0;
    if (size < 64) goto out;
    memcpy(&phoff, file + 0x20, 8);
    memcpy(&phentsize, file + 0x36, 2);
    memcpy(&n, file + 0x38, 2);
    if (phentsize != 56 || !n || n > FL_PHNUM_MAX || phoff > size || (uint64_t)n * 56 > size - phoff) goto out;
    *phnum = n;
    *phdr_addr = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *ph = file + phoff + 56ull * i;
        uint32_t type;
        uint64_t off, vaddr, filesz, memsz;
        memcpy(&type, ph, 4);
        memcpy(&off, ph + 8, 8);
        memcpy(&vaddr, ph + 16, 8);
        memcpy(&filesz, ph + 32, 8);
        memcpy(&memsz, ph + 40, 8);
        if (type != 1 /* PT_LOAD */) continue;
        if (first) {
            bias = load - (vaddr & ~0xfffull);
            first = false;
        }
        if (filesz > memsz || off > size || filesz > size - off || memsz > MEMORY_TOTAL_MAX) goto out;
        if (phoff >= off && phoff - off < filesz) *phdr_addr = vaddr + (phoff - off) + bias;
        uint8_t *b = calloc(1, memsz ? memsz : 1);
        if (!b) goto out;
        memcpy(b, file + off, filesz);
        if (!add_range(s, at, vaddr + bias, memsz, b)) {
            free(file);
            return false;
        }
    }
    ok = !first && *phdr_addr;
out:
    free(file);
    *bias_out = bias;
    return ok || fail(s, at, "the ELF image has no loadable segment holding its program headers", 0);
}

/* Maps the image file at path as loaded at load (its first byte's address). */
static bool add_image(state_t *s, const fl_tool_jv_t *at, const char *path, uint64_t load) {
    if (s->nbins >= IMAGES_MAX) return fail(s, at, "more than 256 images", 0);
    fl_tool_bin_t *b;
    int err = fl_tool_bin_open(path, &b);
    if (err) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.200s: %s", path, err_text(err));
        return fail(s, at, "%s", msg);
    }
    s->bins[s->nbins] = b;
    s->loads[s->nbins++] = load;
    fl_image_t *img = &s->images->image[s->images->count];
    memset(img, 0, sizeof *img);
    if (fl_tool_bin_kind(b) == FL_TOOL_BIN_ELF) {
        uint64_t phdr = 0, bias = 0;
        unsigned phnum = 0;
        if (fl_elf_file_machine(fl_tool_bin_elf(b)) != (s->arch == FL_REGS_ARCH_X86_64 ? 62u : 183u))
            return fail(s, at, "%.300s is not of the state's architecture", path);
        if (!map_elf(s, at, path, load, &phdr, &phnum, &bias)) return false;
        /* After all ranges are in: the program headers are read through the state's memory. */
        img->phdr_addr = phdr;
        img->phnum = (uint16_t)phnum;
        img->slide = bias;
    } else {
        int slice = fl_tool_bin_find_arch(b, s->arch == FL_REGS_ARCH_X86_64 ? "x86_64" : "arm64");
        const fl_macho_image_t *mi = slice >= 0 ? fl_tool_bin_macho(b, (unsigned)slice) : NULL;
        if (!mi) return fail(s, at, "%.300s has no Mach-O slice of the state's architecture", path);
        if (!map_macho(s, at, mi, load)) return false;
        img->cputype = mi->cputype; /* marks it Mach-O until described below */
    }
    img->start = load;
    if (strlen(path) >= sizeof img->path) return fail(s, at, "the image's path is longer than 511 bytes", 0);
    memcpy(img->path, path, strlen(path) + 1);
    s->images->count++;
    return true;
}

static bool parse_images(state_t *s, const fl_tool_jv_t *list) {
    static const char *const keys[] = {"path", "load_address", 0};
    if (!list) return true;
    if (list->kind != FL_TOOL_JSON_ARRAY) return fail(s, list, "images must be an array", 0);
    if (list->n > IMAGES_MAX) return fail(s, list, "more than 256 images", 0);
    for (size_t i = 0; i < list->n; i++) {
        const fl_tool_jv_t *e = list->items[i], *p = fl_tool_json_get(e, "path");
        uint64_t load;
        char path[4096];
        if (!only_keys(s, e, keys, "an image") || !u64_of(s, fl_tool_json_get(e, "load_address"), "load_address", &load))
            return false;
        if (!p || p->kind != FL_TOOL_JSON_STRING) return fail(s, e, "an image needs a \"path\" string", 0);
        resolve(s, p->str, path, sizeof path);
        if (!add_image(s, p, path, load)) return false;
    }
    return true;
}

/* Fills each image from the mapped memory, as the platform's collector would from the live
 * process: the same parsers, the same fields. */
static bool describe_images(state_t *s) {
    for (unsigned i = 0; i < s->images->count; i++) {
        fl_image_t *img = &s->images->image[i];
        char path[FL_IMAGE_PATH_MAX];
        memcpy(path, img->path, sizeof path);
        int err = img->cputype ? fl_macho_image_describe(&s->mem.r, img->start, img)
                               : fl_elf_image_from_phdrs(&s->mem.r, img->phdr_addr, img->phnum,
                                                         img->slide, img);
        memcpy(img->path, path, sizeof path);
        if (err) return fail(s, NULL, "%.300s: cannot be described from its mapped segments", path);
    }
    fl_images_sort(s->images);
    return true;
}

static bool load_state(state_t *s, const char *path) {
    static const char *const keys[] = {"faultline_unwind_state", "arch", "registers", "stack",
                                       "memory", "images", 0};
    uint8_t *text;
    uint64_t len;
    s->path = path;
    s->mem.r.read = mem_read;
    int err = read_file(path, STATE_FILE_MAX, &text, &len);
    if (err) return fail(s, NULL, "cannot read it: %s", err == FL_ERANGE ? "larger than 256 MiB" : err_text(err));
    fl_tool_jv_t *doc = fl_tool_json_parse((const char *)text, len, s->err, sizeof s->err);
    free(text);
    if (!doc) return false;
    bool ok = false;
    uint64_t version;
    const fl_tool_jv_t *arch = fl_tool_json_get(doc, "arch"), *stack;
    if (!only_keys(s, doc, keys, "the state") ||
        !u64_of(s, fl_tool_json_get(doc, "faultline_unwind_state"), "faultline_unwind_state", &version))
        goto out;
    if (version != 1) {
        fail(s, fl_tool_json_get(doc, "faultline_unwind_state"), "format version %s is not 1", "");
        goto out;
    }
    if (!arch || arch->kind != FL_TOOL_JSON_STRING ||
        (strcmp(arch->str, "x86_64") != 0 && strcmp(arch->str, "arm64") != 0)) {
        fail(s, arch, "arch must be \"x86_64\" or \"arm64\"", 0);
        goto out;
    }
    s->arch = strcmp(arch->str, "x86_64") == 0 ? FL_REGS_ARCH_X86_64 : FL_REGS_ARCH_ARM64;
    if (s->arch != fl_regs_arch()) {
        snprintf(s->err, sizeof s->err,
                 "the state is %s and this faultline walks %s stacks only: use a build for %s "
                 "(docs/unwind-state.md)", arch->str, fl_tool_arch_name(fl_regs_arch()), arch->str);
        goto out;
    }
    if (!parse_registers(s, fl_tool_json_get(doc, "registers"))) goto out;
    if (!s->have_pc || !s->have_sp) {
        fail(s, NULL, "the registers must include pc and sp", 0);
        goto out;
    }
    if ((stack = fl_tool_json_get(doc, "stack"))) {
        static const char *const skeys[] = {"low", "high", 0};
        if (!only_keys(s, stack, skeys, "stack") ||
            !u64_of(s, fl_tool_json_get(stack, "low"), "stack.low", &s->stack_lo) ||
            !u64_of(s, fl_tool_json_get(stack, "high"), "stack.high", &s->stack_hi))
            goto out;
        if (s->stack_hi <= s->stack_lo) {
            fail(s, stack, "stack.high must be above stack.low", 0);
            goto out;
        }
        s->have_stack = true;
    }
    if (!(s->images = calloc(1, sizeof *s->images))) {
        fail(s, NULL, "out of memory", 0);
        goto out;
    }
    ok = parse_memory(s, fl_tool_json_get(doc, "memory")) &&
         parse_images(s, fl_tool_json_get(doc, "images")) && describe_images(s);
out:
    fl_tool_json_free(doc);
    return ok;
}

static void state_free(state_t *s) {
    for (size_t i = 0; i < s->mem.n; i++) free(s->mem.range[i].bytes);
    free(s->mem.range);
    for (unsigned i = 0; i < s->nbins; i++) fl_tool_bin_close(s->bins[i]);
    free(s->images);
}

/* A walk's frames as the report's messages: fr[0..n), pointed to by frp. */
static void frames_to_pb(const fl_frame_t *frames, unsigned n, Faultline__Frame *fr,
                         Faultline__Frame **frp) {
    for (unsigned i = 0; i < n; i++) {
        faultline__frame__init(&fr[i]);
        fr[i].pc = frames[i].pc;
        fr[i].sp = frames[i].sp;
        fr[i].method = (Faultline__Frame__Method)frames[i].method;
        fr[i].signal_trampoline = frames[i].flags & FL_FRAME_TRAMPOLINE;
        fr[i].interrupted = i > 0 && (frames[i - 1].flags & FL_FRAME_TRAMPOLINE);
        frp[i] = &fr[i];
    }
}

/* The walk as a one-thread report, rendered like `faultline show` (frames symbolized through
 * the images' own files). */
static int render(state_t *s, const fl_frame_t *frames, const fl_dwarf_regs_t *fregs,
                  const fl_walk_result_t *res, fl_tool_format_t format,
                  const fl_tool_symopts_t *opts) {
    unsigned nregs = fl_regs_arch_count(s->arch);
    Faultline__Report rep = FAULTLINE__REPORT__INIT;
    Faultline__Header hdr = FAULTLINE__HEADER__INIT;
    Faultline__Thread th = FAULTLINE__THREAD__INIT;
    Faultline__Thread *ths[1] = {&th};
    Faultline__Register *regs = calloc(nregs, sizeof *regs), **regp = calloc(nregs, sizeof *regp);
    Faultline__Frame *fr = calloc(res->count ? res->count : 1, sizeof *fr),
                     **frp = calloc(res->count ? res->count : 1, sizeof *frp);
    Faultline__Image *im = calloc(s->images->count + 1, sizeof *im),
                     **imp = calloc(s->images->count + 1, sizeof *imp);
    /* Each frame's registers as the walk knew them, by DWARF number (--format json). */
    const char *names[FL_DWARF_REGS];
    uint64_t *values = calloc((size_t)(res->count ? res->count : 1) * FL_DWARF_REGS, sizeof *values),
             *known = calloc(res->count ? res->count : 1, sizeof *known);
    int rc = 1;
    if (!regs || !regp || !fr || !frp || !im || !imp || !values || !known) {
        fprintf(stderr, "faultline: out of memory\n");
        goto out;
    }
    rep.magic = "faultline";
    rep.format_version = 2;
    rep.header = &hdr;
    hdr.arch = (Faultline__Arch)s->arch;
    hdr.reason = "unwind";
    hdr.process_path = (char *)s->path;
    rep.complete = true;
    rep.n_threads = 1;
    rep.threads = ths;
    th.crashed = true;
    th.unwind_stop = (char *)res->stop_reason;
    th.frames_truncated = res->truncated;
    th.frames_omitted = res->omitted;
    th.frames_omitted_at = res->omitted_at;
    for (unsigned i = 0; i < nregs; i++) {
        faultline__register__init(&regs[i]);
        regs[i].name = (char *)fl_regs_arch_name(s->arch, i);
        regs[i].value = s->regs.r[i];
        regp[i] = &regs[i];
    }
    th.n_registers = nregs;
    th.registers = regp;
    frames_to_pb(frames, res->count, fr, frp);
    th.n_frames = res->count;
    th.frames = frp;
    for (unsigned i = 0; i < s->images->count; i++) {
        const fl_image_t *g = &s->images->image[i];
        faultline__image__init(&im[i]);
        im[i].path = (char *)g->path;
        im[i].build_id.data = (uint8_t *)g->build_id;
        im[i].build_id.len = g->build_id_len;
        im[i].build_id_kind = (Faultline__Image__BuildIdKind)g->build_id_kind;
        im[i].slide = g->slide;
        im[i].start = g->start;
        im[i].end = g->end;
        im[i].text_start = g->text_start;
        im[i].text_end = g->text_end;
        im[i].is_main = g->is_main;
        imp[i] = &im[i];
    }
    rep.n_images = s->images->count;
    rep.images = imp;
    for (unsigned d = 0; d < FL_DWARF_REGS; d++) names[d] = fl_dwarf_reg_name(s->arch, d);
    for (unsigned i = 0; i < res->count; i++)
        for (unsigned d = 0; d < FL_DWARF_REGS; d++) {
            values[(size_t)i * FL_DWARF_REGS + d] = fregs[i].r[d];
            if ((fregs[i].valid >> d & 1) && names[d][0]) known[i] |= 1ull << d;
        }
    fl_tool_frame_regs_t fregs_out = {.count = res->count, .nnames = FL_DWARF_REGS,
                                      .names = names, .values = values, .known = known};
    fl_tool_symstore_t *st = fl_tool_symstore_new(opts);
    fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, &rep) : NULL;
    if (!sym) {
        fprintf(stderr, "faultline: out of memory\n");
    } else {
        if (format == FL_TOOL_FMT_JSON) fl_tool_show_json_regs(stdout, &rep, false, sym, &fregs_out);
        else fl_tool_render(stdout, format, &rep, false, sym);
        rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    }
    fl_tool_symbolizer_free(sym);
    fl_tool_symstore_free(st);
out:
    free(regs), free(regp), free(fr), free(frp), free(im), free(imp), free(values), free(known);
    return rc;
}

/* The file to map for a report's image: the recorded path, else DIR/<basename> of each
 * --symbols directory, whichever has the recorded identity (an image without one: the recorded
 * path as it is). Unwind tables are in the binary itself, not in a separated debug file. */
static bool image_file(const Faultline__Image *img, const fl_tool_symopts_t *opts, char *out, size_t cap) {
    for (size_t d = 0; d <= opts->ndirs; d++) {
        if (d == 0) snprintf(out, cap, "%s", img->path);
        else snprintf(out, cap, "%s/%s", opts->dirs[d - 1], fl_tool_basename(img->path));
        fl_tool_bin_t *b;
        if (fl_tool_bin_open(out, &b) != 0) continue;
        uint8_t id[64];
        unsigned len = 0;
        bool same = !img->build_id.len ||
                    (fl_tool_bin_id(b, 0, id, sizeof id, &len) == 0 && len == img->build_id.len &&
                     memcmp(id, img->build_id.data, len) == 0);
        fl_tool_bin_close(b);
        if (same) return true;
    }
    return false;
}

/* `faultline unwind REPORT`: each thread that has registers and stack memory in the report is
 * walked again offline, over that memory and the images' files; the report is then shown with
 * those frames (the others as recorded). */
static int unwind_report(const char *path, unsigned max, fl_tool_format_t format,
                         const fl_tool_symopts_t *opts) {
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_read_file(path, &r, &truncated);
    if (err) {
        fl_tool_read_error(path, err);
        return 1;
    }
    int rc = 1;
    state_t *s = calloc(1, sizeof *s);
    int arch = r->header ? (int)r->header->arch : 0;
    size_t nt = r->n_threads;
    Faultline__Frame **saved = calloc(nt ? nt : 1, sizeof *saved);
    Faultline__Frame ***saved_p = calloc(nt ? nt : 1, sizeof *saved_p);
    size_t *saved_n = calloc(nt ? nt : 1, sizeof *saved_n);
    char **saved_stop = calloc(nt ? nt : 1, sizeof *saved_stop);
    char **stops = calloc(nt ? nt : 1, sizeof *stops);
    fl_frame_t *frames = calloc(max, sizeof *frames);
    if (!s || !saved || !saved_p || !saved_n || !saved_stop || !stops || !frames) {
        fprintf(stderr, "faultline: out of memory\n");
        goto out;
    }
    if (arch != fl_regs_arch()) {
        fprintf(stderr, "faultline: %s: the report is %s and this faultline walks %s stacks only "
                        "(docs/unwind-state.md)\n", fl_tool_clean(path), fl_tool_arch_name(arch),
                fl_tool_arch_name(fl_regs_arch()));
        goto out;
    }
    s->arch = arch;
    s->path = path;
    s->mem.r.read = mem_read;
    if (!(s->images = calloc(1, sizeof *s->images))) goto out;
    /* One state for all threads: their stacks do not overlap, the images are mapped once. */
    size_t walked = 0;
    for (size_t i = 0; i < r->n_memory; i++) {
        const Faultline__Memory *m = r->memory[i];
        uint8_t *copy = malloc(m->data.len ? m->data.len : 1);
        if (!copy) goto out;
        memcpy(copy, m->data.data, m->data.len);
        if (!add_range(s, NULL, m->start, m->data.len, copy)) {
            fprintf(stderr, "faultline: %s: stack memory of thread %d: %s\n", fl_tool_clean(path),
                    (int)m->tid, fl_tool_clean(s->err));
            goto out;
        }
    }
    for (size_t i = 0; i < r->n_images && s->nbins < IMAGES_MAX; i++) {
        char file[4096];
        if (!image_file(r->images[i], opts, file, sizeof file)) continue; /* walked without it */
        if (!add_image(s, NULL, file, r->images[i]->start)) {
            fprintf(stderr, "faultline: %s: %s\n", fl_tool_clean(file), fl_tool_clean(s->err));
            goto out;
        }
    }
    if (!describe_images(s)) {
        fprintf(stderr, "faultline: %s: %s\n", fl_tool_clean(path), fl_tool_clean(s->err));
        goto out;
    }
    for (size_t i = 0; i < nt; i++) {
        Faultline__Thread *t = r->threads[i];
        const Faultline__Memory *m = NULL;
        for (size_t k = 0; k < r->n_memory && !m; k++)
            if (r->memory[k]->tid == t->tid && r->memory[k]->data.len) m = r->memory[k];
        if (!m || !t->n_registers) continue;
        fl_regs_t regs;
        memset(&regs, 0, sizeof regs);
        unsigned count = fl_regs_arch_count(arch);
        for (size_t k = 0; k < t->n_registers; k++)
            for (unsigned j = 0; j < count; j++)
                if (strcmp(fl_regs_arch_name(arch, j), t->registers[k]->name) == 0) regs.r[j] = t->registers[k]->value;
        fl_walk_env_t env = {.mem = &s->mem.r, .images = s->images, .stack_lo = m->start,
                             .stack_hi = m->start + m->data.len, .concurrent = true, .use_cfi = true};
        fl_walk_result_t res;
        fl_frames_walk(&env, &regs, frames, max, &res);
        Faultline__Frame *fr = calloc(res.count ? res.count : 1, sizeof *fr);
        Faultline__Frame **frp = calloc(res.count ? res.count : 1, sizeof *frp);
        char *stop = malloc(512);
        if (!fr || !frp || !stop) {
            free(fr), free(frp), free(stop);
            fprintf(stderr, "faultline: out of memory\n");
            goto out;
        }
        frames_to_pb(frames, res.count, fr, frp);
        snprintf(stop, 512, "re-walked offline from %zu bytes of stack memory (%zu frames recorded): %s",
                 m->data.len, t->n_frames, res.stop_reason ? res.stop_reason : "");
        saved[i] = fr; /* ours, freed below */
        saved_p[i] = t->frames;
        saved_n[i] = t->n_frames;
        saved_stop[i] = t->unwind_stop;
        stops[i] = stop;
        t->frames = frp;
        t->n_frames = res.count;
        t->unwind_stop = stop;
        t->frames_omitted = res.omitted;
        t->frames_omitted_at = res.omitted_at;
        t->frames_truncated = res.truncated;
        walked++;
    }
    if (!walked)
        fprintf(stderr, "faultline: %s: no thread has stack memory in the report (fl_options."
                        "crashed_stack_bytes, stack_bytes): shown as recorded\n", fl_tool_clean(path));
    fl_tool_symstore_t *st = fl_tool_symstore_new(opts);
    fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, r) : NULL;
    if (sym) {
        fl_tool_render(stdout, format, r, truncated, sym);
        rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    } else {
        fprintf(stderr, "faultline: out of memory\n");
    }
    fl_tool_symbolizer_free(sym);
    fl_tool_symstore_free(st);
out:
    /* The reader's own frames go back before the report is freed by its allocator. */
    for (size_t i = 0; saved_p && i < nt; i++) {
        if (!stops || !stops[i]) continue;
        free(r->threads[i]->frames);
        r->threads[i]->frames = saved_p[i];
        r->threads[i]->n_frames = saved_n[i];
        r->threads[i]->unwind_stop = saved_stop[i];
        free(saved[i]);
        free(stops[i]);
    }
    free(saved), free(saved_p), free(saved_n), free(saved_stop), free(stops), free(frames);
    if (s) state_free(s);
    free(s);
    fl_report_free(r);
    return rc;
}

int fl_tool_cmd_unwind(int argc, char **argv) {
    const char *path = NULL;
    fl_tool_format_t format = FL_TOOL_FMT_TEXT;
    unsigned max = FRAMES_DEFAULT;
    fl_tool_cli_t c;
    if (!fl_tool_cli_init(&c, argc)) return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int k = fl_tool_cli_option(&c, argc, argv, &i);
        if (k == 0) k = fl_tool_cli_format(argc, argv, &i, &format);
        if (k < 0) goto usage;
        if (k > 0) continue;
        if (strcmp(a, "--max-frames") == 0 && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || !v || v > FRAMES_MAX) {
                fprintf(stderr, "faultline: --max-frames takes 1 to %u\n", FRAMES_MAX);
                goto usage;
            }
            max = (unsigned)v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "faultline: unknown option %s\n", fl_tool_clean(a));
            goto usage;
        } else if (path) {
            fprintf(stderr, "faultline: unwind takes one state file\n");
            goto usage;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "faultline: unwind needs a state file or a report (docs/unwind-state.md)\n");
        goto usage;
    }
    if (fl_tool_is_report_file(path)) {
        int rc = unwind_report(path, max, format, &c.sym);
        fl_tool_cli_free(&c);
        return rc;
    }
    state_t *s = calloc(1, sizeof *s);
    fl_frame_t *frames = calloc(max, sizeof *frames);
    fl_dwarf_regs_t *fregs = calloc(max, sizeof *fregs);
    int rc = 1;
    if (!s || !frames || !fregs) {
        fprintf(stderr, "faultline: out of memory\n");
    } else if (!load_state(s, path)) {
        fprintf(stderr, "faultline: %s: %s\n", fl_tool_clean(path), fl_tool_clean(s->err));
    } else {
        const fl_reader_t *mem = &s->mem.r;
        uint64_t sp = fl_regs_sp(&s->regs), lo = s->stack_lo, hi = s->stack_hi;
        if (!s->have_stack) { /* the memory range holding sp */
            for (size_t i = 0; i < s->mem.n; i++)
                if (sp >= s->mem.range[i].addr && sp - s->mem.range[i].addr < s->mem.range[i].len)
                    lo = s->mem.range[i].addr, hi = lo + s->mem.range[i].len;
        }
        /* concurrent: tables only through the reader (nothing of this process is walked), and
         * no LLVM libunwind, which would read this process's memory at those addresses. */
        fl_walk_env_t env = {.mem = mem, .images = s->images, .stack_lo = lo, .stack_hi = hi,
                             .concurrent = true, .use_cfi = true, .frame_regs = fregs};
        fl_walk_result_t res;
        fl_frames_walk(&env, &s->regs, frames, max, &res);
        rc = render(s, frames, fregs, &res, format, &c.sym);
    }
    if (s) state_free(s);
    free(s);
    free(frames);
    free(fregs);
    fl_tool_cli_free(&c);
    return rc;
usage:
    fl_tool_cli_free(&c);
    return fl_tool_usage(NULL);
}
