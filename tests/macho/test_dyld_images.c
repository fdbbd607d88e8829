/* SPDX-License-Identifier: MIT */
/* macho: dyld's all-image-infos walked through a reader, over instances laid out by Apple's headers. */
/* The structures come from tests/darwin/apple_layouts.c (zig, Apple's types, x86_64-macos and
 * aarch64-macos: argv[1]/<arch>/<name>.bin) and are placed in a fake address space; hostile
 * variants: unreadable, truncated, NULL array, count too large, changing timestamp and array,
 * version 1, a short infos size, an image that does not parse, a path without end. */
#include <stdio.h>
#include <string.h>

#include "macho/dyld_images.h"
#include "test.h"
#include "tests/darwin/apple_layouts.h"

static const char *g_dir, *g_arch;
static uint8_t g_mem[FIX_SIZE];
static uint64_t g_limit;          /* reads ending above this fail */
static uint64_t g_hole, g_hole_end; /* and reads touching [g_hole, g_hole_end) */
static const uint8_t *g_swap;     /* copied over the infos once the array was read */
static uint8_t g_blob[4096];
static fl_image_list_t g_list;

static size_t load(const char *name, void *buf, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.bin", g_dir, g_arch, name);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap, f) : 0;
    if (f) fclose(f);
    if (!n) fprintf(stderr, "missing %s\n", path);
    CHECK(n > 0);
    return n;
}

static void place(uint64_t addr, const char *name) {
    size_t n = load(name, g_blob, sizeof g_blob);
    memcpy(g_mem + (addr - FIX_BASE), g_blob, n);
}

static int mem_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    (void)r;
    if (addr < FIX_BASE || addr > g_limit || len > g_limit - addr) return FL_EFAULT;
    if (addr < g_hole_end && addr + len > g_hole) return FL_EFAULT;
    memcpy(dst, g_mem + (addr - FIX_BASE), len);
    if (g_swap && addr == FIX_ARRAY) {
        memcpy(g_mem + (FIX_INFOS - FIX_BASE), g_swap, FL_DYLD_INFOS_V15_SIZE);
        g_swap = NULL;
    }
    return 0;
}
static const fl_reader_t g_reader = {.read = mem_read};

/* A fresh address space holding `infos` and the three images. */
static void setup(const char *infos) {
    memset(g_mem, 0, sizeof g_mem);
    g_limit = FIX_BASE + FIX_SIZE;
    g_hole = g_hole_end = 0;
    g_swap = NULL;
    place(FIX_INFOS, infos);
    place(FIX_ARRAY, "array");
    place(FIX_IMG0, "img0");
    place(FIX_IMG1, "img1");
    place(FIX_DYLD, "dyldimg");
    strcpy((char *)g_mem + (FIX_PATH0 - FIX_BASE), "/fix/app");
    strcpy((char *)g_mem + (FIX_PATH1 - FIX_BASE), "/fix/lib.dylib");
    strcpy((char *)g_mem + (FIX_DYLD_PATH - FIX_BASE), "/fix/dyld");
}

static int collect(uint64_t infos_size) {
    fl_macho_dyld_t d = {.infos = FIX_INFOS, .infos_size = infos_size, .exe_header = FIX_IMG0,
                         .exe = "/fix/exe-at-install"};
    memset(&g_list, 0xa5, sizeof g_list.image[0]); /* stale data must not show */
    return fl_macho_dyld_collect(&g_reader, &d, &g_list);
}

static const fl_image_t *find(uint64_t header) {
    for (unsigned i = 0; i < g_list.count; i++)
        if (g_list.image[i].start == header) return &g_list.image[i];
    return NULL;
}

/* The image at `header` as described by its __TEXT (size) and LC_UUID (bytes u). */
static void check_image(uint64_t header, uint64_t size, uint8_t u, const char *path, bool main) {
    const fl_image_t *img = find(header);
    CHECK(img != NULL);
    if (!img) return;
    CHECK_EQ_U64(img->end, header + size);
    CHECK_EQ_U64(img->text_start, header);
    CHECK_EQ_U64(img->slide, header - FIX_TEXT_VMADDR);
    CHECK_EQ_U64(img->cputype, !strcmp(g_arch, "x86_64") ? FL_MACHO_CPU_X86_64 : FL_MACHO_CPU_ARM64);
    CHECK(img->build_id_kind == FL_BUILD_ID_MACHO_UUID && img->build_id_len == 16);
    uint8_t want[16];
    memset(want, u, sizeof want);
    CHECK(memcmp(img->build_id, want, 16) == 0);
    CHECK_STREQ(img->path, path);
    CHECK(img->is_main == main);
}

static void test_arch(const char *arch) {
    g_arch = arch;
    const uint64_t full = 512; /* the kernel's all_image_info_size is larger than version 15's */

    setup("infos15"); /* two images (one listed twice) and dyld */
    CHECK(collect(full) == 0);
    CHECK_EQ_U64(g_list.count, 3);
    CHECK(!g_list.truncated && !g_list.inconsistent);
    check_image(FIX_IMG0, 0x4000, 0x11, "/fix/app", true);
    check_image(FIX_IMG1, 0x8000, 0x22, "/fix/lib.dylib", false);
    check_image(FIX_DYLD, 0x2000, 0x33, "/fix/dyld", false);
    CHECK(g_list.sorted == g_list.count);

    setup("infos15"); /* a size without version 15's fields: no dyldPath, no timestamp */
    CHECK(collect(FL_DYLD_INFOS_V15_SIZE - 1) == 0);
    CHECK_EQ_U64(g_list.count, 3);
    check_image(FIX_DYLD, 0x2000, 0x33, "/usr/lib/dyld", false);

    setup("infos1"); /* version 1: no dyldImageLoadAddress */
    CHECK(collect(full) == 0);
    CHECK_EQ_U64(g_list.count, 2);
    CHECK(find(FIX_DYLD) == NULL);

    setup("infosnull"); /* dyld is changing the list */
    CHECK(collect(full) == 0);
    CHECK_EQ_U64(g_list.count, 2);
    CHECK(g_list.inconsistent);
    check_image(FIX_IMG0, 0x4000, 0x11, "/fix/exe-at-install", true);
    check_image(FIX_DYLD, 0x2000, 0x33, "/fix/dyld", false);

    setup("infobig"); /* a count beyond FL_IMAGES_MAX: cut there, the rest of the array empty */
    CHECK(collect(full) == 0);
    CHECK(g_list.truncated && !g_list.inconsistent);
    CHECK_EQ_U64(g_list.count, 3);

    setup("infobig"); /* the array runs into unreadable memory */
    g_limit = FIX_ARRAY + 3 * sizeof(fl_dyld_image_info_t) + 8;
    CHECK(collect(full) == 0);
    CHECK(g_list.inconsistent);
    CHECK(find(FIX_IMG0) == NULL);

    setup("infos15"); /* the infos truncated after 6 bytes */
    g_hole = FIX_INFOS + 6;
    g_hole_end = FIX_ARRAY;
    CHECK(collect(full) == FL_EFAULT);
    CHECK(g_list.inconsistent && g_list.count == 1);
    check_image(FIX_IMG0, 0x4000, 0x11, "/fix/exe-at-install", true);

    static uint8_t later[FL_DYLD_INFOS_V15_SIZE];
    setup("infos15"); /* the timestamp moves during the walk */
    load("infos15b", later, sizeof later);
    g_swap = later;
    CHECK(collect(full) == 0);
    CHECK(g_list.inconsistent && g_list.count == 3);
    setup("infos15"); /* ... which is not seen without version 15's fields */
    g_swap = later;
    CHECK(collect(FL_DYLD_INFOS_V15_SIZE - 1) == 0);
    CHECK(!g_list.inconsistent);
    setup("infos15"); /* the array pointer goes NULL during the walk */
    load("infosnull", later, sizeof later);
    g_swap = later;
    CHECK(collect(full) == 0);
    CHECK(g_list.inconsistent);

    setup("infos15"); /* an image that does not parse keeps its header and path */
    memset(g_mem + (FIX_IMG1 - FIX_BASE), 0, 4);
    CHECK(collect(full) == 0);
    const fl_image_t *bad = find(FIX_IMG1);
    CHECK(bad && bad->end == FIX_IMG1 && bad->build_id_len == 0 && !strcmp(bad->path, "/fix/lib.dylib"));

    setup("infos15"); /* a path without end */
    memset(g_mem + (FIX_PATH1 - FIX_BASE), 'a', 0x100);
    memset(g_mem + (FIX_DYLD_PATH - FIX_BASE), 'b', 0x1000);
    CHECK(collect(full) == 0);
    const fl_image_t *cut = find(FIX_DYLD);
    CHECK(cut && cut->path_truncated && strlen(cut->path) == FL_IMAGE_PATH_MAX - 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_dyld_images LAYOUTS_DIR\n");
        return 2;
    }
    g_dir = argv[1];
    test_arch("x86_64");
    test_arch("aarch64");
    TEST_END();
}
