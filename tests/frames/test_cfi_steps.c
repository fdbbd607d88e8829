/* SPDX-License-Identifier: MIT */
/* frames: one CFI step by faultline's evaluator against LLVM libunwind's unw_step (an independent
 * implementation, run on the same bytes), at every row of every FDE of the images loaded here:
 * libc, the loader, libstdc++ (and libLLVM-14 with --llvm), the vdso and this executable.
 * Usage: test_cfi_steps [--llvm] [extra .so to dlopen...] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "elf/elf.h"
#include "frames/cfi_linux.h" /* the privatised LLVM libunwind (fl_lu_unw_*) and its glue */
#include "test.h"

#define BUF_BYTES (8u << 20)

static fl_image_list_t g_images;
static fl_maps_t g_maps;
static char g_scratch[64 * 1024];
static uint64_t *g_buf; /* the fake stack: every word points back into it */
static uint64_t g_mid;  /* its middle: where the registers point */
static fl_reader_t g_stack;
static int g_tid;

typedef struct counts {
    unsigned long fdes, rows, same, ends, llvm_failed, ours_failed, declined, mismatches, cmp_regs;
} counts_t;
static counts_t g_total;

#if defined(__x86_64__)
#define NREGS 17u /* DWARF 0..16: rax..r15, rip */
#define PC_REG 16u
#define SP_REG 7u
#else
#define NREGS 33u /* DWARF 0..32: x0..x30, sp, pc */
#define PC_REG 32u
#define SP_REG 31u
#endif

/* A register file whose every register and stack word points into the buffer, so that any rule
 * (an offset from any register, an expression that dereferences) reads inside it. */
static void synthetic(fl_dwarf_regs_t *d, uint64_t pc) {
    for (unsigned i = 0; i < FL_DWARF_REGS; i++) d->r[i] = g_mid + 64u * i;
    d->r[SP_REG] = g_mid;
    d->r[PC_REG] = pc;
    d->valid = (1ull << NREGS) - 1;
}

static void to_fl_regs(const fl_dwarf_regs_t *d, fl_regs_t *r) {
    memset(r, 0, sizeof *r);
    for (unsigned i = 0; i < NREGS; i++)
        if (fl_unwind_arch_dwarf_map[i] >= 0) r->r[fl_unwind_arch_dwarf_map[i]] = d->r[i];
}

typedef struct ctx {
    const fl_cfi_table_t *t;
    const char *name;
    counts_t *c;
} ctx_t;

/* LLVM libunwind seeded with pc applies the rows that start strictly below it, and evaluates
 * DW_OP_breg of the pc register with pc: so both step from pc = row.start + 1, ours looking the
 * row up at pc - 1 (as for a return address). */
static void compare_at(ctx_t *x, const fl_cfi_fde_t *fde, uint64_t at) {
    counts_t *c = x->c;
    uint64_t pc = at + 1;
    fl_dwarf_regs_t ours;
    synthetic(&ours, pc);
    fl_cfi_fde_t f;
    fl_cfi_row_t row;
    int e = fl_cfi_fde_find(x->t, at, &f);
    if (!e && f.addr != fde->addr) e = FL_EBADDATA; /* the search table names another FDE */
    if (!e) e = fl_cfi_row_compute(x->t, &f, at, &row);
    if (!e) e = fl_cfi_row_apply(&row, fl_regs_arch(), &g_stack, x->t->mem, &ours);

    fl_regs_t r;
    unw_context_t uc;
    unw_cursor_t cur;
    fl_dwarf_regs_t seed;
    synthetic(&seed, pc);
    to_fl_regs(&seed, &r);
    fl_unwind_arch_to_context(&r, &uc);
    /* unw_step says "end" also when the caller it stepped to has no unwind information (our
     * synthetic return addresses have none): its registers are the step's all the same. The
     * outermost frame is where it leaves pc 0. */
    /* Under the walker's fault guard, as in a capture: libunwind aborts on what it cannot
     * handle, and its abort() returns here (frames/unwind_shims_linux.c). */
    fl_guard_t guard;
    volatile int st = -1;
    if (FL_GUARD_ENTER(&guard, g_tid)) {
        st = fl_lu_unw_init_local(&cur, &uc) == UNW_ESUCCESS ? fl_lu_unw_step(&cur) : -1;
        unw_word_t ip = 0;
        if (st >= 0) st = fl_lu_unw_get_reg(&cur, UNW_REG_IP, &ip) == 0 && ip != 0;
    }
    FL_GUARD_LEAVE(&guard);

    if (e == FL_ENOSYS) {
        c->declined++;
        return;
    }
    if (st < 0) { /* LLVM refused: nothing to compare (counted; ours may well succeed) */
        if (c->llvm_failed++ < 3)
            printf("%s: FDE %#llx at %#llx: LLVM libunwind refused the step; ours: %s\n", x->name,
                   (unsigned long long)fde->addr, (unsigned long long)at,
                   e < 0 ? fl_strerror(e) : e ? "stepped" : "outermost");
        return;
    }
    if (e < 0) {
        c->ours_failed++;
        if (c->mismatches++ < 20)
            fprintf(stderr, "%s: FDE %#llx at %#llx: ours failed (%s), LLVM %s\n", x->name,
                    (unsigned long long)fde->addr, (unsigned long long)at, fl_strerror(e),
                    st ? "stepped" : "ended");
        return;
    }
    if ((e == 0) != (st == 0)) {
        if (c->mismatches++ < 20)
            fprintf(stderr, "%s: FDE %#llx at %#llx: ours %s, LLVM %s\n", x->name,
                    (unsigned long long)fde->addr, (unsigned long long)at,
                    e ? "stepped" : "ended", st ? "stepped" : "ended");
        return;
    }
    if (e == 0) {
        c->ends++;
        return;
    }
    bool same = true;
    for (unsigned d = 0; d < NREGS; d++) {
        if (!(ours.valid >> d & 1)) continue; /* undefined in the caller */
#if defined(__aarch64__)
        if (d == 30) continue; /* LLVM leaves lr as the callee had it; ours: the return address */
#endif
        unw_word_t v;
        int reg = d == PC_REG ? UNW_REG_IP : d == SP_REG ? UNW_REG_SP : (int)d;
        if (fl_lu_unw_get_reg(&cur, reg, &v) != 0) continue;
        c->cmp_regs++;
        if (v != ours.r[d]) {
            same = false;
            if (c->mismatches < 20)
                fprintf(stderr, "%s: FDE %#llx at %#llx: DWARF reg %u: ours %#llx, LLVM %#llx\n",
                        x->name, (unsigned long long)fde->addr, (unsigned long long)at, d,
                        (unsigned long long)ours.r[d], (unsigned long long)v);
        }
    }
    if (same) c->same++;
    else c->mismatches++;
}

static int on_fde(void *vctx, const fl_cfi_fde_t *fde) {
    ctx_t *x = vctx;
    x->c->fdes++;
    /* Every row: its first byte, until the FDE's last byte (LLVM, seeded one byte further, would
     * look the next FDE up there). */
    for (uint64_t at = fde->pc_start; at + 1 < fde->pc_end;) {
        fl_cfi_row_t row;
        int e = fl_cfi_row_compute(x->t, fde, at, &row);
        if (e) {
            if (e == FL_ENOSYS) x->c->declined++;
            else x->c->ours_failed++, x->c->mismatches++;
            return 0;
        }
        x->c->rows++;
        compare_at(x, fde, row.start);
        at = row.end > at ? row.end : at + 1;
    }
    return 0;
}

static void check_image(const fl_image_t *img) {
    if (!img->eh_frame_hdr) return;
    /* The tables read directly where the map shows them readable, as in a capture. */
    fl_reader_t tables;
    fl_reader_init_range(&tables, img->tables_lo, img->tables_hi, fl_memory_reader());
    fl_cfi_table_t t = {.mem = &tables, .eh_frame_hdr = img->eh_frame_hdr, .arch = fl_regs_arch()};
    counts_t c;
    memset(&c, 0, sizeof c);
    ctx_t x = {.t = &t, .name = img->path, .c = &c};
    int e = fl_cfi_fde_each(&t, on_fde, &x);
    CHECK(e == 0);
    if (e) fprintf(stderr, "%s: walking the FDEs: %s\n", img->path, fl_strerror(e));
    printf("%-48s %6lu FDEs %7lu rows: %7lu same (%lu registers), %lu outermost, %lu declined, "
           "%lu LLVM refused, %lu ours failed, %lu mismatches\n", img->path, c.fdes, c.rows, c.same,
           c.cmp_regs, c.ends, c.declined, c.llvm_failed, c.ours_failed, c.mismatches);
    CHECK(c.mismatches == 0);
    CHECK(c.fdes > 0 && c.same > 0);
    g_total.fdes += c.fdes, g_total.rows += c.rows, g_total.same += c.same;
    g_total.declined += c.declined, g_total.llvm_failed += c.llvm_failed;
    g_total.mismatches += c.mismatches;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives an abort */
    for (int i = 1; i < argc; i++) {
        const char *lib = strcmp(argv[i], "--llvm") == 0 ? "libLLVM-14.so.1" : argv[i];
        if (!dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "cannot load %s: %s\n", lib, dlerror());
            return 1;
        }
    }
    if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL))
        printf("libstdc++.so.6 not loaded (%s): not compared\n", dlerror());
    g_tid = (int)fl_sys_gettid();
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK(fl_elf_images_prepare() == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_images) == 0);
    CHECK(fl_maps_read(&g_maps, g_scratch, sizeof g_scratch) == 0);
    fl_images_map_tables(&g_images, &g_maps);
    fl_unwind_shims_set_images(&g_images); /* LLVM finds FDEs through the same image list */

    g_buf = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_buf == MAP_FAILED) return 1;
    g_mid = (uint64_t)(uintptr_t)g_buf + BUF_BYTES / 2;
    for (size_t i = 0; i < BUF_BYTES / 8; i++) /* words pointing within +-1 MiB of the middle */
        g_buf[i] = g_mid - (1u << 20) + ((i * 0x9e37u) & ((2u << 20) - 8));
    fl_reader_init_range(&g_stack, (uint64_t)(uintptr_t)g_buf, (uint64_t)(uintptr_t)g_buf + BUF_BYTES,
                         fl_memory_reader());

    for (unsigned i = 0; i < g_images.count; i++) check_image(&g_images.image[i]);
    printf("all: %lu FDEs, %lu rows, %lu steps the same, %lu declined, %lu refused by LLVM, "
           "%lu mismatches\n", g_total.fdes, g_total.rows, g_total.same, g_total.declined,
           g_total.llvm_failed, g_total.mismatches);
    CHECK(g_total.rows > 10000); /* libc alone has more */
    TEST_END();
}
