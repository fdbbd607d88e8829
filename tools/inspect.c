/* SPDX-License-Identifier: MIT */
/* `faultline inspect` (an image's identity, segments, symbols, compact unwind) and `faultline symbolicate FILE ADDR...`. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"

#define EXIT_USAGE 2

static int open_error(const char *name, int err) {
    const char *path = fl_tool_clean(name);
    if (err == FL_EIO)
        fprintf(stderr, "faultline: cannot open %s: %s\n", path, strerror(errno));
    else if (err == FL_EBADDATA)
        fprintf(stderr, "faultline: %s: not a 64-bit ELF or Mach-O file, or malformed\n", path);
    else if (err == FL_ENOSYS)
        fprintf(stderr, "faultline: %s: 32-bit Mach-O is not supported\n", path);
    else
        fprintf(stderr, "faultline: %s: %s\n", path, fl_strerror(err));
    return 1;
}

static const char *macho_filetype(uint32_t t) {
    switch (t) {
    case 1: return "object";
    case 2: return "executable";
    case 6: return "dylib";
    case 7: return "dylinker";
    case 8: return "bundle";
    case 10: return "dsym";
    case 11: return "kext";
    default: return "other";
    }
}

/* "rwx" from Mach-O VM_PROT_* (1 read, 2 write, 4 execute) or ELF PF_* (4 read, 2 write, 1 x). */
static void prot_text(char out[4], bool r, bool w, bool x) {
    out[0] = r ? 'r' : '-';
    out[1] = w ? 'w' : '-';
    out[2] = x ? 'x' : '-';
    out[3] = 0;
}

/* Apple's form for text (8-4-4-4-12, upper case); JSON uses plain lower-case hex. */
static void uuid_text(char *buf, const uint8_t *id) {
    char *p = buf;
    for (unsigned i = 0; i < 16; i++) {
        p += sprintf(p, "%02X", id[i]);
        if (i == 3 || i == 5 || i == 7 || i == 9) *p++ = '-';
    }
    *p = 0;
}

typedef struct out {
    FILE *o;
    bool json;
    unsigned n; /* items written in the current JSON list */
} out_t;

static void sep(out_t *o) {
    if (o->n++) fputc(',', o->o);
}

typedef struct unwind_ctx {
    out_t *o;
    uint32_t cputype;
    unsigned count;
} unwind_ctx_t;

static int print_unwind_entry(void *ctx, const fl_macho_unwind_entry_t *e) {
    unwind_ctx_t *u = ctx;
    fl_macho_unwind_rule_t rule;
    char text[160];
    if (fl_macho_unwind_decode(u->cputype, e->encoding, &rule) == 0)
        fl_macho_unwind_rule_format(&rule, text, sizeof text);
    else
        snprintf(text, sizeof text, "invalid encoding");
    u->count++;
    if (u->o->json) {
        sep(u->o);
        fprintf(u->o->o, "{\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64
                         "\",\"encoding\":\"0x%08" PRIx32 "\",\"rule\":",
                e->start, e->end, e->encoding);
        fl_tool_json_string(u->o->o, text);
        fputc('}', u->o->o);
    } else {
        fprintf(u->o->o, "    0x%016" PRIx64 "  0x%08" PRIx32 "  %s\n", e->start, e->encoding, text);
    }
    return 0;
}

/* One Mach-O slice; returns nonzero if something could not be read. */
static int inspect_macho(out_t *o, fl_tool_bin_t *b, unsigned i, bool unwind) {
    FILE *f = o->o;
    const fl_macho_image_t *m = fl_tool_bin_macho(b, i);
    const char *arch = fl_tool_bin_arch(b, i);
    if (!m) {
        int err = fl_tool_bin_error(b, i);
        if (o->json) {
            fprintf(f, "{\"format\":\"macho\",\"arch\":\"%s\",\"error\":", arch);
            fl_tool_json_string(f, fl_strerror(err));
            fputc('}', f);
        } else {
            fprintf(f, "  arch: %s\n  error: %s\n", arch, fl_strerror(err));
        }
        return 1;
    }
    char hex[33] = "", dashed[40] = "";
    if (m->has_uuid) {
        fl_tool_hex(hex, m->uuid, 16);
        uuid_text(dashed, m->uuid);
    }
    long nsyms = fl_tool_bin_symbol_count(b, i);
    if (o->json) {
        fprintf(f, "{\"format\":\"macho\",\"arch\":\"%s\",\"uuid\":", arch);
        if (m->has_uuid) fprintf(f, "\"%s\"", hex);
        else fputs("null", f);
        fprintf(f, ",\"filetype\":\"%s\",\"segments\":[", macho_filetype(m->filetype));
        for (unsigned s = 0; s < m->nsegments; s++) {
            const fl_macho_segment_t *g = &m->segments[s];
            char p[4];
            prot_text(p, g->initprot & 1, g->initprot & 2, g->initprot & 4);
            fprintf(f, "%s{\"name\":", s ? "," : "");
            fl_tool_json_string(f, g->name);
            fprintf(f, ",\"vmaddr\":\"0x%" PRIx64 "\",\"vmsize\":\"0x%" PRIx64 "\",\"fileoff\":%" PRIu64
                       ",\"filesize\":%" PRIu64 ",\"prot\":\"%s\"}",
                    g->vmaddr, g->vmsize, g->fileoff, g->filesize, p);
        }
        fprintf(f, "],\"segments_truncated\":%s,\"symbols\":%ld,\"local_symbols\":%s",
                m->segments_truncated ? "true" : "false", nsyms < 0 ? 0 : nsyms,
                m->has_local_symbols ? "true" : "false");
    } else {
        fprintf(f, "  arch: %s\n  uuid: %s\n  type: %s\n  segments:\n", arch,
                m->has_uuid ? dashed : "(none)", macho_filetype(m->filetype));
        for (unsigned s = 0; s < m->nsegments; s++) {
            const fl_macho_segment_t *g = &m->segments[s];
            char p[4];
            prot_text(p, g->initprot & 1, g->initprot & 2, g->initprot & 4);
            fprintf(f, "    %-16s 0x%016" PRIx64 "-0x%016" PRIx64 " %s  file 0x%" PRIx64 "+0x%" PRIx64 "\n",
                    fl_tool_clean(g->name), g->vmaddr, g->vmaddr + g->vmsize, p, g->fileoff,
                    g->filesize);
        }
        if (m->segments_truncated) fprintf(f, "    (more segments not shown)\n");
        if (nsyms < 0)
            fprintf(f, "  symbols: unreadable (%s)\n", fl_strerror((int)nsyms));
        else
            fprintf(f, "  symbols: %ld%s\n", nsyms,
                    m->has_local_symbols ? "" : " (no local symbols: stripped)");
    }
    int rc = nsyms < 0;
    if (unwind) {
        fl_macho_unwind_info_t ui;
        int err = fl_macho_unwind_info_init(m, &ui);
        unwind_ctx_t u = {o, m->cputype, 0};
        if (o->json) {
            fputs(",\"unwind\":[", f);
            o->n = 0;
        } else {
            fputs("  compact unwind:\n", f);
        }
        if (err == 0) err = fl_macho_unwind_each(&ui, print_unwind_entry, &u);
        if (o->json) {
            fputc(']', f);
            if (err) {
                fputs(",\"unwind_error\":", f);
                fl_tool_json_string(f, fl_strerror(err));
            }
        } else if (err == FL_ENOTFOUND) {
            fputs("    (no __unwind_info section)\n", f);
        } else if (err) {
            fprintf(f, "    error after %u entries: %s\n", u.count, fl_strerror(err));
        }
        rc |= err != 0 && err != FL_ENOTFOUND;
    }
    if (o->json) fputc('}', f);
    return rc;
}

static int inspect_elf(out_t *o, fl_tool_bin_t *b, bool unwind) {
    FILE *f = o->o;
    fl_elf_file_t *e = fl_tool_bin_elf(b);
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned n = 0;
    char hex[2 * FL_TOOL_HEX_MAX + 1] = "";
    bool has_id = fl_tool_bin_id(b, 0, id, sizeof id, &n) == 0;
    if (has_id) fl_tool_hex(hex, id, n);
    long nsyms = fl_tool_bin_symbol_count(b, 0);
    const char *arch = fl_tool_bin_arch(b, 0);
    if (o->json) {
        fprintf(f, "{\"format\":\"elf\",\"arch\":\"%s\",\"uuid\":", arch);
        if (has_id) fprintf(f, "\"%s\"", hex);
        else fputs("null", f);
        fputs(",\"segments\":[", f);
    } else {
        fprintf(f, "  arch: %s\n  build-id: %s\n  segments (PT_LOAD):\n", arch,
                has_id ? hex : "(none)");
    }
    unsigned k = 0;
    for (unsigned i = 0; i < fl_elf_file_phnum(e); i++) {
        uint64_t va, memsz, off, filesz;
        uint32_t fl;
        if (fl_elf_file_load_segment(e, i, &va, &memsz, &off, &filesz, &fl) != 0) continue;
        char p[4];
        prot_text(p, fl & 4, fl & 2, fl & 1);
        if (o->json)
            fprintf(f, "%s{\"vmaddr\":\"0x%" PRIx64 "\",\"vmsize\":\"0x%" PRIx64 "\",\"fileoff\":%" PRIu64
                       ",\"filesize\":%" PRIu64 ",\"prot\":\"%s\"}",
                    k ? "," : "", va, memsz, off, filesz, p);
        else
            fprintf(f, "    0x%016" PRIx64 "-0x%016" PRIx64 " %s  file 0x%" PRIx64 "+0x%" PRIx64 "\n",
                    va, va + memsz, p, off, filesz);
        k++;
    }
    const char *no_unwind = "ELF images carry DWARF CFI (.eh_frame), not compact unwind";
    if (o->json) {
        fprintf(f, "],\"symbols\":%ld", nsyms < 0 ? 0 : nsyms);
        if (unwind) {
            fputs(",\"unwind\":[],\"unwind_note\":", f);
            fl_tool_json_string(f, no_unwind);
        }
        fputc('}', f);
    } else {
        if (nsyms < 0)
            fprintf(f, "  symbols: unreadable (%s)\n", fl_strerror((int)nsyms));
        else
            fprintf(f, "  symbols: %ld\n", nsyms);
        if (unwind) fprintf(f, "  compact unwind: none (%s)\n", no_unwind);
    }
    return nsyms < 0;
}

int fl_tool_cmd_inspect(int argc, char **argv) {
    bool json = false, unwind = false;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--unwind") == 0) unwind = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "faultline: unknown option %s\nusage: faultline inspect [--json] "
                            "[--unwind] FILE\n", fl_tool_clean(argv[i]));
            return EXIT_USAGE;
        } else if (path) {
            fprintf(stderr, "faultline: inspect takes one file\n");
            return EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "usage: faultline inspect [--json] [--unwind] FILE\n");
        return EXIT_USAGE;
    }
    fl_tool_bin_t *b;
    int err = fl_tool_bin_open(path, &b);
    if (err) return open_error(path, err);
    out_t o = {stdout, json, 0};
    bool fat = fl_tool_bin_is_fat(b);
    unsigned n = fl_tool_bin_count(b);
    int rc = 0;
    if (!json) {
        if (fl_tool_bin_kind(b) == FL_TOOL_BIN_ELF)
            printf("%s: ELF\n", fl_tool_clean(path));
        else
            printf("%s: Mach-O%s, %u architecture%s\n", fl_tool_clean(path),
                   fat ? " universal (fat)" : "", n, n == 1 ? "" : "s");
    }
    if (json && fat) fputc('[', stdout);
    for (unsigned i = 0; i < n; i++) {
        if (json && fat && i) fputc(',', stdout);
        if (!json && fat) printf("slice %u:\n", i);
        o.n = 0;
        rc |= fl_tool_bin_kind(b) == FL_TOOL_BIN_ELF ? inspect_elf(&o, b, unwind)
                                                     : inspect_macho(&o, b, i, unwind);
    }
    if (json && fat) fputc(']', stdout);
    if (json) fputc('\n', stdout);
    fl_tool_bin_close(b);
    if (fflush(stdout) != 0) rc = 1;
    return rc ? 1 : 0;
}

/* Parses "0x1a2b" or "1a2b" (hex, as atos and crash logs write addresses). */
static bool parse_addr(const char *s, uint64_t *out) {
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
    if (!*s) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (errno || *end || s[0] == '-' || s[0] == '+') return false;
    *out = v;
    return true;
}

static void print_loc(const fl_tool_symindex_t *ix, uint64_t addr, bool lines) {
    fl_tool_loc_t loc;
    char buf[FL_TOOL_NAME_MAX];
    if (fl_tool_symindex_lookup(ix, addr, lines, &loc) && loc.name[0])
        printf("%s + %" PRIu64,
               fl_tool_clean(fl_tool_symbol_display(loc.name, FL_DEMANGLE_SIMPLIFIED, buf, sizeof buf)),
               addr - loc.sym_addr);
    else
        fputs("??", stdout);
    if (lines) {
        if (loc.file) printf(" (%s:%" PRIu32 ")", fl_tool_clean(loc.file), loc.line);
        else fputs(" (??:0)", stdout);
    }
    putchar('\n');
}

int fl_tool_cmd_symbolicate_addrs(int argc, char **argv) {
    const char *arch = NULL, *path = NULL;
    bool lines = false;
    int first_addr = -1;
    char cache_buf[4096];
    const char *cache = fl_tool_cache_dir(cache_buf, sizeof cache_buf);
    for (int i = 0; i < argc && first_addr < 0; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
            arch = argv[++i];
        } else if (strncmp(argv[i], "--arch=", 7) == 0) {
            arch = argv[i] + 7;
        } else if (strcmp(argv[i], "--lines") == 0) {
            lines = true;
        } else if (strcmp(argv[i], "--no-cache") == 0) {
            cache = NULL;
        } else if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) {
            cache = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "faultline: unknown option %s\n", fl_tool_clean(argv[i]));
            return EXIT_USAGE;
        } else if (!path) {
            path = argv[i];
        } else {
            first_addr = i;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: faultline symbolicate [--arch ARCH] [--lines] FILE [ADDR...]\n");
        return EXIT_USAGE;
    }
    fl_tool_bin_t *b;
    int err = fl_tool_bin_open(path, &b);
    if (err) return open_error(path, err);
    int slice = 0;
    if (arch) {
        slice = fl_tool_bin_find_arch(b, arch);
    } else if (fl_tool_bin_count(b) != 1) {
        slice = -1;
    }
    if (slice < 0) {
        fprintf(stderr, "faultline: %s: %s; it has:", fl_tool_clean(path),
                arch ? "no slice for that --arch" : "a fat file needs --arch");
        for (unsigned i = 0; i < fl_tool_bin_count(b); i++)
            fprintf(stderr, " %s", fl_tool_bin_arch(b, (unsigned)i));
        fputc('\n', stderr);
        fl_tool_bin_close(b);
        return EXIT_USAGE;
    }
    fl_tool_symindex_t *ix;
    err = fl_tool_symindex_get(b, (unsigned)slice, path, cache, &ix);
    fl_tool_bin_close(b);
    if (err) {
        fprintf(stderr, "faultline: %s: cannot index its symbols: %s\n", fl_tool_clean(path),
                fl_strerror(err));
        return 1;
    }
    int rc = 0;
    if (first_addr >= 0) {
        for (int i = first_addr; i < argc; i++) {
            uint64_t addr;
            if (!parse_addr(argv[i], &addr)) {
                fprintf(stderr, "faultline: not a hex address: %s\n", fl_tool_clean(argv[i]));
                printf("??\n");
                rc = 1;
                continue;
            }
            print_loc(ix, addr, lines);
        }
    } else {
        /* Addresses from stdin, one a line (blank lines skipped), as llvm-symbolizer reads them. */
        char line[256];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, " \t\r\n")] = 0;
            if (!line[0]) continue;
            uint64_t addr;
            if (!parse_addr(line, &addr)) {
                fprintf(stderr, "faultline: not a hex address: %s\n", fl_tool_clean(line));
                printf("??\n");
                rc = 1;
                continue;
            }
            print_loc(ix, addr, lines);
        }
    }
    fl_tool_symindex_free(ix);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
