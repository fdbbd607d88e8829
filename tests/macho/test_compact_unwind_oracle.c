/* SPDX-License-Identifier: MIT */
/* macho: compact unwind on real binaries (tests/macho/unwind/) against llvm-objdump-14. */
#include "oracle.h"
#include "test.h"

static const char *g_objdump;

/* ---- llvm-objdump --macho --unwind-info ---- */

typedef struct {
    uint32_t func, enc;
    unsigned page; /* index of the first-level entry */
} od_entry_t;

typedef struct {
    uint32_t top_func[64], top_page[64];
    unsigned ntop;
    od_entry_t *e;
    size_t n;
    unsigned regular_pages, compressed_pages;
} od_unwind_t;

static void od_unwind(const char *path, od_unwind_t *u) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --macho --unwind-info '%s' 2>/dev/null", g_objdump, path);
    or_lines_t l;
    or_run(cmd, &l);
    memset(u, 0, sizeof *u);
    u->e = calloc(l.n + 1, sizeof *u->e);
    bool in_top = false;
    unsigned page = 0, page_entries = 0;
    bool page_regular = false;
    for (size_t i = 0; i < l.n; i++) {
        const char *s = l.line[i];
        unsigned idx, a, b, c;
        if (strstr(s, "Top level indices:")) in_top = true;
        if (strstr(s, "LSDA descriptors:")) in_top = false;
        if (in_top && u->ntop < 64 &&
            sscanf(s, " [%u]: function offset=%x, 2nd level page offset=%x, LSDA offset=%x", &idx,
                   &a, &b, &c) == 4) {
            u->top_func[u->ntop] = a;
            u->top_page[u->ntop++] = b;
            continue;
        }
        if (sscanf(s, " Second level index[%u]:", &idx) == 1) {
            if (page_entries) page_regular ? u->regular_pages++ : u->compressed_pages++;
            page = idx;
            page_entries = 0;
            continue;
        }
        /* regular: "[n]: function offset=0x..., encoding=0x..."; compressed:
         * "[n]: function offset=0x..., encoding[k]=0x..." */
        if (sscanf(s, " [%u]: function offset=%x, encoding=%x", &idx, &a, &b) == 3) {
            page_regular = true;
        } else if (sscanf(s, " [%u]: function offset=%x, encoding[%u]=%x", &idx, &a, &c, &b) == 4) {
            page_regular = false;
        } else {
            continue;
        }
        u->e[u->n++] = (od_entry_t){a, b, page};
        page_entries++;
    }
    if (page_entries) page_regular ? u->regular_pages++ : u->compressed_pages++;
    or_lines_free(&l);
}

/* The end of entry k: the next entry's start, or the next first-level entry's offset. */
static uint32_t od_end(const od_unwind_t *u, size_t k) {
    if (k + 1 < u->n && u->e[k + 1].page == u->e[k].page) return u->e[k + 1].func;
    return u->e[k].page + 1 < u->ntop ? u->top_func[u->e[k].page + 1] : 0;
}

/* The entry covering offset off, or -1. */
static long od_cover(const od_unwind_t *u, uint32_t off) {
    long found = -1;
    for (size_t k = 0; k < u->n; k++)
        if (u->e[k].func <= off && off < od_end(u, k)) found = (long)k;
    return found;
}

/* ---- llvm-objdump --dwarf=frames: FDE offsets in __eh_frame and their first pc ---- */

typedef struct {
    uint32_t off;
    uint64_t pc;
} od_fde_t;

static size_t od_fdes(const char *path, od_fde_t **out) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --dwarf=frames '%s' 2>/dev/null", g_objdump, path);
    or_lines_t l;
    or_run(cmd, &l);
    *out = calloc(l.n + 1, sizeof **out);
    size_t n = 0;
    bool eh = false;
    for (size_t i = 0; i < l.n; i++) {
        if (strstr(l.line[i], ".eh_frame contents:")) eh = true;
        unsigned off, len, id;
        unsigned long long pc;
        if (eh && sscanf(l.line[i], "%8x %8x %8x FDE cie=%*x pc=%llx", &off, &len, &id, &pc) == 4)
            (*out)[n++] = (od_fde_t){off, pc};
    }
    or_lines_free(&l);
    return n;
}

/* ---- llvm-objdump -d: each function's first instructions ---- */

typedef struct {
    uint64_t addr;
    char mnem[16], ops[96];
} insn_t;

typedef struct {
    insn_t *i;
    size_t n;
} disasm_t;

static void od_disasm(const char *path, disasm_t *d) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' -d --no-show-raw-insn '%s' 2>/dev/null", g_objdump, path);
    or_lines_t l;
    or_run(cmd, &l);
    d->i = calloc(l.n + 1, sizeof *d->i);
    d->n = 0;
    for (size_t k = 0; k < l.n; k++) {
        char *end;
        unsigned long long a = strtoull(l.line[k], &end, 16);
        if (end == l.line[k] || *end != ':') continue;
        const char *p = end + 1;
        while (*p == ' ' || *p == '\t') p++;
        insn_t *in = &d->i[d->n];
        in->addr = a;
        if (sscanf(p, "%15s %95[^\n]", in->mnem, in->ops) < 1) continue;
        d->n++;
    }
    or_lines_free(&l);
}

static const insn_t *disasm_at(const disasm_t *d, uint64_t addr) {
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->i[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo < d->n && d->i[lo].addr == addr ? &d->i[lo] : NULL;
}

/* ---- Replaying a prologue, then stepping back out of it ----
 * The stack starts with the caller's registers holding marker values; the prologue's stores are
 * replayed into a buffer; registers the function saved are then overwritten (as its body would)
 * and the step must bring every marker back. */

#define SIM_ORIGIN 0x7fff00000000ull
#define SIM_WORDS 16384u
static uint64_t g_sim[SIM_WORDS];
#define SIM_ENTRY (SIM_ORIGIN + 8ull * (SIM_WORDS - 16))
#define RET_ADDR 0x1234567890ull
static uint64_t marker(unsigned reg) {
    return 0xc0de000000000000ull | reg;
}

static bool sim_store(uint64_t addr, uint64_t v) {
    if (addr < SIM_ORIGIN || addr >= SIM_ORIGIN + 8ull * SIM_WORDS || (addr & 7)) return false;
    g_sim[(addr - SIM_ORIGIN) / 8] = v;
    return true;
}

static int x86_reg(const char *s) {
    static const char *const names[16] = {"%rax", "%rdx", "%rcx", "%rbx", "%rsi", "%rdi",
                                          "%rbp", "%rsp", "%r8",  "%r9",  "%r10", "%r11",
                                          "%r12", "%r13", "%r14", "%r15"};
    for (int i = 0; i < 16; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* arm64 "x19", "d8", "fp" (x29), "lr" (x30): DWARF number, or -1. */
static int a64_reg(const char *s) {
    if (strcmp(s, "fp") == 0) return 29;
    if (strcmp(s, "lr") == 0) return 30;
    if ((s[0] == 'x' || s[0] == 'd') && s[1] >= '0' && s[1] <= '9') {
        int n = atoi(s + 1);
        return s[0] == 'x' ? n : 64 + n;
    }
    return -1;
}

typedef struct {
    unsigned stepped[8]; /* by rule kind */
    unsigned stopped;    /* prologues that could not be replayed (reported, and must be rare) */
} step_tally_t;

/* Shrink-wrapped functions test their arguments before the prologue: the replay follows the
 * fall-through path past such leading instructions (ones that touch neither the stack nor
 * control flow beyond a conditional branch) to the prologue. */
static const insn_t *skip_to_prologue(const disasm_t *d, const insn_t *in, bool arm64) {
    for (int k = 0; in && in < d->i + d->n && k < 8; in++, k++) {
        const char *m = in->mnem;
        bool stack = arm64 ? strstr(in->ops, "sp") || strstr(in->ops, "x29") ||
                                 strncmp(m, "st", 2) == 0 || strcmp(m, "ret") == 0 ||
                                 strcmp(m, "bl") == 0 || strcmp(m, "b") == 0
                           : strstr(in->ops, "%rsp") || strstr(in->ops, "%rbp") ||
                                 strncmp(m, "push", 4) == 0 || strncmp(m, "ret", 3) == 0 ||
                                 strncmp(m, "call", 4) == 0 || strcmp(m, "jmp") == 0;
        if (stack) return in;
    }
    return in;
}

/* Replays an x86_64 prologue (push, mov %rsp,%rbp, sub $n,%rsp) from func; returns the number
 * of instructions replayed, or -1 on an instruction that writes the stack another way. */
static int replay_x86(const disasm_t *d, uint64_t func, fl_dwarf_regs_t *r, uint64_t *saved_mask) {
    uint64_t sp = SIM_ENTRY, bp = marker(6);
    if (!sim_store(sp, RET_ADDR)) return -1;
    const insn_t *in = skip_to_prologue(d, disasm_at(d, func), false);
    int n = 0;
    for (; in && in < d->i + d->n && n < 16; in++, n++) {
        char a[32], b[32];
        long long imm;
        if (strcmp(in->mnem, "pushq") == 0 && x86_reg(in->ops) >= 0) {
            int reg = x86_reg(in->ops);
            sp -= 8;
            sim_store(sp, reg == 6 ? bp : marker((unsigned)reg));
            *saved_mask |= 1ull << reg;
        } else if (strcmp(in->mnem, "movq") == 0 && strcmp(in->ops, "%rsp, %rbp") == 0) {
            bp = sp;
        } else if (strcmp(in->mnem, "subq") == 0 && sscanf(in->ops, "$%lli, %31s", &imm, a) == 2 &&
                   strcmp(a, "%rsp") == 0) {
            sp -= (uint64_t)imm;
        } else if (sscanf(in->ops, "%31[^,], %31s", a, b) == 2 && strcmp(b, "%rsp") == 0) {
            return -1; /* something else moves rsp: not a prologue we replay */
        } else {
            break;
        }
    }
    for (unsigned i = 0; i < 17; i++) r->r[i] = marker(i);
    for (unsigned i = 0; i < 16; i++)
        if (*saved_mask >> i & 1) r->r[i] = 0xbad0000000000000ull | i; /* clobbered by the body */
    r->r[7] = sp;
    r->r[6] = (*saved_mask >> 6 & 1) && bp == marker(6) ? 0xbad0000000000006ull : bp;
    r->r[16] = func + 1;
    r->valid = (1ull << 17) - 1;
    return n;
}

/* The same for arm64: stp (pre-indexed or with an offset from sp), sub sp, add/mov x29. */
static int replay_a64(const disasm_t *d, uint64_t func, fl_dwarf_regs_t *r, uint64_t *saved_mask) {
    uint64_t sp = SIM_ENTRY, fp = marker(29);
    const insn_t *in = skip_to_prologue(d, disasm_at(d, func), true);
    int n = 0;
    for (; in && in < d->i + d->n && n < 16; in++, n++) {
        char r1[16], r2[16], base[16];
        long long imm = 0, shift = 0;
        if (strcmp(in->mnem, "str") == 0 && strchr(in->ops, '!') &&
            sscanf(in->ops, "%15[^,], [%15[^,], #%lli]!", r1, base, &imm) == 3 &&
            strcmp(base, "sp") == 0) {
            /* a pre-indexed store that allocates the frame ("str wzr, [sp, #-32]!") */
            int a = a64_reg(r1);
            sp += (uint64_t)imm;
            if (a >= 0 && a < 31) {
                if (!sim_store(sp, marker((unsigned)a))) return -1;
                *saved_mask |= 1ull << a;
            }
        } else if (strcmp(in->mnem, "stp") == 0 &&
            sscanf(in->ops, "%15[^,], %15[^,], [%15[^],]%*[, #]%lli]", r1, r2, base, &imm) >= 3 &&
            strcmp(base, "sp") == 0) {
            int a = a64_reg(r1), b = a64_reg(r2);
            if (a < 0 || b < 0) return -1;
            bool pre = strchr(in->ops, '!') != NULL;
            uint64_t at = sp + (uint64_t)imm;
            if (pre) sp = at;
            uint64_t va = a == 29 ? fp : a == 30 ? RET_ADDR : marker((unsigned)a);
            uint64_t vb = b == 29 ? fp : b == 30 ? RET_ADDR : marker((unsigned)b);
            if (!sim_store(at, va) || !sim_store(at + 8, vb)) return -1;
            if (a < 64) *saved_mask |= 1ull << a;
            if (b < 64) *saved_mask |= 1ull << b; /* d registers are not tracked */
        } else if (strcmp(in->mnem, "sub") == 0 &&
                   sscanf(in->ops, "sp, sp, #%lli, lsl #%lli", &imm, &shift) >= 1) {
            sp -= (uint64_t)imm << shift;
        } else if (strcmp(in->mnem, "add") == 0 && sscanf(in->ops, "x29, sp, #%lli", &imm) == 1) {
            fp = sp + (uint64_t)imm;
        } else if (strcmp(in->mnem, "mov") == 0 && strcmp(in->ops, "x29, sp") == 0) {
            fp = sp;
        } else if (strncmp(in->ops, "sp,", 3) == 0 || strstr(in->ops, "[sp, #-") ||
                   strstr(in->ops, "x29") == in->ops) {
            return -1; /* moves sp or fp another way */
        } else {
            break;
        }
    }
    for (unsigned i = 0; i < 33; i++) r->r[i] = marker(i);
    for (unsigned i = 0; i < 31; i++)
        if (*saved_mask >> i & 1) r->r[i] = 0xbad0000000000000ull | i;
    r->r[29] = fp;
    r->r[30] = *saved_mask >> 30 & 1 ? 0xbad000000000001eull : RET_ADDR;
    r->r[31] = sp;
    r->r[32] = func + 4;
    r->valid = (1ull << 33) - 1;
    return n;
}

static void check_step(const fl_macho_image_t *img, const fl_reader_t *code, const disasm_t *d,
                       uint64_t func, uint32_t enc, const char *name, step_tally_t *t) {
    fl_macho_unwind_rule_t rule;
    if (fl_macho_unwind_decode(img->cputype, enc, &rule) != 0) return;
    if (rule.kind == FL_MACHO_RULE_NONE || rule.kind == FL_MACHO_RULE_DWARF) return;
    bool arm64 = img->cputype == FL_MACHO_CPU_ARM64;
    memset(g_sim, 0, sizeof g_sim);
    fl_dwarf_regs_t r;
    uint64_t saved = 0;
    int n = arm64 ? replay_a64(d, func, &r, &saved) : replay_x86(d, func, &r, &saved);
    if (n < 0) {
        t->stopped++;
        fprintf(stderr, "note: %s: prologue not replayed\n", name);
        return;
    }
    fl_reader_t stack;
    fl_reader_init_buffer(&stack, g_sim, sizeof g_sim, SIM_ORIGIN);
    int err = fl_macho_unwind_step(&rule, code, func, &stack, &r);
    bool ok = err == 0;
    unsigned sp = arm64 ? 31 : 7, pc = arm64 ? 32 : 16;
    uint64_t callee = arm64 ? 0x7ffull << 19 : (1ull << 3 | 1ull << 6 | 0xfull << 12);
    ok = ok && r.r[pc] == RET_ADDR && r.r[sp] == (arm64 ? SIM_ENTRY : SIM_ENTRY + 8);
    ok = ok && r.valid == (callee | 1ull << sp | 1ull << pc);
    for (unsigned i = 0; ok && i < 31; i++)
        if (callee >> i & 1) ok = r.r[i] == marker(i);
    if (!ok) {
        char text[160];
        fl_macho_unwind_rule_format(&rule, text, sizeof text);
        fprintf(stderr, "%s at 0x%llx: step with 0x%08x (%s) after %d prologue instructions:"
                        " err %d, pc 0x%llx sp 0x%llx\n",
                name, (unsigned long long)func, enc, text, n, err, (unsigned long long)r.r[pc],
                (unsigned long long)r.r[sp]);
        for (unsigned i = 0; i < 31; i++)
            if ((callee >> i & 1) && r.r[i] != marker(i))
                fprintf(stderr, "  register %u = 0x%llx\n", i, (unsigned long long)r.r[i]);
    }
    CHECK(ok);
    t->stepped[rule.kind]++;
}

/* ---- One binary ---- */

typedef struct {
    unsigned modes[16]; /* functions checked, by encoding mode (bits 24..27) */
    unsigned pair_bits;  /* arm64 FRAME/FRAMELESS: union of the register pair bits seen */
    unsigned frameless_with_regs, regular_pages, compressed_pages, dwarf_checked, entries;
    unsigned merged_stack_ind; /* STACK_IND functions inside an entry that starts earlier */
    step_tally_t steps;
} tally_t;

static tally_t g_tally[2]; /* arm64, x86_64 */

typedef struct {
    fl_macho_unwind_entry_t *e;
    size_t n, cap;
} list_t;
static int collect(void *ctx, const fl_macho_unwind_entry_t *e) {
    list_t *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->e = realloc(l->e, l->cap * sizeof *l->e);
    }
    l->e[l->n++] = *e;
    return 0;
}

/* Flips and cuts over the real section: errors or answers covering the pc, never a crash. */
static void mutate(const uint8_t *file, size_t size, const fl_macho_unwind_info_t *ui0,
                   const or_sym_t *syms, size_t nsyms) {
    uint8_t *copy = malloc(size);
    uint64_t seed = 0x243f6a8885a308d3ull ^ size;
    unsigned bad = 0;
    list_t l = {0};
    for (unsigned iter = 0; iter < 400; iter++) {
        memcpy(copy, file, size);
        fl_reader_t r;
        fl_reader_init_buffer(&r, copy, size, 0);
        fl_macho_unwind_info_t ui = *ui0;
        ui.r = &r;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        if (iter % 5 == 0) {
            ui.size = (seed >> 33) % ui0->size; /* cut */
        } else {
            unsigned flips = 1 + iter % 8;
            for (unsigned f = 0; f < flips; f++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                /* most flips in the header, index and page headers, where they matter */
                uint64_t span = f % 2 ? ui0->size : (ui0->size < 256 ? ui0->size : 256);
                copy[ui0->addr + (seed >> 33) % span] ^= (uint8_t)(1u << ((seed >> 20) % 8));
            }
        }
        for (size_t k = 0; k < nsyms; k += 1 + nsyms / 64) {
            fl_macho_unwind_entry_t e;
            int err = fl_macho_unwind_find(&ui, syms[k].addr, &e);
            if (err == 0 && !(e.start <= syms[k].addr && syms[k].addr < e.end)) bad++;
            if (err != 0 && err != FL_ENOTFOUND && err != FL_EBADDATA) bad++;
        }
        l.n = 0;
        int err = fl_macho_unwind_each(&ui, collect, &l);
        if (err != 0 && err != FL_EBADDATA) bad++;
        for (size_t k = 1; k < l.n; k++)
            if (!(l.e[k - 1].start < l.e[k - 1].end && l.e[k - 1].end <= l.e[k].start)) bad++;
    }
    CHECK_EQ_U64(bad, 0);
    free(l.e);
    free(copy);
}

/* fl_macho_function_starts_at's callback: each start against objdump's list, in order. */
typedef struct starts_cmp {
    const uint64_t *want;
    size_t n, seen, wrong;
} starts_cmp_t;

static int starts_cmp(void *ctx, uint64_t vmaddr) {
    starts_cmp_t *c = ctx;
    c->wrong += c->seen >= c->n || c->want[c->seen] != vmaddr;
    c->seen++;
    return 0;
}

static void check_binary(const char *path) {
    size_t size;
    uint8_t *file = or_read_file(path, &size);
    CHECK(file != NULL);
    if (!file) return;
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, size, 0);
    fl_macho_image_t img;
    int err = fl_macho_image_init(&img, &r, 0, size, false);
    CHECK_EQ_U64(err, 0);
    fl_macho_unwind_info_t ui;
    if (!err) err = fl_macho_unwind_info_init(&img, &ui);
    CHECK_EQ_U64(err, 0);
    if (err) {
        fprintf(stderr, "%s: %s\n", path, fl_strerror(err));
        free(file);
        return;
    }
    CHECK_EQ_U64(ui.base, img.text_vmaddr);
    CHECK_EQ_U64(ui.cputype, img.cputype);
    bool arm64 = img.cputype == FL_MACHO_CPU_ARM64;
    tally_t *t = &g_tally[arm64 ? 0 : 1];

    od_unwind_t od;
    od_unwind(path, &od);
    CHECK(od.n > 0);
    CHECK(od.ntop >= 2);
    t->regular_pages += od.regular_pages;
    t->compressed_pages += od.compressed_pages;
    t->entries += (unsigned)od.n;

    /* Every entry, in order, with its end. */
    list_t l = {0};
    CHECK_EQ_U64(fl_macho_unwind_each(&ui, collect, &l), 0);
    CHECK_EQ_U64(l.n, od.n);
    unsigned diff = 0;
    for (size_t k = 0; k < l.n && k < od.n; k++) {
        bool same = l.e[k].start == ui.base + od.e[k].func &&
                    l.e[k].end == ui.base + od_end(&od, k) && l.e[k].encoding == od.e[k].enc;
        if (!same && diff++ < 5)
            fprintf(stderr, "%s: entry %zu: 0x%llx-0x%llx 0x%08x, objdump 0x%x 0x%08x\n", path, k,
                    (unsigned long long)l.e[k].start, (unsigned long long)l.e[k].end,
                    l.e[k].encoding, od.e[k].func, od.e[k].enc);
    }
    CHECK_EQ_U64(diff, 0);

    /* Each entry's first and last byte; the sentinel and before the first. */
    diff = 0;
    for (size_t k = 0; k < od.n; k++) {
        uint64_t probe[2] = {ui.base + od.e[k].func, ui.base + od_end(&od, k) - 1};
        for (unsigned q = 0; q < 2; q++) {
            fl_macho_unwind_entry_t e;
            err = fl_macho_unwind_find(&ui, probe[q], &e);
            diff += err != 0 || e.encoding != od.e[k].enc || e.start != ui.base + od.e[k].func;
        }
    }
    CHECK_EQ_U64(diff, 0);
    fl_macho_unwind_entry_t e;
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, ui.base + od.top_func[od.ntop - 1], &e), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_macho_unwind_find(&ui, ui.base + od.top_func[0] - 1, &e), FL_ENOTFOUND);

    /* Every function (symbols and function starts): the covering entry's encoding. */
    or_sym_t *syms;
    size_t nsyms = or_syms(g_objdump, path, NULL, &syms), nfunc = 0;
    uint64_t *starts;
    size_t nstarts = or_function_starts(g_objdump, path, NULL, &starts);
    CHECK(nstarts > 0);
    disasm_t d = {0};
    od_disasm(path, &d);
    fl_reader_t code;
    fl_reader_init_buffer(&code, file, size, img.text_vmaddr); /* __TEXT starts the file */
    diff = 0;
    for (size_t k = 0; k < nsyms + nstarts; k++) {
        bool is_sym = k < nsyms;
        if (is_sym && strcmp(syms[k].sect, "__TEXT,__text") != 0) continue;
        uint64_t addr = is_sym ? syms[k].addr : starts[k - nsyms];
        long want = od_cover(&od, (uint32_t)(addr - ui.base));
        err = fl_macho_unwind_find(&ui, addr, &e);
        bool ok = want < 0 ? err == FL_ENOTFOUND
                           : err == 0 && e.encoding == od.e[want].enc &&
                                 e.start == ui.base + od.e[want].func;
        if (!ok && diff++ < 5)
            fprintf(stderr, "%s: 0x%llx %s: err %d encoding 0x%08x, objdump %ld 0x%08x\n", path,
                    (unsigned long long)addr, is_sym ? syms[k].name : "(start)", err, e.encoding,
                    want, want < 0 ? 0 : od.e[want].enc);
        if (!is_sym || want < 0 || err) continue;
        nfunc++;
        fl_macho_unwind_rule_t rule;
        int derr = fl_macho_unwind_decode(img.cputype, e.encoding, &rule);
        CHECK_EQ_U64(derr, 0);
        t->modes[(e.encoding >> 24) & 0xf]++;
        if (arm64 && rule.kind != FL_MACHO_RULE_DWARF) t->pair_bits |= e.encoding & 0xf1f;
        if (rule.kind == FL_MACHO_RULE_FRAMELESS && rule.nregs) t->frameless_with_regs++;
        /* The function's own start, not its entry's: zig's linker merges adjacent functions
         * with equal encodings, and a STACK_IND immediate is at an offset from the function. */
        check_step(&img, &code, &d, addr, e.encoding, syms[k].name, &t->steps);
        if (rule.kind == FL_MACHO_RULE_STACK_IND && e.start != addr) t->merged_stack_ind++;
    }
    CHECK_EQ_U64(diff, 0);
    CHECK(nfunc > 0);

    /* DWARF mode: the offset names the FDE (llvm-objdump --dwarf=frames) of the entry's start. */
    od_fde_t *fdes;
    size_t nfdes = od_fdes(path, &fdes);
    for (size_t k = 0; k < l.n; k++) {
        fl_macho_unwind_rule_t rule;
        if (fl_macho_unwind_decode(img.cputype, l.e[k].encoding, &rule) != 0 ||
            rule.kind != FL_MACHO_RULE_DWARF)
            continue;
        bool found = false;
        for (size_t f = 0; f < nfdes; f++)
            if (fdes[f].off == rule.dwarf_offset) found = fdes[f].pc == l.e[k].start;
        if (!found) fprintf(stderr, "%s: dwarf entry 0x%llx: no FDE at 0x%x for it\n", path,
                            (unsigned long long)l.e[k].start, rule.dwarf_offset);
        CHECK(found);
        t->dwarf_checked++;
    }
    free(fdes);

    /* The same image laid out as dyld would, slid: pcs in runtime terms. */
    const uint64_t slide = 0x5a000000;
    uint64_t origin, lsize;
    uint8_t *mem = or_layout_loaded(&img, file, slide, &origin, &lsize);
    CHECK(mem != NULL);
    if (mem) {
        fl_reader_t lr;
        fl_reader_init_buffer(&lr, mem, lsize, origin);
        fl_macho_image_t limg;
        fl_macho_unwind_info_t lui;
        CHECK_EQ_U64(fl_macho_image_init(&limg, &lr, img.text_vmaddr + slide, UINT64_MAX, true), 0);
        CHECK_EQ_U64(fl_macho_unwind_info_init(&limg, &lui), 0);
        CHECK_EQ_U64(lui.base, img.text_vmaddr + slide);
        diff = 0;
        for (size_t k = 0; k < l.n; k++) {
            err = fl_macho_unwind_find(&lui, l.e[k].start + slide, &e);
            diff += err != 0 || e.encoding != l.e[k].encoding || e.start != l.e[k].start + slide ||
                    e.end != l.e[k].end + slide;
        }
        CHECK_EQ_U64(diff, 0);
        /* The image as the Darwin collector describes it: its LC_FUNCTION_STARTS, read where
         * the description says (the walker's way to a function's start), are objdump's, slid. */
        fl_image_t desc;
        CHECK_EQ_U64(fl_macho_image_describe(&lr, img.text_vmaddr + slide, &desc), 0);
        CHECK(desc.function_starts_size > 0);
        starts_cmp_t sc = {.want = starts, .n = nstarts};
        CHECK_EQ_U64(fl_macho_function_starts_at(&lr, desc.function_starts,
                                                 desc.function_starts_size,
                                                 desc.start - desc.slide, starts_cmp, &sc), 0);
        CHECK_EQ_U64(sc.seen, nstarts);
        CHECK_EQ_U64(sc.wrong, 0);
        /* The walker's search: at each start and the byte before the next, that start. */
        unsigned missed = 0;
        for (size_t k = 0; k < nstarts; k++) {
            uint64_t got = 0, last = k + 1 < nstarts ? starts[k + 1] - 1 : starts[k];
            missed += fl_macho_function_start_find(&lr, desc.function_starts,
                                                   desc.function_starts_size,
                                                   desc.start - desc.slide, starts[k], &got) ||
                      got != starts[k];
            missed += fl_macho_function_start_find(&lr, desc.function_starts,
                                                   desc.function_starts_size,
                                                   desc.start - desc.slide, last, &got) ||
                      got != starts[k];
        }
        uint64_t none;
        CHECK_EQ_U64(missed, 0);
        if (nstarts)
            CHECK_EQ_U64(fl_macho_function_start_find(&lr, desc.function_starts,
                                                      desc.function_starts_size,
                                                      desc.start - desc.slide, starts[0] - 1,
                                                      &none),
                         FL_ENOTFOUND);
        free(mem);
    }

    mutate(file, size, &ui, syms, nsyms);
    free(d.i);
    free(starts);
    free(syms);
    free(l.e);
    free(od.e);
    free(file);
}

/* Each binary listed in LIST (one path a line, from unwind/build.sh) is checked against
 * llvm-objdump's --unwind-info (every entry, encoding and end), --syms and --function-starts
 * (every function), --dwarf=frames (DWARF-mode offsets) and -d (prologues, replayed to check a
 * step), loaded with a slide, and with its section flipped and cut. */
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s OBJDUMP LIST\n", argv[0]);
        return 2;
    }
    g_objdump = argv[1];
    FILE *f = fopen(argv[2], "r");
    CHECK(f != NULL);
    char path[4096];
    unsigned nbin = 0;
    while (f && fgets(path, sizeof path, f)) {
        path[strcspn(path, "\n")] = 0;
        if (!*path) continue;
        check_binary(path);
        nbin++;
    }
    if (f) fclose(f);
    CHECK_EQ_U64(nbin, 10);

    /* What the real binaries covered, and the kinds they must keep covering. */
    static const char *const arch[2] = {"arm64", "x86_64"};
    for (unsigned a = 0; a < 2; a++) {
        const tally_t *t = &g_tally[a];
        printf("%s: %u entries, pages %u regular %u compressed; functions by mode:", arch[a],
               t->entries, t->regular_pages, t->compressed_pages);
        for (unsigned m = 0; m < 16; m++)
            if (t->modes[m]) printf(" %u:%u", m, t->modes[m]);
        printf("; frameless with registers %u; arm64 pair bits 0x%03x; dwarf offsets checked %u;"
               " steps frame %u frameless %u stack-ind %u (prologues not replayed %u);"
               " stack-ind functions in a merged entry %u\n",
               t->frameless_with_regs, t->pair_bits, t->dwarf_checked,
               t->steps.stepped[FL_MACHO_RULE_FRAME], t->steps.stepped[FL_MACHO_RULE_FRAMELESS],
               t->steps.stepped[FL_MACHO_RULE_STACK_IND], t->steps.stopped, t->merged_stack_ind);
        CHECK(t->regular_pages > 0);
        CHECK(t->compressed_pages > 0);
        CHECK(t->dwarf_checked > 0);
        CHECK(t->steps.stepped[FL_MACHO_RULE_FRAME] > 0);
        CHECK(t->steps.stepped[FL_MACHO_RULE_FRAMELESS] > 0);
        CHECK(t->frameless_with_regs > 0);
    }
    CHECK_EQ_U64(g_tally[0].pair_bits, 0xf1f); /* every arm64 pair bit */
    CHECK(g_tally[1].steps.stepped[FL_MACHO_RULE_STACK_IND] > 0);
    CHECK(g_tally[1].modes[0] > 0); /* x86_64 leaves without CFI: encoding 0 */
    TEST_END();
}
