/* SPDX-License-Identifier: MIT */
/* DWARF CFI over a memory reader: pointer encodings, CIE/FDE records, the .eh_frame_hdr search
 * table, and the CFA program that gives the row at an address. Every read is bounded by its
 * record; a malformed table is an error code. (Formats: LSB "Exception Frames", DWARF 5 6.4.) */
#include "frames/frames.h"

#pragma GCC poison malloc calloc realloc free

/* ---- Bytes of one record, read through the reader ----
 * Where the reader holds the whole record as plain bytes (a file buffer, or a loaded image's
 * tables in a window the memory map showed readable) they are used in place; elsewhere they are
 * copied in small chunks. Reading past `end` or an unreadable byte sets a sticky error and yields
 * zeros, so a parser checks `err` once per step instead of after every byte. */
typedef struct src {
    const fl_reader_t *r;
    uint64_t pos, end;
    const uint8_t *direct; /* the bytes of [base, end) in place, or NULL */
    uint64_t base;
    uint64_t buf_at;
    unsigned buf_len;
    int err;
    uint8_t buf[64];
} src_t;

static void src_init(src_t *s, const fl_reader_t *r, uint64_t pos, uint64_t end) {
    s->r = r;
    s->pos = pos;
    s->end = end;
    s->base = pos;
    s->direct = end > pos ? fl_reader_direct(r, pos, end - pos) : 0;
    s->buf_len = 0;
    s->buf_at = 0;
    s->err = 0;
    if (!s->direct) fl_memset(s->buf, 0, sizeof s->buf); /* (only for the compiler's analysis) */
}

static void src_fail(src_t *s, int e) {
    if (!s->err) s->err = e;
    s->pos = s->end;
}

__attribute__((noinline)) static uint8_t src_refill(src_t *s) {
    uint64_t n = s->end - s->pos;
    if (n > sizeof s->buf) n = sizeof s->buf;
    /* A record ending just before an unreadable page: retry the one byte needed. */
    int e = fl_read(s->r, s->pos, s->buf, (size_t)n);
    if (e && e != FL_ERANGE) e = (n = 1, fl_read(s->r, s->pos, s->buf, 1));
    if (e) {
        src_fail(s, e == FL_ERANGE ? FL_ERANGE : FL_EFAULT); /* (ERANGE: a reader's budget) */
        return 0;
    }
    s->buf_at = s->pos;
    s->buf_len = (unsigned)n;
    return s->buf[0];
}

static inline __attribute__((always_inline)) uint8_t u8(src_t *s) {
    if (s->pos >= s->end) {
        src_fail(s, FL_EBADDATA);
        return 0;
    }
    uint64_t at = s->pos++;
    if (s->direct) return s->direct[at - s->base];
    if (at - s->buf_at < s->buf_len) return s->buf[at - s->buf_at];
    s->pos = at;
    uint8_t b = src_refill(s);
    if (!s->err) s->pos = at + 1;
    return b;
}

static __attribute__((noinline)) uint64_t uN_slow(src_t *s, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)u8(s) << (8 * i);
    return v;
}

static inline __attribute__((always_inline)) uint64_t uN(src_t *s, unsigned n) { /* n <= 8 */
    if (s->direct && s->pos <= s->end && s->end - s->pos >= n) {
        uint64_t v = 0; /* little-endian hosts read little-endian tables */
        __builtin_memcpy(&v, s->direct + (s->pos - s->base), n);
        s->pos += n;
        return v;
    }
    return uN_slow(s, n);
}

static inline __attribute__((always_inline)) uint64_t uleb(src_t *s) {
    if (s->direct && s->pos < s->end && !(s->direct[s->pos - s->base] & 0x80)) /* one byte */
        return s->direct[s->pos++ - s->base];
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = u8(s);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (shift == 63 && (b & 0x7e)) src_fail(s, FL_EBADDATA); /* more than 64 bits */
            return v;
        }
    }
    src_fail(s, FL_EBADDATA); /* longer than 10 bytes */
    return 0;
}

static int64_t sleb(src_t *s) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = u8(s);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            /* The tenth byte holds bit 63 only; the rest must extend its sign. */
            if (shift == 63 && b != 0 && b != 0x7f) src_fail(s, FL_EBADDATA);
            if (shift + 7 < 64 && (b & 0x40)) v |= ~(uint64_t)0 << (shift + 7);
            return (int64_t)v;
        }
    }
    src_fail(s, FL_EBADDATA);
    return 0;
}

/* ---- Pointer encodings (DW_EH_PE_*) ---- */
enum { PE_OMIT = 0xff, PE_INDIRECT = 0x80 };

/* Size in bytes of the fixed-size formats, 0 for LEB128, -1 for an unknown format (0x08, "signed"
 * alone, is none: libgcc and LLVM refuse it too). */
static int pe_size(uint8_t enc) {
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: return 8; /* absptr (64-bit), udata8, sdata8 */
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    case 0x01: case 0x09: return 0;
    default: return -1;
    }
}

/* Reads one encoded pointer at s->pos. `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr's
 * start), 0 where it has none. Indirect pointers are loaded through `mem` unless `raw` (the caller
 * only skips the field). Text- and function-relative and aligned forms are not used by the
 * toolchains of our platforms: FL_ENOSYS. */
static uint64_t read_pointer_any(src_t *s, uint8_t enc, uint64_t datarel, const fl_reader_t *mem,
                                 bool raw) {
    uint64_t field = s->pos, v;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: v = uN(s, 8); break;
    case 0x01: v = uleb(s); break;
    case 0x02: v = uN(s, 2); break;
    case 0x03: v = uN(s, 4); break;
    case 0x09: v = (uint64_t)sleb(s); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)uN(s, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)uN(s, 4); break;
    default: src_fail(s, FL_EBADDATA); return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += field; break;
    case 0x30:
        if (!datarel) {
            src_fail(s, FL_ENOSYS);
            return 0;
        }
        v += datarel;
        break;
    case 0x20: case 0x40: case 0x50: src_fail(s, FL_ENOSYS); return 0; /* text, func, aligned */
    default: src_fail(s, FL_EBADDATA); return 0;                        /* no such application */
    }
    if ((enc & PE_INDIRECT) && !raw && !s->err && fl_read_u64(mem, v, &v)) src_fail(s, FL_EFAULT);
    return v;
}

/* read_pointer_any, with the forms FDEs use (absolute or pc-relative, 8 bytes or signed 4:
 * Darwin's 0x10, Linux's 0x1b) read inline from bytes in place. */
static inline __attribute__((always_inline)) uint64_t
read_pointer(src_t *s, uint8_t enc, uint64_t datarel, const fl_reader_t *mem, bool raw) {
    unsigned size = (enc & 0x0f) == 0x00 ? 8 : (enc & 0x0f) == 0x0b ? 4 : 0;
    if (size && !(enc & ~0x1fu) && s->direct && s->pos <= s->end && s->end - s->pos >= size) {
        uint64_t field = s->pos, v;
        const uint8_t *b = s->direct + (field - s->base);
        if (size == 8) {
            __builtin_memcpy(&v, b, 8);
        } else {
            int32_t w;
            __builtin_memcpy(&w, b, 4);
            v = (uint64_t)(int64_t)w;
        }
        s->pos += size;
        return enc & 0x10 ? v + field : v;
    }
    return read_pointer_any(s, enc, datarel, mem, raw);
}

/* Skips one encoded pointer whose value does not matter (the personality routine's): only its
 * format's size counts. */
static void skip_pointer(src_t *s, uint8_t enc) {
    int size = pe_size(enc);
    if (size < 0) src_fail(s, FL_EBADDATA);
    else if (size == 0) (void)uleb(s); /* (sleb128 has the same length rule) */
    else (void)uN(s, (unsigned)size);
}

/* ---- Records ---- */

/* A record's header at addr: its id field's address, the id (0 for a CIE) and the record's end.
 * 0 at the terminator (length 0). Bounded by the table's size when known. */
static int record_header(const fl_cfi_table_t *t, uint64_t addr, uint64_t limit, uint64_t *id_at,
                         uint64_t *id, uint64_t *end) {
    uint32_t len32;
    uint64_t len, at = addr;
    if (fl_read_u32(t->mem, at, &len32)) return FL_EFAULT;
    at += 4;
    if (len32 == 0) return 0;
    if (len32 == 0xffffffffu) {
        if (fl_read_u64(t->mem, at, &len)) return FL_EFAULT;
        at += 8;
    } else {
        len = len32;
    }
    if (!fl_add_u64(at, len, end) || *end > limit || len < 4) return FL_EBADDATA;
    *id_at = at;
    uint32_t id32;
    if (fl_read_u32(t->mem, at, &id32)) return FL_EFAULT;
    *id = id32; /* .eh_frame ids are 4 bytes even in the 64-bit format (LSB) */
    return 1;
}

/* Where the records end: the table's known end, else no further than 4 GiB past the start. */
static uint64_t records_limit(const fl_cfi_table_t *t, uint64_t start) {
    uint64_t end;
    if (t->eh_frame_size && fl_add_u64(start, t->eh_frame_size, &end)) return end;
    return fl_add_u64(start, 1ull << 32, &end) ? end : UINT64_MAX;
}

/* Parses the CIE record at addr (the last one parsed comes from the memo). */
static int parse_cie(const fl_cfi_table_t *t, uint64_t addr, uint64_t limit, fl_cfi_cie_t *cie) {
    if (t->memo && t->memo->cie.addr == addr && addr) {
        *cie = t->memo->cie;
        return 0;
    }
    uint64_t id_at, id, end;
    int e = record_header(t, addr, limit, &id_at, &id, &end);
    if (e <= 0) return e ? e : FL_EBADDATA;
    if (id != 0) return FL_EBADDATA; /* an FDE where its CIE should be */
    src_t s;
    src_init(&s, t->mem, id_at + 4, end);
    uint8_t version = u8(&s);
    if (version != 1 && version != 3) return s.err ? s.err : FL_EBADDATA;
    char aug[8];
    unsigned n = 0;
    for (;;) {
        uint8_t c = u8(&s);
        if (s.err) return s.err;
        if (!c) break;
        if (n + 1 >= sizeof aug) return FL_EBADDATA;
        aug[n++] = (char)c;
    }
    aug[n] = 0;
    cie->code_align = uleb(&s);
    cie->data_align = sleb(&s);
    uint64_t ra = version == 1 ? u8(&s) : uleb(&s);
    if (ra > UINT32_MAX) return s.err ? s.err : FL_EBADDATA;
    cie->ra_reg = (uint32_t)ra;
    cie->ptr_enc = 0; /* absptr unless 'R' says otherwise */
    cie->signal_frame = false;
    cie->has_z = n && aug[0] == 'z';
    uint64_t aug_end = 0;
    if (cie->has_z) {
        uint64_t alen = uleb(&s);
        if (!fl_add_u64(s.pos, alen, &aug_end) || aug_end > end) return s.err ? s.err : FL_EBADDATA;
    } else if (n) {
        return FL_ENOSYS; /* "eh" and other pre-'z' augmentations carry data we cannot skip */
    }
    bool have_r = false;
    for (unsigned i = 1; i < n && !s.err; i++) {
        switch (aug[i]) {
        case 'P': skip_pointer(&s, u8(&s)); break; /* personality: encoding and pointer */
        case 'L': (void)u8(&s); break; /* the LSDA's encoding (FDEs' augmentation data) */
        case 'R': cie->ptr_enc = u8(&s); have_r = true; break;
        case 'S': cie->signal_frame = true; break;
        case 'B': case 'G': break; /* arm64: signed with the B key / memory tagging */
        default:
            /* An unknown letter: its data is unknown, so nothing after it can be interpreted. */
            if (!have_r) return FL_ENOSYS;
            i = n;
            break;
        }
    }
    if (s.err) return s.err;
    if (cie->has_z) {
        if (s.pos > aug_end) return FL_EBADDATA; /* the letters' data overran its length */
        s.pos = aug_end;
    }
    if (pe_size(cie->ptr_enc) < 0 || (cie->ptr_enc & 0x70) > 0x50) return FL_EBADDATA;
    if ((cie->ptr_enc & 0x70) > 0x10) return FL_ENOSYS; /* text-, data-, func-relative, aligned */
    if (!cie->code_align) return FL_EBADDATA;
    cie->addr = addr;
    cie->insns = s.pos;
    cie->insns_end = end;
    if (t->memo) t->memo->cie = *cie;
    return 0;
}

/* The FDE record whose header is at addr. 1 parsed, 0 not an FDE (a CIE), or an error. */
static int parse_fde(const fl_cfi_table_t *t, uint64_t addr, uint64_t start, uint64_t limit,
                     fl_cfi_fde_t *fde) {
    uint64_t id_at, id, end;
    int e = record_header(t, addr, limit, &id_at, &id, &end);
    if (e <= 0) return e ? e : FL_ENOTFOUND;
    if (id == 0) return 0;
    /* The CIE pointer counts back from its own field, to a record before this one. */
    if (id > id_at || id_at - id < start) return FL_EBADDATA;
    fde->addr = addr;
    e = parse_cie(t, id_at - id, limit, &fde->cie);
    if (e) return e;
    src_t s;
    src_init(&s, t->mem, id_at + 4, end);
    fde->pc_start = read_pointer(&s, fde->cie.ptr_enc, 0, t->mem, false);
    uint64_t range = read_pointer(&s, fde->cie.ptr_enc & 0x0f, 0, t->mem, false);
    if (fde->cie.has_z) {
        uint64_t alen = uleb(&s), aug_end;
        if (!fl_add_u64(s.pos, alen, &aug_end) || aug_end > end) return s.err ? s.err : FL_EBADDATA;
        s.pos = aug_end;
    }
    if (s.err) return s.err;
    if (!fl_add_u64(fde->pc_start, range, &fde->pc_end)) return FL_EBADDATA;
    fde->insns = s.pos;
    fde->insns_end = end;
    return 1;
}

/* .eh_frame_hdr's header (version 1, the encodings of eh_frame_ptr, fde_count and the table
 * entries, then eh_frame_ptr and fde_count) into h: the records' start, and the search table if
 * it is usable (fixed-size entries relative to nothing, the header or the entry: what LLVM and
 * libgcc accept). */
static int parse_hdr(const fl_cfi_table_t *t, fl_cfi_hdr_t *h) {
    fl_cfi_memo_t *m = t->memo;
    if (m && m->hdr.addr == t->eh_frame_hdr) {
        *h = m->hdr;
        return 0;
    }
    src_t s;
    src_init(&s, t->mem, t->eh_frame_hdr, t->eh_frame_hdr + 4 + 8 + 8);
    uint8_t version = u8(&s), ptr_enc = u8(&s), count_enc = u8(&s), table_enc = u8(&s);
    if (!s.err && version != 1) return FL_EBADDATA;
    h->start = read_pointer(&s, ptr_enc, t->eh_frame_hdr, t->mem, false);
    if (s.err) return s.err;
    h->count = count_enc == PE_OMIT ? 0 : read_pointer(&s, count_enc, t->eh_frame_hdr, t->mem, false);
    int size = pe_size(table_enc);
    h->table = s.pos;
    h->table_enc = table_enc;
    h->entry_size = 0;
    if (s.err && s.err != FL_ENOSYS) return s.err;
    if (!s.err && h->count && size > 0 && !(table_enc & PE_INDIRECT) &&
        ((table_enc & 0x70) == 0 || (table_enc & 0x70) == 0x10 || (table_enc & 0x70) == 0x30)) {
        uint64_t bytes;
        if (h->count > (1ull << 32) || !fl_mul_u64(h->count, 2ull * (unsigned)size, &bytes))
            return FL_EBADDATA;
        h->entry_size = (int8_t)size;
    }
    h->addr = t->eh_frame_hdr;
    if (m) m->hdr = *h;
    return 0;
}

/* The start of the records: the table's, or what .eh_frame_hdr's eh_frame_ptr says. */
static int records_start(const fl_cfi_table_t *t, uint64_t *start) {
    if (t->eh_frame) {
        *start = t->eh_frame;
        return 0;
    }
    if (!t->eh_frame_hdr) return FL_ENOTFOUND;
    fl_cfi_hdr_t h;
    int e = parse_hdr(t, &h);
    if (!e) *start = h.start;
    return e;
}

int fl_cfi_fde_parse(const fl_cfi_table_t *t, uint64_t addr, fl_cfi_fde_t *fde) {
    uint64_t start;
    if (records_start(t, &start)) start = 0; /* unknown: any earlier CIE is accepted */
    if (addr < start) return FL_EBADDATA;
    int e = parse_fde(t, addr, start, records_limit(t, start ? start : addr), fde);
    return e == 1 ? 0 : e == 0 ? FL_ENOTFOUND : e;
}

int fl_cfi_fde_each(const fl_cfi_table_t *t, int (*fn)(void *ctx, const fl_cfi_fde_t *fde),
                    void *ctx) {
    uint64_t start, at;
    int e = records_start(t, &start);
    if (e) return e;
    uint64_t limit = records_limit(t, start);
    at = start;
    for (unsigned i = 0;; i++) {
        if (at >= limit || (t->eh_frame_size && limit - at < 4)) return 0;
        uint64_t id_at, id, end;
        e = record_header(t, at, limit, &id_at, &id, &end);
        if (e <= 0) return e;
        if (i == FL_CFI_SCAN_MAX) return FL_ERANGE; /* (the table had not ended) */
        if (t->memo && ++t->memo->scanned > FL_CFI_SCAN_MAX) return FL_ERANGE; /* the walk's */
        fl_cfi_fde_t fde;
        e = parse_fde(t, at, start, limit, &fde);
        if (e < 0) return e;
        if (e == 1 && (e = fn(ctx, &fde)) != 0) return e;
        at = end;
    }
}

/* Linear search, for tables without a search table (fully static executables, a Mach-O
 * __eh_frame without compact unwind): the CIE of the previous FDE is usually the next one's. */
typedef struct scan_ctx {
    uint64_t pc;
    fl_cfi_fde_t *out;
} scan_ctx_t;

static int scan_cb(void *ctx, const fl_cfi_fde_t *fde) {
    scan_ctx_t *c = ctx;
    if (c->pc < fde->pc_start || c->pc >= fde->pc_end) return 0;
    *c->out = *fde;
    return 1;
}

/* ---- .eh_frame_hdr ---- */

static inline __attribute__((always_inline)) uint64_t
decode_entry(const uint8_t *p, uint8_t enc, int size, uint64_t field, uint64_t hdr) {
    uint64_t v = 0;
    if (enc == 0x3b) { /* datarel sdata4: what every linker writes */
        int32_t d;
        __builtin_memcpy(&d, p, 4);
        return hdr + (uint64_t)(int64_t)d;
    }
    for (int i = 0; i < size; i++) v |= (uint64_t)p[i] << (8 * i);
    if (enc & 0x08) { /* signed formats */
        if (size == 2) v = (uint64_t)(int64_t)(int16_t)v;
        else if (size == 4) v = (uint64_t)(int64_t)(int32_t)v;
    }
    if ((enc & 0x70) == 0x10) v += field;
    else if ((enc & 0x70) == 0x30) v += hdr;
    return v;
}

int fl_cfi_fde_find(const fl_cfi_table_t *t, uint64_t pc, fl_cfi_fde_t *fde) {
    uint64_t start = t->eh_frame;
    fl_cfi_hdr_t h;
    int e;
    if (t->eh_frame_hdr) {
        if ((e = parse_hdr(t, &h))) return e;
        if (!start) start = h.start;
    }
    if (!start) return FL_ENOTFOUND;
    if (t->eh_frame_hdr && h.entry_size) {
        const unsigned size = (unsigned)h.entry_size, stride = 2 * size;
        const uint64_t hdr = t->eh_frame_hdr, table = h.table;
        const uint8_t *direct = fl_reader_direct(t->mem, table, h.count * stride);
        uint64_t lo = 0, hi = h.count;
        uint8_t ent[16];
        /* The last entry whose start is <= pc. */
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2, at = table + mid * stride;
            const uint8_t *p = direct ? direct + mid * stride : ent;
            if (!direct && fl_read(t->mem, at, ent, size)) return FL_EFAULT;
            if (decode_entry(p, h.table_enc, (int)size, at, hdr) <= pc) lo = mid;
            else hi = mid;
        }
        uint64_t at = table + lo * stride;
        const uint8_t *p = direct ? direct + lo * stride : ent;
        if (!direct && fl_read(t->mem, at, ent, stride)) return FL_EFAULT;
        if (decode_entry(p, h.table_enc, (int)size, at, hdr) > pc) return FL_ENOTFOUND;
        uint64_t fde_addr = decode_entry(p + size, h.table_enc, (int)size, at + size, hdr);
        if (fde_addr < start) return FL_EBADDATA;
        e = parse_fde(t, fde_addr, start, records_limit(t, start), fde);
        if (e == 0) return FL_EBADDATA; /* the table names a CIE */
        if (e < 0) return e;
        return pc >= fde->pc_start && pc < fde->pc_end ? 0 : FL_ENOTFOUND;
    }
    scan_ctx_t c = {.pc = pc, .out = fde};
    e = fl_cfi_fde_each(t, scan_cb, &c);
    return e == 1 ? 0 : e ? e : FL_ENOTFOUND;
}

/* ---- The CFA program ---- */

/* The rules while the program runs: one slot per tracked register (fast to update), turned into
 * the row's list at the end. */
typedef struct state {
    int64_t cfa_off;
    uint64_t touched; /* registers whose kind has been set (the others are UNSET; val and len of
                       * an untouched register are not initialised) */
    int32_t val[FL_DWARF_REGS];
    uint16_t len[FL_DWARF_REGS];
    uint8_t kind[FL_DWARF_REGS];
    uint16_t cfa_len;
    uint8_t cfa_kind, cfa_reg, ra_signed;
} state_t;

typedef struct prog {
    const fl_cfi_table_t *t;
    const fl_cfi_fde_t *fde;
    uint64_t target;       /* run while loc <= target */
    uint64_t loc, next;    /* the current row's start; the next row's start (or pc_end) */
    state_t cur, initial;  /* the rules now; after the CIE's initial instructions */
    state_t stack[FL_CFI_REMEMBER_MAX];
    unsigned depth, insns;
    bool in_cie;
    bool fast; /* the alignments allow run_fast (see there) */
} prog_t;

/* A factored offset, which must fit the row's 32 bits. */
static int factored(int64_t n, int64_t align, int32_t *out) {
    int64_t v;
    if (__builtin_mul_overflow(n, align, &v) || v < INT32_MIN || v > INT32_MAX) return FL_ERANGE;
    *out = (int32_t)v;
    return 0;
}

static int set_rule(prog_t *p, uint64_t reg, uint8_t kind, int32_t val, uint16_t len) {
    if (reg >= FL_DWARF_REGS) return 0; /* a register we do not track (vector, float) */
    p->cur.kind[reg] = kind;
    p->cur.val[reg] = val;
    p->cur.len[reg] = len;
    p->cur.touched |= 1ull << reg;
    return 0;
}

/* DW_CFA_restore(_extended): the CIE's rule (in the CIE itself: none). */
static void restore(prog_t *p, uint64_t reg) {
    if (reg >= FL_DWARF_REGS) return;
    if (p->in_cie || !(p->initial.touched >> reg & 1)) {
        if (p->cur.touched >> reg & 1) p->cur.kind[reg] = FL_CFI_RULE_UNSET;
        return;
    }
    set_rule(p, reg, p->initial.kind[reg], p->initial.val[reg], p->initial.len[reg]);
}

/* An expression operand (ULEB length, bytes): its address relative to the FDE, and length. */
static int expr_operand(prog_t *p, src_t *s, int32_t *off, uint16_t *len) {
    uint64_t n = uleb(s), at = s->pos;
    if (s->err) return s->err;
    if (n > s->end - s->pos) return FL_EBADDATA;
    s->pos += n;
    int64_t rel = (int64_t)(at - p->fde->addr);
    if (n > UINT16_MAX || rel < INT32_MIN || rel > INT32_MAX) return FL_ERANGE;
    *off = (int32_t)rel;
    *len = (uint16_t)n;
    return 0;
}

/* Moves loc forward by delta code units; stops the program (1) once the new row starts beyond
 * the target. */
static int advance(prog_t *p, uint64_t delta) {
    uint64_t d, loc;
    if (p->in_cie) return 0; /* no rows in a CIE; libunwind ignores such advances too */
    if (!fl_mul_u64(delta, p->fde->cie.code_align, &d) || !fl_add_u64(p->loc, d, &loc))
        return FL_EBADDATA;
    if (loc > p->target) {
        p->next = loc;
        return 1;
    }
    p->loc = loc;
    return 0;
}

/* The operations compiled code is made of (advance_loc, offset, def_cfa, def_cfa_register,
 * def_cfa_offset, nop) with one-byte operands, run from the bytes in place with the program's
 * position and location in registers (the general loop below keeps its byte source in memory:
 * every operation costs several loads and stores). It stops before any other operation, and
 * before one whose operands or result its checks do not cover, leaving that one to the general
 * loop, which gives it the same meaning; with code and data alignments of at most 2^20
 * (p->fast), no product or offset here can overflow. 1 when the target's row is complete (as
 * advance), else 0 with s->pos at the next operation. */
static inline __attribute__((always_inline)) int run_fast(prog_t *p, src_t *s) {
    const uint8_t *q = s->direct + (s->pos - s->base), *end = s->direct + (s->end - s->base);
    uint64_t loc = p->loc, target = p->target, ca = p->fde->cie.code_align, touched;
    int64_t da = p->fde->cie.data_align;
    unsigned n = 0, left = p->insns < FL_CFI_INSNS_MAX ? FL_CFI_INSNS_MAX - p->insns : 0;
    bool cie = p->in_cie;
    int ret = 0;
    state_t *c = &p->cur;
    touched = c->touched;
    for (; q < end && n < left; n++) {
        unsigned op = q[0];
        if (op >> 6 == 1) { /* advance_loc */
            uint64_t next = loc + (op & 0x3f) * ca;
            if (cie) {
                q++;
                continue;
            }
            if (next < loc) break; /* (the general loop says why) */
            q++;
            if (next > target) {
                p->next = next;
                ret = 1;
                n++;
                break;
            }
            loc = next;
            continue;
        }
        if (op == 0x00) { /* nop */
            q++;
            continue;
        }
        if (end - q < 3) break; /* (the operands below are read without a check) */
        unsigned a = q[1], b = q[2];
        if (op >> 6 == 2 && a < 0x80) { /* offset, a one-byte factored offset */
            unsigned reg = op & 0x3f;
            if (reg < FL_DWARF_REGS) {
                c->kind[reg] = FL_CFI_RULE_OFFSET;
                c->val[reg] = (int32_t)((int64_t)a * da);
                c->len[reg] = 0;
                touched |= 1ull << reg;
            }
            q += 2;
        } else if (op == 0x0e && a < 0x80 && c->cfa_kind == FL_CFI_CFA_REG) { /* def_cfa_offset */
            c->cfa_off = a;
            q += 2;
        } else if (op == 0x0c && a < 0x80 && b < 0x80) { /* def_cfa */
            c->cfa_off = b;
            c->cfa_kind = FL_CFI_CFA_REG;
            c->cfa_reg = a < FL_DWARF_REGS ? (uint8_t)a : UINT8_MAX;
            q += 3;
        } else if (op == 0x0d && a < 0x80 && c->cfa_kind == FL_CFI_CFA_REG) { /* def_cfa_register */
            c->cfa_reg = a < FL_DWARF_REGS ? (uint8_t)a : UINT8_MAX;
            q += 2;
        } else {
            break;
        }
    }
    c->touched = touched;
    p->loc = loc;
    p->insns += n;
    s->pos = s->base + (uint64_t)(q - s->direct);
    return ret;
}

/* Runs the instructions in [from, to) with the general interpreter (and run_fast between the
 * operations it alone takes). 0 at their end, 1 when the target's row is complete. */
static __attribute__((noinline)) int run_general(prog_t *p, uint64_t from, uint64_t to) {
    const fl_cfi_fde_t *fde = p->fde;
    src_t s;
    src_init(&s, p->t->mem, from, to);
    bool fast = s.direct && p->fast;
    while (s.pos < s.end) {
        if (fast) {
            int e = run_fast(p, &s);
            if (e) return e;
            if (s.pos >= s.end) break;
        }
        if (++p->insns > FL_CFI_INSNS_MAX) return FL_ERANGE;
        uint8_t op = u8(&s);
        uint64_t reg, off;
        int32_t v;
        uint16_t len;
        int e = 0;
        switch (op >> 6) {
        case 1: e = advance(p, op & 0x3f); break;                     /* advance_loc */
        case 2:                                                        /* offset */
            off = uleb(&s);
            e = off > INT32_MAX ? FL_ERANGE : factored((int64_t)off, fde->cie.data_align, &v);
            if (!e) e = set_rule(p, op & 0x3f, FL_CFI_RULE_OFFSET, v, 0);
            break;
        case 3: restore(p, op & 0x3f); break;                         /* restore */
        default:
            switch (op) {
            case 0x00: break;                                          /* nop */
            case 0x01: {                                               /* set_loc */
                /* (an indirect one would cost a read through the memory reader per row) */
                if (fde->cie.ptr_enc & PE_INDIRECT) return FL_ENOSYS;
                uint64_t loc = read_pointer(&s, fde->cie.ptr_enc, 0, p->t->mem, false);
                if (s.err) return s.err;
                if (p->in_cie) break;
                if (loc < p->loc) return FL_EBADDATA;
                if (loc > p->target) {
                    p->next = loc;
                    return 1;
                }
                p->loc = loc;
                break;
            }
            case 0x02: e = advance(p, uN(&s, 1)); break;              /* advance_loc1 */
            case 0x03: e = advance(p, uN(&s, 2)); break;              /* advance_loc2 */
            case 0x04: e = advance(p, uN(&s, 4)); break;              /* advance_loc4 */
            case 0x05: case 0x11: case 0x2f:        /* offset_extended(_sf), GNU_negative_... */
                reg = uleb(&s);
                if (op == 0x11) {
                    e = factored(sleb(&s), fde->cie.data_align, &v);
                } else {
                    off = uleb(&s);
                    e = off > INT32_MAX ? FL_ERANGE
                                        : factored(op == 0x2f ? -(int64_t)off : (int64_t)off,
                                                   fde->cie.data_align, &v);
                }
                if (!e) e = set_rule(p, reg, FL_CFI_RULE_OFFSET, v, 0);
                break;
            case 0x14: case 0x15:                                     /* val_offset(_sf) */
                reg = uleb(&s);
                if (op == 0x15) {
                    e = factored(sleb(&s), fde->cie.data_align, &v);
                } else {
                    off = uleb(&s);
                    e = off > INT32_MAX ? FL_ERANGE : factored((int64_t)off, fde->cie.data_align, &v);
                }
                if (!e) e = set_rule(p, reg, FL_CFI_RULE_VAL_OFFSET, v, 0);
                break;
            case 0x06: restore(p, uleb(&s)); break;                   /* restore_extended */
            case 0x07: e = set_rule(p, uleb(&s), FL_CFI_RULE_UNDEFINED, 0, 0); break;
            case 0x08: e = set_rule(p, uleb(&s), FL_CFI_RULE_SAME, 0, 0); break;
            case 0x09:                                                 /* register */
                reg = uleb(&s);
                off = uleb(&s);
                /* (a register we do not track: declined if the row still says so at the end) */
                e = set_rule(p, reg, FL_CFI_RULE_REGISTER, off > INT32_MAX ? INT32_MAX : (int32_t)off, 0);
                break;
            case 0x0a:                                                 /* remember_state */
                if (p->depth >= FL_CFI_REMEMBER_MAX) return FL_ERANGE;
                p->stack[p->depth++] = p->cur;
                break;
            case 0x0b: {                                               /* restore_state */
                if (!p->depth) return FL_EBADDATA;
                /* The CFA stays (DWARF 5: it is part of the row, and GCC relies on the
                 * remembered one) -- all of the row is restored. */
                p->cur = p->stack[--p->depth];
                break;
            }
            case 0x0c: case 0x12:                                     /* def_cfa(_sf) */
                reg = uleb(&s);
                if (op == 0x0c) {
                    off = uleb(&s);
                    p->cur.cfa_off = (int64_t)off;
                } else {
                    int64_t so = sleb(&s);
                    if (__builtin_mul_overflow(so, fde->cie.data_align, &p->cur.cfa_off)) e = FL_ERANGE;
                }
                /* (a register we do not track: declined if the row still says so at the end) */
                p->cur.cfa_kind = FL_CFI_CFA_REG;
                p->cur.cfa_reg = reg < FL_DWARF_REGS ? (uint8_t)reg : UINT8_MAX;
                break;
            case 0x0d:                                                 /* def_cfa_register */
                reg = uleb(&s);
                if (s.err) break;
                if (p->cur.cfa_kind != FL_CFI_CFA_REG) return FL_EBADDATA;
                p->cur.cfa_reg = reg < FL_DWARF_REGS ? (uint8_t)reg : UINT8_MAX;
                break;
            case 0x0e: case 0x13:                                     /* def_cfa_offset(_sf) */
                if (op == 0x0e) {
                    p->cur.cfa_off = (int64_t)uleb(&s);
                } else if (__builtin_mul_overflow(sleb(&s), fde->cie.data_align, &p->cur.cfa_off)) {
                    e = FL_ERANGE;
                }
                if (!s.err && p->cur.cfa_kind != FL_CFI_CFA_REG) return FL_EBADDATA;
                break;
            case 0x0f:                                                 /* def_cfa_expression */
                e = expr_operand(p, &s, &v, &len);
                if (!e) {
                    p->cur.cfa_kind = FL_CFI_CFA_EXPR;
                    p->cur.cfa_reg = 0;
                    p->cur.cfa_off = v;
                    p->cur.cfa_len = len;
                }
                break;
            case 0x10: case 0x16:                                     /* (val_)expression */
                reg = uleb(&s);
                e = expr_operand(p, &s, &v, &len);
                if (!e) e = set_rule(p, reg, op == 0x10 ? FL_CFI_RULE_EXPR : FL_CFI_RULE_VAL_EXPR, v, len);
                break;
            case 0x2d:                                   /* arm64 negate_ra_state (SPARC: window) */
                if (p->t->arch != FL_REGS_ARCH_ARM64) return FL_ENOSYS;
                p->cur.ra_signed ^= 1;
                break;
            case 0x2e: (void)uleb(&s); break;                         /* GNU_args_size */
            default: return s.err ? s.err : FL_ENOSYS; /* vendor opcodes, or not CFA at all */
            }
        }
        if (s.err) return s.err; /* a cut operand, whatever the operation made of it */
        if (e) return e;
    }
    return s.err;
}

/* run_general, but first run_fast on the bytes in place without the general interpreter's
 * set-up: most programs hold nothing else. */
static int run(prog_t *p, uint64_t from, uint64_t to) {
    const uint8_t *d = p->fast && to > from ? fl_reader_direct(p->t->mem, from, to - from) : 0;
    if (d) {
        src_t s; /* (the fields run_fast reads) */
        s.direct = d, s.base = s.pos = from, s.end = to;
        int e = run_fast(p, &s);
        if (e || s.pos >= to) return e;
        from = s.pos;
    }
    return run_general(p, from, to);
}

int fl_cfi_row_compute(const fl_cfi_table_t *t, const fl_cfi_fde_t *fde, uint64_t pc,
                       fl_cfi_row_t *row) {
    if (pc < fde->pc_start || pc >= fde->pc_end) return FL_ENOTFOUND;
    if (fde->cie.ra_reg >= FL_DWARF_REGS) return FL_ENOSYS;
    prog_t p;
    p.t = t;
    p.fde = fde;
    p.target = pc;
    p.loc = fde->pc_start;
    p.next = fde->pc_end;
    p.depth = 0;
    p.insns = 0;
    p.in_cie = true;
    p.fast = fde->cie.code_align <= 1u << 20 && fde->cie.data_align <= 1 << 20 &&
             fde->cie.data_align >= -(1 << 20);
    p.cur.touched = 0;
    p.cur.cfa_kind = 0;
    p.cur.cfa_off = 0;
    p.cur.cfa_len = 0;
    p.cur.cfa_reg = 0;
    p.cur.ra_signed = 0;
    int e = run(&p, fde->cie.insns, fde->cie.insns_end);
    if (e < 0) return e;
    /* restore() reads the registers the CIE touched, not the CFA: those alone are kept. */
    p.initial.touched = p.cur.touched;
    for (uint64_t t = p.cur.touched; t; t &= t - 1) {
        unsigned r = (unsigned)__builtin_ctzll(t);
        p.initial.kind[r] = p.cur.kind[r];
        p.initial.val[r] = p.cur.val[r];
        p.initial.len[r] = p.cur.len[r];
    }
    p.in_cie = false;
    e = run(&p, fde->insns, fde->insns_end);
    if (e < 0) return e;
    if (p.next > fde->pc_end) p.next = fde->pc_end;

    const state_t *c = &p.cur;
    if (c->cfa_kind == 0) return FL_EBADDATA; /* no CFA rule at all */
    /* Registers the register file does not track (vector, float) as the CFA's base or as where a
     * register is saved: valid, but the row cannot be applied here. */
    if (c->cfa_kind == FL_CFI_CFA_REG && c->cfa_reg >= FL_DWARF_REGS) return FL_ENOSYS;
    row->start = p.loc;
    row->end = p.next;
    row->h.expr_base = fde->addr;
    row->h.cfa_kind = c->cfa_kind;
    row->h.cfa_reg = c->cfa_reg;
    row->h.cfa_offset = c->cfa_off;
    row->h.cfa_len = c->cfa_len;
    row->h.ra_reg = (uint8_t)fde->cie.ra_reg;
    row->h.flags = (uint8_t)((fde->cie.signal_frame ? FL_CFI_ROW_SIGNAL : 0) |
                           (c->ra_signed ? FL_CFI_ROW_RA_SIGNED : 0));
    unsigned n = 0;
    for (uint64_t t = c->touched; t; t &= t - 1) {
        unsigned r = (unsigned)__builtin_ctzll(t);
        if (c->kind[r] == FL_CFI_RULE_UNSET) continue;
        if (c->kind[r] == FL_CFI_RULE_REGISTER && c->val[r] >= (int32_t)FL_DWARF_REGS) return FL_ENOSYS;
        row->rule[n++] = (fl_cfi_rule_t){.reg = (uint8_t)r, .kind = c->kind[r], .len = c->len[r],
                                         .value = c->val[r]};
    }
    row->h.nrules = (uint8_t)n;
    return 0;
}
