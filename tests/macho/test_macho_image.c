/* SPDX-License-Identifier: MIT */
/* macho: fat slices, headers, segments, sections and address translation against llvm-objdump and
 * llvm-lipo, for files and for an image laid out as dyld would. */
#include <stdlib.h>

#include "macho/macho.h"
#include "oracle.h"
#include "test.h"

static const char *g_objdump, *g_lipo, *g_dir;
static unsigned g_zerofill, g_zerofill_outside; /* zero-fill sections seen, those past the file */

/* The names llvm-objdump gives section types (type S_ZEROFILL etc.), by our flags. */
static const char *sect_type_name(uint32_t flags) {
    switch (flags & 0xffu) {
    case 0x0: return "S_REGULAR";
    case 0x1: return "S_ZEROFILL";
    case 0x2: return "S_CSTRING_LITERALS";
    case 0x6: return "S_NON_LAZY_SYMBOL_POINTERS";
    case 0x7: return "S_LAZY_SYMBOL_POINTERS";
    case 0x8: return "S_SYMBOL_STUBS";
    case 0x9: return "S_MOD_INIT_FUNC_POINTERS";
    case 0xc: return "S_GB_ZEROFILL";
    case 0x11: return "S_THREAD_LOCAL_REGULAR";
    case 0x12: return "S_THREAD_LOCAL_ZEROFILL";
    case 0x13: return "S_THREAD_LOCAL_VARIABLES";
    default: return NULL;
    }
}

static void prot_string(uint32_t prot, char out[4]) {
    out[0] = prot & 1 ? 'r' : '-';
    out[1] = prot & 2 ? 'w' : '-';
    out[2] = prot & 4 ? 'x' : '-';
    out[3] = 0;
}

typedef struct {
    fl_macho_section_t s[256];
    unsigned n;
} sects_t;

static int collect_sect(void *ctx, const fl_macho_section_t *s) {
    sects_t *c = ctx;
    if (c->n < 256) c->s[c->n] = *s;
    c->n++;
    return 0;
}

static int stop_at_third(void *ctx, const fl_macho_section_t *s) {
    (void)s;
    return ++*(unsigned *)ctx == 3 ? 42 : 0;
}

/* Everything the image says about itself, checked against llvm-objdump --private-headers. */
static void check_image(const char *path, const char *arch, const fl_macho_image_t *img,
                        const uint8_t *file, uint64_t slice_off, uint64_t slice_size) {
    or_headers_t *h = calloc(1, sizeof *h);
    CHECK(or_headers(g_objdump, path, arch, h));
    CHECK_EQ_U64(img->ncmds, h->ncmds);
    CHECK_EQ_U64(img->sizeofcmds, h->sizeofcmds);
    CHECK(h->has_uuid && img->has_uuid);
    CHECK(memcmp(img->uuid, h->uuid, 16) == 0);
    CHECK(!img->segments_truncated);
    CHECK_EQ_U64(img->nsegments, h->nseg);
    for (unsigned i = 0; i < img->nsegments && i < h->nseg; i++) {
        const fl_macho_segment_t *s = &img->segments[i];
        const or_segment_t *o = &h->seg[i];
        char maxp[4], initp[4];
        prot_string(s->maxprot, maxp);
        prot_string(s->initprot, initp);
        CHECK_STREQ(s->name, o->name);
        CHECK_EQ_U64(s->vmaddr, o->vmaddr);
        CHECK_EQ_U64(s->vmsize, o->vmsize);
        CHECK_EQ_U64(s->fileoff, o->fileoff);
        CHECK_EQ_U64(s->filesize, o->filesize);
        CHECK_STREQ(maxp, o->maxprot);
        CHECK_STREQ(initp, o->initprot);
        CHECK_EQ_U64(s->nsects, o->nsects);
        if (strcmp(o->name, "__TEXT") == 0) {
            CHECK_EQ_U64(img->text_vmaddr, o->vmaddr);
            CHECK_EQ_U64(img->text_vmsize, o->vmsize);
        }
    }
    sects_t *sc = calloc(1, sizeof *sc);
    CHECK_EQ_U64(fl_macho_image_sections(img, collect_sect, sc), 0);
    CHECK_EQ_U64(sc->n, h->nsect);
    int seen_text = 0, seen_unwind = 0, seen_eh = 0;
    unsigned n_zerofill = 0, n_zerofill_in_file = 0;
    for (unsigned i = 0; i < sc->n && i < h->nsect; i++) {
        const fl_macho_section_t *s = &sc->s[i];
        const or_section_t *o = &h->sect[i];
        CHECK_STREQ(s->sectname, o->sectname);
        CHECK_STREQ(s->segname, o->segname);
        CHECK_EQ_U64(s->vmaddr, o->addr);
        CHECK_EQ_U64(s->size, o->size);
        CHECK_EQ_U64(s->offset, o->offset);
        const char *type = sect_type_name(s->flags);
        if (type) CHECK_STREQ(type, o->type);
        bool zerofill = (s->flags & 0xff) == 1 || (s->flags & 0xff) == 0xc ||
                        (s->flags & 0xff) == 0x12;
        uint64_t at = 0;
        if (!zerofill && s->size) {
            /* A section's bytes are where its offset says, through the segments. */
            CHECK_EQ_U64(fl_macho_image_vm_to_reader(img, s->vmaddr, s->size, &at), 0);
            CHECK_EQ_U64(at, slice_off + s->offset);
        } else if (zerofill && s->size) {
            /* Zero fill has file bytes only where its segment's file size happens to cover it. */
            const or_segment_t *seg = NULL;
            for (unsigned k = 0; k < h->nseg; k++)
                if (!strcmp(h->seg[k].name, o->segname)) seg = &h->seg[k];
            CHECK(seg != NULL);
            if (!seg) continue;
            bool in_file = s->vmaddr - seg->vmaddr < seg->filesize;
            CHECK_EQ_U64(fl_macho_image_vm_to_reader(img, s->vmaddr, 1, &at),
                         in_file ? 0 : FL_ERANGE);
            if (in_file) CHECK_EQ_U64(at, slice_off + seg->fileoff + (s->vmaddr - seg->vmaddr));
            n_zerofill += 1;
            n_zerofill_in_file += in_file;
        }
        if (!strcmp(o->segname, "__TEXT") && !strcmp(o->sectname, "__text")) {
            seen_text = 1;
            CHECK_EQ_U64(img->text_sect_vmaddr, o->addr);
            CHECK_EQ_U64(img->text_sect_size, o->size);
        }
        if (!strcmp(o->segname, "__TEXT") && !strcmp(o->sectname, "__unwind_info")) {
            seen_unwind = 1;
            CHECK_EQ_U64(img->unwind_info_vmaddr, o->addr);
            CHECK_EQ_U64(img->unwind_info_size, o->size);
        }
        if (!strcmp(o->segname, "__TEXT") && !strcmp(o->sectname, "__eh_frame")) {
            seen_eh = 1;
            CHECK_EQ_U64(img->eh_frame_vmaddr, o->addr);
            CHECK_EQ_U64(img->eh_frame_size, o->size);
        }
    }
    CHECK(seen_text && seen_unwind); /* every fixture has code and compact unwind */
    g_zerofill += n_zerofill;
    g_zerofill_outside += n_zerofill - n_zerofill_in_file;
    if (!seen_eh) CHECK(img->eh_frame_vmaddr == 0 && img->eh_frame_size == 0);
    unsigned calls = 0;
    if (sc->n >= 3) CHECK_EQ_U64(fl_macho_image_sections(img, stop_at_third, &calls), 42);
    free(sc);

    CHECK(img->has_symtab == h->has_symtab);
    CHECK_EQ_U64(img->symoff, h->symoff);
    CHECK_EQ_U64(img->nsyms, h->nsyms);
    CHECK_EQ_U64(img->stroff, h->stroff);
    CHECK_EQ_U64(img->strsize, h->strsize);
    CHECK(img->has_local_symbols == (h->has_dysymtab && h->nlocalsym != 0));
    CHECK(h->has_starts);
    CHECK_EQ_U64(img->function_starts_off, h->starts_off);
    CHECK_EQ_U64(img->function_starts_size, h->starts_size);

    /* Translation edges: the header itself, past the file, unmapped addresses. */
    uint64_t at = 0;
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(img, img->text_vmaddr, 32, &at), 0);
    CHECK_EQ_U64(at, slice_off);
    CHECK(memcmp(file + at, "\xcf\xfa\xed\xfe", 4) == 0);
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(img, UINT64_MAX - 3, 8, &at), FL_ERANGE);
    const fl_macho_segment_t *last = &img->segments[img->nsegments - 1];
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(img, last->vmaddr + last->vmsize, 1, &at), FL_ERANGE);
    CHECK_EQ_U64(fl_macho_image_file_to_reader(img, img->symoff, 16, &at), 0);
    CHECK_EQ_U64(at, slice_off + img->symoff);
    CHECK_EQ_U64(fl_macho_image_file_to_reader(img, slice_size - 4, 4, &at), 0);
    CHECK_EQ_U64(fl_macho_image_file_to_reader(img, slice_size - 4, 5, &at), FL_ERANGE);
    free(h);
}

/* Lays the slice out as dyld would (each segment's file bytes at vmaddr + slide) and checks that
 * the loaded image says the same as the file. */
static void check_loaded(const fl_macho_image_t *fimg, const uint8_t *file, uint64_t slide) {
    uint64_t origin = 0, size = 0;
    uint8_t *mem = or_layout_loaded(fimg, file, slide, &origin, &size);
    CHECK(mem != NULL);
    if (!mem) return;
    uint64_t lo = origin - slide;
    CHECK_EQ_U64(lo, fimg->text_vmaddr);
    fl_reader_t r;
    fl_reader_init_buffer(&r, mem, size, origin);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, lo + slide, UINT64_MAX, true), 0);
    CHECK(img.loaded);
    CHECK_EQ_U64(img.slide, slide);
    CHECK(img.has_uuid && memcmp(img.uuid, fimg->uuid, 16) == 0);
    CHECK_EQ_U64(img.nsegments, fimg->nsegments);
    CHECK_EQ_U64(img.text_sect_vmaddr, fimg->text_sect_vmaddr);
    CHECK_EQ_U64(img.unwind_info_vmaddr, fimg->unwind_info_vmaddr);
    CHECK_EQ_U64(img.unwind_info_size, fimg->unwind_info_size);
    CHECK_EQ_U64(img.nsyms, fimg->nsyms);
    uint64_t at = 0, fat = 0;
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(&img, img.unwind_info_vmaddr, img.unwind_info_size,
                                             &at), 0);
    CHECK_EQ_U64(at, img.unwind_info_vmaddr + slide);
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(fimg, img.unwind_info_vmaddr, img.unwind_info_size,
                                             &fat), 0);
    CHECK(memcmp(mem + (at - lo - slide), file + fat, img.unwind_info_size) == 0);
    /* Loaded images reach zero-fill memory too, and nothing outside a segment. */
    const fl_macho_segment_t *last = &img.segments[img.nsegments - 1];
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(&img, last->vmaddr + last->vmsize - 1, 1, &at), 0);
    CHECK_EQ_U64(fl_macho_image_vm_to_reader(&img, last->vmaddr + last->vmsize, 1, &at), FL_ERANGE);
    /* The symbol and string tables through __LINKEDIT. */
    CHECK_EQ_U64(fl_macho_image_file_to_reader(&img, img.symoff, img.nsyms * 16ull, &at), 0);
    CHECK(memcmp(mem + (at - lo - slide), file + fimg->header + img.symoff, img.nsyms * 16ull) ==
          0);
    CHECK_EQ_U64(fl_macho_image_file_to_reader(&img, img.stroff, img.strsize, &at), 0);
    CHECK(memcmp(mem + (at - lo - slide), file + fimg->header + img.stroff, img.strsize) == 0);
    CHECK_EQ_U64(fl_macho_image_file_to_reader(&img, 0, 16, &at), FL_ERANGE); /* not linkedit */
    /* A reader that ends before the commands do cannot be parsed. */
    fl_reader_t shortr;
    fl_reader_init_buffer(&shortr, mem, 64, lo + slide);
    CHECK_EQ_U64(fl_macho_image_init(&img, &shortr, lo + slide, UINT64_MAX, true), FL_EFAULT);
    free(mem);
}

static char *path_of(const char *rel) {
    static char buf[8][4096];
    static unsigned k;
    char *p = buf[k++ % 8];
    snprintf(p, 4096, "%s/%s", g_dir, rel);
    return p;
}

/* A thin file: one slice, the whole file, named as llvm-lipo names it. */
static void check_thin(const char *rel, bool loaded_too) {
    const char *path = path_of(rel);
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_slice_t sl[4];
    unsigned n = 9;
    CHECK_EQ_U64(fl_macho_slices(&r, size, sl, 4, &n), 0);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(sl[0].offset, 0);
    CHECK_EQ_U64(sl[0].size, size);
    or_lines_t l;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' -archs '%s'", g_lipo, path);
    or_run(cmd, &l);
    char want[64] = "";
    if (l.n) sscanf(l.line[0], "%63s", want);
    CHECK_STREQ(fl_macho_arch_name(sl[0].cputype, sl[0].cpusubtype), want);
    or_lines_free(&l);
    fl_macho_image_t img;
    CHECK_EQ_U64(fl_macho_image_init(&img, &r, 0, size, false), 0);
    CHECK(!img.loaded && img.slide == 0 && img.header == 0 && img.limit == size);
    check_image(path, NULL, &img, file, 0, size);
    if (loaded_too) {
        check_loaded(&img, file, 0x5a3000);
        check_loaded(&img, file, 0x7ff800000000ull); /* a shared-cache-like slide */
    }
    printf("%s: %s, %u segments, %u symbols\n", rel, want, img.nsegments, img.nsyms);
    free(file);
}

/* A fat file: slices as llvm-objdump --universal-headers and llvm-lipo -archs list them. */
static void check_fat(const char *rel) {
    const char *path = path_of(rel);
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_slice_t sl[FL_MACHO_FAT_MAX];
    unsigned n = 0;
    CHECK_EQ_U64(fl_macho_slices(&r, size, sl, FL_MACHO_FAT_MAX, &n), 0);
    CHECK_EQ_U64(n, 2);

    or_lines_t l;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' -archs '%s'", g_lipo, path);
    or_run(cmd, &l);
    char archs[256] = "", *p = archs;
    for (unsigned i = 0; i < n; i++)
        p += snprintf(p, sizeof archs - (size_t)(p - archs), "%s%s", i ? " " : "",
                      fl_macho_arch_name(sl[i].cputype, sl[i].cpusubtype));
    char lipo_archs[256] = "";
    if (l.n) snprintf(lipo_archs, sizeof lipo_archs, "%s", l.line[0]);
    for (char *e = lipo_archs + strlen(lipo_archs); e > lipo_archs && e[-1] == ' ';) *--e = 0;
    CHECK_STREQ(archs, lipo_archs);
    or_lines_free(&l);

    snprintf(cmd, sizeof cmd, "'%s' --macho --universal-headers '%s'", g_objdump, path);
    or_run(cmd, &l);
    unsigned k = 0;
    for (size_t i = 0; i < l.n; i++) {
        char key[64];
        const char *v;
        if (!or_kv(l.line[i], key, sizeof key, &v)) continue;
        if (!strcmp(key, "architecture")) k++;
        if (k == 0 || k > n) continue;
        if (!strcmp(key, "offset")) CHECK_EQ_U64(sl[k - 1].offset, strtoull(v, NULL, 0));
        if (!strcmp(key, "size")) CHECK_EQ_U64(sl[k - 1].size, strtoull(v, NULL, 0));
        if (!strcmp(key, "architecture"))
            CHECK_STREQ(fl_macho_arch_name(sl[k - 1].cputype, sl[k - 1].cpusubtype), v);
    }
    CHECK_EQ_U64(k, n);
    or_lines_free(&l);

    for (unsigned i = 0; i < n; i++) {
        fl_macho_image_t img;
        CHECK_EQ_U64(fl_macho_image_init(&img, &r, sl[i].offset, sl[i].size, false), 0);
        CHECK_EQ_U64(img.cputype, sl[i].cputype);
        CHECK_EQ_U64(img.limit, sl[i].offset + sl[i].size);
        check_image(path, fl_macho_arch_name(sl[i].cputype, sl[i].cpusubtype), &img, file,
                    sl[i].offset, sl[i].size);
    }
    /* A cap below the count: the first cap slices and FL_ERANGE. */
    fl_macho_slice_t one;
    CHECK_EQ_U64(fl_macho_slices(&r, size, &one, 1, &n), FL_ERANGE);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(one.offset, sl[0].offset);
    printf("%s: %s\n", rel, archs);
    free(file);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s LLVM_OBJDUMP LLVM_LIPO FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    g_objdump = argv[1];
    g_lipo = argv[2];
    g_dir = argv[3];
    static const char *const thin[] = {"exe", "exe-omitfp", "exe-stripx", "exe-strip",
                                       "libfixture.dylib", "libfixture-stripx.dylib", "big"};
    static const char *const arch[] = {"arm64", "x86_64"};
    for (unsigned a = 0; a < 2; a++)
        for (unsigned i = 0; i < FL_ARRAY_LEN(thin); i++) {
            char rel[256];
            snprintf(rel, sizeof rel, "%s/%s", arch[a], thin[i]);
            check_thin(rel, i == 0 || i == 4);
        }
    check_fat("fat/exe");
    check_fat("fat/libfixture.dylib");

    printf("%u zero-fill sections, %u of them past their segment's file bytes\n", g_zerofill,
           g_zerofill_outside);
    CHECK(g_zerofill > 0);
    CHECK_STREQ(fl_macho_arch_name(FL_MACHO_CPU_ARM64, 2), "arm64e");
    CHECK_STREQ(fl_macho_arch_name(FL_MACHO_CPU_ARM64, 0x80000002u), "arm64e");
    CHECK_STREQ(fl_macho_arch_name(FL_MACHO_CPU_X86_64, 8), "x86_64h");
    CHECK_STREQ(fl_macho_arch_name(FL_MACHO_CPU_X86_64, 0x80000003u), "x86_64");
    CHECK_STREQ(fl_macho_arch_name(7, 3), "unknown");
    TEST_END();
}
