/* SPDX-License-Identifier: MIT */
/* macho: __TEXT,__unwind_info lookup and compact unwind encodings (decode, format, step). */
#include "macho/macho.h"

/* Layouts and values of Apple's <mach-o/compact_unwind_encoding.h> (also in LLVM libunwind),
 * repeated so that this file builds without Apple headers. */
#define CU_SECTION_VERSION 1u           /* UNWIND_SECTION_VERSION */
#define CU_HEADER_SIZE 28u              /* struct unwind_info_section_header: 7 x u32 */
#define CU_INDEX_ENTRY_SIZE 12u         /* struct unwind_info_section_header_index_entry */
#define CU_PAGE_REGULAR 2u              /* UNWIND_SECOND_LEVEL_REGULAR */
#define CU_PAGE_COMPRESSED 3u           /* UNWIND_SECOND_LEVEL_COMPRESSED */
#define CU_REGULAR_ENTRY_SIZE 8u        /* struct unwind_info_regular_second_level_entry */
#define CU_COMPRESSED_OFFSET 0x00ffffffu /* UNWIND_INFO_COMPRESSED_ENTRY_FUNC_OFFSET */

#define CU_MODE_MASK 0x0f000000u        /* UNWIND_{X86_64,ARM64}_MODE_MASK */
#define CU_DWARF_OFFSET 0x00ffffffu     /* UNWIND_{X86_64,ARM64}_DWARF_SECTION_OFFSET */

#define CU_ARM64_FRAMELESS 0x02000000u  /* UNWIND_ARM64_MODE_FRAMELESS */
#define CU_ARM64_DWARF 0x03000000u      /* UNWIND_ARM64_MODE_DWARF */
#define CU_ARM64_FRAME 0x04000000u      /* UNWIND_ARM64_MODE_FRAME */
#define CU_ARM64_X_PAIRS 5u             /* UNWIND_ARM64_FRAME_X19_X20_PAIR (bit 0) .. X27_X28 */
#define CU_ARM64_D_PAIRS_SHIFT 8u       /* UNWIND_ARM64_FRAME_D8_D9_PAIR (bit 8) .. D14_D15 */
#define CU_ARM64_D_PAIRS 4u
#define CU_ARM64_STACK_SHIFT 12u        /* UNWIND_ARM64_FRAMELESS_STACK_SIZE_MASK 0x00fff000 */
#define CU_ARM64_STACK_MASK 0xfffu

#define CU_X86_64_RBP_FRAME 0x01000000u  /* UNWIND_X86_64_MODE_RBP_FRAME */
#define CU_X86_64_STACK_IMMD 0x02000000u /* UNWIND_X86_64_MODE_STACK_IMMD */
#define CU_X86_64_STACK_IND 0x03000000u  /* UNWIND_X86_64_MODE_STACK_IND */
#define CU_X86_64_DWARF 0x04000000u      /* UNWIND_X86_64_MODE_DWARF */
#define CU_X86_64_BYTE2(e) (((e) >> 16) & 0xffu) /* RBP_FRAME_OFFSET, FRAMELESS_STACK_SIZE */
#define CU_X86_64_RBP_REGS(e) ((e) & 0x7fffu)    /* RBP_FRAME_REGISTERS: five 3-bit slots */
#define CU_X86_64_ADJUST(e) (((e) >> 13) & 0x7u) /* FRAMELESS_STACK_ADJUST */
#define CU_X86_64_COUNT(e) (((e) >> 10) & 0x7u)  /* FRAMELESS_STACK_REG_COUNT */
#define CU_X86_64_PERM(e) ((e) & 0x3ffu)         /* FRAMELESS_STACK_REG_PERMUTATION */

/* DWARF numbers of UNWIND_X86_64_REG_RBX(1), R12, R13, R14, R15, RBP(6); 0 is NONE. */
static const uint8_t cu_x86_64_dwarf[7] = {0, 3, 12, 13, 14, 15, 6};
#define X86_64_RBP 6u
#define X86_64_RSP 7u
#define ARM64_FP 29u
#define ARM64_LR 30u
#define ARM64_D8 72u
#define REGS_TRACKED FL_DWARF_REGS /* d registers are not tracked */

/* ---- The section ---- */

static inline uint32_t le32(const uint8_t *b) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v; /* one load, not four (the searches' probes) */
    __builtin_memcpy(&v, b, 4);
    return v;
#else
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
#endif
}

/* The section's bytes: in place where the reader holds all of them (the walker's window on the
 * tables, a file buffer), else read through the reader. Every access is checked against the
 * section's size first, so a probe in place is a bounds check and a load. */
typedef struct cu {
    const fl_macho_unwind_info_t *ui;
    const uint8_t *bytes; /* the whole section, or NULL */
} cu_t;

static int cu_init(cu_t *cu, const fl_macho_unwind_info_t *ui) {
    if (!ui || !ui->r) return FL_EINVAL;
    cu->ui = ui;
    cu->bytes = ui->size <= SIZE_MAX ? fl_reader_direct(ui->r, ui->addr, (size_t)ui->size) : 0;
    return 0;
}

/* (Out of line: the system call of the live reader, off the in-place path.) */
__attribute__((noinline)) static int sect_copy(const cu_t *cu, uint64_t off, uint8_t *b,
                                               unsigned len) {
    return cu->ui->r->read(cu->ui->r, cu->ui->addr + off, b, len);
}

/* n little-endian u32s at section offset off (in one read for the live reader): FL_EBADDATA if
 * they are not all inside the section. */
static inline __attribute__((always_inline)) int sect_words(const cu_t *cu, uint64_t off,
                                                            uint32_t *out, unsigned n) {
    uint8_t b[CU_HEADER_SIZE];
    const uint8_t *p = b;
    if (n > sizeof b / 4 || !fl_range_ok(off, 4u * n, cu->ui->size)) return FL_EBADDATA;
    if (cu->bytes) {
        p = cu->bytes + off;
    } else {
        int err = sect_copy(cu, off, b, 4u * n);
        if (err) return err;
    }
    for (unsigned i = 0; i < n; i++) out[i] = le32(p + 4 * i);
    return 0;
}

static inline __attribute__((always_inline)) int sect_u32(const cu_t *cu, uint64_t off,
                                                         uint32_t *out) {
    return sect_words(cu, off, out, 1);
}

/* Are count records of size bytes at section offset off inside the section? */
static bool sect_array_ok(const cu_t *cu, uint64_t off, uint64_t count, uint64_t size) {
    uint64_t bytes;
    return fl_mul_u64(count, size, &bytes) && fl_range_ok(off, bytes, cu->ui->size);
}

typedef struct fl_macho_unwind_hdr cu_header_t;

static int header_read(const cu_t *cu, cu_header_t *h) {
    uint32_t w[7];
    int err = sect_words(cu, 0, w, 7);
    if (err) return err;
    if (w[0] != CU_SECTION_VERSION) return FL_EBADDATA;
    h->common_off = w[1];
    h->common_count = w[2];
    h->index_off = w[5];
    h->index_count = w[6];
    /* At least one range and its end (the sentinel). */
    if (h->index_count < 2 || h->index_count > FL_MACHO_UNWIND_PAGES_MAX) return FL_EBADDATA;
    if (!sect_array_ok(cu, h->common_off, h->common_count, 4) ||
        !sect_array_ok(cu, h->index_off, h->index_count, CU_INDEX_ENTRY_SIZE))
        return FL_EBADDATA;
    return 0;
}

/* First-level entry i: its function offset and its second-level page's section offset. */
static int index_read(const cu_t *cu, const cu_header_t *h, uint32_t i, uint32_t *func,
                      uint32_t *page) {
    uint32_t w[2];
    int err = sect_words(cu, (uint64_t)h->index_off + (uint64_t)i * CU_INDEX_ENTRY_SIZE, w, 2);
    if (err) return err;
    *func = w[0];
    if (page) *page = w[1];
    return 0;
}

/* A second-level page and the function offsets [lo, hi) of its first-level range. */
typedef struct fl_macho_unwind_page cu_page_t;

static int page_open(const cu_t *cu, uint32_t page_off, uint64_t lo, uint64_t hi, cu_page_t *p) {
    /* kind (u32), entryPageOffset and entryCount (u16 each); compressed pages go on with
     * encodingsPageOffset and encodingsCount. */
    uint32_t w[3];
    int err = sect_words(cu, page_off, w, 2);
    if (err) return err;
    p->kind = w[0];
    p->count = w[1] >> 16;
    p->entries = (uint64_t)page_off + (w[1] & 0xffffu);
    p->lo = lo;
    p->hi = hi;
    p->nencodings = 0;
    p->encodings = 0;
    if (p->count == 0) return FL_EBADDATA;
    if (p->kind == CU_PAGE_REGULAR) {
        if (!sect_array_ok(cu, p->entries, p->count, CU_REGULAR_ENTRY_SIZE)) return FL_EBADDATA;
        return 0;
    }
    if (p->kind != CU_PAGE_COMPRESSED) return FL_EBADDATA;
    if ((err = sect_u32(cu, (uint64_t)page_off + 8, &w[2]))) return err;
    p->encodings = (uint64_t)page_off + (w[2] & 0xffffu);
    p->nencodings = w[2] >> 16;
    if (!sect_array_ok(cu, p->entries, p->count, 4) ||
        !sect_array_ok(cu, p->encodings, p->nencodings, 4))
        return FL_EBADDATA;
    return 0;
}

/* Entry j of page p: its function offset (in [lo, hi), else FL_EBADDATA) and, for regular
 * pages, its encoding; for compressed pages the encoding index. */
static inline __attribute__((always_inline)) int page_entry(const cu_t *cu, const cu_page_t *p,
                                                            uint32_t j, uint64_t *func,
                                                            uint32_t *enc_or_index) {
    uint32_t w[2];
    int err;
    if (p->kind == CU_PAGE_REGULAR) {
        if ((err = sect_words(cu, p->entries + (uint64_t)j * CU_REGULAR_ENTRY_SIZE, w, 2)))
            return err;
        *func = w[0];
        *enc_or_index = w[1];
    } else {
        if ((err = sect_u32(cu, p->entries + (uint64_t)j * 4, w))) return err;
        *func = p->lo + (w[0] & CU_COMPRESSED_OFFSET);
        *enc_or_index = w[0] >> 24;
    }
    return *func >= p->lo && *func < p->hi ? 0 : FL_EBADDATA;
}

/* The encoding of an entry read by page_entry. */
static inline __attribute__((always_inline)) int
page_encoding(const cu_t *cu, const cu_header_t *h, const cu_page_t *p, uint32_t enc_or_index,
              uint32_t *enc) {
    if (p->kind == CU_PAGE_REGULAR) {
        *enc = enc_or_index;
        return 0;
    }
    if (enc_or_index < h->common_count)
        return sect_u32(cu, (uint64_t)h->common_off + 4u * (uint64_t)enc_or_index, enc);
    uint32_t k = enc_or_index - h->common_count;
    if (k >= p->nencodings) return FL_EBADDATA;
    return sect_u32(cu, p->encodings + 4u * (uint64_t)k, enc);
}

/* Binary search of count records of `stride` bytes at section offset arr (checked whole by the
 * caller), keyed by the first word's `mask` bits minus `sub`: narrows [*lo, *hi) to the last
 * record whose key is <= target, keeping key(lo) <= target < key(hi) on keys actually read
 * (*hi_key is key(*hi) on entry and on return), so it ends in log2(count) probes with an answer
 * consistent whatever the records it did not visit. A key at or past `limit` is malformed. In
 * place, a probe is a load and two compares. */
static inline __attribute__((always_inline)) int
search(const cu_t *cu, uint64_t arr, unsigned stride, uint32_t mask, uint64_t sub, uint64_t limit,
       uint64_t target, uint32_t *lo, uint32_t *hi, uint64_t *hi_key) {
    uint32_t l = *lo, h = *hi;
    uint64_t hk = *hi_key;
    const uint8_t *a = cu->bytes ? cu->bytes + arr : 0;
    uint8_t buf[4];
    while (h - l > 1) {
        uint32_t mid = l + (h - l) / 2;
        const uint8_t *q = a ? a + (uint64_t)mid * stride : buf;
        if (!a) {
            int err = sect_copy(cu, arr + (uint64_t)mid * stride, buf, 4);
            if (err) return err;
        }
        uint64_t k = (le32(q) & mask) - sub;
        if (k >= limit) return FL_EBADDATA;
        if (k <= target) {
            l = mid;
        } else {
            h = mid;
            hk = k;
        }
    }
    *lo = l;
    *hi = h;
    *hi_key = hk;
    return 0;
}

static int entry_fill(const fl_macho_unwind_info_t *ui, uint64_t start, uint64_t end,
                      uint32_t enc, fl_macho_unwind_entry_t *out) {
    if (!fl_add_u64(ui->base, start, &out->start) || !fl_add_u64(ui->base, end, &out->end))
        return FL_EBADDATA;
    out->encoding = enc;
    return 0;
}

int fl_macho_unwind_info_init(const fl_macho_image_t *img, fl_macho_unwind_info_t *ui) {
    if (!img || !ui) return FL_EINVAL;
    if (img->unwind_info_size == 0) return FL_ENOTFOUND;
    uint64_t addr;
    int err = fl_macho_image_vm_to_reader(img, img->unwind_info_vmaddr, img->unwind_info_size,
                                          &addr);
    if (err) return err;
    ui->r = img->r;
    ui->addr = addr;
    ui->size = img->unwind_info_size;
    /* slide is header - text_vmaddr modulo 2^64, so this sum is the header's address. */
    ui->base = img->loaded ? img->text_vmaddr + img->slide : img->text_vmaddr;
    ui->cputype = img->cputype;
    ui->memo = NULL;
    return 0;
}

/* The memo's header and page for target (a function offset): kept when the memo already
 * describes this section and its page covers target, else read and checked now (the header
 * once per section; the first-level search and the page's header once per page). Out of line:
 * a walk's lookups mostly stay in one page. */
static __attribute__((noinline)) int page_for(const cu_t *cu, fl_macho_unwind_memo_t *memo,
                                               uint64_t target) {
    const fl_macho_unwind_info_t *ui = cu->ui;
    int err;
    if (memo->size != ui->size || memo->addr != ui->addr || !memo->size) {
        memo->size = 0;
        if ((err = header_read(cu, &memo->h))) return err;
        memo->addr = ui->addr;
        memo->size = ui->size;
    }
    const cu_header_t h = memo->h;
    uint32_t lo = 0, hi = h.index_count - 1, lo_func, hi_func, page_off;
    uint64_t hk;
    memo->p.lo = memo->p.hi = 0; /* (until the page is checked) */
    if ((err = index_read(cu, &h, lo, &lo_func, NULL)) ||
        (err = index_read(cu, &h, hi, &hi_func, NULL)))
        return err;
    if (target < lo_func || target >= hi_func) return FL_ENOTFOUND;
    hk = hi_func;
    if ((err = search(cu, h.index_off, CU_INDEX_ENTRY_SIZE, UINT32_MAX, 0, UINT64_MAX, target,
                      &lo, &hi, &hk)))
        return err;
    hi_func = (uint32_t)hk;
    if ((err = index_read(cu, &h, lo, &lo_func, &page_off))) return err;
    if (page_off == 0) return FL_ENOTFOUND; /* a range without a page: no information */
    if ((err = page_open(cu, page_off, lo_func, hi_func, &memo->p))) {
        memo->p.lo = memo->p.hi = 0;
        return err;
    }
    return 0;
}

/* The page's search and its entry's encoding (the page checked by page_open: its arrays lie in
 * the section). Always inlined twice: with the section in place (a probe is a load and two
 * compares) and through the reader. */
static inline __attribute__((always_inline)) int
page_find(const cu_t *cu, const cu_header_t *h, const cu_page_t *p, uint64_t target,
          uint64_t *start, uint64_t *end, uint32_t *enc) {
    /* The page's keys as offsets from its range's start: compressed entries hold them so;
     * regular ones hold function offsets. */
    bool compressed = p->kind == CU_PAGE_COMPRESSED;
    uint32_t slot = 0, n = p->count, e_lo;
    uint64_t hk = p->hi - p->lo;
    int err;
    if ((err = search(cu, p->entries, compressed ? 4u : CU_REGULAR_ENTRY_SIZE,
                      compressed ? CU_COMPRESSED_OFFSET : UINT32_MAX, compressed ? 0 : p->lo,
                      p->hi - p->lo, target - p->lo, &slot, &n, &hk)) ||
        (err = page_entry(cu, p, slot, start, &e_lo)))
        return err;
    if (target < *start) return FL_ENOTFOUND; /* (slot 0 only: below the page's first entry) */
    *end = p->lo + hk;
    return page_encoding(cu, h, p, e_lo, enc);
}

/* Both searches keep the invariant value(lo) <= target < value(hi) on values actually read, so
 * they end in at most log2(count) steps and their answer is consistent whatever the order of
 * the entries they did not visit. */
int fl_macho_unwind_find(const fl_macho_unwind_info_t *ui, uint64_t pc,
                         fl_macho_unwind_entry_t *out) {
    if (!out) return FL_EINVAL;
    cu_t cu;
    fl_macho_unwind_memo_t own = {0}, *memo = ui && ui->memo ? ui->memo : &own;
    int err = cu_init(&cu, ui);
    if (err) return err;
    if (pc < ui->base || pc - ui->base > UINT32_MAX) return FL_ENOTFOUND;
    uint64_t target = pc - ui->base, start, end;
    if ((memo->size != ui->size || memo->addr != ui->addr || !memo->size ||
         target - memo->p.lo >= memo->p.hi - memo->p.lo) &&
        (err = page_for(&cu, memo, target)))
        return err;
    uint32_t enc;
    err = cu.bytes ? page_find(&cu, &memo->h, &memo->p, target, &start, &end, &enc)
                   : page_find(&cu, &memo->h, &memo->p, target, &start, &end, &enc);
    return err ? err : entry_fill(ui, start, end, enc, out);
}

int fl_macho_unwind_each(const fl_macho_unwind_info_t *ui,
                         int (*fn)(void *ctx, const fl_macho_unwind_entry_t *e), void *ctx) {
    if (!fn) return FL_EINVAL;
    cu_t cu;
    cu_header_t h;
    int err = cu_init(&cu, ui);
    if (err || (err = header_read(&cu, &h))) return err;
    uint32_t func, page_off, next_func;
    if ((err = index_read(&cu, &h, 0, &func, &page_off))) return err;
    for (uint32_t i = 0; i + 1 < h.index_count; i++, func = next_func) {
        uint32_t next_page;
        if ((err = index_read(&cu, &h, i + 1, &next_func, &next_page))) return err;
        if (next_func < func) return FL_EBADDATA;
        uint32_t this_page = page_off;
        page_off = next_page;
        if (this_page == 0) continue;
        cu_page_t p;
        if ((err = page_open(&cu, this_page, func, next_func, &p))) return err;
        /* Each entry is reported when the next one gives its end. */
        uint64_t start, next_start;
        uint32_t e, next_e = 0;
        if ((err = page_entry(&cu, &p, 0, &start, &e))) return err;
        for (uint32_t j = 1; j <= p.count; j++, start = next_start, e = next_e) {
            if (j < p.count) {
                if ((err = page_entry(&cu, &p, j, &next_start, &next_e))) return err;
                if (next_start <= start) return FL_EBADDATA;
            } else {
                next_start = p.hi;
            }
            fl_macho_unwind_entry_t entry;
            uint32_t enc;
            if ((err = page_encoding(&cu, &h, &p, e, &enc)) ||
                (err = entry_fill(ui, start, next_start, enc, &entry)))
                return err;
            if ((err = fn(ctx, &entry))) return err;
        }
    }
    return 0;
}

/* ---- Encodings ---- */

static void rule_push(fl_macho_unwind_rule_t *rule, unsigned reg, int32_t offset) {
    rule->reg[rule->nregs] = (uint8_t)reg;
    rule->reg_offset[rule->nregs] = offset;
    rule->nregs++;
}

/* The saved pairs of an arm64 FRAME or FRAMELESS encoding, in the order the prologue stores
 * them downwards from the frame record (FRAME) or the caller's sp (FRAMELESS): x19 at -8, x20
 * at -16, then x21, ..., then d8, d9, .... */
static void arm64_pairs(fl_macho_unwind_rule_t *rule, uint32_t enc) {
    int32_t off = 0;
    for (unsigned k = 0; k < CU_ARM64_X_PAIRS + CU_ARM64_D_PAIRS; k++) {
        bool x = k < CU_ARM64_X_PAIRS;
        unsigned bit = x ? k : CU_ARM64_D_PAIRS_SHIFT + (k - CU_ARM64_X_PAIRS);
        if (!(enc & (1u << bit))) continue;
        unsigned first = x ? 19 + 2 * k : ARM64_D8 + 2 * (k - CU_ARM64_X_PAIRS);
        rule_push(rule, first, off - 8);
        rule_push(rule, first + 1, off - 16);
        off -= 16;
    }
}

static int decode_arm64(uint32_t enc, fl_macho_unwind_rule_t *rule) {
    switch (enc & CU_MODE_MASK) {
    case 0:
        rule->kind = FL_MACHO_RULE_NONE;
        return 0;
    case CU_ARM64_FRAME:
        rule->kind = FL_MACHO_RULE_FRAME;
        arm64_pairs(rule, enc);
        return 0;
    case CU_ARM64_FRAMELESS:
        rule->kind = FL_MACHO_RULE_FRAMELESS;
        rule->stack_size = 16u * ((enc >> CU_ARM64_STACK_SHIFT) & CU_ARM64_STACK_MASK);
        /* The pairs are pushed first, right below the caller's sp, as in the prologues LLVM
         * emits for this encoding ("stp x20, x19, [sp, #-N]!"); LLVM libunwind reads them one
         * slot higher, from the caller's sp itself. */
        arm64_pairs(rule, enc);
        /* The saved registers are part of the frame. */
        return 8u * rule->nregs <= rule->stack_size ? 0 : FL_EBADDATA;
    case CU_ARM64_DWARF:
        rule->kind = FL_MACHO_RULE_DWARF;
        rule->dwarf_offset = enc & CU_DWARF_OFFSET;
        return 0;
    default:
        return FL_EBADDATA;
    }
}

/* The frameless register list: `count` registers whose order is a Lehmer code (a mixed-radix
 * number whose digit i has radix 6-i, the sixth digit of a full list being implied) choosing
 * each register among those 1..6 not yet chosen. Saved upwards in list order, the last right
 * below the return address. */
static int x86_64_frameless_regs(uint32_t enc, fl_macho_unwind_rule_t *rule) {
    uint32_t count = CU_X86_64_COUNT(enc), perm = CU_X86_64_PERM(enc);
    if (count > 6) return FL_EBADDATA;
    unsigned ndigits = count < 5 ? count : 5, digit[6] = {0};
    for (unsigned i = ndigits; i-- > 0;) {
        digit[i] = perm % (6 - i);
        perm /= 6 - i;
    }
    if (perm != 0) return FL_EBADDATA; /* more than the radices allow */
    bool used[7] = {false};
    for (unsigned i = 0; i < count; i++) {
        unsigned reg = 0;
        for (unsigned u = 1, rank = 0; u <= 6 && !reg; u++) {
            if (used[u]) continue;
            if (rank++ == digit[i]) reg = u;
        }
        used[reg] = true; /* digit i < 6 - i, so one of the 6 - i free registers matches */
        rule_push(rule, cu_x86_64_dwarf[reg], -8 * (int32_t)(count + 1 - i));
    }
    return 0;
}

static int decode_x86_64(uint32_t enc, fl_macho_unwind_rule_t *rule) {
    switch (enc & CU_MODE_MASK) {
    case 0:
        rule->kind = FL_MACHO_RULE_NONE;
        return 0;
    case CU_X86_64_RBP_FRAME: {
        rule->kind = FL_MACHO_RULE_FRAME;
        int32_t base = -8 * (int32_t)CU_X86_64_BYTE2(enc);
        uint32_t slots = CU_X86_64_RBP_REGS(enc);
        for (unsigned i = 0; i < 5; i++, slots >>= 3) {
            unsigned r = slots & 7u;
            if (r == 0) continue;
            /* rbp itself is restored from the frame record; slots lie below it. */
            if (r > 5 || base + 8 * (int32_t)i > -8) return FL_EBADDATA;
            rule_push(rule, cu_x86_64_dwarf[r], base + 8 * (int32_t)i);
        }
        return 0;
    }
    case CU_X86_64_STACK_IMMD:
        rule->kind = FL_MACHO_RULE_FRAMELESS;
        rule->stack_size = 8u * CU_X86_64_BYTE2(enc);
        if (rule->stack_size < 8u * (CU_X86_64_COUNT(enc) + 1)) return FL_EBADDATA;
        return x86_64_frameless_regs(enc, rule);
    case CU_X86_64_STACK_IND:
        rule->kind = FL_MACHO_RULE_STACK_IND;
        rule->stack_ind_offset = CU_X86_64_BYTE2(enc);
        rule->stack_adjust = 8u * CU_X86_64_ADJUST(enc);
        return x86_64_frameless_regs(enc, rule);
    case CU_X86_64_DWARF:
        rule->kind = FL_MACHO_RULE_DWARF;
        rule->dwarf_offset = enc & CU_DWARF_OFFSET;
        return 0;
    default:
        return FL_EBADDATA;
    }
}

static void rule_clear(fl_macho_unwind_rule_t *rule, uint32_t cputype, uint32_t encoding) {
    rule->kind = FL_MACHO_RULE_NONE;
    rule->cputype = cputype;
    rule->encoding = encoding;
    rule->stack_size = rule->stack_ind_offset = rule->stack_adjust = rule->dwarf_offset = 0;
    rule->nregs = 0;
}

int fl_macho_unwind_decode(uint32_t cputype, uint32_t encoding, fl_macho_unwind_rule_t *rule) {
    if (!rule) return FL_EINVAL;
    /* The scalars only: reg[] and reg_offset[] are read up to nregs (the walker decodes on
     * every first visit of a function, and clearing both arrays cost half the decoding). */
    rule_clear(rule, cputype, encoding);
    int err = cputype == FL_MACHO_CPU_ARM64    ? decode_arm64(encoding, rule)
              : cputype == FL_MACHO_CPU_X86_64 ? decode_x86_64(encoding, rule)
                                               : FL_ENOSYS;
    if (err) rule_clear(rule, cputype, encoding);
    return err;
}

static void put_reg(fl_strbuf_t *sb, uint32_t cputype, unsigned reg) {
    if (cputype == FL_MACHO_CPU_ARM64) {
        fl_strbuf_puts(sb, reg >= ARM64_D8 ? "d" : "x");
        fl_strbuf_putu(sb, reg >= ARM64_D8 ? reg - ARM64_D8 + 8 : reg);
        return;
    }
    static const char *const names[16] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    fl_strbuf_puts(sb, reg < 16 ? names[reg] : "?");
}

size_t fl_macho_unwind_rule_format(const fl_macho_unwind_rule_t *rule, char *buf, size_t cap) {
    if (!buf || cap == 0) return 0;
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, buf, cap);
    if (!rule) return 0;
    bool arm64 = rule->cputype == FL_MACHO_CPU_ARM64;
    switch (rule->kind) {
    case FL_MACHO_RULE_NONE:
        fl_strbuf_puts(&sb, "none");
        return sb.len;
    case FL_MACHO_RULE_DWARF:
        fl_strbuf_puts(&sb, "dwarf at ");
        fl_strbuf_putx(&sb, rule->dwarf_offset);
        return sb.len;
    case FL_MACHO_RULE_FRAME:
        fl_strbuf_puts(&sb, arm64 ? "frame" : "rbp frame");
        break;
    case FL_MACHO_RULE_FRAMELESS:
        fl_strbuf_puts(&sb, arm64 ? "frameless, stack " : "stack immd ");
        fl_strbuf_putu(&sb, rule->stack_size);
        break;
    case FL_MACHO_RULE_STACK_IND:
        fl_strbuf_puts(&sb, "stack ind (sub at +");
        fl_strbuf_putu(&sb, rule->stack_ind_offset);
        fl_strbuf_puts(&sb, ", adjust ");
        fl_strbuf_putu(&sb, rule->stack_adjust);
        fl_strbuf_puts(&sb, ")");
        break;
    default:
        fl_strbuf_puts(&sb, "?");
        return sb.len;
    }
    for (unsigned i = 0; i < rule->nregs && i < FL_MACHO_RULE_REGS_MAX; i++) {
        /* arm64 registers come in pairs: "x19/x20". */
        fl_strbuf_puts(&sb, i == 0 ? ", saved " : arm64 && i % 2 ? "/" : " ");
        put_reg(&sb, rule->cputype, rule->reg[i]);
    }
    return sb.len;
}

/* ---- Stepping ---- */

static bool reg_valid(const fl_dwarf_regs_t *regs, unsigned r) {
    return (regs->valid >> r) & 1u;
}

static bool add_signed(uint64_t a, int32_t off, uint64_t *out) {
    if (off >= 0) return fl_add_u64(a, (uint64_t)off, out);
    uint64_t d = (uint64_t)(-(int64_t)off);
    if (a < d) return false;
    *out = a - d;
    return true;
}

/* Reads the rule's saved registers (slots at base + offset) into vals; d registers, which
 * fl_dwarf_regs_t does not track, are skipped. */
static int read_saved(const fl_macho_unwind_rule_t *rule, const fl_reader_t *stack, uint64_t base,
                      uint64_t vals[FL_MACHO_RULE_REGS_MAX]) {
    for (unsigned i = 0; i < rule->nregs && i < FL_MACHO_RULE_REGS_MAX; i++) {
        if (rule->reg[i] >= REGS_TRACKED) continue;
        uint64_t at;
        if (!add_signed(base, rule->reg_offset[i], &at)) return FL_EBADDATA;
        int err = fl_read_u64(stack, at, &vals[i]);
        if (err) return err;
    }
    return 0;
}

static void write_saved(const fl_macho_unwind_rule_t *rule,
                        const uint64_t vals[FL_MACHO_RULE_REGS_MAX], fl_dwarf_regs_t *regs) {
    for (unsigned i = 0; i < rule->nregs && i < FL_MACHO_RULE_REGS_MAX; i++) {
        if (rule->reg[i] >= REGS_TRACKED) continue;
        regs->r[rule->reg[i]] = vals[i];
        regs->valid |= 1ull << rule->reg[i];
    }
}

/* Callee-saved registers survive a call; the rest are unknown in the caller. */
#define X86_64_CALLEE_SAVED (1ull << 3 | 1ull << 6 | 0xfull << 12) /* rbx, rbp, r12..r15 */
#define ARM64_CALLEE_SAVED (((1ull << 30) - 1) & ~((1ull << 19) - 1)) /* x19..x29 */

/* Reads everything before changing regs, so that a failed step leaves them as they were. */
int fl_macho_unwind_step(const fl_macho_unwind_rule_t *rule, const fl_reader_t *code,
                         uint64_t func_start, const fl_reader_t *stack, fl_dwarf_regs_t *regs) {
    if (!rule || !stack || !regs) return FL_EINVAL;
    if (rule->kind == FL_MACHO_RULE_NONE || rule->kind == FL_MACHO_RULE_DWARF) return FL_ENOSYS;
    bool arm64 = rule->cputype == FL_MACHO_CPU_ARM64;
    if (!arm64 && rule->cputype != FL_MACHO_CPU_X86_64) return FL_ENOSYS;
    unsigned sp_reg = arm64 ? FL_MACHO_REG_ARM64_SP : X86_64_RSP;
    unsigned fp_reg = arm64 ? ARM64_FP : X86_64_RBP;
    unsigned pc_reg = arm64 ? FL_MACHO_REG_ARM64_PC : FL_MACHO_REG_X86_64_RIP;
    if (!reg_valid(regs, sp_reg)) return FL_EINVAL;
    uint64_t sp = regs->r[sp_reg], vals[FL_MACHO_RULE_REGS_MAX] = {0};
    uint64_t new_sp, new_pc, new_fp = 0, base;
    bool fp_restored = false;
    int err;

    if (rule->kind == FL_MACHO_RULE_FRAME) {
        /* The frame record at fp: the caller's fp, then the return address. */
        if (!reg_valid(regs, fp_reg)) return FL_EINVAL;
        base = regs->r[fp_reg];
        if (!fl_add_u64(base, 16, &new_sp)) return FL_EBADDATA;
        if ((err = fl_read_u64(stack, base, &new_fp)) ||
            (err = fl_read_u64(stack, base + 8, &new_pc)))
            return err;
        fp_restored = true;
    } else if (arm64) {
        /* Frameless: the return address stays in lr. */
        if (rule->kind != FL_MACHO_RULE_FRAMELESS) return FL_EBADDATA;
        if (!reg_valid(regs, ARM64_LR)) return FL_EINVAL;
        if (!fl_add_u64(sp, rule->stack_size, &base)) return FL_EBADDATA;
        new_pc = regs->r[ARM64_LR];
        new_sp = base;
    } else {
        uint64_t size = rule->stack_size;
        if (rule->kind == FL_MACHO_RULE_STACK_IND) {
            /* The size is the imm32 of the prologue's "sub $imm32, %rsp" plus what the
             * pushes and the call added. */
            uint8_t b[4];
            uint64_t at;
            if (!code) return FL_EINVAL;
            if (!fl_add_u64(func_start, rule->stack_ind_offset, &at)) return FL_EBADDATA;
            if ((err = fl_read(code, at, b, sizeof b))) return err;
            size = ((uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 |
                    (uint64_t)b[3] << 24) +
                   rule->stack_adjust;
        } else if (rule->kind != FL_MACHO_RULE_FRAMELESS) {
            return FL_EBADDATA;
        }
        if (size < 8u * ((uint64_t)rule->nregs + 1)) return FL_EBADDATA;
        if (!fl_add_u64(sp, size, &base)) return FL_EBADDATA;
        if ((err = fl_read_u64(stack, base - 8, &new_pc))) return err;
        new_sp = base;
    }
    if ((err = read_saved(rule, stack, base, vals))) return err;
    /* A caller's frame lies above its callee's; only an arm64 leaf without a frame shares it. */
    if (new_sp < sp || (new_sp == sp && rule->kind != FL_MACHO_RULE_FRAMELESS)) return FL_EBADDATA;

    regs->valid &= arm64 ? ARM64_CALLEE_SAVED : X86_64_CALLEE_SAVED;
    write_saved(rule, vals, regs);
    if (fp_restored) {
        regs->r[fp_reg] = new_fp;
        regs->valid |= 1ull << fp_reg;
    }
    regs->r[sp_reg] = new_sp;
    regs->r[pc_reg] = new_pc;
    regs->valid |= 1ull << sp_reg | 1ull << pc_reg;
    return 0;
}
