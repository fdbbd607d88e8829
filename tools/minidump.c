/* SPDX-License-Identifier: MIT */
/* `faultline minidump`: a report as a Breakpad/Crashpad minidump (docs/interop.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

/* The minidump format's numbers (Breakpad's minidump_format.h, minidump_cpu_amd64.h,
 * minidump_cpu_arm64.h; Microsoft's minidumpapiset.h for the shared part). */
#define MD_SIGNATURE 0x504d444du /* "MDMP" */
#define MD_VERSION 0xa793u
enum {
    MD_THREAD_LIST = 3, MD_MODULE_LIST = 4, MD_MEMORY_LIST = 5, MD_EXCEPTION = 6,
    MD_SYSTEM_INFO = 7, MD_MISC_INFO = 15,
    MD_LINUX_MAPS = 0x47670009 /* /proc/PID/maps: Breakpad reads module ranges from it too */
};
#define MD_CPU_AMD64 9u
#define MD_CPU_ARM64 12u
#define MD_OS_MAC_OS_X 0x8101u
#define MD_OS_LINUX 0x8201u
#define MD_CV_ELF 0x4270454cu   /* "BpEL" + the build-id */
#define MD_CV_PDB70 0x53445352u /* "RSDS" + GUID + age + file name */
#define MD_CONTEXT_AMD64_FULL 0x0010000bu /* control, integer, floating point */
#define MD_CONTEXT_AMD64_SIZE 1232u
#define MD_CONTEXT_ARM64_FULL 0x00400007u
#define MD_CONTEXT_ARM64_SIZE 912u
#define MD_THREAD_SIZE 48u
#define MD_MODULE_SIZE 108u
#define MD_EXCEPTION_SIZE 168u
#define MD_SYSTEM_INFO_SIZE 56u
#define MD_MISC_INFO_SIZE 24u
#define MD_MISCINFO_PROCESS_ID 1u
#define MD_MISCINFO_PROCESS_TIMES 2u

/* The file grows in memory; a report's sizes are capped by its reader, so is this. */
typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} buf_t;

/* Reserves n zero bytes at a 4-aligned offset (every structure is 4-aligned in the format) and
 * returns the offset (an RVA). */
static uint32_t reserve(buf_t *b, size_t n) {
    size_t at = (b->len + 3) & ~(size_t)3;
    if (b->oom || at + n > UINT32_MAX) {
        b->oom = true;
        return 0;
    }
    if (at + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < at + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return 0;
        }
        memset(q + b->cap, 0, cap - b->cap);
        b->p = q;
        b->cap = cap;
    }
    b->len = at + n;
    return (uint32_t)at;
}

/* Little-endian stores at an offset reserve() gave (this writer runs on little-endian hosts
 * only, like the format's producers: x86_64 and arm64). */
static void put16(buf_t *b, size_t at, uint16_t v) { if (!b->oom) memcpy(b->p + at, &v, 2); }
static void put32(buf_t *b, size_t at, uint32_t v) { if (!b->oom) memcpy(b->p + at, &v, 4); }
static void put64(buf_t *b, size_t at, uint64_t v) { if (!b->oom) memcpy(b->p + at, &v, 8); }

static uint32_t add_bytes(buf_t *b, const void *p, size_t n) {
    uint32_t at = reserve(b, n);
    if (!b->oom && n) memcpy(b->p + at, p, n);
    return at;
}

/* An MDString: its length in bytes, then UTF-16LE code units and a NUL unit. Invalid UTF-8
 * becomes U+FFFD. */
static uint32_t add_string(buf_t *b, const char *s) {
    size_t n = strlen(s), units = 0;
    uint16_t *u = malloc((2 * n + 1) * sizeof *u);
    if (!u) {
        b->oom = true;
        return 0;
    }
    for (const char *q = s; *q;) {
        uint32_t c = 0xfffd;
        size_t k = fl_utf8_seq(q, fl_strnlen(q, 4), &c);
        q += k ? k : 1;
        if (c >= 0x10000) {
            c -= 0x10000;
            u[units++] = (uint16_t)(0xd800 + (c >> 10));
            u[units++] = (uint16_t)(0xdc00 + (c & 0x3ff));
        } else {
            u[units++] = (uint16_t)c;
        }
    }
    u[units] = 0;
    uint32_t at = reserve(b, 4 + 2 * (units + 1));
    put32(b, at, (uint32_t)(2 * units));
    if (!b->oom) memcpy(b->p + at + 4, u, 2 * (units + 1));
    free(u);
    return at;
}

static uint64_t reg(const Faultline__Thread *t, const char *name, bool *found) {
    for (size_t i = 0; i < t->n_registers; i++)
        if (strcmp(t->registers[i]->name, name) == 0) {
            if (found) *found = true;
            return t->registers[i]->value;
        }
    return 0;
}

/* The thread's CPU context: its registers where the report has them, else frame 0's pc and sp
 * (a thread read from its system call), else zeros. Returns the RVA; *size its size. */
static uint32_t add_context(buf_t *b, int arch, const Faultline__Thread *t, uint32_t *size) {
    bool have = false;
    uint64_t pc0 = t->n_frames ? t->frames[0]->pc : 0, sp0 = t->n_frames ? t->frames[0]->sp : 0;
    if (arch == FAULTLINE__ARCH__ARCH_ARM64) {
        uint32_t at = reserve(b, MD_CONTEXT_ARM64_SIZE);
        put32(b, at, MD_CONTEXT_ARM64_FULL);
        put32(b, at + 4, (uint32_t)reg(t, "pstate", NULL));
        static const char *const x[31] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7",
                                          "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
                                          "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
                                          "x24", "x25", "x26", "x27", "x28", "fp", "lr"};
        for (unsigned i = 0; i < 31; i++) put64(b, at + 8 + 8 * i, reg(t, x[i], NULL));
        uint64_t sp = reg(t, "sp", &have), pc = reg(t, "pc", &have);
        put64(b, at + 8 + 8 * 31, have ? sp : sp0);
        put64(b, at + 8 + 8 * 32, have ? pc : pc0);
        *size = MD_CONTEXT_ARM64_SIZE;
        return at;
    }
    uint32_t at = reserve(b, MD_CONTEXT_AMD64_SIZE);
    put32(b, at + 48, MD_CONTEXT_AMD64_FULL);
    put16(b, at + 56, (uint16_t)reg(t, "cs", NULL));
    put16(b, at + 62, (uint16_t)reg(t, "fs", NULL));
    put16(b, at + 64, (uint16_t)reg(t, "gs", NULL));
    put32(b, at + 68, (uint32_t)reg(t, "rflags", NULL));
    /* rax rcx rdx rbx rsp rbp rsi rdi r8..r15 rip, from offset 120 */
    static const char *const r[17] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8",
                                      "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
    for (unsigned i = 0; i < 17; i++) put64(b, at + 120 + 8 * i, reg(t, r[i], &have));
    if (!have) {
        put64(b, at + 120 + 8 * 4, sp0);
        put64(b, at + 120 + 8 * 16, pc0);
    }
    *size = MD_CONTEXT_AMD64_SIZE;
    return at;
}

/* CodeView record: ELF's build-id after "BpEL"; Mach-O's LC_UUID as a PDB70 GUID (its first
 * three fields little-endian, so that the identifier Breakpad prints is the UUID) with age 0 and
 * the file's name, as Crashpad writes it. */
static uint32_t add_codeview(buf_t *b, const Faultline__Image *img, uint32_t *size) {
    if (!img->build_id.len) {
        *size = 0;
        return 0;
    }
    if (img->build_id_kind != FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID) {
        *size = (uint32_t)(4 + img->build_id.len);
        uint32_t at = reserve(b, *size);
        put32(b, at, MD_CV_ELF);
        if (!b->oom) memcpy(b->p + at + 4, img->build_id.data, img->build_id.len);
        return at;
    }
    const char *name = fl_tool_basename(img->path);
    uint8_t g[16] = {0};
    memcpy(g, img->build_id.data, img->build_id.len < 16 ? img->build_id.len : 16);
    static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    *size = (uint32_t)(4 + 16 + 4 + strlen(name) + 1);
    uint32_t at = reserve(b, *size);
    put32(b, at, MD_CV_PDB70);
    for (unsigned i = 0; i < 16 && !b->oom; i++) b->p[at + 4 + i] = g[order[i]];
    if (!b->oom) memcpy(b->p + at + 24, name, strlen(name) + 1);
    return at;
}

/* The stack memory the report kept for thread tid (the first item naming it), or NULL. */
static const Faultline__Memory *thread_memory(const Faultline__Report *r, int tid) {
    for (size_t i = 0; i < r->n_memory; i++)
        if (r->memory[i]->tid == tid && r->memory[i]->data.len) return r->memory[i];
    return NULL;
}

/* Lines of /proc/PID/maps for the images' ranges, for readers that look there. */
static uint32_t add_maps(buf_t *b, const Faultline__Report *r, uint32_t *size) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        b->oom = true;
        return 0;
    }
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        if (img->end <= img->start) continue;
        fprintf(m, "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0 %s\n", img->start, img->end,
                img->path);
    }
    fclose(m);
    *size = (uint32_t)len;
    uint32_t at = add_bytes(b, text, len);
    free(text);
    return at;
}

int fl_tool_minidump(const Faultline__Report *r, uint8_t **out, size_t *out_len) {
    const Faultline__Header *h = r->header;
    int arch = h ? (int)h->arch : 0;
    if (arch != FAULTLINE__ARCH__ARCH_X86_64 && arch != FAULTLINE__ARCH__ARCH_ARM64)
        return FL_ENOSYS;
    bool darwin = h && strcmp(h->os_name, "Darwin") == 0;
    buf_t b = {0};
    enum { NSTREAMS = 7 };
    uint32_t hdr = reserve(&b, 32), dir = reserve(&b, 12 * NSTREAMS);
    unsigned ns = 0;
#define STREAM(type, rva, size)                                          \
    do {                                                                 \
        put32(&b, dir + 12 * ns, (type));                                \
        put32(&b, dir + 12 * ns + 4, (size));                            \
        put32(&b, dir + 12 * ns + 8, (rva));                             \
        ns++;                                                            \
    } while (0)

    /* SystemInfo: CPU and OS; the "CSD version" string carries uname's release and version. */
    uint32_t si = reserve(&b, MD_SYSTEM_INFO_SIZE);
    put16(&b, si, arch == FAULTLINE__ARCH__ARCH_ARM64 ? MD_CPU_ARM64 : MD_CPU_AMD64);
    b.p[si + 6] = 1; /* processors: unknown; 1 keeps readers from dividing by 0 */
    put32(&b, si + 20, darwin ? MD_OS_MAC_OS_X : MD_OS_LINUX);
    if (h) {
        unsigned v[3] = {0, 0, 0};
        sscanf(h->os_release, "%u.%u.%u", &v[0], &v[1], &v[2]);
        for (int i = 0; i < 3; i++) put32(&b, si + 8 + 4 * i, v[i]);
        char csd[1024];
        snprintf(csd, sizeof csd, "%s %s", h->os_release, h->os_version);
        put32(&b, si + 24, add_string(&b, csd));
    }
    STREAM(MD_SYSTEM_INFO, si, MD_SYSTEM_INFO_SIZE);

    /* MiscInfo: the process id and its start time. */
    uint32_t mi = reserve(&b, MD_MISC_INFO_SIZE);
    put32(&b, mi, MD_MISC_INFO_SIZE);
    put32(&b, mi + 4, MD_MISCINFO_PROCESS_ID | MD_MISCINFO_PROCESS_TIMES);
    put32(&b, mi + 8, h ? (uint32_t)h->pid : 0);
    put32(&b, mi + 12, h ? (uint32_t)(h->process_start_unix_ns / 1000000000u) : 0);
    STREAM(MD_MISC_INFO, mi, MD_MISC_INFO_SIZE);

    /* ThreadList, each thread's context and stack memory; the MemoryList lists the stacks again
     * (Breakpad reads a thread's stack from its descriptor, other readers from the list). */
    size_t nt = r->n_threads;
    uint32_t tl = reserve(&b, 4 + MD_THREAD_SIZE * nt);
    put32(&b, tl, (uint32_t)nt);
    int crashed = fl_tool_crashed_thread(r);
    uint32_t crashed_ctx = 0, crashed_ctx_size = 0, nmem = 0;
    for (size_t i = 0; i < nt; i++) {
        const Faultline__Thread *t = r->threads[i];
        uint32_t e = tl + 4 + MD_THREAD_SIZE * (uint32_t)i, csize = 0;
        put32(&b, e, (uint32_t)t->tid);
        const Faultline__Memory *m = thread_memory(r, t->tid);
        if (m) {
            put64(&b, e + 24, m->start); /* the stack's MDMemoryDescriptor */
            put32(&b, e + 32, (uint32_t)m->data.len);
            put32(&b, e + 36, add_bytes(&b, m->data.data, m->data.len));
            nmem++;
        }
        uint32_t ctx = add_context(&b, arch, t, &csize);
        put32(&b, e + 40, csize);
        put32(&b, e + 44, ctx);
        if ((int)i == crashed) crashed_ctx = ctx, crashed_ctx_size = csize;
    }
    STREAM(MD_THREAD_LIST, tl, 4 + MD_THREAD_SIZE * (uint32_t)nt);
    uint32_t ml = reserve(&b, 4 + 16 * nmem);
    put32(&b, ml, nmem);
    for (size_t i = 0, k = 0; i < nt && !b.oom; i++) {
        uint32_t e = tl + 4 + MD_THREAD_SIZE * (uint32_t)i;
        if (!thread_memory(r, r->threads[i]->tid)) continue;
        memcpy(b.p + ml + 4 + 16 * k++, b.p + e + 24, 16);
    }
    STREAM(MD_MEMORY_LIST, ml, 4 + 16 * nmem);

    /* ModuleList: range, name and identity of each image. */
    size_t nm = r->n_images;
    uint32_t mlist = reserve(&b, 4 + MD_MODULE_SIZE * nm);
    put32(&b, mlist, (uint32_t)nm);
    for (size_t i = 0; i < nm; i++) {
        const Faultline__Image *img = r->images[i];
        uint32_t e = mlist + 4 + MD_MODULE_SIZE * (uint32_t)i, cvsize = 0;
        put64(&b, e, img->start);
        uint64_t size = img->end > img->start ? img->end - img->start : 0;
        put32(&b, e + 8, size > UINT32_MAX ? UINT32_MAX : (uint32_t)size);
        put32(&b, e + 20, add_string(&b, img->path));
        uint32_t cv = add_codeview(&b, img, &cvsize);
        put32(&b, e + 76, cvsize);
        put32(&b, e + 80, cv);
    }
    STREAM(MD_MODULE_LIST, mlist, 4 + MD_MODULE_SIZE * (uint32_t)nm);

    uint32_t msize = 0, maps = darwin ? 0 : add_maps(&b, r, &msize);
    if (!darwin) STREAM(MD_LINUX_MAPS, maps, msize);

    /* Exception: Linux's signal (code = number, flags = si_code, address = si_addr), or
     * Darwin's Mach exception (code = type, flags = code[0], address = code[1]), as Breakpad's
     * and Crashpad's writers put them. */
    const Faultline__Signal *s = r->signal;
    const Faultline__MachException *mx = r->mach_exception;
    if ((s || mx) && crashed >= 0) {
        uint32_t ex = reserve(&b, MD_EXCEPTION_SIZE);
        put32(&b, ex, (uint32_t)r->threads[crashed]->tid);
        if (mx && darwin) {
            put32(&b, ex + 8, (uint32_t)mx->type);
            put32(&b, ex + 12, mx->n_codes ? (uint32_t)mx->codes[0] : 0);
            put64(&b, ex + 24, mx->n_codes > 1 ? mx->codes[1] : 0);
            uint32_t np = mx->n_codes < 15 ? (uint32_t)mx->n_codes : 15;
            put32(&b, ex + 32, np);
            for (uint32_t i = 0; i < np; i++) put64(&b, ex + 40 + 8 * i, mx->codes[i]);
        } else if (s) {
            put32(&b, ex + 8, (uint32_t)s->number);
            put32(&b, ex + 12, (uint32_t)s->code);
            put64(&b, ex + 24, s->has_address ? s->address : 0);
        }
        put32(&b, ex + 160, crashed_ctx_size);
        put32(&b, ex + 164, crashed_ctx);
        STREAM(MD_EXCEPTION, ex, MD_EXCEPTION_SIZE);
    }
#undef STREAM

    put32(&b, hdr, MD_SIGNATURE);
    put32(&b, hdr + 4, MD_VERSION);
    put32(&b, hdr + 8, ns);
    put32(&b, hdr + 12, dir);
    put32(&b, hdr + 20, h ? (uint32_t)(h->time_unix_ns / 1000000000u) : 0);
    if (b.oom) {
        free(b.p);
        return FL_ENOMEM;
    }
    *out = b.p;
    *out_len = b.len;
    return 0;
}

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "faultline minidump: %s\n", msg);
    fprintf(stderr, "usage: faultline minidump [-o FILE] REPORT\n");
    return 2;
}

int fl_tool_cmd_minidump(int argc, char **argv) {
    const char *out = NULL, *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc) return usage("-o takes a file name");
            out = argv[i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(NULL);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage("unknown option");
        } else if (path) {
            return usage("one report at a time");
        } else {
            path = argv[i];
        }
    }
    if (!path) return usage("no report given");
    if (!out && isatty(STDOUT_FILENO))
        return usage("a minidump is binary: give -o FILE, or redirect standard output");
    Faultline__Report *r = NULL;
    bool truncated = false;
    int e = fl_report_read_file(path, &r, &truncated);
    if (e) {
        fl_tool_read_error(path, e);
        return 1;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    if (truncated)
        fprintf(stderr, "faultline minidump: %s was cut short: its complete prefix is converted\n",
                fl_tool_clean(path));
    e = fl_tool_minidump(r, &data, &len);
    fl_report_free(r);
    if (e) {
        fprintf(stderr, "faultline minidump: %s: %s\n", fl_tool_clean(path),
                e == FL_ENOSYS ? "the report's architecture has no minidump context here"
                               : fl_strerror(e));
        return 1;
    }
    int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : STDOUT_FILENO;
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += (size_t)n;
    }
    if (out && fd >= 0 && close(fd) != 0) ok = false;
    free(data);
    if (!ok) {
        fprintf(stderr, "faultline minidump: cannot write %s: %s\n",
                out ? fl_tool_clean(out) : "standard output", strerror(errno));
        return 1;
    }
    return 0;
}
