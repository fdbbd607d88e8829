/* SPDX-License-Identifier: MIT */
/* elf: file symbolization against the program's own functions and against nm. */
#include <dlfcn.h>
#include <stdlib.h>

#include "elf/elf.h"
#include "test.h"

static fl_image_list_t g_list;

__attribute__((noinline)) int fl_test_sym_alpha(int x) {
    __asm__ volatile("" : "+r"(x));
    return x * 7 + 3;
}
__attribute__((noinline)) int fl_test_sym_beta(int x) {
    __asm__ volatile("" : "+r"(x));
    return fl_test_sym_alpha(x) ^ 5;
}
__attribute__((noinline)) static int fl_test_sym_gamma(int x) {
    __asm__ volatile("" : "+r"(x));
    return fl_test_sym_beta(x) - 1;
}

/* Assembly that declares no symbol type (an untyped symbol, as in Go's runtime/cgo gcc_amd64.S):
 * nm lists it as code ('T', NOTYPE), and gdb and addr2line name addresses in it. */
__asm__(".text\n.globl fl_test_sym_untyped\nfl_test_sym_untyped:\n nop\n nop\n nop\n ret\n");
extern void fl_test_sym_untyped(void);

/* nm's FUNC symbols of a file (sysv format: name|value|class|type|size|line|section; the size
 * is blank for size 0). */
typedef struct {
    uint64_t addr, size;
    char *name;
} nm_sym_t;
static nm_sym_t g_nm[65536];
static unsigned g_nnm;

static void load_nm(const char *path, bool dynamic) {
    char cmd[FL_IMAGE_PATH_MAX + 64], line[4096];
    char host[FL_IMAGE_PATH_MAX];
    snprintf(cmd, sizeof cmd, "nm --defined-only --format=sysv %s '%s' 2>/dev/null",
             dynamic ? "-D" : "", fl_test_host_path(path, host, sizeof host));
    for (unsigned i = 0; i < g_nnm; i++) free(g_nm[i].name);
    g_nnm = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p) && g_nnm < FL_ARRAY_LEN(g_nm)) {
        char *field[7];
        unsigned n = 0;
        for (char *t = line; t && n < 7; n++) {
            field[n] = t;
            if ((t = strchr(t, '|'))) *t++ = 0;
        }
        if (n < 5 || !strstr(field[3], "FUNC")) continue;
        char *end = NULL;
        uint64_t value = strtoull(field[1], &end, 16);
        if (end == field[1]) continue;
        char *at = strchr(field[0], '@'); /* drop symbol versions */
        if (at) *at = 0;
        for (char *e = field[0] + strlen(field[0]); e > field[0] && e[-1] == ' ';) *--e = 0;
        nm_sym_t *s = &g_nm[g_nnm++];
        s->addr = value;
        s->size = strtoull(field[4], NULL, 16); /* blank: 0 */
        s->name = strdup(field[0]);
    }
    pclose(p);
}

static bool nm_has(uint64_t addr, const char *name) {
    for (unsigned i = 0; i < g_nnm; i++)
        if (g_nm[i].addr == addr && strcmp(g_nm[i].name, name) == 0) return true;
    return false;
}

/* Does any nm function start in (addr, end)? */
static bool nm_nested(uint64_t addr, uint64_t end) {
    for (unsigned i = 0; i < g_nnm; i++)
        if (g_nm[i].addr > addr && g_nm[i].addr < end) return true;
    return false;
}

/* Checks every step-th nm FUNC symbol: start, last byte and (when nothing follows right away)
 * the first byte past its end. */
static void check_against_nm(fl_elf_file_t *f, unsigned step) {
    unsigned checked = 0;
    for (unsigned i = 0; i < g_nnm; i += step) {
        const nm_sym_t *s = &g_nm[i];
        if (!s->addr) continue;
        const char *name = NULL;
        uint64_t off = 99;
        CHECK(fl_elf_file_symbolize(f, s->addr, &name, &off) == 0);
        CHECK_EQ_U64(off, 0);
        CHECK(name && nm_has(s->addr, name));
        if (name && !nm_has(s->addr, name))
            fprintf(stderr, "  0x%llx: got %s, nm says %s\n", (unsigned long long)s->addr, name,
                    s->name);
        if (s->size > 1 && !nm_nested(s->addr, s->addr + s->size)) {
            CHECK(fl_elf_file_symbolize(f, s->addr + s->size - 1, &name, &off) == 0);
            CHECK_EQ_U64(off, s->size - 1);
            CHECK(name && nm_has(s->addr, name));
            /* Just past the end: not this function (padding is nobody's). */
            if (!nm_nested(s->addr, s->addr + s->size + 1)) {
                int e = fl_elf_file_symbolize(f, s->addr + s->size, &name, &off);
                CHECK(e == FL_ENOTFOUND || (e == 0 && !nm_has(s->addr, name)));
            }
        }
        checked++;
    }
    CHECK(checked >= 10);
}

static void check_own(fl_elf_file_t *f, uint64_t slide, const void *fn, const char *want) {
    uint64_t vaddr = (uint64_t)(uintptr_t)fn - slide;
    for (uint64_t k = 0; k < 3; k++) {
        const char *name = NULL;
        uint64_t off = 99;
        CHECK(fl_elf_file_symbolize(f, vaddr + k, &name, &off) == 0);
        CHECK_STREQ(name, want);
        CHECK_EQ_U64(off, k);
    }
}

int main(void) {
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK(fl_elf_images_prepare() == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list) == 0);
    const fl_image_t *self = &g_list.image[0];

    /* Our own functions, at their runtime address minus the bias. */
    fl_elf_file_t *f = NULL;
    CHECK(fl_elf_file_open(self->path, &f) == 0);
    if (f) {
        check_own(f, self->slide, (const void *)fl_test_sym_alpha, "fl_test_sym_alpha");
        check_own(f, self->slide, (const void *)fl_test_sym_beta, "fl_test_sym_beta");
        check_own(f, self->slide, (const void *)fl_test_sym_gamma, "fl_test_sym_gamma");
        check_own(f, self->slide, (const void *)main, "main");
        check_own(f, self->slide, (const void *)fl_test_sym_untyped, "fl_test_sym_untyped");
        const char *name;
        uint64_t off;
        CHECK(fl_elf_file_symbolize(f, 0, &name, &off) == FL_ENOTFOUND);
        CHECK(fl_elf_file_symbolize(f, UINT64_MAX, &name, &off) == FL_ENOTFOUND);
        load_nm(self->path, false);
        CHECK(g_nnm > 20);
        check_against_nm(f, 1);
        fl_elf_file_close(f);
    }

    /* libc (no .symtab on most distributions: .dynsym) against nm -D, and printf. */
    const fl_image_t *libc = fl_images_find(&g_list, (uint64_t)(uintptr_t)printf);
    CHECK(libc != NULL);
    if (libc && fl_elf_file_open(libc->path, &f) == 0) {
        const char *name = NULL;
        uint64_t off = 99, vaddr = (uint64_t)(uintptr_t)printf - libc->slide;
        CHECK(fl_elf_file_symbolize(f, vaddr + 5, &name, &off) == 0);
        CHECK_EQ_U64(off, 5);
        load_nm(libc->path, false); /* like the symbolizer: .symtab, else .dynsym */
        if (!g_nnm) load_nm(libc->path, true);
        CHECK(name && nm_has(vaddr, name));
        check_against_nm(f, 7);
        fl_elf_file_close(f);
    }

    /* A stripped library: .dynsym only. */
    CHECK(fl_elf_file_open(FL_FIXTURE_LIB_STRIPPED, &f) == 0);
    if (f) {
        load_nm(FL_FIXTURE_LIB_STRIPPED, true);
        unsigned found = 0;
        for (unsigned i = 0; i < g_nnm; i++) {
            if (strcmp(g_nm[i].name, "fl_fixture_lib_value") != 0) continue;
            const char *name = NULL;
            uint64_t off = 99;
            CHECK(fl_elf_file_symbolize(f, g_nm[i].addr + 1, &name, &off) == 0);
            CHECK_STREQ(name, "fl_fixture_lib_value");
            CHECK_EQ_U64(off, 1);
            found++;
        }
        CHECK_EQ_U64(found, 1);
        fl_elf_file_close(f);
    }
    TEST_END();
}
