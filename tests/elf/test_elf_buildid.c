/* SPDX-License-Identifier: MIT */
/* elf: build-ids from memory and from files against readelf, and the text-hash fallback. */
#include <dlfcn.h>
#include <elf.h>
#include <stdlib.h>

#include "elf/elf.h"
#include "test.h"

static fl_image_list_t g_list;

/* The build-id readelf -n prints for path: length, or 0 if it prints none. */
static unsigned readelf_build_id(const char *path, uint8_t *id, unsigned cap) {
    char cmd[FL_IMAGE_PATH_MAX + 64], line[1024];
    char host[FL_IMAGE_PATH_MAX];
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", fl_test_host_path(path, host, sizeof host));
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    unsigned len = 0;
    while (fgets(line, sizeof line, p)) {
        const char *s = strstr(line, "Build ID: ");
        if (!s || len) continue;
        for (s += 10; len < cap && s[0] && s[1] && s[0] != '\n'; s += 2) {
            unsigned b;
            if (sscanf(s, "%2x", &b) != 1) break;
            id[len++] = (uint8_t)b;
        }
    }
    pclose(p);
    return len;
}

/* An independent text hash: the first PF_X PT_LOAD's first 4096 file bytes, folded by XOR. */
/* The fallback id computed independently of elf/: the file's section table read here with
 * stdio and <elf.h> (the one binutils' `readelf -S` shows), .text's first 4096 bytes folded. */
static bool oracle_text_hash(const char *path, uint8_t id[16]) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    Elf64_Ehdr eh;
    Elf64_Shdr strs, sh;
    bool ok = false;
    if (fread(&eh, sizeof eh, 1, fp) == 1 && eh.e_shoff && eh.e_shstrndx < eh.e_shnum &&
        fseek(fp, (long)(eh.e_shoff + eh.e_shstrndx * sizeof sh), SEEK_SET) == 0 &&
        fread(&strs, sizeof strs, 1, fp) == 1) {
        for (unsigned i = 1; i < eh.e_shnum && !ok; i++) {
            char name[6] = {0};
            if (fseek(fp, (long)(eh.e_shoff + i * sizeof sh), SEEK_SET) || fread(&sh, sizeof sh, 1, fp) != 1 ||
                fseek(fp, (long)(strs.sh_offset + sh.sh_name), SEEK_SET) || fread(name, 1, sizeof name, fp) != sizeof name ||
                memcmp(name, ".text", sizeof name) != 0)
                continue;
            uint8_t page[4096];
            size_t n = sh.sh_size < sizeof page ? sh.sh_size : sizeof page;
            if (fseek(fp, (long)sh.sh_offset, SEEK_SET) || fread(page, 1, n, fp) != n) break;
            memset(id, 0, 16);
            for (size_t k = 0; k < n; k++) id[k % 16] ^= page[k];
            ok = n > 0;
        }
    }
    fclose(fp);
    return ok;
}

/* A collected image with a GNU build-id: memory, file and readelf all agree. */
static void check_image(const fl_image_t *img) {
    uint8_t want[FL_BUILD_ID_MAX], got[FL_BUILD_ID_MAX];
    unsigned want_len = readelf_build_id(img->path, want, sizeof want), got_len = 0;
    CHECK(want_len > 0);
    CHECK_EQ_U64(img->build_id_kind, FL_BUILD_ID_GNU);
    CHECK_EQ_U64(img->build_id_len, want_len);
    CHECK(memcmp(img->build_id, want, want_len) == 0);

    fl_elf_file_t *f = NULL;
    CHECK(fl_elf_file_open(img->path, &f) == 0);
    if (!f) return;
    CHECK(fl_elf_file_build_id(f, got, sizeof got, &got_len) == 0);
    CHECK_EQ_U64(got_len, want_len);
    CHECK(memcmp(got, want, want_len) == 0);
    /* A short buffer gets the prefix and FL_ERANGE. */
    CHECK(fl_elf_file_build_id(f, got, 4, &got_len) == FL_ERANGE);
    CHECK_EQ_U64(got_len, 4);
    CHECK(memcmp(got, want, 4) == 0);
#if defined(__x86_64__)
    CHECK_EQ_U64(fl_elf_file_machine(f), EM_X86_64);
#else
    CHECK_EQ_U64(fl_elf_file_machine(f), EM_AARCH64);
#endif
    fl_elf_file_close(f);
}

int main(void) {
    void *lib = dlopen(FL_FIXTURE_LIB, RTLD_NOW);
    CHECK(lib != NULL);
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK(fl_elf_images_prepare() == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_list) == 0);

    /* This test program, libc, and every other image with a file and a build-id. */
    bool saw_libc = false, saw_fixture = false;
    check_image(&g_list.image[0]);
    for (unsigned i = 1; i < g_list.count; i++) {
        const fl_image_t *img = &g_list.image[i];
        if (img->is_vdso) {
            CHECK_EQ_U64(img->build_id_kind, FL_BUILD_ID_GNU); /* Linux links its vdso with one */
            continue;
        }
        if (strcmp(img->path, FL_FIXTURE_LIB) == 0) {
            saw_fixture = true;
            /* No build-id: memory hash == file hash == independent hash. */
            uint8_t want[16], got[16];
            fl_elf_file_t *f = NULL;
            CHECK_EQ_U64(img->build_id_kind, FL_BUILD_ID_TEXT_SECTION);
            CHECK_EQ_U64(img->build_id_len, 16);
            CHECK(fl_elf_file_open(img->path, &f) == 0);
            if (f) {
                unsigned len;
                CHECK(fl_elf_file_build_id(f, got, sizeof got, &len) == FL_ENOTFOUND);
                CHECK(fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_SECTION, got) == 0);
                CHECK(memcmp(got, img->build_id, 16) == 0);
                fl_elf_file_close(f);
            }
            CHECK(oracle_text_hash(img->path, want));
            CHECK(memcmp(want, img->build_id, 16) == 0);
            continue;
        }
        if (strstr(img->path, "/libc.so")) saw_libc = true;
        check_image(img);
    }
    CHECK(saw_libc);
    CHECK(saw_fixture);

    /* A program linked without a build-id: none in the file, and a working text hash. */
    uint8_t id[FL_BUILD_ID_MAX], want[16];
    unsigned len = 0;
    fl_elf_file_t *f = NULL;
    CHECK(readelf_build_id(FL_FIXTURE_NOBUILDID, id, sizeof id) == 0);
    CHECK(fl_elf_file_open(FL_FIXTURE_NOBUILDID, &f) == 0);
    if (f) {
        CHECK(fl_elf_file_build_id(f, id, sizeof id, &len) == FL_ENOTFOUND);
        CHECK(fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_SECTION, id) == 0);
        CHECK(oracle_text_hash(FL_FIXTURE_NOBUILDID, want));
        CHECK(memcmp(id, want, 16) == 0);
        CHECK(fl_elf_file_debuglink(f) == NULL);
        fl_elf_file_close(f);
    }

    /* The same program with a build-id and a .gnu_debuglink. */
    uint8_t want_id[FL_BUILD_ID_MAX];
    unsigned want_len = readelf_build_id(FL_FIXTURE_BUILDID, want_id, sizeof want_id);
    CHECK_EQ_U64(want_len, 20);
    CHECK(fl_elf_file_open(FL_FIXTURE_BUILDID, &f) == 0);
    if (f) {
        CHECK(fl_elf_file_build_id(f, id, sizeof id, &len) == 0);
        CHECK_EQ_U64(len, want_len);
        CHECK(memcmp(id, want_id, want_len) == 0);
        const char *slash = strrchr(FL_FIXTURE_BUILDID, '/');
        char debug_name[FL_IMAGE_PATH_MAX];
        snprintf(debug_name, sizeof debug_name, "%s.debug", slash ? slash + 1 : FL_FIXTURE_BUILDID);
        CHECK_STREQ(fl_elf_file_debuglink(f), debug_name);
        fl_elf_file_close(f);
    }

    /* Not ELF, missing. */
    CHECK(fl_elf_file_open("/proc/self/status", &f) == FL_EBADDATA && f == NULL);
    CHECK(fl_elf_file_open("/nonexistent/faultline", &f) == FL_EIO && f == NULL);

    if (lib) dlclose(lib);
    TEST_END();
}
