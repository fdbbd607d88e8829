/* SPDX-License-Identifier: MIT */
/* elf: libFuzzer target over ELF files: fl_elf_file_open on the input written to a file (the
 * CLI's path: build-id, text hash, .gnu_debuglink and its CRC, program headers, sections, the
 * symbol index and lookups), and the crash-time parsers over the same bytes in memory
 * (fl_elf_image_from_phdrs, fl_elf_notes_build_id; an exact-size copy, so that a read past it is
 * an ASan report). Aborts on a broken promise: an id longer than its buffer, a debuglink name
 * outside the file, symbols out of order, a lookup whose symbol lies above the address or whose
 * name is not in the file, a segment or an image range that does not hold together. The file is
 * mapped, so a read just past its end but inside its last page is not seen; the memory parsers'
 * are.
 *
 * Seeds: corpus/fuzz_elf/ (the small fixtures of tests/elf/fixtures; scripts/fuzz-seeds.sh).
 * Run: scripts/fuzz.sh BUILD fuzz_elf. */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf.h"
#include "fuzz.h"

static char g_dir[] = "/tmp/fuzz_elf.XXXXXX";
static char g_path[sizeof g_dir + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_dir);
    snprintf(g_path, sizeof g_path, "%s/f.elf", g_dir);
    return 0;
}

/* A name from the file: NUL-terminated within it. */
static void check_name(const char *name, size_t size) {
    CHECK(name != NULL && strlen(name) < size);
}

static void file(const uint8_t *data, size_t size) {
    FILE *fp = fopen(g_path, "wb");
    CHECK(fp != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, fp) == size);
    CHECK(fclose(fp) == 0);
    fl_elf_file_t *f = NULL;
    int e = fl_elf_file_open(g_path, &f);
    CHECK((e == 0) == (f != NULL));
    if (!f) return;

    uint8_t id[FL_BUILD_ID_MAX + 8];
    unsigned id_len = 99;
    e = fl_elf_file_build_id(f, id, FL_BUILD_ID_MAX, &id_len);
    CHECK(e == 0 || e == FL_ENOTFOUND || e == FL_ERANGE || e == FL_EBADDATA);
    if (e == 0 || e == FL_ERANGE) CHECK(id_len > 0 && id_len <= FL_BUILD_ID_MAX);
    (void)fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_HASH, id);
    (void)fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_SECTION, id);
    unsigned m = fl_elf_file_machine(f);
    CHECK(m == EM_X86_64 || m == EM_AARCH64);
    const char *dl = fl_elf_file_debuglink(f);
    if (dl) check_name(dl, size);
    uint32_t crc;
    (void)fl_elf_file_debuglink_crc(f, &crc);

    unsigned phnum = fl_elf_file_phnum(f);
    for (unsigned i = 0; i < phnum && i < 64; i++) {
        uint64_t vaddr, memsz, off, filesz;
        uint32_t flags;
        if (fl_elf_file_load_segment(f, i, &vaddr, &memsz, &off, &filesz, &flags) == 0)
            (void)(vaddr + memsz + off + filesz + flags);
    }
    CHECK(fl_elf_file_load_segment(f, phnum, &(uint64_t){0}, &(uint64_t){0}, &(uint64_t){0},
                                   &(uint64_t){0}, &(uint32_t){0}) != 0);
    static const char *const sections[] = {".text", ".symtab", ".dynsym", ".eh_frame",
                                           ".eh_frame_hdr", ".debug_line", ".gnu_debuglink", ""};
    for (unsigned i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        uint64_t addr, len;
        bool has = fl_elf_file_has_section(f, sections[i]);
        CHECK((fl_elf_file_section(f, sections[i], &addr, &len) == 0) == has);
    }

    long n = fl_elf_file_symbol_count(f);
    CHECK(n >= 0 || n == FL_ENOMEM || n == FL_EBADDATA);
    uint64_t prev = 0, probe[8];
    unsigned np = 0;
    for (long i = 0; i < n; i++) {
        uint64_t addr, sz;
        const char *name;
        CHECK(fl_elf_file_symbol(f, (size_t)i, &addr, &sz, &name) == 0);
        check_name(name, size);
        CHECK(i == 0 || addr >= prev); /* ascending, as documented */
        prev = addr;
        if (np < 8 && (i % 7 == 0)) probe[np++] = addr + (sz ? sz - 1 : 0);
    }
    if (n >= 0) {
        uint64_t a, s;
        const char *name;
        CHECK(fl_elf_file_symbol(f, (size_t)n, &a, &s, &name) == FL_ENOTFOUND);
    }
    /* Lookups: at symbols, around them, and at addresses taken from the input. */
    for (unsigned k = 0; k < 16; k++) {
        uint64_t addr;
        if (k < np) addr = probe[k];
        else if (size >= 8) memcpy(&addr, data + (k * 131u) % (size - 7), 8);
        else addr = k * 0x1000;
        const char *name = NULL;
        uint64_t off = 0;
        if (fl_elf_file_symbolize(f, addr, &name, &off) == 0) {
            check_name(name, size);
            CHECK(off <= addr);
        }
    }
    fl_elf_file_close(f);
}

/* The crash-time parsers over the same bytes, as if mapped at 0 and at a high bias. */
static void memory(const uint8_t *data, size_t size) {
    if (size < sizeof(Elf64_Ehdr)) return;
    Elf64_Ehdr eh;
    memcpy(&eh, data, sizeof eh);
    fl_reader_t r;
    fl_reader_init_buffer(&r, data, size, 0);
    static const uint64_t slides[] = {0, 0x7f0000000000ull};
    for (unsigned i = 0; i < 2; i++) {
        fl_image_t img;
        memset(&img, 0, sizeof img);
        if (fl_elf_image_from_phdrs(&r, eh.e_phoff, eh.e_phnum, slides[i], &img) == 0) {
            CHECK(img.start < img.end);
            CHECK(img.build_id_len <= FL_BUILD_ID_MAX);
            CHECK(img.text_start <= img.text_end);
        }
    }
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned id_len = 0;
    for (uint64_t align = 4; align <= 8; align += 4) {
        int e = fl_elf_notes_build_id(&r, 0, size, align, id, sizeof id, &id_len);
        if (e == 0 || e == FL_ERANGE) CHECK(id_len > 0 && id_len <= sizeof id);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    file(data, size);
    memory(data, size);
    return 0;
}
