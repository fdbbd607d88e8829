/* SPDX-License-Identifier: MIT */
/* elf: image identity from program headers read through a memory reader (crash-time, AS-safe). */
#include <elf.h>

#include "elf/elf.h"

#pragma GCC poison malloc calloc realloc free printf fprintf snprintf

#define NOTE_HDR 12u   /* Elf64_Nhdr: namesz, descsz, type */
#define NOTES_MAX 1024u /* notes examined per region, whatever their sizes */
#define PHDR_BATCH 16u  /* program headers read per call (896 bytes of stack) */

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

int fl_elf_notes_build_id(const fl_reader_t *r, uint64_t addr, uint64_t size, uint64_t align,
                          uint8_t *id, unsigned cap, unsigned *len) {
    /* Linkers put 8-aligned notes (.note.gnu.property) in their own PT_NOTE with p_align 8;
     * everything else, including the build-id, uses 4 (gABI). */
    align = align == 8 ? 8 : 4;
    if (size > FL_NOTES_MAX_BYTES) size = FL_NOTES_MAX_BYTES;
    uint64_t region_end, off = 0;
    if (!fl_add_u64(addr, size, &region_end)) return FL_EFAULT; /* so addr + (<= size) is safe */
    for (unsigned n = 0; n < NOTES_MAX && size - off >= NOTE_HDR; n++) {
        uint32_t h[3];
        if (fl_read(r, addr + off, h, sizeof h)) return FL_EFAULT;
        /* namesz/descsz are 32-bit and off <= 64 KiB, so none of these sums can overflow. */
        uint64_t name_off = off + NOTE_HDR;
        uint64_t desc_off = name_off + align_up(h[0], align);
        uint64_t next = desc_off + align_up(h[1], align);
        if (desc_off + h[1] > size) return FL_ENOTFOUND; /* note runs past the region */
        if (h[2] == NT_GNU_BUILD_ID && h[0] == 4 && h[1] > 0) {
            char name[4];
            if (fl_read(r, addr + name_off, name, 4)) return FL_EFAULT;
            if (fl_memcmp(name, "GNU", 4) == 0) {
                unsigned n_copy = h[1] < cap ? h[1] : cap;
                if (fl_read(r, addr + desc_off, id, n_copy)) return FL_EFAULT;
                *len = n_copy;
                return h[1] > cap ? FL_ERANGE : 0;
            }
        }
        if (next > size) break;
        off = next;
    }
    return FL_ENOTFOUND;
}

int fl_elf_text_hash(const fl_reader_t *r, uint64_t addr, uint64_t len, uint8_t id[16]) {
    if (len > FL_TEXT_HASH_BYTES) len = FL_TEXT_HASH_BYTES;
    if (!len) return FL_ENOTFOUND;
    uint64_t end;
    if (!fl_add_u64(addr, len, &end)) return FL_EFAULT;
    uint8_t buf[256];
    fl_memset(id, 0, 16);
    for (uint64_t pos = 0; pos < len; pos += sizeof buf) {
        size_t n = len - pos < sizeof buf ? (size_t)(len - pos) : sizeof buf;
        if (fl_read(r, addr + pos, buf, n)) return FL_EFAULT;
        for (size_t i = 0; i < n; i++) id[(pos + i) % 16] ^= buf[i];
    }
    return 0;
}

#define SHNUM_MAX 65536u /* more sections than this is malformed */

int fl_elf_text_section(const fl_reader_t *file, uint64_t *addr, uint64_t *offset, uint64_t *size) {
    Elf64_Ehdr eh;
    if (fl_read(file, 0, &eh, sizeof eh)) return FL_EFAULT;
    if (fl_memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0)
        return eh.e_shoff == 0 ? FL_ENOTFOUND : FL_EBADDATA;
    Elf64_Shdr first, strs, sh;
    uint64_t shnum = eh.e_shnum, strndx = eh.e_shstrndx;
    if (fl_read(file, eh.e_shoff, &first, sizeof first)) return FL_EFAULT;
    if (shnum == 0) shnum = first.sh_size;          /* gABI: counts >= 0xff00 in section 0 */
    if (strndx == SHN_XINDEX) strndx = first.sh_link;
    if (shnum > SHNUM_MAX || strndx >= shnum) return FL_EBADDATA;
    if (fl_read(file, eh.e_shoff + strndx * sizeof strs, &strs, sizeof strs)) return FL_EFAULT;
    for (uint64_t i = 1; i < shnum; i++) {
        if (fl_read(file, eh.e_shoff + i * sizeof sh, &sh, sizeof sh)) return FL_EFAULT;
        char name[6];
        if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
            sh.sh_name > strs.sh_size || strs.sh_size - sh.sh_name < sizeof name ||
            fl_read(file, strs.sh_offset + sh.sh_name, name, sizeof name) ||
            fl_memcmp(name, ".text", sizeof name) != 0)
            continue;
        *addr = sh.sh_addr;
        *offset = sh.sh_offset;
        *size = sh.sh_size;
        return 0;
    }
    return FL_ENOTFOUND;
}

int fl_elf_image_from_phdrs(const fl_reader_t *mem, uint64_t phdr_addr, unsigned phnum,
                            uint64_t slide, fl_image_t *img) {
    if (phnum == 0 || phnum > FL_PHNUM_MAX) return FL_EBADDATA;
    uint64_t table_end;
    if (!fl_add_u64(phdr_addr, (uint64_t)phnum * sizeof(Elf64_Phdr), &table_end))
        return FL_EBADDATA;

    img->slide = slide;
    img->start = img->end = img->text_start = img->text_end = 0;
    img->phdr_addr = phdr_addr;
    img->eh_frame_hdr = img->eh_frame_hdr_size = 0;
    img->phnum = (uint16_t)phnum;
    img->build_id_len = 0;
    img->build_id_kind = FL_BUILD_ID_NONE;

    uint64_t lo = UINT64_MAX, hi = 0, tlo = UINT64_MAX, thi = 0;
    uint64_t hash_addr = 0, hash_len = 0;
    bool have_text = false;
    Elf64_Phdr ph[PHDR_BATCH];
    for (unsigned i = 0; i < phnum; i++) {
        unsigned k = i % PHDR_BATCH;
        if (k == 0) {
            unsigned n = phnum - i < PHDR_BATCH ? phnum - i : PHDR_BATCH;
            if (fl_read(mem, phdr_addr + (uint64_t)i * sizeof(Elf64_Phdr), ph, n * sizeof ph[0]))
                return FL_EFAULT;
        }
        const Elf64_Phdr *p = &ph[k];
        /* Runtime = vaddr + slide modulo 2^64 (a negative bias is legal); only the segment
         * itself must not wrap. */
        uint64_t at = p->p_vaddr + slide, seg_end;
        switch (p->p_type) {
        case PT_LOAD:
            if (p->p_memsz == 0) break;
            if (!fl_add_u64(at, p->p_memsz, &seg_end)) return FL_EBADDATA;
            if (at < lo) lo = at;
            if (seg_end > hi) hi = seg_end;
            if (p->p_flags & PF_X) {
                if (at < tlo) tlo = at;
                if (seg_end > thi) thi = seg_end;
                if (!have_text) { /* the text hash covers the first executable segment */
                    have_text = true;
                    hash_addr = at;
                    hash_len = p->p_filesz < p->p_memsz ? p->p_filesz : p->p_memsz;
                }
            }
            break;
        case PT_GNU_EH_FRAME:
            img->eh_frame_hdr = at;
            img->eh_frame_hdr_size = p->p_memsz;
            break;
        case PT_NOTE:
            if (img->build_id_kind == FL_BUILD_ID_NONE) {
                unsigned len = 0;
                int e = fl_elf_notes_build_id(mem, at, p->p_filesz, p->p_align, img->build_id,
                                              FL_BUILD_ID_MAX, &len);
                if (e == 0 || e == FL_ERANGE) { /* an over-long id keeps its first 32 bytes */
                    img->build_id_kind = FL_BUILD_ID_GNU;
                    img->build_id_len = (uint8_t)len;
                }
            }
            break;
        default:
            break;
        }
    }
    if (lo == UINT64_MAX) return FL_EBADDATA;
    img->start = lo;
    img->end = hi;
    if (have_text) {
        img->text_start = tlo;
        img->text_end = thi;
    }
    if (img->build_id_kind == FL_BUILD_ID_NONE && have_text &&
        fl_elf_text_hash(mem, hash_addr, hash_len, img->build_id) == 0) {
        img->build_id_kind = FL_BUILD_ID_TEXT_HASH;
        img->build_id_len = 16;
    }
    return 0;
}
