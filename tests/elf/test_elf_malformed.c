/* SPDX-License-Identifier: MIT */
/* elf: truncated, bit-flipped and hand-broken ELF files give errors, never crashes or hangs. */
#include <elf.h>
#include <stdlib.h>
#include <unistd.h>

#include "elf/elf.h"
#include "test.h"

#define FLIP_ITERATIONS 4000u

static uint8_t *g_orig, *g_buf;
static size_t g_size;
static char g_tmp[] = "/tmp/fl_elf_malformed_XXXXXX";
static int g_fd = -1;
static unsigned g_opened, g_symbolized, g_phdr_ok;

static uint64_t g_rng = 0x9e3779b97f4a7c15ull; /* fixed seed: failures reproduce */
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static bool load(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    fseek(fp, 0, SEEK_END);
    g_size = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    g_orig = malloc(g_size);
    g_buf = malloc(g_size);
    bool ok = g_orig && g_buf && fread(g_orig, 1, g_size, fp) == g_size;
    fclose(fp);
    return ok;
}

/* Runs every parser over g_buf[0, len); returns fl_elf_file_open's result. */
static int exercise(size_t len) {
    if (ftruncate(g_fd, 0) != 0 || pwrite(g_fd, g_buf, len, 0) != (ssize_t)len) {
        CHECK(!"cannot write the temporary file");
        return FL_EIO;
    }
    fl_elf_file_t *f = NULL;
    int e = fl_elf_file_open(g_tmp, &f);
    CHECK((e == 0) == (f != NULL));
    if (f) {
        g_opened++;
        uint8_t id[FL_BUILD_ID_MAX];
        unsigned id_len = 0;
        int b = fl_elf_file_build_id(f, id, sizeof id, &id_len);
        CHECK(b != 0 || (id_len > 0 && id_len <= sizeof id));
        (void)fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_HASH, id);
    (void)fl_elf_file_text_hash(f, FL_BUILD_ID_TEXT_SECTION, id);
        (void)fl_elf_file_machine(f);
        const char *dl = fl_elf_file_debuglink(f);
        CHECK(!dl || strlen(dl) < len);
        for (unsigned k = 0; k < 8; k++) {
            const char *name = NULL;
            uint64_t off = 0, addr = k < 4 ? rnd() % (len + 0x2000) : rnd();
            if (fl_elf_file_symbolize(f, addr, &name, &off) == 0) {
                g_symbolized++;
                CHECK(name != NULL && strlen(name) < len && off <= addr);
            }
        }
        fl_elf_file_close(f);
    }

    /* The crash-time parser over the same bytes, as if mapped at 0 and at a high bias. */
    if (len >= sizeof(Elf64_Ehdr)) {
        Elf64_Ehdr eh;
        memcpy(&eh, g_buf, sizeof eh);
        fl_reader_t r;
        fl_reader_init_buffer(&r, g_buf, len, 0);
        fl_image_t img;
        memset(&img, 0, sizeof img);
        if (fl_elf_image_from_phdrs(&r, eh.e_phoff, eh.e_phnum, 0, &img) == 0) {
            g_phdr_ok++;
            CHECK(img.start < img.end);
            CHECK(img.build_id_len <= FL_BUILD_ID_MAX);
            CHECK(img.text_start <= img.text_end);
        }
        (void)fl_elf_image_from_phdrs(&r, eh.e_phoff, eh.e_phnum, 0x7f0000000000ull, &img);
        uint8_t id[FL_BUILD_ID_MAX];
        unsigned id_len;
        (void)fl_elf_notes_build_id(&r, 0, len, 4, id, sizeof id, &id_len);
    }
    return e;
}

/* A region worth aiming flips at. */
typedef struct {
    uint64_t off, len;
} region_t;
static region_t g_regions[64];
static unsigned g_nregions;

static void add_region(uint64_t off, uint64_t len) {
    if (len && fl_range_ok(off, len, g_size) && g_nregions < FL_ARRAY_LEN(g_regions))
        g_regions[g_nregions++] = (region_t){off, len};
}

/* Header, both header tables, and the sections the parsers read. */
static void find_regions(void) {
    Elf64_Ehdr eh;
    memcpy(&eh, g_orig, sizeof eh);
    add_region(0, sizeof eh);
    add_region(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr));
    add_region(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr));
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, g_orig + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_type == SHT_NOTE || sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM ||
            sh.sh_type == SHT_STRTAB)
            add_region(sh.sh_offset, sh.sh_size < 4096 ? sh.sh_size : 4096);
    }
}

static void mutate(void) {
    unsigned n = 1 + (unsigned)(rnd() % 4);
    for (unsigned m = 0; m < n; m++) {
        uint64_t pos;
        if (rnd() % 5 == 0) {
            pos = rnd() % g_size;
        } else {
            const region_t *r = &g_regions[rnd() % g_nregions];
            pos = r->off + rnd() % r->len;
        }
        switch (rnd() % 4) {
        case 0: g_buf[pos] ^= (uint8_t)(1u << (rnd() % 8)); break; /* one bit */
        case 1: g_buf[pos] = (uint8_t)rnd(); break;                 /* one byte */
        default: {                                                  /* an absurd or zero word */
            uint8_t v = rnd() % 2 ? 0xff : 0x00;
            for (uint64_t k = pos; k < pos + 4 && k < g_size; k++) g_buf[k] = v;
            break;
        }
        }
    }
}

/* Sets a field of the pristine copy, runs, restores. */
#define BREAK_FIELD(off, type, value)                  \
    do {                                               \
        memcpy(g_buf, g_orig, g_size);                 \
        type v_ = (type)(value);                       \
        memcpy(g_buf + (off), &v_, sizeof v_);         \
        CHECK(exercise(g_size) == FL_EBADDATA);        \
    } while (0)

static void hand_broken(void) {
    Elf64_Ehdr eh;
    memcpy(&eh, g_orig, sizeof eh);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_machine), uint16_t, EM_386);
    BREAK_FIELD(EI_CLASS, uint8_t, ELFCLASS32);
    BREAK_FIELD(EI_DATA, uint8_t, ELFDATA2MSB);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_shnum), uint16_t, 0xffff);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_phnum), uint16_t, 0xfff0);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_phoff), uint64_t, UINT64_MAX - 8);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_shoff), uint64_t, g_size - 8);
    BREAK_FIELD(offsetof(Elf64_Ehdr, e_shentsize), uint16_t, 32);
    /* Extended numbering: counts from section header 0. */
    memcpy(g_buf, g_orig, g_size);
    uint16_t zero = 0, xnum = PN_XNUM;
    uint64_t huge = UINT64_MAX / 8;
    memcpy(g_buf + offsetof(Elf64_Ehdr, e_shnum), &zero, 2);
    memcpy(g_buf + eh.e_shoff + offsetof(Elf64_Shdr, sh_size), &huge, 8);
    CHECK(exercise(g_size) == FL_EBADDATA);
    memcpy(g_buf, g_orig, g_size);
    uint32_t big = 0x7fffffff;
    memcpy(g_buf + offsetof(Elf64_Ehdr, e_phnum), &xnum, 2);
    memcpy(g_buf + eh.e_shoff + offsetof(Elf64_Shdr, sh_info), &big, 4);
    CHECK(exercise(g_size) == FL_EBADDATA);

    /* Broken sections that open fine but must not be trusted: each symbol table and note gets
     * an absurd size, a wrong entry size, a string table link out of range. */
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        uint64_t at = eh.e_shoff + i * sizeof sh;
        memcpy(&sh, g_orig + at, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_NOTE)
            continue;
        for (unsigned k = 0; k < 4; k++) {
            Elf64_Shdr b = sh;
            if (k == 0) b.sh_size = UINT64_MAX - 16;
            if (k == 1) b.sh_entsize = 7;
            if (k == 2) b.sh_link = 0xfffffff0u;
            if (k == 3) b.sh_offset = g_size - 1;
            memcpy(g_buf, g_orig, g_size);
            memcpy(g_buf + at, &b, sizeof b);
            CHECK(exercise(g_size) == 0); /* opens; the rest just must not crash */
        }
    }

    /* Notes with absurd sizes, in a buffer. */
    uint32_t note[8] = {4, 0xfffffff0u, NT_GNU_BUILD_ID, 0x00554e47, 1, 2, 3, 4};
    fl_reader_t r;
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned id_len;
    fl_reader_init_buffer(&r, note, sizeof note, 0x1000);
    CHECK(fl_elf_notes_build_id(&r, 0x1000, sizeof note, 4, id, sizeof id, &id_len) ==
          FL_ENOTFOUND);
    note[0] = 0xfffffffdu;
    note[1] = 4;
    CHECK(fl_elf_notes_build_id(&r, 0x1000, sizeof note, 4, id, sizeof id, &id_len) ==
          FL_ENOTFOUND);
    CHECK(fl_elf_notes_build_id(&r, UINT64_MAX - 4, 64, 4, id, sizeof id, &id_len) == FL_EFAULT);

    /* Program-header walks with bad counts and addresses. */
    fl_image_t img;
    fl_reader_init_buffer(&r, g_orig, g_size, 0);
    CHECK(fl_elf_image_from_phdrs(&r, eh.e_phoff, 0, 0, &img) == FL_EBADDATA);
    CHECK(fl_elf_image_from_phdrs(&r, eh.e_phoff, FL_PHNUM_MAX + 1, 0, &img) == FL_EBADDATA);
    CHECK(fl_elf_image_from_phdrs(&r, UINT64_MAX - 100, 4, 0, &img) == FL_EBADDATA);
    CHECK(fl_elf_image_from_phdrs(&r, g_size + 4096, 4, 0, &img) == FL_EFAULT);
    CHECK(fl_elf_image_from_phdrs(&r, eh.e_phoff, eh.e_phnum, 0, &img) == 0);
    /* A bias that would wrap a segment past 2^64. */
    CHECK(fl_elf_image_from_phdrs(&r, eh.e_phoff, eh.e_phnum, UINT64_MAX - 0x100, &img) ==
          FL_EBADDATA);
}

int main(void) {
    alarm(240); /* a hang becomes a failure (SIGALRM), well inside CTest's timeout */
    CHECK(load(FL_FIXTURE_BUILDID));
    g_fd = mkstemp(g_tmp);
    CHECK(g_fd >= 0);
    if (!g_orig || g_fd < 0) TEST_END();

    /* The pristine file parses. */
    memcpy(g_buf, g_orig, g_size);
    CHECK(exercise(g_size) == 0);

    /* Every truncation up to 4096 bytes, then a spread of longer ones: the section table is at
     * the end of the file, so each must be refused at open. */
    for (size_t len = 0; len <= 4096 && len < g_size; len++) CHECK(exercise(len) != 0);
    for (size_t len = 4097; len < g_size; len += 61) CHECK(exercise(len) != 0);
    CHECK(exercise(g_size - 1) != 0);

    find_regions();
    CHECK(g_nregions >= 6);
    for (unsigned it = 0; it < FLIP_ITERATIONS && g_nregions; it++) {
        memcpy(g_buf, g_orig, g_size);
        mutate();
        (void)exercise(g_size);
    }
    CHECK(g_opened > FLIP_ITERATIONS / 4); /* the flips reached the parsers behind open */
    CHECK(g_symbolized > 0);
    CHECK(g_phdr_ok > 0);

    hand_broken();

    fprintf(stderr, "opened %u, symbolized %u, phdrs parsed %u\n", g_opened, g_symbolized,
            g_phdr_ok);
    close(g_fd);
    unlink(g_tmp);
    free(g_orig);
    free(g_buf);
    TEST_END();
}
