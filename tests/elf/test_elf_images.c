/* SPDX-License-Identifier: MIT */
/* elf: the collected image list against the loader's own answers (dl_iterate_phdr, dladdr). */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/elf.h"
#include "test.h"

static fl_image_list_t g_list, g_list2; /* large: keep them off the stack */

/* What dl_iterate_phdr says about one object. */
typedef struct {
    uint64_t slide, phdr, text_lo, text_hi;
    unsigned phnum;
    char name[FL_IMAGE_PATH_MAX];
} dl_obj_t;
static dl_obj_t g_objs[512];
static unsigned g_nobjs;

static int on_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    if (g_nobjs == FL_ARRAY_LEN(g_objs)) return 1;
    dl_obj_t *o = &g_objs[g_nobjs++];
    o->slide = info->dlpi_addr;
    o->phdr = (uint64_t)(uintptr_t)info->dlpi_phdr;
    o->phnum = info->dlpi_phnum;
    snprintf(o->name, sizeof o->name, "%s", info->dlpi_name ? info->dlpi_name : "");
    o->text_lo = UINT64_MAX;
    o->text_hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uint64_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (lo < o->text_lo) o->text_lo = lo;
        if (hi > o->text_hi) o->text_hi = hi;
    }
    return 0;
}

static const fl_image_t *vdso_image(const fl_image_list_t *l) {
    for (unsigned i = 0; i < l->count; i++)
        if (l->image[i].is_vdso) return &l->image[i];
    return NULL;
}

/* Our image for a dl_iterate_phdr object: the main program has an empty name there, the vdso
 * its soname (its program headers lie inside our vdso image), the rest their l_name. */
static const fl_image_t *match(const dl_obj_t *o) {
    if (!o->name[0]) return &g_list.image[0];
    const fl_image_t *v = vdso_image(&g_list);
    if (v && o->phdr >= v->start && o->phdr < v->end) return v;
    for (unsigned i = 0; i < g_list.count; i++)
        if (strcmp(g_list.image[i].path, o->name) == 0) return &g_list.image[i];
    return NULL;
}

__attribute__((noinline)) int fl_test_images_local(int x) {
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

static int g_data_var = 42;

/* dladdr(addr)'s object base and path must be our image for addr. */
static void check_dladdr(const void *addr, bool want_main) {
    Dl_info di;
    CHECK(dladdr(addr, &di) != 0);
    const fl_image_t *img = fl_images_find(&g_list, (uint64_t)(uintptr_t)addr);
    CHECK(img != NULL);
    if (!img) return;
    uint64_t base = (uint64_t)(uintptr_t)di.dli_fbase;
    CHECK(base >= img->start && base < img->end);
    CHECK(img->is_main == want_main);
    if (!want_main) CHECK_STREQ(img->path, di.dli_fname);
    CHECK(fl_images_is_text(&g_list, (uint64_t)(uintptr_t)addr));
}

/* In a copy of this test that removed its own file: fl_elf_exe_path gives the path it started
 * from, without the kernel's " (deleted)". Exit status 0 when it does. */
static int deleted_child(const char *self) {
    if (unlink(self) != 0) return 2;
    char got[FL_IMAGE_PATH_MAX];
    if (!fl_elf_exe_path(got, sizeof got)) return 3;
    return strcmp(got, self) == 0 ? 0 : 4;
}

/* Copies this executable next to itself and runs deleted_child there. */
static void check_deleted_exe(const char *exe) {
    char copy[FL_IMAGE_PATH_MAX + 16];
    snprintf(copy, sizeof copy, "%s.deleted", exe);
    int in = open(exe, O_RDONLY | O_CLOEXEC);
    int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
    CHECK(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) CHECK(write(out, buf, (size_t)n) == n);
    close(in);
    close(out);
    pid_t pid = fork();
    if (pid == 0) {
        execl(copy, copy, "--deleted", copy, (char *)NULL);
        _exit(77); /* an emulator without binfmt_misc cannot exec its guest's programs */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        unlink(copy);
        fprintf(stderr, "note: the deleted-executable case was not run (exec failed)\n");
        return;
    }
    CHECK_EQ_U64(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--deleted") == 0) return deleted_child(argv[2]);
    /* A direct (non-GOT) reference from this PIE makes the linker copy-relocate _r_debug into
     * the executable; &_r_debug then names a stale copy. The collector must not be fooled. */
    CHECK(_r_debug.r_version >= 1);
    void *lib = dlopen(FL_FIXTURE_LIB, RTLD_NOW);
    CHECK(lib != NULL);
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK(fl_elf_images_prepare() == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list) == 0);
    CHECK(!g_list.truncated);
    CHECK(!g_list.inconsistent);
    CHECK(g_list.count >= 4); /* main, vdso, libc, ld.so, fixture */

    /* The executable comes first, under its /proc/self/exe path. */
    char exe[FL_IMAGE_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(n > 0);
    exe[n > 0 ? n : 0] = 0;
    CHECK(g_list.image[0].is_main);
    CHECK_STREQ(g_list.image[0].path, exe);
    CHECK(!g_list.image[0].path_truncated);
    for (unsigned i = 1; i < g_list.count; i++) CHECK(!g_list.image[i].is_main);
    check_deleted_exe(exe);

    /* Exactly one vdso, where the kernel gave one (qemu-user 7.2 gives its guests none). */
    unsigned vdsos = 0;
    for (unsigned i = 0; i < g_list.count; i++) vdsos += g_list.image[i].is_vdso;
    CHECK_EQ_U64(vdsos, getauxval(AT_SYSINFO_EHDR) != 0);

    /* Every object the loader knows, with the same bias, program headers and text range; and
     * nothing else (same count). */
    dl_iterate_phdr(on_object, NULL);
    CHECK_EQ_U64(g_list.count, g_nobjs);
    for (unsigned i = 0; i < g_nobjs; i++) {
        const dl_obj_t *o = &g_objs[i];
        const fl_image_t *img = match(o);
        CHECK(img != NULL);
        if (!img) {
            fprintf(stderr, "  missing: \"%s\" at 0x%llx\n", o->name, (unsigned long long)o->slide);
            continue;
        }
        CHECK_EQ_U64(img->slide, o->slide);
        CHECK_EQ_U64(img->phdr_addr, o->phdr);
        CHECK_EQ_U64(img->phnum, o->phnum);
        CHECK_EQ_U64(img->text_start, o->text_lo);
        CHECK_EQ_U64(img->text_end, o->text_hi);
        CHECK(img->start <= img->text_start && img->text_end <= img->end);
        CHECK(img->build_id_kind != FL_BUILD_ID_NONE);
        CHECK(img->eh_frame_hdr == 0 ||
              (img->eh_frame_hdr >= img->start && img->eh_frame_hdr < img->end));
        CHECK(fl_images_find(&g_list, img->start) == img);
        CHECK(fl_images_find(&g_list, img->end - 1) == img);
    }

    /* dladdr agrees on a function of ours, on libc's getpid and on the dlopen'ed fixture. (Not
     * printf: a sanitizer build's executable carries its own, the sanitizer's interceptor.) */
    check_dladdr((const void *)fl_test_images_local, true);
    check_dladdr((const void *)getpid, false);
    void *fix = lib ? dlsym(lib, "fl_fixture_lib_value") : NULL;
    CHECK(fix != NULL);
    if (fix) check_dladdr(fix, false);

    /* Not text: data, the stack, the null page. */
    int on_stack = 0;
    CHECK(!fl_images_is_text(&g_list, (uint64_t)(uintptr_t)&g_data_var));
    CHECK(!fl_images_is_text(&g_list, (uint64_t)(uintptr_t)&on_stack));
    CHECK(fl_images_find(&g_list, 16) == NULL);
    CHECK(fl_images_find(&g_list, (uint64_t)(uintptr_t)&g_data_var) == &g_list.image[0]);

    /* The pipe reader gives the same list. */
    if (fl_memory_init(FL_MEMORY_PIPE) == 0) {
        CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list2) == 0);
        CHECK_EQ_U64(g_list2.count, g_list.count);
        CHECK(memcmp(g_list2.image, g_list.image, g_list.count * sizeof g_list.image[0]) == 0);
    }

    /* A reader that can read nothing: the main program alone, flagged, no crash. */
    fl_reader_t none;
    fl_reader_init_buffer(&none, NULL, 0, 0);
    CHECK(fl_elf_images_collect(&none, &g_list2) == 0);
    CHECK_EQ_U64(g_list2.count, 1);
    CHECK(g_list2.image[0].is_main && g_list2.inconsistent);
    CHECK_EQ_U64(g_list2.image[0].end, 0);

    /* fl_elf_images_refresh: the same list as a full collect, before and after a library goes
     * and comes back (a new entry is read, the others kept), and with a list of garbage keys. */
    static fl_image_list_t r;
    fl_memory_init(FL_MEMORY_NONE);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list) == 0);
    CHECK(fl_elf_images_refresh(fl_memory_reader(), &r) == 0); /* zeroed: reads everything */
    CHECK_EQ_U64(r.count, g_list.count);
    CHECK(memcmp(r.image, g_list.image, g_list.count * sizeof g_list.image[0]) == 0);
    CHECK(fl_elf_images_refresh(fl_memory_reader(), &r) == 0); /* keeps everything */
    CHECK_EQ_U64(r.count, g_list.count);
    CHECK(memcmp(r.image, g_list.image, g_list.count * sizeof g_list.image[0]) == 0);
    if (lib) {
        dlclose(lib);
        lib = NULL;
        CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list2) == 0);
        CHECK(fl_elf_images_refresh(fl_memory_reader(), &r) == 0);
        CHECK_EQ_U64(r.count, g_list2.count);
        CHECK(g_list2.count + 1 == g_list.count);
        CHECK(memcmp(r.image, g_list2.image, g_list2.count * sizeof g_list2.image[0]) == 0);
        lib = dlopen(FL_FIXTURE_LIB, RTLD_NOW);
        CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list2) == 0);
        CHECK(fl_elf_images_refresh(fl_memory_reader(), &r) == 0);
        CHECK_EQ_U64(r.count, g_list2.count);
        CHECK(memcmp(r.image, g_list2.image, g_list2.count * sizeof g_list2.image[0]) == 0);
    }
    for (unsigned i = 0; i < r.count; i++) r.image[i].loader_key ^= 0x5a5a; /* none kept */
    r.image[1].start = 0;
    CHECK(fl_elf_images_refresh(fl_memory_reader(), &r) == 0);
    CHECK(memcmp(r.image, g_list2.image, g_list2.count * sizeof g_list2.image[0]) == 0);

    if (lib) dlclose(lib);
    TEST_END();
}
