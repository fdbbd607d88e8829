/* SPDX-License-Identifier: MIT */
/* macho: fat headers, the mach_header_64 and its load commands, address translation (AS-safe). */
#include "macho/macho.h"

#pragma GCC poison malloc calloc realloc free printf fprintf snprintf

/* <mach-o/loader.h>, <mach-o/fat.h> and <mach/machine.h> values. */
#define MH_MAGIC 0xfeedfaceu
#define MH_CIGAM 0xcefaedfeu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM_64 0xcffaedfeu
#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu
#define LC_SYMTAB 0x2u
#define LC_DYSYMTAB 0xbu
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_FUNCTION_STARTS 0x26u
#define SECTION_TYPE 0x000000ffu
#define S_ZEROFILL 0x1u
#define S_GB_ZEROFILL 0xcu
#define S_THREAD_LOCAL_ZEROFILL 0x12u
#define CPU_SUBTYPE_X86_64_H 8u

#define MACH_HEADER_64_SIZE 32u
#define SEGMENT_COMMAND_64_SIZE 72u
#define SECTION_64_SIZE 80u
#define FAT_HEADER_SIZE 8u
#define FAT_ARCH_SIZE 20u
#define FAT_ARCH_64_SIZE 32u

/* Mach-O fields are little-endian on every architecture we read, fat headers big-endian; decoding
 * bytes keeps the parser independent of the host's byte order. */
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }
static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

static void copy_name(char dst[FL_MACHO_NAME_MAX], const uint8_t src[16]) {
    fl_memcpy(dst, src, 16);
    dst[16] = 0;
}

/* ---- Files ---- */

/* 1: a 64-bit Mach-O header, 0: a 32-bit or byte-swapped one, FL_EBADDATA: neither. */
static int classify_magic(uint32_t magic) {
    if (magic == MH_MAGIC_64) return 1;
    if (magic == MH_MAGIC || magic == MH_CIGAM || magic == MH_CIGAM_64) return 0;
    return FL_EBADDATA;
}

int fl_macho_slices(const fl_reader_t *r, uint64_t size, fl_macho_slice_t *out, unsigned cap,
                    unsigned *count) {
    uint8_t h[MACH_HEADER_64_SIZE];
    *count = 0;
    if (size < FAT_HEADER_SIZE) return FL_EBADDATA;
    if (fl_read(r, 0, h, FAT_HEADER_SIZE)) return FL_EFAULT;
    uint32_t fat_magic = be32(h);
    if (fat_magic != FAT_MAGIC && fat_magic != FAT_MAGIC_64) {
        int kind = classify_magic(le32(h));
        if (kind < 0) return kind;
        if (kind == 0) return FL_ENOSYS;
        if (size < MACH_HEADER_64_SIZE) return FL_EBADDATA;
        if (fl_read(r, 0, h, MACH_HEADER_64_SIZE)) return FL_EFAULT;
        if (cap == 0) return FL_ERANGE;
        out[0] = (fl_macho_slice_t){le32(h + 4), le32(h + 8), 0, size};
        *count = 1;
        return 0;
    }
    uint32_t nfat = be32(h + 4);
    unsigned entsize = fat_magic == FAT_MAGIC_64 ? FAT_ARCH_64_SIZE : FAT_ARCH_SIZE;
    /* Java class files share FAT_MAGIC; their version makes nfat_arch 45 or more. */
    if (nfat == 0 || nfat > FL_MACHO_FAT_MAX) return FL_EBADDATA;
    if (!fl_range_ok(FAT_HEADER_SIZE, (uint64_t)nfat * entsize, size)) return FL_EBADDATA;
    uint64_t offs[FL_MACHO_FAT_MAX], ends[FL_MACHO_FAT_MAX];
    unsigned n64 = 0, n32 = 0;
    for (uint32_t i = 0; i < nfat; i++) {
        uint8_t e[FAT_ARCH_64_SIZE];
        if (fl_read(r, FAT_HEADER_SIZE + (uint64_t)i * entsize, e, entsize)) return FL_EFAULT;
        fl_macho_slice_t s = {be32(e), be32(e + 4), 0, 0};
        if (fat_magic == FAT_MAGIC_64) {
            s.offset = be64(e + 8);
            s.size = be64(e + 16);
        } else {
            s.offset = be32(e + 8);
            s.size = be32(e + 12);
        }
        if (!fl_range_ok(s.offset, s.size, size) || s.size < MACH_HEADER_64_SIZE ||
            s.offset < FAT_HEADER_SIZE + (uint64_t)nfat * entsize)
            return FL_EBADDATA;
        for (uint32_t j = 0; j < i; j++)
            if (s.offset < ends[j] && offs[j] < s.offset + s.size) return FL_EBADDATA;
        offs[i] = s.offset;
        ends[i] = s.offset + s.size;
        if (fl_read(r, s.offset, h, MACH_HEADER_64_SIZE)) return FL_EFAULT;
        int kind = classify_magic(le32(h));
        if (kind < 0) return kind;
        if (kind == 0) {
            n32++;
            continue;
        }
        if (le32(h + 4) != s.cputype) return FL_EBADDATA; /* the entry misnames its slice */
        if (n64 < cap) out[n64] = s;
        n64++;
    }
    if (n64 == 0) return n32 ? FL_ENOSYS : FL_EBADDATA;
    *count = n64 < cap ? n64 : cap;
    return n64 > cap ? FL_ERANGE : 0;
}

const char *fl_macho_arch_name(uint32_t cputype, uint32_t cpusubtype) {
    uint32_t sub = cpusubtype & FL_MACHO_CPU_SUBTYPE_MASK;
    if (cputype == FL_MACHO_CPU_X86_64) return sub == CPU_SUBTYPE_X86_64_H ? "x86_64h" : "x86_64";
    if (cputype == FL_MACHO_CPU_ARM64)
        return sub == FL_MACHO_CPU_SUBTYPE_ARM64E ? "arm64e" : "arm64";
    return "unknown";
}

/* ---- One image ---- */

/* Steps to the next load command: *off is its offset from the first command (start at 0), *seen
 * the commands visited so far. Enforces the limits fl_macho_image_init documents. */
static int next_command(const fl_macho_image_t *img, uint32_t *seen, uint64_t *off, uint64_t *addr,
                        uint32_t *cmd, uint32_t *cmdsize) {
    if (*seen >= img->ncmds) return FL_ENOTFOUND;
    if (!fl_range_ok(*off, 8, img->sizeofcmds)) return FL_EBADDATA;
    uint8_t c[8];
    *addr = img->header + MACH_HEADER_64_SIZE + *off; /* inside the range init checked */
    if (fl_read(img->r, *addr, c, 8)) return FL_EFAULT;
    *cmd = le32(c);
    *cmdsize = le32(c + 4);
    if (*cmdsize < 8 || *cmdsize % 4 || !fl_range_ok(*off, *cmdsize, img->sizeofcmds))
        return FL_EBADDATA;
    *off += *cmdsize;
    (*seen)++;
    return 0;
}

static bool is_zerofill(uint32_t flags) {
    uint32_t t = flags & SECTION_TYPE;
    return t == S_ZEROFILL || t == S_GB_ZEROFILL || t == S_THREAD_LOCAL_ZEROFILL;
}

/* The file bytes [off, off+len) of a slice: inside it? */
static bool in_slice(const fl_macho_image_t *img, uint64_t off, uint64_t len) {
    return img->loaded || fl_range_ok(off, len, img->limit - img->header);
}

static void decode_section(const uint8_t *s, fl_macho_section_t *out) {
    copy_name(out->sectname, s);
    copy_name(out->segname, s + 16);
    out->vmaddr = le64(s + 32);
    out->size = le64(s + 40);
    out->offset = le32(s + 48);
    out->flags = le32(s + 64);
}

/* Checks one section of segment seg; records the ones the image keeps. */
static int take_section(fl_macho_image_t *img, const fl_macho_segment_t *seg,
                        const fl_macho_section_t *s) {
    uint64_t end;
    if (!fl_add_u64(s->vmaddr, s->size, &end)) return FL_EBADDATA;
    /* Only sections with file bytes need to be in the file: a dSYM keeps its sections' offsets
     * while dropping their segments' contents. */
    if (seg->filesize && !is_zerofill(s->flags) && !in_slice(img, s->offset, s->size))
        return FL_EBADDATA;
    if (fl_strcmp(s->segname, "__TEXT") != 0) return 0;
    if (fl_strcmp(s->sectname, "__text") == 0) {
        img->text_sect_vmaddr = s->vmaddr;
        img->text_sect_size = s->size;
    } else if (fl_strcmp(s->sectname, "__unwind_info") == 0) {
        img->unwind_info_vmaddr = s->vmaddr;
        img->unwind_info_size = s->size;
    } else if (fl_strcmp(s->sectname, "__eh_frame") == 0) {
        img->eh_frame_vmaddr = s->vmaddr;
        img->eh_frame_size = s->size;
    }
    return 0;
}

static int take_segment(fl_macho_image_t *img, uint64_t addr, uint32_t cmdsize, bool *have_text) {
    uint8_t c[SEGMENT_COMMAND_64_SIZE];
    if (cmdsize < SEGMENT_COMMAND_64_SIZE) return FL_EBADDATA;
    if (fl_read(img->r, addr, c, sizeof c)) return FL_EFAULT;
    fl_macho_segment_t seg;
    copy_name(seg.name, c + 8);
    seg.vmaddr = le64(c + 24);
    seg.vmsize = le64(c + 32);
    seg.fileoff = le64(c + 40);
    seg.filesize = le64(c + 48);
    seg.maxprot = le32(c + 56);
    seg.initprot = le32(c + 60);
    seg.nsects = le32(c + 64);
    uint64_t end;
    if (!fl_add_u64(seg.vmaddr, seg.vmsize, &end) || !fl_add_u64(seg.fileoff, seg.filesize, &end) ||
        !in_slice(img, seg.fileoff, seg.filesize))
        return FL_EBADDATA;
    if ((uint64_t)seg.nsects * SECTION_64_SIZE > cmdsize - SEGMENT_COMMAND_64_SIZE)
        return FL_EBADDATA;
    if (fl_strcmp(seg.name, "__TEXT") == 0) {
        if (*have_text) return FL_EBADDATA;
        *have_text = true;
        img->text_vmaddr = seg.vmaddr;
        img->text_vmsize = seg.vmsize;
    }
    for (uint32_t i = 0; i < seg.nsects; i++) {
        uint8_t s[SECTION_64_SIZE];
        fl_macho_section_t sect;
        if (fl_read(img->r, addr + SEGMENT_COMMAND_64_SIZE + (uint64_t)i * SECTION_64_SIZE, s,
                    sizeof s))
            return FL_EFAULT;
        decode_section(s, &sect);
        int e = take_section(img, &seg, &sect);
        if (e) return e;
    }
    if (img->nsegments < FL_MACHO_SEGMENTS_MAX)
        img->segments[img->nsegments++] = seg;
    else
        img->segments_truncated = true;
    return 0;
}

/* Reads the fixed-size part of a command that must hold at least `need` bytes. */
static int read_command(const fl_macho_image_t *img, uint64_t addr, uint32_t cmdsize, uint8_t *dst,
                        uint32_t need) {
    if (cmdsize < need) return FL_EBADDATA;
    return fl_read(img->r, addr, dst, need) ? FL_EFAULT : 0;
}

int fl_macho_image_init(fl_macho_image_t *img, const fl_reader_t *r, uint64_t header,
                        uint64_t size, bool loaded) {
    fl_memset(img, 0, sizeof *img);
    img->r = r;
    img->header = header;
    img->loaded = loaded;
    if (!fl_add_u64(header, size, &img->limit)) {
        if (size != UINT64_MAX) return FL_EBADDATA;
        img->limit = UINT64_MAX;
    }
    uint8_t h[MACH_HEADER_64_SIZE];
    if (size < MACH_HEADER_64_SIZE) return FL_EBADDATA;
    if (fl_read(r, header, h, sizeof h)) return FL_EFAULT;
    int kind = classify_magic(le32(h));
    if (kind <= 0) return kind < 0 ? kind : FL_ENOSYS;
    img->cputype = le32(h + 4);
    img->cpusubtype = le32(h + 8);
    img->filetype = le32(h + 12);
    img->ncmds = le32(h + 16);
    img->sizeofcmds = le32(h + 20);
    img->flags = le32(h + 24);
    if (img->ncmds > FL_MACHO_NCMDS_MAX || img->sizeofcmds > FL_MACHO_SIZEOFCMDS_MAX ||
        !fl_range_ok(MACH_HEADER_64_SIZE, img->sizeofcmds, img->limit - header))
        return FL_EBADDATA;

    bool have_text = false, have_symtab = false, have_dysymtab = false, have_starts = false;
    uint32_t seen = 0, cmd, cmdsize;
    uint64_t off = 0, addr;
    int e;
    while ((e = next_command(img, &seen, &off, &addr, &cmd, &cmdsize)) == 0) {
        uint8_t c[24];
        switch (cmd) {
        case LC_SEGMENT_64:
            e = take_segment(img, addr, cmdsize, &have_text);
            break;
        case LC_UUID:
            if (img->has_uuid) return FL_EBADDATA;
            if ((e = read_command(img, addr, cmdsize, c, 24))) break;
            fl_memcpy(img->uuid, c + 8, 16);
            img->has_uuid = true;
            break;
        case LC_SYMTAB:
            if (have_symtab) return FL_EBADDATA;
            if ((e = read_command(img, addr, cmdsize, c, 24))) break;
            have_symtab = true;
            img->symoff = le32(c + 8);
            img->nsyms = le32(c + 12);
            img->stroff = le32(c + 16);
            img->strsize = le32(c + 20);
            /* An empty table is nowhere: its symoff is not looked at (fl_macho_symtab_locate). */
            if (img->nsyms > FL_MACHO_NSYMS_MAX ||
                (img->nsyms &&
                 !in_slice(img, img->symoff, (uint64_t)img->nsyms * FL_MACHO_NLIST_SIZE)) ||
                !in_slice(img, img->stroff, img->strsize))
                return FL_EBADDATA;
            img->has_symtab = true;
            break;
        case LC_DYSYMTAB:
            if (have_dysymtab) return FL_EBADDATA;
            /* dysymtab_command is 80 bytes; nlocalsym is its fourth field. */
            if (cmdsize < 80) return FL_EBADDATA;
            if ((e = read_command(img, addr, cmdsize, c, 16))) break;
            have_dysymtab = true;
            img->has_local_symbols = le32(c + 12) != 0;
            break;
        case LC_FUNCTION_STARTS:
            if (have_starts) return FL_EBADDATA;
            if ((e = read_command(img, addr, cmdsize, c, 16))) break;
            have_starts = true;
            img->function_starts_off = le32(c + 8);
            img->function_starts_size = le32(c + 12);
            if (!in_slice(img, img->function_starts_off, img->function_starts_size))
                return FL_EBADDATA;
            break;
        default:
            break;
        }
        if (e) return e;
    }
    if (e != FL_ENOTFOUND) return e;
    if (loaded) {
        /* The slide is what puts the header where it is; without __TEXT nothing says where that
         * was meant to be. */
        if (!have_text) return FL_EBADDATA;
        img->slide = header - img->text_vmaddr; /* modulo 2^64: a slide may move an image down */
    }
    return 0;
}

int fl_macho_image_vm_to_reader(const fl_macho_image_t *img, uint64_t vmaddr, uint64_t len,
                                uint64_t *out) {
    uint64_t end;
    if (!fl_add_u64(vmaddr, len, &end)) return FL_ERANGE;
    for (unsigned i = 0; i < img->nsegments && i < FL_MACHO_SEGMENTS_MAX; i++) {
        const fl_macho_segment_t *s = &img->segments[i];
        uint64_t span = img->loaded || s->vmsize < s->filesize ? s->vmsize : s->filesize;
        if (vmaddr < s->vmaddr || !fl_range_ok(vmaddr - s->vmaddr, len, span)) continue;
        if (img->loaded) {
            *out = vmaddr + img->slide;
            return 0;
        }
        uint64_t fileoff = s->fileoff + (vmaddr - s->vmaddr); /* <= fileoff + filesize, checked */
        if (!fl_range_ok(fileoff, len, img->limit - img->header)) return FL_ERANGE;
        *out = img->header + fileoff;
        return 0;
    }
    return FL_ERANGE;
}

int fl_macho_image_file_to_reader(const fl_macho_image_t *img, uint64_t fileoff, uint64_t len,
                                  uint64_t *out) {
    if (!img->loaded) {
        if (!fl_range_ok(fileoff, len, img->limit - img->header)) return FL_ERANGE;
        *out = img->header + fileoff;
        return 0;
    }
    for (unsigned i = 0; i < img->nsegments && i < FL_MACHO_SEGMENTS_MAX; i++) {
        const fl_macho_segment_t *s = &img->segments[i];
        if (fl_strcmp(s->name, "__LINKEDIT") != 0) continue;
        uint64_t span = s->filesize < s->vmsize ? s->filesize : s->vmsize;
        if (fileoff < s->fileoff || !fl_range_ok(fileoff - s->fileoff, len, span)) return FL_ERANGE;
        *out = s->vmaddr + img->slide + (fileoff - s->fileoff);
        return 0;
    }
    return FL_ERANGE;
}

int fl_macho_image_sections(const fl_macho_image_t *img,
                            int (*fn)(void *ctx, const fl_macho_section_t *sect), void *ctx) {
    uint32_t seen = 0, cmd, cmdsize;
    uint64_t off = 0, addr;
    int e;
    while ((e = next_command(img, &seen, &off, &addr, &cmd, &cmdsize)) == 0) {
        if (cmd != LC_SEGMENT_64) continue;
        uint8_t c[SEGMENT_COMMAND_64_SIZE];
        if (cmdsize < SEGMENT_COMMAND_64_SIZE) return FL_EBADDATA;
        if (fl_read(img->r, addr, c, sizeof c)) return FL_EFAULT;
        uint32_t nsects = le32(c + 64);
        if ((uint64_t)nsects * SECTION_64_SIZE > cmdsize - SEGMENT_COMMAND_64_SIZE)
            return FL_EBADDATA;
        for (uint32_t i = 0; i < nsects; i++) {
            uint8_t s[SECTION_64_SIZE];
            fl_macho_section_t sect;
            if (fl_read(img->r, addr + SEGMENT_COMMAND_64_SIZE + (uint64_t)i * SECTION_64_SIZE, s,
                        sizeof s))
                return FL_EFAULT;
            decode_section(s, &sect);
            int rc = fn(ctx, &sect);
            if (rc) return rc;
        }
    }
    return e == FL_ENOTFOUND ? 0 : e;
}

void fl_macho_image_describe_parsed(const fl_macho_image_t *mi, fl_image_t *img) {
    uint64_t header = mi->header, end;
    fl_memset(img, 0, sizeof *img);
    img->start = img->end = img->text_start = img->text_end = header;
    img->slide = mi->slide;
    img->cputype = mi->cputype;
    if (fl_add_u64(header, mi->text_vmsize, &end)) img->end = img->text_end = end;
    if (mi->has_uuid) {
        fl_memcpy(img->build_id, mi->uuid, 16);
        img->build_id_len = 16;
        img->build_id_kind = FL_BUILD_ID_MACHO_UUID;
    }
    if (mi->unwind_info_size && fl_add_u64(mi->unwind_info_vmaddr, mi->slide, &img->unwind_info))
        img->unwind_info_size = mi->unwind_info_size;
    if (mi->eh_frame_size && fl_add_u64(mi->eh_frame_vmaddr, mi->slide, &img->eh_frame))
        img->eh_frame_size = mi->eh_frame_size;
    uint64_t starts;
    if (mi->function_starts_size && mi->loaded &&
        fl_macho_image_file_to_reader(mi, mi->function_starts_off, mi->function_starts_size,
                                      &starts) == 0) {
        img->function_starts = starts;
        img->function_starts_size = mi->function_starts_size;
    }
    img->is_main = mi->filetype == 2; /* MH_EXECUTE */
}

int fl_macho_image_describe(const fl_reader_t *mem, uint64_t header, fl_image_t *img) {
    fl_macho_image_t mi; /* ~2 KiB */
    int e = fl_macho_image_init(&mi, mem, header, UINT64_MAX, true);
    if (e) {
        fl_memset(img, 0, sizeof *img);
        img->start = img->end = img->text_start = img->text_end = header;
        return e;
    }
    fl_macho_image_describe_parsed(&mi, img);
    return 0;
}
