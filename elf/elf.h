/* SPDX-License-Identifier: MIT */
/* elf: ELF image identity (build-id, load bias, ranges) from live memory or a file, and symbols. */
#ifndef FAULTLINE_ELF_H
#define FAULTLINE_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* The image model (fl_image_t, fl_image_list_t, FL_BUILD_ID_*) is platform-neutral: base/base.h. */

/* Records, at install time, what the crash-time collector needs and must not look up then:
 * the address of the loader's r_debug (from the executable's DT_DEBUG, else &_r_debug), the
 * executable's program headers (AT_PHDR/AT_PHNUM) and load bias and the vdso (AT_SYSINFO_EHDR).
 * Calls fl_memory_init(FL_MEMORY_NONE) if no reader was chosen yet. Call again after anything
 * that changes these (never needed in practice). NOT AS-SAFE. */
int fl_elf_images_prepare(void);

/* The executable's path, read from /proc/self/exe now (by the collector, not at install: a
 * process's first look into /proc costs tens of microseconds, which every preloaded program
 * would pay at start), into buf, NUL-terminated; without /proc, the name execve was given
 * (AT_EXECFN, read through the safe reader); "" if neither. The " (deleted)" the kernel
 * appends once the file is removed or replaced (an upgrade under a running program) is dropped,
 * so the path reads as it did at start. False if the path was cut to fit. AS-SAFE. */
bool fl_elf_exe_path(char *buf, size_t len);

/* Collects every loaded image (executable first, the vdso, every link_map entry of the main
 * namespace) by walking the loader's list and the images' program headers through `mem`,
 * without the loader's lock. Each image gets its GNU build-id from PT_NOTE, or the text-hash
 * fallback. Bounded by FL_IMAGES_MAX and a loop guard. AS-SAFE. */
int fl_elf_images_collect(const fl_reader_t *mem, fl_image_list_t *out);
/* The same for a list that an earlier collect or refresh filled (or a zeroed one): each image
 * whose loader entry is unchanged and at the same place in the list (the same link_map node,
 * l_addr, l_ld and name; the executable; the vdso) keeps what was read of it then, so that only
 * the loader's list is read again (fl_backtrace reads the images at every call). A library
 * replaced under the same name at the same address with the same l_ld between two calls would
 * keep its old ranges: fl_backtrace's walks read tables only through the safe reader. AS-SAFE. */
int fl_elf_images_refresh(const fl_reader_t *mem, fl_image_list_t *out);

/* Fills `img` (slide, ranges, eh_frame_hdr, build-id) from program headers at runtime address
 * phdr_addr with phnum entries (1..FL_PHNUM_MAX), given the load bias. Leaves path, path_truncated,
 * is_main and is_vdso alone. FL_EBADDATA for a bad count or no PT_LOAD, FL_EFAULT if the headers
 * cannot be read. AS-SAFE. */
int fl_elf_image_from_phdrs(const fl_reader_t *mem, uint64_t phdr_addr, unsigned phnum,
                            uint64_t slide, fl_image_t *img);

/* ---- Helpers shared by the memory and file parsers (AS-SAFE; the file side passes a buffer
 * reader over its mapping, so both compute byte-identical results) ---- */

#define FL_PHNUM_MAX 512u        /* more program headers than this is malformed */
#define FL_NOTES_MAX_BYTES 65536u /* note segments/sections are scanned only this far */
#define FL_TEXT_HASH_BYTES 4096u

/* Finds NT_GNU_BUILD_ID ("GNU", type 3) among the notes in [addr, addr+size), padded to 8 bytes
 * when align is 8 and to 4 otherwise. Copies min(id length, cap) bytes to id and sets *len to the
 * copied count. FL_ENOTFOUND if none, FL_ERANGE if the id was longer than cap (prefix copied). */
int fl_elf_notes_build_id(const fl_reader_t *r, uint64_t addr, uint64_t size, uint64_t align,
                          uint8_t *id, unsigned cap, unsigned *len);

/* The text-hash fallback id: the first min(len, FL_TEXT_HASH_BYTES) bytes at addr, byte i XORed
 * into id[i % 16]. FL_EFAULT if any of them is unreadable, FL_ENOTFOUND if len is 0. */
int fl_elf_text_hash(const fl_reader_t *r, uint64_t addr, uint64_t len, uint8_t id[16]);
/* The section ".text" (SHT_PROGBITS) of the ELF file read through `file` (addresses are file
 * offsets): its sh_addr, sh_offset and sh_size. Breakpad and Sentry identify an ELF file without
 * a build-id by its first FL_TEXT_HASH_BYTES bytes (fl_elf_text_hash). FL_ENOTFOUND without
 * one, FL_EBADDATA (not ELF, malformed section table), FL_EFAULT (unreadable). AS-SAFE. */
int fl_elf_text_section(const fl_reader_t *file, uint64_t *addr, uint64_t *offset, uint64_t *size);

/* ---- ELF files on disk (NOT AS-SAFE: allocate and use stdio/mmap) ---- */

typedef struct fl_elf_file fl_elf_file_t;

/* Maps and validates an ELF file (64-bit, little-endian, x86_64 or aarch64). */
int fl_elf_file_open(const char *path, fl_elf_file_t **out);
void fl_elf_file_close(fl_elf_file_t *f);
/* The GNU build-id from the file's notes (PT_NOTE, then SHT_NOTE sections). FL_ENOTFOUND if none. */
int fl_elf_file_build_id(const fl_elf_file_t *f, uint8_t *id, unsigned cap, unsigned *len);
/* The fallback id of `kind` (FL_BUILD_ID_TEXT_SECTION or FL_BUILD_ID_TEXT_HASH) that
 * fl_elf_images_collect computes from memory. FL_ENOTFOUND when the file has no such bytes. */
int fl_elf_file_text_hash(const fl_elf_file_t *f, int kind, uint8_t id[16]);
/* Symbolizes a file virtual address: nearest preceding function/object symbol from .symtab,
 * else .dynsym, whose size covers the address (or, for size 0, the nearest preceding one).
 * *name points into the file's mapping and lives until fl_elf_file_close. The symbol index is
 * built on the first call (FL_ENOMEM possible), so calls on one f must not run concurrently. */
int fl_elf_file_symbolize(fl_elf_file_t *f, uint64_t vaddr, const char **name, uint64_t *offset);
/* e_machine of the file (EM_X86_64 = 62, EM_AARCH64 = 183). */
unsigned fl_elf_file_machine(const fl_elf_file_t *f);
/* The .gnu_debuglink file name, or NULL. */
const char *fl_elf_file_debuglink(const fl_elf_file_t *f);
/* Program header i (0 <= i < count) of type PT_LOAD: its vaddr, memsz, file offset, filesz and
 * p_flags (PF_R 4, PF_W 2, PF_X 1). FL_ENOTFOUND for other types or i out of range. */
unsigned fl_elf_file_phnum(const fl_elf_file_t *f);
int fl_elf_file_load_segment(const fl_elf_file_t *f, unsigned i, uint64_t *vaddr, uint64_t *memsz,
                             uint64_t *offset, uint64_t *filesz, uint32_t *flags);
/* Whether a program header of type p_type (PT_INTERP: the file names a program interpreter, so
 * it is not statically linked) is there. */
bool fl_elf_file_has_segment(const fl_elf_file_t *f, uint32_t p_type);
/* Symbols the symbolizer uses (after merging aliases), building the index if needed; negative
 * FL_E* if it cannot be built. */
long fl_elf_file_symbol_count(fl_elf_file_t *f);
/* Symbol i (0 <= i < fl_elf_file_symbol_count) of that index, in ascending address order: its
 * file address, size (0: unknown) and name (into the mapping). FL_ENOTFOUND past the end. */
int fl_elf_file_symbol(fl_elf_file_t *f, size_t i, uint64_t *addr, uint64_t *size,
                       const char **name);
/* Whether a section of that name with contents (not SHT_NOBITS) exists. */
bool fl_elf_file_has_section(const fl_elf_file_t *f, const char *name);
/* That section's address (sh_addr) and size; FL_ENOTFOUND if there is none with contents. */
int fl_elf_file_section(const fl_elf_file_t *f, const char *name, uint64_t *addr, uint64_t *size);
/* The CRC32 stored after the .gnu_debuglink name. FL_ENOTFOUND without a (well-formed) link. */
int fl_elf_file_debuglink_crc(const fl_elf_file_t *f, uint32_t *crc);

#endif
