/* SPDX-License-Identifier: MIT */
/* macho: Mach-O images (thin and fat) read through a memory reader: identity, segments, symbols and
 * compact unwind. Portable C: built and tested on every platform, used by the Darwin crash path
 * (live memory) and by the CLI (files). */
#ifndef FAULTLINE_MACHO_H
#define FAULTLINE_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Values of <mach/machine.h>, repeated so that no Apple header is needed. */
#define FL_MACHO_CPU_X86_64 0x01000007u
#define FL_MACHO_CPU_ARM64 0x0100000cu
#define FL_MACHO_CPU_SUBTYPE_MASK 0x00ffffffu /* cpusubtype without the capability bits */
#define FL_MACHO_CPU_SUBTYPE_ARM64E 2u

/* Limits: input beyond them is malformed (FL_EBADDATA) or cut (FL_ERANGE, where stated). */
#define FL_MACHO_FAT_MAX 16u           /* slices in a fat header */
#define FL_MACHO_NCMDS_MAX 4096u       /* load commands */
#define FL_MACHO_SIZEOFCMDS_MAX (4u << 20)
#define FL_MACHO_SEGMENTS_MAX 32u      /* segments kept in fl_macho_image_t (more: truncated) */
#define FL_MACHO_NSYMS_MAX (1u << 24)  /* symbol table entries */
#define FL_MACHO_UNWIND_PAGES_MAX 65536u /* first-level index entries */
#define FL_MACHO_NAME_MAX 17u          /* segment/section names: 16 bytes + NUL */

/* ---- Files: thin and fat ---- */

typedef struct fl_macho_slice {
    uint32_t cputype, cpusubtype;
    uint64_t offset, size; /* of the slice within the file */
} fl_macho_slice_t;

/* Lists the 64-bit Mach-O slices of the file held in r at addresses [0, size): each architecture of
 * a fat file (FAT_MAGIC or FAT_MAGIC_64; slices must lie inside the file), or the whole file for a
 * thin one. FL_ENOSYS for a 32-bit Mach-O (thin, or the only kind in a fat file), FL_EBADDATA for
 * anything else that is not a Mach-O file or is malformed, FL_ERANGE if more than cap slices
 * (the first cap are returned). AS-SAFE. */
int fl_macho_slices(const fl_reader_t *r, uint64_t size, fl_macho_slice_t *out, unsigned cap,
                    unsigned *count);

/* "arm64", "arm64e", "x86_64", "x86_64h" or "unknown". AS-SAFE. */
const char *fl_macho_arch_name(uint32_t cputype, uint32_t cpusubtype);

/* ---- One image: header, load commands, segments ---- */

typedef struct fl_macho_segment {
    char name[FL_MACHO_NAME_MAX];
    uint64_t vmaddr, vmsize, fileoff, filesize;
    uint32_t maxprot, initprot, nsects;
} fl_macho_segment_t;

typedef struct fl_macho_section {
    char segname[FL_MACHO_NAME_MAX], sectname[FL_MACHO_NAME_MAX];
    uint64_t vmaddr, size;
    uint32_t offset, flags;
} fl_macho_section_t;

typedef struct fl_macho_image {
    const fl_reader_t *r;
    uint64_t header;   /* reader address of the mach_header_64 */
    uint64_t limit;    /* file slices: reader address one past the slice; loaded: UINT64_MAX */
    bool loaded;       /* laid out by dyld (sections at vmaddr + slide) rather than a file slice */
    uint32_t cputype, cpusubtype, filetype, flags, ncmds, sizeofcmds;
    bool has_uuid;
    uint8_t uuid[16];
    uint64_t text_vmaddr, text_vmsize; /* the __TEXT segment (holds the header) */
    uint64_t slide;    /* loaded: header - text_vmaddr, runtime address = vmaddr + slide; files: 0 */
    unsigned nsegments;
    bool segments_truncated;
    fl_macho_segment_t segments[FL_MACHO_SEGMENTS_MAX];
    /* LC_SYMTAB (file offsets); has_symtab false when absent. */
    bool has_symtab;
    uint32_t symoff, nsyms, stroff, strsize;
    /* LC_DYSYMTAB: local symbols present? false with no LC_DYSYMTAB or nlocalsym == 0. */
    bool has_local_symbols;
    /* LC_FUNCTION_STARTS (a file range in __LINKEDIT); size 0 when absent. */
    uint32_t function_starts_off, function_starts_size;
    /* Sections the unwinders and symbolizers need (vmaddr and size; 0, 0 when absent). */
    uint64_t text_sect_vmaddr, text_sect_size;     /* __TEXT,__text */
    uint64_t unwind_info_vmaddr, unwind_info_size; /* __TEXT,__unwind_info */
    uint64_t eh_frame_vmaddr, eh_frame_size;       /* __TEXT,__eh_frame */
} fl_macho_image_t;

/* Parses the image whose mach_header_64 is at reader address `header`. For a file slice pass its
 * offset and size (limit = header + size bounds every read, loaded = false); for an image in
 * memory pass size UINT64_MAX and loaded = true. Checks: 64-bit magic (FL_ENOSYS for 32-bit),
 * ncmds/sizeofcmds within limits, each load command at least 8 bytes, 4-byte aligned and inside
 * sizeofcmds (so commands can neither overlap nor loop), segment/section ranges without
 * overflow and, for files, inside the slice. Unknown load commands are skipped. FL_EBADDATA on
 * malformed input, FL_EFAULT if the reader cannot read it. AS-SAFE. */
int fl_macho_image_init(fl_macho_image_t *img, const fl_reader_t *r, uint64_t header,
                        uint64_t size, bool loaded);

/* Where `len` bytes at unslid address vmaddr are in the reader: loaded images vmaddr + slide,
 * files the owning segment's file bytes. FL_ERANGE if no segment (with file bytes, for files)
 * holds all of them. AS-SAFE. */
int fl_macho_image_vm_to_reader(const fl_macho_image_t *img, uint64_t vmaddr, uint64_t len,
                                uint64_t *out);
/* The same for a file offset (symbol and string tables, function starts): loaded images go
 * through __LINKEDIT (its vmaddr + slide + (fileoff - its fileoff)); files through the slice.
 * FL_ERANGE if outside. AS-SAFE. */
int fl_macho_image_file_to_reader(const fl_macho_image_t *img, uint64_t fileoff, uint64_t len,
                                  uint64_t *out);

/* Calls fn for each section of each LC_SEGMENT_64, in load-command order, until fn returns
 * nonzero (which is returned). At most FL_MACHO_NCMDS_MAX * 256 sections. AS-SAFE if fn is. */
int fl_macho_image_sections(const fl_macho_image_t *img,
                            int (*fn)(void *ctx, const fl_macho_section_t *sect), void *ctx);

/* ---- Symbols ---- */

/* Resolves an unslid address to the nearest preceding defined symbol: nlist entries that are not
 * stabs (N_STAB), are of type N_SECT and lie in the same section as vmaddr (n_sect names it and
 * n_value is inside it); among symbols at one address, the first in the table. When
 * LC_FUNCTION_STARTS shows a function starting after that symbol and at or before vmaddr, the
 * address belongs to an unnamed (stripped) function: FL_ENOTFOUND rather than a wrong name.
 * Copies the symbol's name as stored (with the leading '_' of C names) into name[cap] (cut,
 * terminated) and sets *sym_vmaddr. FL_ENOTFOUND if no symbol, FL_EBADDATA on a malformed table.
 * A linear scan, bounded by FL_MACHO_NSYMS_MAX: the crash path's way. AS-SAFE. */
int fl_macho_symbol_find(const fl_macho_image_t *img, uint64_t vmaddr, char *name, size_t cap,
                         uint64_t *sym_vmaddr);

/* The same answers from a sorted index built once (for the CLI and benchmarks: O(log n) a lookup).
 * Names point into the reader's bytes when it is a buffer reader, so the index lives only as long
 * as they do. NOT AS-SAFE (allocates). */
typedef struct fl_macho_symindex fl_macho_symindex_t;
int fl_macho_symindex_build(const fl_macho_image_t *img, fl_macho_symindex_t **out);
/* Count of symbols in the index (defined N_SECT, non-stab, inside their section). NOT AS-SAFE. */
size_t fl_macho_symindex_count(const fl_macho_symindex_t *ix);
int fl_macho_symindex_find(const fl_macho_symindex_t *ix, uint64_t vmaddr, const char **name,
                           uint64_t *sym_vmaddr);
void fl_macho_symindex_free(fl_macho_symindex_t *ix);

/* Helpers shared by the scan and the index. nlist_64 entries are 16 bytes: n_strx (u32), n_type,
 * n_sect (u8), n_desc (u16), n_value (u64). A symbol counts when its n_type is not a stab
 * (N_STAB 0xe0) and its type (N_TYPE 0x0e) is N_SECT (0x0e), values of <mach-o/nlist.h>. */
#define FL_MACHO_NLIST_SIZE 16u
static inline bool fl_macho_nlist_defined(uint8_t n_type) {
    return (n_type & 0xe0u) == 0 && (n_type & 0x0eu) == 0x0eu;
}
/* Where the nlist table is: its reader address in *addr (nsyms entries there). FL_ENOTFOUND
 * when the image has no symbols (no LC_SYMTAB, or nsyms 0: an empty table is nowhere, so its
 * symoff is not looked at, here nor by fl_macho_image_init), FL_EBADDATA when nsyms is over
 * FL_MACHO_NSYMS_MAX or the table is outside the image (__LINKEDIT for loaded images). The one
 * rule the scan, the index and the CLI's index share. AS-SAFE. */
int fl_macho_symtab_locate(const fl_macho_image_t *img, uint64_t *addr);
/* The section holding vmaddr: the first in load-command order whose [vmaddr, vmaddr+size) does,
 * as its 1-based ordinal (what nlist's n_sect counts) and start. FL_ENOTFOUND if none. AS-SAFE. */
int fl_macho_symbol_section(const fl_macho_image_t *img, uint64_t vmaddr, unsigned *ordinal,
                            uint64_t *sect_vmaddr);

/* Calls fn with each function start (unslid vmaddr) from LC_FUNCTION_STARTS, ascending, until fn
 * returns nonzero. FL_ENOTFOUND if the image has none. Bounded by the table's size. AS-SAFE if
 * fn is. */
int fl_macho_function_starts(const fl_macho_image_t *img, int (*fn)(void *ctx, uint64_t vmaddr),
                             void *ctx);
/* The same from the table's `size` bytes at reader address `addr` (a loaded image's, as
 * fl_image_t.function_starts records it), whose first start is counted from the unslid
 * text_vmaddr (__TEXT's). AS-SAFE if fn is. */
int fl_macho_function_starts_at(const fl_reader_t *r, uint64_t addr, uint32_t size,
                                uint64_t text_vmaddr, int (*fn)(void *ctx, uint64_t vmaddr),
                                void *ctx);
/* From the same table, the last function start <= vmaddr (unslid, as the table's): what a walk
 * needs at frame 0, as a search that stops past vmaddr without a call per start. 0,
 * FL_ENOTFOUND (vmaddr is below the first start), FL_EBADDATA, FL_EFAULT. AS-SAFE. */
int fl_macho_function_start_find(const fl_reader_t *r, uint64_t addr, uint32_t size,
                                 uint64_t text_vmaddr, uint64_t vmaddr, uint64_t *start);

/* ---- Compact unwind (__TEXT,__unwind_info) ---- */

/* What a lookup validated, for the next lookups in the same section to reuse: the header and
 * the last second-level page (a walk's steps mostly stay in one page). Keyed by the section's
 * reader address and size alone, so one memo must serve only sections whose bytes do not change
 * (a walk's); zero-filled: empty. */
typedef struct fl_macho_unwind_memo {
    uint64_t addr, size; /* the section described (size 0: nothing yet) */
    struct fl_macho_unwind_hdr {
        uint32_t common_off, common_count, index_off, index_count;
    } h;
    struct fl_macho_unwind_page { /* the last page (hi 0: none) */
        uint32_t kind, count, nencodings;
        uint64_t entries, encodings; /* section offsets */
        uint64_t lo, hi;             /* its first-level range of function offsets */
    } p;
} fl_macho_unwind_memo_t;

/* The section as the lookup needs it: where its bytes are and what its function offsets are
 * relative to. `base` is the mach header's address in the terms callers use for pcs: the unslid
 * __TEXT vmaddr for file addresses, or that plus the slide for runtime pcs. */
typedef struct fl_macho_unwind_info {
    const fl_reader_t *r;
    uint64_t addr, size; /* the section's bytes in r */
    uint64_t base;
    uint32_t cputype;
    fl_macho_unwind_memo_t *memo; /* NULL, or what earlier lookups here validated */
} fl_macho_unwind_info_t;

/* Fills ui for the image (base = text_vmaddr + slide for loaded images, text_vmaddr for files).
 * FL_ENOTFOUND if it has no __unwind_info. AS-SAFE. */
int fl_macho_unwind_info_init(const fl_macho_image_t *img, fl_macho_unwind_info_t *ui);

typedef struct fl_macho_unwind_entry {
    uint64_t start, end; /* the function range [start, end) the encoding covers, in pc terms */
    uint32_t encoding;   /* the raw 32-bit compact unwind encoding */
} fl_macho_unwind_entry_t;

/* Finds the entry covering pc: the first-level index (binary search), then the regular or
 * compressed second-level page, with the common or page-local encoding table. LSDA and
 * personality are ignored. With ui->memo, the header is checked once per section and a pc in
 * the range of the last page used goes straight to that page (the same answer for a valid
 * table; for an unsorted index, one that covers pc too). FL_ENOTFOUND if pc is outside the
 * table, FL_EBADDATA on malformed input (counts or offsets outside the section, indices out of
 * order). AS-SAFE. */
int fl_macho_unwind_find(const fl_macho_unwind_info_t *ui, uint64_t pc,
                         fl_macho_unwind_entry_t *out);

/* Calls fn for every entry in table order (start ascending) until fn returns nonzero, with end
 * set to the next entry's start (or the sentinel's). For `faultline inspect --unwind` and the
 * tests. Bounded by the section's size. AS-SAFE if fn is. */
int fl_macho_unwind_each(const fl_macho_unwind_info_t *ui,
                         int (*fn)(void *ctx, const fl_macho_unwind_entry_t *e), void *ctx);

/* A decoded encoding. Register numbers are DWARF numbers (x86_64: rbx 3, rbp 6, rsp 7, r12..r15
 * 12..15, rip 16; arm64: x0..x30 0..30, sp 31, pc 32; d8..d15 are 72..79). */
enum {
    FL_MACHO_RULE_NONE = 0,      /* encoding 0: no unwind information */
    FL_MACHO_RULE_FRAME,         /* arm64 FRAME / x86_64 RBP_FRAME: frame record at fp */
    FL_MACHO_RULE_FRAMELESS,     /* arm64 FRAMELESS / x86_64 STACK_IMMD: fixed stack size */
    FL_MACHO_RULE_STACK_IND,     /* x86_64 STACK_IND: stack size read from the function's code */
    FL_MACHO_RULE_DWARF          /* described by the FDE at dwarf_offset in __eh_frame */
};
#define FL_MACHO_RULE_REGS_MAX 18u /* arm64 FRAME: five x pairs and four d pairs */
#define FL_MACHO_REG_X86_64_RIP 16u
#define FL_MACHO_REG_ARM64_SP 31u
#define FL_MACHO_REG_ARM64_PC 32u

typedef struct fl_macho_unwind_rule {
    uint32_t kind;       /* FL_MACHO_RULE_* */
    uint32_t cputype;
    uint32_t encoding;
    uint32_t stack_size; /* FRAMELESS: bytes the function allocated, return address included
                          * on x86_64 */
    uint32_t stack_ind_offset, stack_adjust; /* STACK_IND: where the sub's immediate is */
    uint32_t dwarf_offset;                    /* DWARF */
    unsigned nregs;      /* saved registers, with the offset of each slot: */
    uint8_t reg[FL_MACHO_RULE_REGS_MAX];
    int32_t reg_offset[FL_MACHO_RULE_REGS_MAX]; /* FRAME: from the fp; FRAMELESS, STACK_IND:
                                                 * from the caller's sp (the CFA) */
} fl_macho_unwind_rule_t;

/* Decodes an encoding for an architecture. FL_EBADDATA for an encoding that is invalid (an
 * unknown mode, an impossible register permutation), FL_ENOSYS for an unknown cputype. reg[] and
 * reg_offset[] are written up to nregs only. AS-SAFE. */
int fl_macho_unwind_decode(uint32_t cputype, uint32_t encoding, fl_macho_unwind_rule_t *rule);

/* One line describing the rule, e.g. "frame, saved x19/x20 x21/x22", "frameless, stack 32",
 * "rbp frame, saved rbx r12", "stack immd 24, saved rbx", "stack ind (sub at +12, adjust 8)",
 * "dwarf at 0x1234", "none". Returns the length (cut to cap-1, always terminated). AS-SAFE. */
size_t fl_macho_unwind_rule_format(const fl_macho_unwind_rule_t *rule, char *buf, size_t cap);

/* Steps regs from the function described by `rule` (whose first instruction is at runtime address
 * func_start, needed by STACK_IND, which reads the immediate through `code`) to its caller, reading
 * the stack through `stack`: the caller's pc, sp, fp and every register the rule restores are set
 * and marked valid; volatile registers are marked invalid. arm64 FRAMELESS takes the return
 * address from lr (x30). Pointer-authentication bits are not stripped here (frames/ does it).
 * func_start must be the function's own start (LC_FUNCTION_STARTS or a symbol), not its entry's:
 * linkers (zig's) merge adjacent functions with equal encodings into one entry, and STACK_IND
 * offsets are from the function. FL_ENOSYS for NONE and DWARF rules (the caller tries another
 * stepper), FL_EFAULT if memory cannot be read, FL_EBADDATA if the result cannot be a caller
 * (sp not rising), FL_EINVAL if a register the rule needs (sp; fp for FRAME; lr for arm64
 * FRAMELESS) is not valid or STACK_IND has no code reader. On failure regs is unchanged.
 * The walker does not call it: it caches and applies each rule as the CFI row it translates to,
 * or as the row cache's entry for that row (frames/cfi_macho.c); this direct step is the
 * reference both translations are tested against
 * (tests/frames/test_macho_rows.c), itself tested against real stacks (tests/macho). AS-SAFE. */
int fl_macho_unwind_step(const fl_macho_unwind_rule_t *rule, const fl_reader_t *code,
                         uint64_t func_start, const fl_reader_t *stack, fl_dwarf_regs_t *regs);

/* ---- One loaded image in the platform-neutral model (shared: Darwin's collector, and on every
 * platform `faultline unwind` and the tests that walk Mach-O code) ---- */

/* Fills img (zeroed first) from the Mach-O image whose mach_header_64 is loaded at `header` in
 * mem: __TEXT as start/end and text range, slide, cputype, LC_UUID as the build id,
 * __unwind_info, __eh_frame and LC_FUNCTION_STARTS at their runtime addresses, is_main for
 * MH_EXECUTE; the path is
 * left empty. When the header does not parse, img keeps start = end = header and the parse error
 * is returned. AS-SAFE. */
int fl_macho_image_describe(const fl_reader_t *mem, uint64_t header, fl_image_t *img);
/* The same from an image parsed already (mi->loaded, header = its runtime address). AS-SAFE. */
void fl_macho_image_describe_parsed(const fl_macho_image_t *mi, fl_image_t *img);

/* ---- The live process's images (Darwin only: images_darwin.c) ---- */

/* Records, at install time, what the crash-time collector must not look up then: the address of
 * dyld's all-image-infos (task_info TASK_DYLD_INFO), the main executable's header and path.
 * Calls fl_memory_init(FL_MEMORY_NONE) if no reader was chosen yet. NOT AS-SAFE. */
int fl_macho_images_prepare(void);

/* The executable's path as fl_macho_images_prepare found it ("" before). AS-SAFE. */
const char *fl_macho_exe_path(void);

/* Collects every loaded image from dyld's all-image-infos through `mem`, without dyld's lock:
 * each infoArray entry, then dyld itself, parsed with fl_macho_image_init (loaded) into the
 * platform-neutral model: __TEXT as start/end and text range, slide, LC_UUID as the build id
 * (FL_BUILD_ID_MACHO_UUID), __unwind_info, cputype. While dyld updates the list (infoArray NULL,
 * or its change timestamp moving during the walk) out->inconsistent is set, and with no list the
 * executable recorded at install and dyld are listed. An image whose header does not parse keeps
 * its path and header address (start = end = header). Bounded by FL_IMAGES_MAX. AS-SAFE. */
int fl_macho_images_collect(const fl_reader_t *mem, fl_image_list_t *out);

#endif
