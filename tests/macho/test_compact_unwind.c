/* SPDX-License-Identifier: MIT */
/* macho: __unwind_info lookup on synthetic and malformed tables; decoding and formatting. */
#include <stdlib.h>

#include "macho/macho.h"
#include "test.h"

/* ---- A small __unwind_info writer (layout of <mach-o/compact_unwind_encoding.h>) ---- */

typedef struct {
    uint32_t func, enc;
} ent_t;

typedef struct {
    unsigned kind;    /* 2 regular, 3 compressed, 0 no page (page offset 0) */
    uint32_t func;    /* the first-level entry's function offset */
    const ent_t *ents;
    unsigned n;
} page_spec_t;

typedef struct {
    uint8_t *buf;
    size_t len, cap;
} w_t;

static void put32_at(uint8_t *p, uint32_t v) {
    for (unsigned i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static void put16_at(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}
static uint32_t get32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put32(w_t *w, uint32_t v) {
    if (w->len + 4 > w->cap) abort();
    put32_at(w->buf + w->len, v);
    w->len += 4;
}

/* Writes the section; every compressed-page encoding not in `common` goes to the page's own
 * table. Returns its size; *index_off and *page_offs tell where things went. */
typedef struct {
    size_t size, index_off, page_off[16];
} layout_t;

static layout_t build(uint8_t *buf, size_t cap, const uint32_t *common, unsigned ncommon,
                      const page_spec_t *pages, unsigned npages, uint32_t end) {
    w_t w = {buf, 0, cap};
    layout_t l = {0};
    memset(buf, 0, cap);
    put32(&w, 1); /* version */
    put32(&w, 28);
    put32(&w, ncommon);
    put32(&w, 28 + 4 * ncommon); /* personalities: none */
    put32(&w, 0);
    l.index_off = 28 + 4 * ncommon;
    put32(&w, (uint32_t)l.index_off);
    put32(&w, npages + 1);
    for (unsigned i = 0; i < ncommon; i++) put32(&w, common[i]);
    size_t index = w.len;
    w.len += 12 * (npages + 1);
    for (unsigned i = 0; i < npages; i++) {
        const page_spec_t *p = &pages[i];
        uint32_t page_off = 0;
        if (p->kind == 2) {
            page_off = (uint32_t)w.len;
            put32(&w, 2);
            put32(&w, 8u | (uint32_t)p->n << 16);
            for (unsigned j = 0; j < p->n; j++) {
                put32(&w, p->ents[j].func);
                put32(&w, p->ents[j].enc);
            }
        } else if (p->kind == 3) {
            page_off = (uint32_t)w.len;
            uint32_t local[256];
            unsigned nlocal = 0;
            for (unsigned j = 0; j < p->n; j++) {
                bool found = false;
                for (unsigned k = 0; k < ncommon; k++) found |= common[k] == p->ents[j].enc;
                for (unsigned k = 0; k < nlocal; k++) found |= local[k] == p->ents[j].enc;
                if (!found) local[nlocal++] = p->ents[j].enc;
            }
            put32(&w, 3);
            put32(&w, (12u + 4 * nlocal) | (uint32_t)p->n << 16);
            put32(&w, 12u | (uint32_t)nlocal << 16);
            for (unsigned k = 0; k < nlocal; k++) put32(&w, local[k]);
            for (unsigned j = 0; j < p->n; j++) {
                uint32_t idx = 0;
                bool found = false;
                for (unsigned k = 0; k < ncommon && !found; k++)
                    if (common[k] == p->ents[j].enc) idx = k, found = true;
                for (unsigned k = 0; k < nlocal && !found; k++)
                    if (local[k] == p->ents[j].enc) idx = ncommon + k, found = true;
                put32(&w, (p->ents[j].func - p->func) | idx << 24);
            }
        }
        l.page_off[i] = page_off;
        put32_at(buf + index + 12 * i, p->func);
        put32_at(buf + index + 12 * i + 4, page_off);
    }
    put32_at(buf + index + 12 * npages, end);
    l.size = w.len;
    return l;
}

#define BASE 0x100000000ull

static fl_reader_t g_r;
static fl_macho_unwind_info_t ui_over(const uint8_t *buf, size_t size) {
    fl_reader_init_buffer(&g_r, buf, size, 0x5000);
    fl_macho_unwind_info_t ui = {&g_r, 0x5000, size, BASE, FL_MACHO_CPU_ARM64, NULL};
    return ui;
}

/* An independent model: the flattened entries of the spec with their ends. */
typedef struct {
    uint32_t start, end, enc;
} model_t;
static unsigned model(const page_spec_t *pages, unsigned npages, uint32_t end, model_t *out) {
    unsigned n = 0;
    for (unsigned i = 0; i < npages; i++) {
        uint32_t hi = i + 1 < npages ? pages[i + 1].func : end;
        for (unsigned j = 0; j < pages[i].n; j++) {
            out[n].start = pages[i].ents[j].func;
            out[n].end = j + 1 < pages[i].n ? pages[i].ents[j + 1].func : hi;
            out[n].enc = pages[i].ents[j].enc;
            n++;
        }
    }
    return n;
}

typedef struct {
    fl_macho_unwind_entry_t e[4096];
    unsigned n;
    int stop_after; /* return nonzero after this many (0: never) */
} collect_t;
static int collect(void *ctx, const fl_macho_unwind_entry_t *e) {
    collect_t *c = ctx;
    if (c->n < FL_ARRAY_LEN(c->e)) c->e[c->n] = *e;
    c->n++;
    return c->stop_after && (int)c->n >= c->stop_after ? 77 : 0;
}

static collect_t g_c;

/* Every offset in [lo, hi): find agrees with the model; each yields exactly the model. */
static void check_against_model(const fl_macho_unwind_info_t *ui, const page_spec_t *pages,
                                unsigned npages, uint32_t end, uint32_t lo, uint32_t hi) {
    static model_t m[4096];
    unsigned n = model(pages, npages, end, m);
    unsigned bad = 0;
    for (uint32_t off = lo; off < hi; off++) {
        const model_t *want = NULL;
        for (unsigned k = 0; k < n; k++)
            if (m[k].start <= off && off < m[k].end) want = &m[k];
        fl_macho_unwind_entry_t e;
        int err = fl_macho_unwind_find(ui, BASE + off, &e);
        bool ok = want ? err == 0 && e.start == BASE + want->start && e.end == BASE + want->end &&
                             e.encoding == want->enc
                       : err == FL_ENOTFOUND;
        if (!ok && bad++ < 5)
            fprintf(stderr, "offset 0x%x: err %d start 0x%llx enc 0x%x, want %s 0x%x\n", off,
                    err, (unsigned long long)e.start, e.encoding, want ? "entry" : "none",
                    want ? want->enc : 0);
    }
    CHECK_EQ_U64(bad, 0);
    /* With a memo (the header and the last page kept between lookups), in an order that jumps
     * between pages and back: the same answers as each lookup alone. */
    fl_macho_unwind_memo_t memo = {0};
    fl_macho_unwind_info_t mu = *ui;
    mu.memo = &memo;
    for (uint32_t i = 0, span = hi - lo; span && i < span; i++) {
        uint32_t off = lo + (uint32_t)(((uint64_t)i * 7919u) % span);
        fl_macho_unwind_entry_t e = {0}, f = {0};
        int err = fl_macho_unwind_find(ui, BASE + off, &e);
        int merr = fl_macho_unwind_find(&mu, BASE + off, &f);
        if ((merr != err || (err == 0 && (e.start != f.start || e.end != f.end ||
                                          e.encoding != f.encoding))) &&
            bad++ < 5)
            fprintf(stderr, "offset 0x%x: memo err %d, alone err %d\n", off, merr, err);
    }
    CHECK_EQ_U64(bad, 0);
    g_c.n = 0;
    g_c.stop_after = 0;
    CHECK_EQ_U64(fl_macho_unwind_each(ui, collect, &g_c), 0);
    CHECK_EQ_U64(g_c.n, n);
    unsigned diff = 0;
    for (unsigned k = 0; k < n && k < g_c.n; k++)
        diff += g_c.e[k].start != BASE + m[k].start || g_c.e[k].end != BASE + m[k].end ||
                g_c.e[k].encoding != m[k].enc;
    CHECK_EQ_U64(diff, 0);
}

static uint8_t g_buf[1 << 16];

/* Several first-level entries: regular and compressed pages, common and page-local encodings,
 * a range without a page. */
static const uint32_t common_encs[] = {0x04000000, 0x02001000, 0x04000001};
static const ent_t p0[] = {{0x1000, 0x04000000}, {0x1010, 0x02001000}, {0x1040, 0x04000001},
                           {0x1100, 0x04000003}};                        /* regular */
static const ent_t p1[] = {{0x2000, 0x04000000}, {0x2004, 0x04000005}, {0x2008, 0x02001000},
                           {0x2100, 0x04000005}, {0x2180, 0x03000040}, {0x2200, 0x04000001},
                           {0x2300, 0}};                                 /* compressed */
static const ent_t p3[] = {{0x5000, 0x02002000}};                        /* compressed, 1 entry */
static const ent_t p4[] = {{0x5100, 0x04000010}, {0x5108, 0x04000000}};  /* regular */
static const page_spec_t g_pages[] = {
    {2, 0x1000, p0, 4}, {3, 0x2000, p1, 7}, {0, 0x3000, NULL, 0}, {3, 0x5000, p3, 1},
    {2, 0x5100, p4, 2}};
#define G_END 0x5200u

static void test_lookup(void) {
    layout_t l = build(g_buf, sizeof g_buf, common_encs, 3, g_pages, 5, G_END);
    fl_macho_unwind_info_t ui = ui_over(g_buf, l.size);
    check_against_model(&ui, g_pages, 5, G_END, 0xf00, 0x5300);

    /* Starts, middles, last bytes and the ends, by hand. */
    fl_macho_unwind_entry_t e;
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x1000, &e), 0);
    CHECK_EQ_U64(e.start, BASE + 0x1000);
    CHECK_EQ_U64(e.end, BASE + 0x1010);
    CHECK_EQ_U64(e.encoding, 0x04000000);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x10ff, &e), 0); /* last byte before 0x1100 */
    CHECK_EQ_U64(e.start, BASE + 0x1040);
    CHECK_EQ_U64(e.encoding, 0x04000001);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x1fff, &e), 0); /* regular page's last */
    CHECK_EQ_U64(e.start, BASE + 0x1100);
    CHECK_EQ_U64(e.end, BASE + 0x2000);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x2006, &e), 0); /* page-local encoding */
    CHECK_EQ_U64(e.encoding, 0x04000005);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x2008, &e), 0); /* common encoding */
    CHECK_EQ_U64(e.encoding, 0x02001000);
    CHECK_EQ_U64(e.end, BASE + 0x2100);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x2fff, &e), 0); /* encoding 0 entry */
    CHECK_EQ_U64(e.encoding, 0);
    CHECK_EQ_U64(e.start, BASE + 0x2300);
    CHECK_EQ_U64(e.end, BASE + 0x3000);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x3000, &e), FL_ENOTFOUND); /* no page */
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x4fff, &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x5000, &e), 0);
    CHECK_EQ_U64(e.end, BASE + 0x5100);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x51ff, &e), 0); /* last byte */
    CHECK_EQ_U64(e.start, BASE + 0x5108);
    CHECK_EQ_U64(e.end, BASE + G_END);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + G_END, &e), FL_ENOTFOUND); /* the sentinel */
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0xfff, &e), FL_ENOTFOUND); /* before */
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, 0, &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x100000000ull + 0x1000, &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, UINT64_MAX, &e), FL_ENOTFOUND);

    /* each stops when fn says so and returns its value. */
    g_c.n = 0;
    g_c.stop_after = 3;
    CHECK_EQ_U64(fl_macho_unwind_each(&ui, collect, &g_c), 77);
    CHECK_EQ_U64(g_c.n, 3);
    CHECK_EQ_U64(fl_macho_unwind_each(&ui, NULL, NULL), FL_EINVAL);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x1000, NULL), FL_EINVAL);
}

/* A page of a first-level range where the page's first entry starts after the range does:
 * the gap has no entry. And a regular page entry set that has gaps between pages. */
static void test_gap_before_first_entry(void) {
    static const ent_t a[] = {{0x1080, 0x04000000}, {0x1100, 0x04000001}};
    static const ent_t b[] = {{0x2010, 0x02001000}};
    const page_spec_t pages[] = {{2, 0x1000, a, 2}, {3, 0x2000, b, 1}};
    /* compressed entry offsets are relative to the first-level entry: b's is 0x10 */
    layout_t l = build(g_buf, sizeof g_buf, NULL, 0, pages, 2, 0x3000);
    fl_macho_unwind_info_t ui = ui_over(g_buf, l.size);
    check_against_model(&ui, pages, 2, 0x3000, 0xff0, 0x3010);
    fl_macho_unwind_entry_t e;
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x1000, &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x200f, &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x2010, &e), 0);
    CHECK_EQ_U64(e.encoding, 0x02001000);
}

/* Large tables: many first-level entries with full pages, both kinds, so the binary searches
 * run many steps; every entry start, middle and last byte checked against the model. */
static void test_large(void) {
    static ent_t ents[64][600];
    static page_spec_t pages[64];
    static uint8_t big[1 << 20];
    static model_t m[64 * 600];
    uint32_t off = 0x4000;
    unsigned npages = 12;
    for (unsigned i = 0; i < npages; i++) {
        unsigned n = i % 3 == 0 ? 1 : 100 + 37 * i;
        pages[i] = (page_spec_t){i % 2 ? 3u : 2u, off, ents[i], n};
        for (unsigned j = 0; j < n; j++) {
            ents[i][j].func = off;
            /* a handful of encodings: some common, some page-local, distinct per page */
            ents[i][j].enc = j % 5 == 0 ? 0x04000000 : 0x02000000 | ((i * 7 + j % 9) << 12);
            off += 4 + 4 * ((i + j) % 7);
        }
        off += 0x40; /* the last entry of each page ends at the next page's first function */
    }
    const uint32_t common[] = {0x04000000};
    layout_t l = build(big, sizeof big, common, 1, pages, npages, off);
    /* sanity of the writer itself: page offsets must be inside */
    CHECK(l.size < sizeof big);
    fl_reader_init_buffer(&g_r, big, l.size, 0);
    fl_macho_unwind_info_t ui = {&g_r, 0, l.size, BASE, FL_MACHO_CPU_ARM64, NULL};
    unsigned n = model(pages, npages, off, m), bad = 0;
    for (unsigned k = 0; k < n; k++) {
        uint32_t probes[3] = {m[k].start, m[k].start + (m[k].end - m[k].start) / 2, m[k].end - 1};
        for (unsigned q = 0; q < 3; q++) {
            fl_macho_unwind_entry_t e;
            int err = fl_macho_unwind_find(&ui, BASE + probes[q], &e);
            bad += err != 0 || e.start != BASE + m[k].start || e.end != BASE + m[k].end ||
                   e.encoding != m[k].enc;
        }
    }
    CHECK_EQ_U64(bad, 0);
    /* With a memo (the header and the last page kept between lookups), in an order that jumps
     * between pages and back: the same answers as each lookup alone. */
    fl_macho_unwind_memo_t memo = {0};
    fl_macho_unwind_info_t mu = ui;
    mu.memo = &memo;
    for (uint32_t i = 0; i < 4 * n; i++) {
        uint32_t o = (uint32_t)(((uint64_t)i * 7919u) % off);
        fl_macho_unwind_entry_t e = {0}, f = {0};
        int err = fl_macho_unwind_find(&ui, BASE + o, &e);
        int merr = fl_macho_unwind_find(&mu, BASE + o, &f);
        bad += merr != err ||
               (err == 0 && (e.start != f.start || e.end != f.end || e.encoding != f.encoding));
    }
    CHECK_EQ_U64(bad, 0);
    g_c.n = 0;
    g_c.stop_after = 0;
    CHECK_EQ_U64(fl_macho_unwind_each(&ui, collect, &g_c), 0);
    CHECK_EQ_U64(g_c.n, n);
}

/* ---- Malformed tables ---- */

static int find_at(const uint8_t *buf, size_t size, uint32_t off) {
    fl_macho_unwind_info_t ui = ui_over(buf, size);
    fl_macho_unwind_entry_t e;
    return fl_macho_unwind_find(&ui, BASE + off, &e);
}
static int each_of(const uint8_t *buf, size_t size) {
    fl_macho_unwind_info_t ui = ui_over(buf, size);
    g_c.n = 0;
    g_c.stop_after = 0;
    return fl_macho_unwind_each(&ui, collect, &g_c);
}

/* Fields of the g_pages layout. */
static layout_t fresh(void) {
    return build(g_buf, sizeof g_buf, common_encs, 3, g_pages, 5, G_END);
}

static void test_malformed(void) {
    layout_t l = fresh();
    uint8_t *b = g_buf;

    put32_at(b, 2); /* version */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    l = fresh();
    put32_at(b + 8, 0x40000000); /* common count past the section */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    l = fresh();
    put32_at(b + 4, (uint32_t)l.size - 4); /* common encodings run past the end */
    CHECK_EQ_U64(find_at(b, l.size, 0x2000), FL_EBADDATA);
    l = fresh();
    put32_at(b + 24, 0xffffffff); /* index count */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    put32_at(b + 24, FL_MACHO_UNWIND_PAGES_MAX + 1); /* over the limit */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    put32_at(b + 24, 1); /* no sentinel */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    put32_at(b + 24, 0);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    l = fresh();
    put32_at(b + 20, (uint32_t)l.size - 12); /* index array past the end */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);

    /* A page offset past the section, and one whose header is cut by the end. */
    l = fresh();
    put32_at(b + l.index_off + 4, (uint32_t)l.size);
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    put32_at(b + l.index_off + 4, (uint32_t)l.size - 6);
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    put32_at(b + l.index_off + 4, 0xfffffffe);
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);

    /* Unknown page kinds. */
    for (uint32_t kind = 0; kind < 6; kind++) {
        if (kind == 2 || kind == 3) continue;
        l = fresh();
        put32_at(b + l.page_off[1], kind);
        CHECK_EQ_U64(find_at(b, l.size, 0x2000), FL_EBADDATA);
        CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
        CHECK_EQ_U64(find_at(b, l.size, 0x1000), 0); /* other pages still answer */
    }

    /* Entry counts past the section; a page without entries. */
    l = fresh();
    put16_at(b + l.page_off[4] + 6, 0xffff);
    CHECK_EQ_U64(find_at(b, l.size, 0x5100), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    l = fresh();
    put16_at(b + l.page_off[1] + 4, 0xfff0); /* compressed entries offset past the end */
    CHECK_EQ_U64(find_at(b, l.size, 0x2000), FL_EBADDATA);
    l = fresh();
    put16_at(b + l.page_off[1] + 10, 0xffff); /* page-local encodings count */
    CHECK_EQ_U64(find_at(b, l.size, 0x2000), FL_EBADDATA);
    l = fresh();
    put16_at(b + l.page_off[0] + 6, 0);
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);

    /* Encoding index out of range: page 1 has 3 common and 3 page-local encodings
     * (0x04000005, 0x03000040, 0), so 0..5 are valid. */
    l = fresh();
    {
        uint8_t *ent = b + l.page_off[1] + 12 + 4 * 3 + 4 * 1; /* entry 1 of page 1 */
        CHECK_EQ_U64(get32_at(ent) >> 24, 3); /* the writer put 0x04000005 first locally */
        put32_at(ent, (get32_at(ent) & 0x00ffffff) | 6u << 24);
        CHECK_EQ_U64(find_at(b, l.size, 0x2004), FL_EBADDATA);
        CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
        put32_at(ent, (get32_at(ent) & 0x00ffffff) | 5u << 24); /* the last valid one */
        fl_macho_unwind_info_t ui = ui_over(b, l.size);
        fl_macho_unwind_entry_t e;
        CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x2004, &e), 0);
        CHECK_EQ_U64(e.encoding, 0);
        put32_at(ent, (get32_at(ent) & 0x00ffffff) | 0xffu << 24);
        CHECK_EQ_U64(find_at(b, l.size, 0x2004), FL_EBADDATA);
    }

    /* Unsorted first-level indices: entry 2 (0x3000) moved below entry 1. */
    l = fresh();
    put32_at(b + l.index_off + 12 * 2, 0x1800);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    /* The search sees 0x1800 <= 0x2004 and goes right of it: a page-less range then. */
    CHECK(find_at(b, l.size, 0x2004) != 0);
    /* Unsorted regular entries (page 0: 0x1000 0x1010 0x1040 0x1100 -> 0x1000 0x1010 0x1008
     * 0x1100): each sees it; a lookup that lands next to it must not answer across it. */
    l = fresh();
    put32_at(b + l.page_off[0] + 8 + 8 * 2, 0x1008);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    {
        fl_macho_unwind_info_t ui = ui_over(b, l.size);
        fl_macho_unwind_memo_t memo = {0};
        fl_macho_unwind_entry_t e;
        for (uint32_t off = 0x1000; off < 0x2000; off++) {
            int err = fl_macho_unwind_find(&ui, BASE + off, &e);
            if (err == 0 && !(e.start <= BASE + off && BASE + off < e.end)) {
                CHECK(!"an answer that does not cover pc");
                break;
            }
            ui.memo = off & 1 ? &memo : NULL; /* (and with the page a lookup before kept) */
        }
    }
    /* Duplicate entry starts. */
    l = fresh();
    put32_at(b + l.page_off[0] + 8 + 8 * 2, 0x1010);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    /* Regular entries outside their first-level range. */
    l = fresh();
    put32_at(b + l.page_off[0] + 8 + 8 * 3, 0x2000); /* last entry at the next range's start */
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    CHECK_EQ_U64(find_at(b, l.size, 0x1fff), FL_EBADDATA);
    l = fresh();
    put32_at(b + l.page_off[0] + 8, 0x0800); /* first entry before the range */
    CHECK_EQ_U64(find_at(b, l.size, 0x1000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);
    /* A compressed offset reaching past the range. */
    l = fresh();
    put32_at(b + l.page_off[3] + 12 + 4, 0x00100000);
    CHECK_EQ_U64(find_at(b, l.size, 0x5000), FL_EBADDATA);
    CHECK_EQ_U64(each_of(b, l.size), FL_EBADDATA);

    /* Every truncation of a valid table: errors, never a crash; whole-table answers only when
     * the cut leaves what they need. */
    l = fresh();
    unsigned answered = 0;
    for (size_t cut = 0; cut < l.size; cut++) {
        int e1 = find_at(b, cut, 0x2004), e2 = each_of(b, cut);
        answered += e1 == 0;
        CHECK(e1 == 0 || e1 == FL_EBADDATA || e1 == FL_ENOTFOUND);
        CHECK(e2 == FL_EBADDATA); /* the last page is needed by each */
        if (e2 != FL_EBADDATA) break;
    }
    CHECK(answered > 0); /* once page 1 is complete, 0x2004 is found */

    /* A reader that cannot read: FL_EFAULT, not FL_EBADDATA. */
    l = fresh();
    {
        fl_reader_t r;
        fl_reader_init_buffer(&r, b, 16, 0x5000); /* only 16 bytes readable */
        fl_macho_unwind_info_t ui = {&r, 0x5000, l.size, BASE, FL_MACHO_CPU_ARM64, NULL};
        fl_macho_unwind_entry_t e;
        CHECK_EQ_U64(fl_macho_unwind_find(&ui, BASE + 0x1000, &e), FL_EFAULT);
        CHECK_EQ_U64(fl_macho_unwind_each(&ui, collect, &g_c), FL_EFAULT);
    }
    CHECK_EQ_U64(fl_macho_unwind_find(NULL, 0, NULL), FL_EINVAL);
}

/* Random byte flips over the synthetic table: anything but a crash or a hang, and answers
 * that cover the pc asked for. */
static void test_flips(void) {
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    unsigned bad = 0;
    for (unsigned iter = 0; iter < 20000; iter++) {
        layout_t l = fresh();
        unsigned flips = 1 + iter % 4;
        for (unsigned f = 0; f < flips; f++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            g_buf[(seed >> 33) % l.size] ^= (uint8_t)(1u << ((seed >> 20) % 8));
        }
        fl_macho_unwind_info_t ui = ui_over(g_buf, l.size);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t pc = BASE + 0xf00 + (seed >> 40) % 0x4400;
        fl_macho_unwind_entry_t e;
        int err = fl_macho_unwind_find(&ui, pc, &e);
        if (err == 0 && !(e.start <= pc && pc < e.end)) bad++;
        if (err != 0 && err != FL_ENOTFOUND && err != FL_EBADDATA) bad++;
        g_c.n = 0;
        g_c.stop_after = 0;
        err = fl_macho_unwind_each(&ui, collect, &g_c);
        if (err != 0 && err != FL_EBADDATA) bad++;
        for (unsigned k = 1; k < g_c.n && k < FL_ARRAY_LEN(g_c.e); k++)
            if (!(g_c.e[k - 1].start < g_c.e[k - 1].end && g_c.e[k - 1].end <= g_c.e[k].start))
                bad++;
    }
    CHECK_EQ_U64(bad, 0);
}

/* ---- Decoding and formatting ---- */

typedef struct {
    uint32_t cpu, enc;
    int err;
    const char *text;
} fmt_case_t;

#define A64 FL_MACHO_CPU_ARM64
#define X64 FL_MACHO_CPU_X86_64
static const fmt_case_t g_fmt[] = {
    {A64, 0x00000000, 0, "none"},
    {A64, 0x04000000, 0, "frame"},
    {A64, 0x04000001, 0, "frame, saved x19/x20"},
    {A64, 0x04000003, 0, "frame, saved x19/x20 x21/x22"},
    {A64, 0x04000014, 0, "frame, saved x23/x24 x27/x28"},
    {A64, 0x0400001f, 0, "frame, saved x19/x20 x21/x22 x23/x24 x25/x26 x27/x28"},
    {A64, 0x04000f1f, 0,
     "frame, saved x19/x20 x21/x22 x23/x24 x25/x26 x27/x28 d8/d9 d10/d11 d12/d13 d14/d15"},
    {A64, 0x04000104, 0, "frame, saved x23/x24 d8/d9"},
    {A64, 0x04000800, 0, "frame, saved d14/d15"},
    {A64, 0x44000001, 0, "frame, saved x19/x20"}, /* LSDA bit: ignored */
    {A64, 0x84000000, 0, "frame"},                /* not a function start: ignored */
    {A64, 0x02000000, 0, "frameless, stack 0"},
    {A64, 0x02002000, 0, "frameless, stack 32"},
    {A64, 0x02fff000, 0, "frameless, stack 65520"},
    {A64, 0x02001001, 0, "frameless, stack 16, saved x19/x20"},
    {A64, 0x02002003, 0, "frameless, stack 32, saved x19/x20 x21/x22"},
    {A64, 0x02000001, FL_EBADDATA, NULL}, /* saved registers outside a 0-byte frame */
    {A64, 0x02001003, FL_EBADDATA, NULL},
    {A64, 0x03001234, 0, "dwarf at 0x1234"},
    {A64, 0x03ffffff, 0, "dwarf at 0xffffff"},
    {A64, 0x01000000, FL_EBADDATA, NULL},
    {A64, 0x05000000, FL_EBADDATA, NULL},
    {A64, 0x0f000000, FL_EBADDATA, NULL},
    {X64, 0x00000000, 0, "none"},
    {X64, 0x01000000, 0, "rbp frame"},
    {X64, 0x01010001, 0, "rbp frame, saved rbx"},
    {X64, 0x01030161, 0, "rbp frame, saved rbx r14 r15"},
    {X64, 0x01050000 | 1 | 2 << 3 | 3 << 6 | 4 << 9 | 5 << 12, 0,
     "rbp frame, saved rbx r12 r13 r14 r15"},
    {X64, 0x01040008 | 5 << 9, 0, "rbp frame, saved rbx r15"}, /* slots 1 and 3, holes */
    {X64, 0x01010006, FL_EBADDATA, NULL},                      /* rbp in a slot */
    {X64, 0x01010007, FL_EBADDATA, NULL},                      /* no register 7 */
    {X64, 0x01010009, FL_EBADDATA, NULL},                      /* slot 1 at rbp+0 */
    {X64, 0x01000001, FL_EBADDATA, NULL},                      /* slot 0 at rbp+0 */
    {X64, 0x02010000, 0, "stack immd 8"},
    {X64, 0x02020400, 0, "stack immd 16, saved rbx"},
    {X64, 0x02020405, 0, "stack immd 16, saved rbp"},
    {X64, 0x02061400, 0, "stack immd 48, saved rbx r12 r13 r14 r15"},
    {X64, 0x02040c0b, 0, "stack immd 32, saved rbx r14 rbp"},
    {X64, 0x02ff0000, 0, "stack immd 2040"},
    {X64, 0x02010400, FL_EBADDATA, NULL}, /* 8 bytes cannot hold a register and rip */
    {X64, 0x02000000, FL_EBADDATA, NULL}, /* not even rip */
    {X64, 0x02020406, FL_EBADDATA, NULL}, /* one register, permutation 6 */
    {X64, 0x0203081e, FL_EBADDATA, NULL}, /* two registers, permutation 30 */
    {X64, 0x02071ad0, FL_EBADDATA, NULL}, /* six registers, permutation 720 */
    {X64, 0x02071acf, 0, "stack immd 56, saved rbp r15 r14 r13 r12 rbx"}, /* 719: reversed */
    {X64, 0x02071800, 0, "stack immd 56, saved rbx r12 r13 r14 r15 rbp"},
    {X64, 0x02091c00, FL_EBADDATA, NULL}, /* seven registers */
    {X64, 0x02020001, FL_EBADDATA, NULL}, /* no registers but a permutation */
    {X64, 0x03032000, 0, "stack ind (sub at +3, adjust 8)"},
    {X64, 0x0306680f, 0, "stack ind (sub at +6, adjust 24), saved r14 rbx"},
    {X64, 0x04000abc, 0, "dwarf at 0xabc"},
    {X64, 0x05000000, FL_EBADDATA, NULL},
    {X64, 0x0e000000, FL_EBADDATA, NULL},
    {0x12, 0x04000000, FL_ENOSYS, NULL},        /* arm (32-bit) */
    {0x0200000c, 0x04000000, FL_ENOSYS, NULL},  /* arm64_32 */
};

static void test_format(void) {
    for (unsigned i = 0; i < FL_ARRAY_LEN(g_fmt); i++) {
        const fmt_case_t *c = &g_fmt[i];
        fl_macho_unwind_rule_t rule;
        int err = fl_macho_unwind_decode(c->cpu, c->enc, &rule);
        if (err != c->err) fprintf(stderr, "case %u: encoding 0x%08x\n", i, c->enc);
        CHECK_EQ_U64(err, c->err);
        CHECK_EQ_U64(rule.encoding, c->enc);
        CHECK_EQ_U64(rule.cputype, c->cpu);
        if (err) continue;
        char text[200];
        size_t n = fl_macho_unwind_rule_format(&rule, text, sizeof text);
        CHECK_STREQ(text, c->text);
        CHECK_EQ_U64(n, strlen(c->text));
    }
    /* Cut output: always terminated, the length of what was kept. */
    fl_macho_unwind_rule_t rule;
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0x04000003, &rule), 0);
    char small[6];
    CHECK_EQ_U64(fl_macho_unwind_rule_format(&rule, small, sizeof small), 5);
    CHECK_STREQ(small, "frame");
    CHECK_EQ_U64(fl_macho_unwind_rule_format(&rule, small, 1), 0);
    CHECK_STREQ(small, "");
    CHECK_EQ_U64(fl_macho_unwind_rule_format(&rule, small, 0), 0);
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0, NULL), FL_EINVAL);
}

/* The registers and offsets of decoded rules. */
static void test_decode_fields(void) {
    fl_macho_unwind_rule_t r;
    /* arm64 frame: x19 at fp-8, x20 at fp-16, then x23/x24, then d8/d9 (DWARF 72/73). */
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0x04000105, &r), 0);
    CHECK_EQ_U64(r.kind, FL_MACHO_RULE_FRAME);
    CHECK_EQ_U64(r.nregs, 6);
    static const uint8_t want_reg[] = {19, 20, 23, 24, 72, 73};
    static const int32_t want_off[] = {-8, -16, -24, -32, -40, -48};
    for (unsigned i = 0; i < 6; i++) {
        CHECK_EQ_U64(r.reg[i], want_reg[i]);
        CHECK_EQ_U64(r.reg_offset[i], want_off[i]);
    }
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0x04000f1f, &r), 0);
    CHECK_EQ_U64(r.nregs, 18);
    CHECK_EQ_U64(r.reg[17], 79);
    CHECK_EQ_U64(r.reg_offset[17], -144);
    /* arm64 frameless: the pairs at the top of the frame, below the caller's sp. */
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0x02003003, &r), 0);
    CHECK_EQ_U64(r.kind, FL_MACHO_RULE_FRAMELESS);
    CHECK_EQ_U64(r.stack_size, 48);
    CHECK_EQ_U64(r.nregs, 4);
    CHECK_EQ_U64(r.reg_offset[0], -8);
    CHECK_EQ_U64(r.reg_offset[3], -32);
    CHECK_EQ_U64(r.reg[3], 22);
    /* x86_64 rbp frame: slot i at rbp - 8*offset + 8*i. */
    CHECK_EQ_U64(fl_macho_unwind_decode(X64, 0x01030161, &r), 0);
    CHECK_EQ_U64(r.nregs, 3);
    CHECK_EQ_U64(r.reg[0], 3);
    CHECK_EQ_U64(r.reg_offset[0], -24);
    CHECK_EQ_U64(r.reg[1], 14);
    CHECK_EQ_U64(r.reg_offset[1], -16);
    CHECK_EQ_U64(r.reg[2], 15);
    CHECK_EQ_U64(r.reg_offset[2], -8);
    /* x86_64 frameless: the last register right below the return address (CFA-8). */
    CHECK_EQ_U64(fl_macho_unwind_decode(X64, 0x02061400, &r), 0);
    CHECK_EQ_U64(r.stack_size, 48);
    CHECK_EQ_U64(r.nregs, 5);
    CHECK_EQ_U64(r.reg_offset[0], -48);
    CHECK_EQ_U64(r.reg[0], 3);
    CHECK_EQ_U64(r.reg_offset[4], -16);
    CHECK_EQ_U64(r.reg[4], 15);
    CHECK_EQ_U64(fl_macho_unwind_decode(X64, 0x0306680f, &r), 0);
    CHECK_EQ_U64(r.kind, FL_MACHO_RULE_STACK_IND);
    CHECK_EQ_U64(r.stack_ind_offset, 6);
    CHECK_EQ_U64(r.stack_adjust, 24);
    CHECK_EQ_U64(r.stack_size, 0);
    CHECK_EQ_U64(r.reg[0], 14);
    CHECK_EQ_U64(r.reg_offset[0], -24);
    CHECK_EQ_U64(r.reg[1], 3);
    CHECK_EQ_U64(r.reg_offset[1], -16);
    CHECK_EQ_U64(fl_macho_unwind_decode(X64, 0x04000abc, &r), 0);
    CHECK_EQ_U64(r.kind, FL_MACHO_RULE_DWARF);
    CHECK_EQ_U64(r.dwarf_offset, 0xabc);
    CHECK_EQ_U64(fl_macho_unwind_decode(A64, 0x03000010, &r), 0);
    CHECK_EQ_U64(r.dwarf_offset, 0x10);
}

/* Apple's permutation encoder, as published in <mach-o/compact_unwind_encoding.h> (the
 * oracle): registers[6 - count .. 5] hold the saved registers, lowest address first. */
static uint32_t permute_encode(uint32_t count, const uint32_t registers[6]) {
    uint32_t renum[6] = {0};
    for (uint32_t i = 6 - count; i < 6; ++i) {
        uint32_t less = 0;
        for (uint32_t j = 6 - count; j < i; ++j)
            if (registers[j] < registers[i]) ++less;
        renum[i] = registers[i] - less - 1;
    }
    switch (count) {
    case 6: return 120 * renum[0] + 24 * renum[1] + 6 * renum[2] + 2 * renum[3] + renum[4];
    case 5: return 120 * renum[1] + 24 * renum[2] + 6 * renum[3] + 2 * renum[4] + renum[5];
    case 4: return 60 * renum[2] + 12 * renum[3] + 3 * renum[4] + renum[5];
    case 3: return 20 * renum[3] + 4 * renum[4] + renum[5];
    case 2: return 5 * renum[4] + renum[5];
    case 1: return renum[5];
    default: return 0;
    }
}

/* Every ordered choice of 0..6 of the six registers: encode with Apple's algorithm, decode. */
static unsigned g_perm_checked, g_perm_bad;
static void perm_rec(uint32_t *chosen, unsigned depth, unsigned count) {
    if (depth == count) {
        uint32_t regs[6] = {0};
        for (unsigned i = 0; i < count; i++) regs[6 - count + i] = chosen[i];
        uint32_t perm = permute_encode(count, regs);
        uint32_t enc = 0x02000000u | (count + 1) << 16 | count << 10 | perm;
        fl_macho_unwind_rule_t r;
        static const uint8_t dwarf[7] = {0, 3, 12, 13, 14, 15, 6};
        bool ok = perm < 0x400 && fl_macho_unwind_decode(X64, enc, &r) == 0 && r.nregs == count;
        for (unsigned i = 0; ok && i < count; i++)
            ok = r.reg[i] == dwarf[chosen[i]] && r.reg_offset[i] == -8 * (int)(count + 1 - i);
        g_perm_checked++;
        g_perm_bad += !ok;
        return;
    }
    for (uint32_t reg = 1; reg <= 6; reg++) {
        bool used = false;
        for (unsigned i = 0; i < depth; i++) used |= chosen[i] == reg;
        if (used) continue;
        chosen[depth] = reg;
        perm_rec(chosen, depth + 1, count);
    }
}

static void test_permutations(void) {
    uint32_t chosen[6];
    for (unsigned count = 0; count <= 6; count++) perm_rec(chosen, 0, count);
    /* 1 + 6 + 30 + 120 + 360 + 720 + 720 */
    CHECK_EQ_U64(g_perm_checked, 1957);
    CHECK_EQ_U64(g_perm_bad, 0);
    /* Every permutation value past the last valid one fails. */
    static const uint32_t limit[7] = {1, 6, 30, 120, 360, 720, 720};
    unsigned wrong = 0;
    for (uint32_t count = 0; count <= 6; count++)
        for (uint32_t perm = 0; perm < 0x400; perm++) {
            fl_macho_unwind_rule_t r;
            int err = fl_macho_unwind_decode(X64, 0x02080000u | count << 10 | perm, &r);
            wrong += (err == 0) != (perm < limit[count]);
        }
    CHECK_EQ_U64(wrong, 0);
}

/* fl_macho_unwind_info_init on images without the section (real images: the oracle test). */
static void test_info_init(void) {
    static fl_macho_image_t img;
    fl_macho_unwind_info_t ui;
    img.r = &g_r;
    CHECK_EQ_U64(fl_macho_unwind_info_init(&img, &ui), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_info_init(NULL, &ui), FL_EINVAL);
    CHECK_EQ_U64(fl_macho_unwind_info_init(&img, NULL), FL_EINVAL);
}

int main(void) {
    test_info_init();
    test_lookup();
    test_gap_before_first_entry();
    test_large();
    test_malformed();
    test_flips();
    test_format();
    test_decode_fields();
    test_permutations();
    TEST_END();
}
