/* SPDX-License-Identifier: MIT */
/* The faultline CLI's internal interfaces: symbolication and the text and JSON renderings. */
#ifndef FAULTLINE_TOOLS_TOOL_H
#define FAULTLINE_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "demangle/demangle.h"
#include "elf/elf.h"
#include "faultline.pb-c.h"
#include "macho/macho.h"

/* Everything here is NOT AS-SAFE. */

/* ---- Binaries: ELF files and thin or fat Mach-O files (binfile.c) ---- */

typedef struct fl_tool_bin fl_tool_bin_t;
enum { FL_TOOL_BIN_ELF = 1, FL_TOOL_BIN_MACHO = 2 };

/* Opens a 64-bit ELF file (x86_64, aarch64) or a Mach-O file, thin or fat. FL_EIO (errno says
 * why), FL_EBADDATA (neither, or malformed), FL_ENOSYS (32-bit Mach-O), FL_ENOMEM. A fat file
 * opens even when some slices are malformed: fl_tool_bin_error tells which. */
int fl_tool_bin_open(const char *path, fl_tool_bin_t **out);
void fl_tool_bin_close(fl_tool_bin_t *b);
int fl_tool_bin_kind(const fl_tool_bin_t *b);
/* Images in the file: the slices of a Mach-O file, 1 for ELF. */
unsigned fl_tool_bin_count(const fl_tool_bin_t *b);
bool fl_tool_bin_is_fat(const fl_tool_bin_t *b);
const char *fl_tool_bin_arch(const fl_tool_bin_t *b, unsigned i); /* "x86_64", "arm64", ... */
int fl_tool_bin_error(const fl_tool_bin_t *b, unsigned i);       /* slice i's parse error, or 0 */
const fl_macho_image_t *fl_tool_bin_macho(const fl_tool_bin_t *b, unsigned i); /* NULL: not one */
fl_elf_file_t *fl_tool_bin_elf(const fl_tool_bin_t *b);                      /* NULL: not ELF */
/* The image's identity: LC_UUID (16 bytes) or the ELF GNU build-id. FL_ENOTFOUND if none. */
int fl_tool_bin_id(const fl_tool_bin_t *b, unsigned i, uint8_t *id, unsigned cap, unsigned *len);
/* The slice whose LC_UUID equals uuid, or with the architecture arch; -1 if none. */
int fl_tool_bin_find_uuid(const fl_tool_bin_t *b, const uint8_t *uuid, size_t len);
int fl_tool_bin_find_arch(const fl_tool_bin_t *b, const char *arch);
/* Symbols available for lookups (builds the index on first use); negative FL_E* on failure. */
long fl_tool_bin_symbol_count(fl_tool_bin_t *b, unsigned i);
/* Nearest preceding symbol of file address addr in image i: its name as stored in the file and
 * addr's offset from it. FL_ENOTFOUND if none covers addr. */
int fl_tool_bin_symbolize(fl_tool_bin_t *b, unsigned i, uint64_t addr, const char **name,
                          uint64_t *off);
/* The symbol's link name, which indexes keep: raw with Mach-O's leading '_' dropped (so C++'s
 * _Z... is stored as _Z..., Swift's _$s... as $s...). Returns raw or a suffix of it. */
const char *fl_tool_symbol_link_name(const char *raw, int kind);
/* The name to show for a link name: demangled (fl_tool_demangle) in the form flags ask for
 * (FL_DEMANGLE_FULL or FL_DEMANGLE_SIMPLIFIED, demangle/demangle.h), else the name itself.
 * Returns name or buf. */
const char *fl_tool_symbol_display(const char *name, unsigned flags, char *buf, size_t cap);
/* The one dispatch of names to demanglers (demangle.c): Swift (fl_demangle_swift), then Rust
 * (fl_demangle_rust, which takes a legacy _ZN name only when it ends in its hash, so that it wins
 * over C++ for those), then Itanium C++ (fl_tool_demangle_cxx). Writes into buf (cut to cap);
 * false if no demangler takes the name. C++ has a single form: flags change only Swift and Rust. */
bool fl_tool_demangle(const char *name, unsigned flags, char *buf, size_t cap);
/* Report.terminate_type demangled into buf (as it is when it does not demangle); NULL without
 * one. */
const char *fl_tool_terminate_type(const Faultline__Report *r, char *buf, size_t cap);
/* Itanium C++ names (demangle_<platform>.c); false if not one or the build has no C++ demangler
 * (Darwin: zig ships no C++ runtime for macOS). */
bool fl_tool_demangle_cxx(const char *name, char *buf, size_t cap);

/* ---- Symbol index: one image's symbols and lines, built once, cached on disk (symindex.c) ---- */

/* What a symbol file offers, in increasing order; the search keeps the best file it finds. */
enum {
    FL_TOOL_Q_NONE = 0,    /* no symbols */
    FL_TOOL_Q_EXPORTS = 1, /* exported names only: ELF .dynsym, Mach-O without local symbols */
    FL_TOOL_Q_SYMTAB = 2,  /* every function: ELF .symtab, Mach-O with local symbols */
    FL_TOOL_Q_LINES = 3    /* and DWARF line tables (ELF, with libdw) */
};

#define FL_TOOL_SYMINDEX_VERSION 3u   /* of the cache file format; part of its directory name
                                       * (2: link names instead of display names; 3: untyped
                                       * symbols of executable sections) */
#define FL_TOOL_NAME_MAX 4096u        /* longer display names are cut */
#define FL_TOOL_CACHE_MAX_BYTES (1ull << 30) /* the cache prunes its oldest entries past this */

typedef struct fl_tool_symindex fl_tool_symindex_t;

/* What the index says of one file address. */
typedef struct fl_tool_loc {
    const char *name;  /* link name (fl_tool_symbol_link_name), not demangled; NULL: no symbol */
    uint64_t sym_addr; /* the symbol's file address */
    const char *file;  /* source file from the DWARF line table; NULL: unknown */
    uint32_t line;
} fl_tool_loc_t;

/* The quality slice i of b offers (FL_TOOL_Q_*): cheap, reads no symbol table contents. */
int fl_tool_bin_quality(fl_tool_bin_t *b, unsigned i);
/* The index of slice i of b, opened from `path`. With a cache directory (NULL: none) and an
 * identity (GNU build-id or LC_UUID), the index is read from `cache_dir`/symbols-v<version>/
 * <id>-q<quality>-<CRC-32 of the symbol tables>.fsi when a valid entry is there, else built and
 * stored there atomically (a damaged entry is rebuilt; a failure to store is not an error).
 * FL_ENOMEM, FL_EBADDATA. */
int fl_tool_symindex_get(fl_tool_bin_t *b, unsigned i, const char *path, const char *cache_dir,
                         fl_tool_symindex_t **out);
void fl_tool_symindex_free(fl_tool_symindex_t *ix);
/* Looks up a file address. Always fills *out (name NULL when no symbol covers addr, file NULL
 * when no line row does or `lines` is false); returns true when a symbol was found. */
bool fl_tool_symindex_lookup(const fl_tool_symindex_t *ix, uint64_t addr, bool lines,
                             fl_tool_loc_t *out);
int fl_tool_symindex_quality(const fl_tool_symindex_t *ix);
size_t fl_tool_symindex_count(const fl_tool_symindex_t *ix); /* symbol ranges */
size_t fl_tool_symindex_lines(const fl_tool_symindex_t *ix); /* line rows */
/* Whether the last fl_tool_symindex_get came from the cache (for tests and benchmarks). */
bool fl_tool_symindex_from_cache(const fl_tool_symindex_t *ix);

/* The cache directory: $FAULTLINE_CACHE_DIR, else $XDG_CACHE_HOME/faultline, else
 * $HOME/.cache/faultline; "" or "off" in $FAULTLINE_CACHE_DIR disables it (returns NULL). */
const char *fl_tool_cache_dir(char *buf, size_t cap);

/* DWARF line rows of an ELF file (lines_libdw.c, or lines_none.c without libdw): fn is called
 * for every row of every compilation unit, end_sequence rows included, until it returns
 * nonzero. FL_ENOTFOUND without DWARF, FL_ENOSYS in a build without libdw, FL_EIO. */
typedef int (*fl_tool_line_fn)(void *ctx, uint64_t addr, const char *file, uint32_t line,
                               bool end_sequence);
int fl_tool_dwarf_lines(const char *path, fl_tool_line_fn fn, void *ctx);
bool fl_tool_have_dwarf(void); /* whether this build reads DWARF lines */

/* ---- Symbolication of reports (symbolize.c) ---- */

/* Where to look for symbol files and where to cache indexes; shared by many reports. */
typedef struct fl_tool_symopts {
    char *const *dirs; /* --symbols directories, searched first */
    size_t ndirs;
    const char *cache_dir;   /* NULL: no on-disk cache */
    const char *system_dir;  /* the global debug directory ("/usr/lib/debug"); NULL: none */
    /* A JIT's symbol map for frames in no image (--perf-map FILE); NULL: the one perf's
     * convention names for the report's process, /tmp/perf-PID.map, if it is that process's
     * (fl_tool_symbolize); "": none. */
    const char *perf_map;
} fl_tool_symopts_t;

typedef struct fl_tool_symstore fl_tool_symstore_t;
typedef struct fl_tool_symbolizer fl_tool_symbolizer_t;

/* A frame as resolved against the report's images. */
typedef struct fl_tool_sym {
    int image;          /* index into report->images whose [start, end) holds the pc, or -1 */
    const char *symbol; /* NULL unless a file with the image's build-id was found and resolves it;
                         * the simplified display form (in name[] or a constant) */
    const char *mangled; /* the link name it was found under (owned by the store), NULL if none:
                          * what fl_tool_symbol_display turns into the full form */
    uint64_t offset;    /* recorded pc - symbol address */
    bool jit;           /* symbol is from a JIT's perf map (a pc in no image): for people only,
                         * never in a signature (the map stays on the machine that ran it) */
    const char *file;   /* source file of the (looked-up) pc, or NULL */
    uint32_t line;
    char name[FL_TOOL_NAME_MAX]; /* (symbol's storage: do not copy the struct) */
} fl_tool_sym_t;

/* Symbol files are looked up once per image identity and kept for the store's lifetime.
 * ELF (by GNU build-id, or text hash): each DIR/.build-id/xx/rest.debug and DIR/<basename>, the
 * recorded path, then the .gnu_debuglink of any match that lacks symbols or lines (next to it,
 * in its .debug/, in system_dir/<its dir>/ and in each DIR, CRC32 checked), then
 * system_dir/.build-id/xx/rest.debug. Mach-O (by LC_UUID, the matching slice of a fat file):
 * DIR/<basename>, DIR/<basename>.dSYM/Contents/Resources/DWARF/<basename>, every DIR/ *.dSYM
 * bundle's DWARF files, then the recorded path. A file is used only when its identity equals the
 * recorded one; the search ends at the first file of the best quality the format allows, else
 * keeps the first of the best quality found. A text-hash id never proves much: its indexes are
 * not cached. The copy of opts is shallow. NULL on allocation failure. */
fl_tool_symstore_t *fl_tool_symstore_new(const fl_tool_symopts_t *opts);
void fl_tool_symstore_free(fl_tool_symstore_t *st);
/* One report's view of the store (which must outlive it). NULL on allocation failure. */
fl_tool_symbolizer_t *fl_tool_symbolizer_new(fl_tool_symstore_t *st, const Faultline__Report *r);
void fl_tool_symbolizer_free(fl_tool_symbolizer_t *s);
/* Resolves frame `index` of thread th. Callers' pcs are return addresses, so they are looked
 * up at pc-1 (the call, which may be the last instruction of its function) while the offset
 * stays relative to the recorded pc; frame 0, context frames, a frame a signal interrupted and
 * the frame under a call a runtime injected at a fault (Go's runtime.sigpanic: its "return
 * address" is the faulting instruction) are exact. */
void fl_tool_symbolize(fl_tool_symbolizer_t *s, const Faultline__Thread *th, size_t index,
                       fl_tool_sym_t *out);

/* ---- JIT symbol maps (perfmap.c) ---- */

/* perf's convention for code a JIT wrote: lines "START SIZE NAME", hex numbers, the newest line
 * for an address winning (code moves). Bounded: 64 MiB, 4 Mi lines, names cut at 512 bytes;
 * malformed lines are skipped. NULL on allocation failure. */
typedef struct fl_tool_perfmap fl_tool_perfmap_t;
fl_tool_perfmap_t *fl_tool_perfmap_parse(const char *data, size_t len);
/* The map at path: opened without following a link or blocking, a regular file within the
 * bound, owned by `owner` or root (owner < 0: anyone), modified within [from_ns, to_ns] (to the
 * second) where nonzero. NULL otherwise. */
fl_tool_perfmap_t *fl_tool_perfmap_load(const char *path, long owner, uint64_t from_ns,
                                        uint64_t to_ns);
/* The name covering pc (*start its address), or NULL. */
const char *fl_tool_perfmap_find(const fl_tool_perfmap_t *m, uint64_t pc, uint64_t *start);
void fl_tool_perfmap_free(fl_tool_perfmap_t *m);

/* ---- Crash signatures (signature.c; rules in docs/triage.md) ---- */

#define FL_TOOL_SIG_FRAMES 3u      /* frames in a signature by default */
#define FL_TOOL_SIG_FRAMES_MAX 32u
#define FL_TOOL_SIG_NAME_MAX 256u  /* a normalised frame name is cut to this many bytes */
#define FL_TOOL_SIG_MAX (FL_TOOL_SIG_FRAMES_MAX * (FL_TOOL_SIG_NAME_MAX + 3))
#define FL_TOOL_SIG_SCAN_MAX 1024u /* frames looked at (deep recursion collapses within these) */

/* The grouping form of a display name: " [clone ...]" and GCC/LLVM clone suffixes (.cold,
 * .constprop.N, .isra.N, .part.N, .lto_priv.N, .localalias, .llvm.N, ...) removed, template
 * arguments replaced by <T>, the parameter list and what follows it (cv/ref qualifiers)
 * removed, a leading return type removed. buf[cap], cap >= 2; the result is cut to cap - 1. */
void fl_tool_sig_normalize(const char *name, char *buf, size_t cap);
/* Whether a normalised name is crash machinery, skipped at the top of the crashed stack:
 * abort/raise/pthread_kill, assertion and fortify failures, glibc's malloc_printerr and the
 * allocator's internals, C++ terminate/throw helpers, signal trampolines, faultline's own
 * fl_* functions. */
bool fl_tool_sig_is_machinery(const char *normalized);
/* The thread a signature is taken from: the crashed one, else (snapshots) the first; -1 if
 * the report has no thread with frames. */
int fl_tool_sig_thread(const Faultline__Report *r);
/* The signature of the report: up to nframes keys of that thread's frames, joined by " | ",
 * after skipping the leading machinery (up to the last machinery frame of the leading run of
 * machinery and unnamed frames) and collapsing runs of equal keys (recursion). A frame's key
 * is its normalised symbol, else "<image basename>+0x<file address>", else "?" (no image).
 * Returns the length, or -1 when the report has no thread with frames. */
int fl_tool_signature(const Faultline__Report *r, fl_tool_symbolizer_t *s, unsigned nframes,
                      char *buf, size_t cap);
/* Where the signature of a crash starts in its crashed thread: the frame index past the crash
 * machinery (a runtime's or libc's abort path, a handler that raised again), or where the
 * crash began when all of it is machinery; -1 without a crashed thread with frames. */
int fl_tool_crash_site(const Faultline__Report *r, fl_tool_symbolizer_t *s);

/* ---- Command-line plumbing shared by show, symbolicate and triage (cli.c) ---- */

/* The symbol options of a command line: --symbols DIR (repeatable), --cache-dir DIR,
 * --no-cache. The default cache is fl_tool_cache_dir's; system_dir is /usr/lib/debug unless
 * $FAULTLINE_DEBUG_DIR says otherwise ("" for none). */
typedef struct fl_tool_cli {
    fl_tool_symopts_t sym;
    char **dirs; /* argv-sized */
    char cache_buf[4096];
} fl_tool_cli_t;

/* Starts c for argc arguments; false on allocation failure. */
bool fl_tool_cli_init(fl_tool_cli_t *c, int argc);
void fl_tool_cli_free(fl_tool_cli_t *c);
/* If argv[*i] is a symbol option, consumes it (and its value): 1; not one: 0; a value is
 * missing: -1 (the message is printed). */
int fl_tool_cli_option(fl_tool_cli_t *c, int argc, char **argv, int *i);
/* Prints the usage text (after msg, if any) to stderr; returns the usage exit status, 2. */
int fl_tool_usage(const char *msg);
void fl_tool_usage_print(FILE *o);
/* Whether path is a regular file that starts as a report does (its magic). */
bool fl_tool_is_report_file(const char *path);
/* Prints why a report could not be read (errno explains FL_EIO). */
void fl_tool_read_error(const char *path, int err);

/* ---- Commands (inspect.c, triage.c, upload_cmd.c) ---- */

/* `faultline inspect` and `faultline symbolicate FILE ADDR...`: argv after the command name.
 * Return the process exit status. */
int fl_tool_cmd_inspect(int argc, char **argv);
int fl_tool_cmd_symbolicate_addrs(int argc, char **argv);
/* `faultline triage DIR...`. */
int fl_tool_cmd_triage(int argc, char **argv);
/* `faultline upload [options] DIR URL` (upload_cmd.c, in the executable faultline-upload): exit
 * status 0 when all was delivered. */
int fl_tool_cmd_upload(int argc, char **argv);
/* `faultline upload`: executes faultline-upload with argv, from the directory of self (faultline's
 * argv[0]) if it has one, else from PATH; returns 1, with a message, only if neither runs. */
int fl_tool_upload_exec(const char *self, int argc, char **argv);
/* `faultline minidump [-o FILE] REPORT` (minidump.c, docs/interop.md). */
int fl_tool_cmd_minidump(int argc, char **argv);
/* The report as a minidump (Breakpad's format: SystemInfo, MiscInfo, ThreadList with each
 * thread's context and the stack memory the report kept, MemoryList, ModuleList with CodeView
 * records, Linux maps of the images, Exception) in a malloc'd buffer. FL_ENOSYS for an
 * architecture without a minidump context here, FL_ENOMEM. */
int fl_tool_minidump(const Faultline__Report *r, uint8_t **out, size_t *len);
/* `faultline run [OPTIONS] [--] PROGRAM ARGS...` (run.c, docs/preload.md): the program with
 * libfaultline-preload.so; when it dies of a signal that wrote a report, the report on stderr.
 * The exit status is the program's, or 128 + the signal that killed it. */
int fl_tool_cmd_run(int argc, char **argv);
/* Why ld.so will not preload the library into the program execvp runs for name (a phrase that
 * follows "the program"), or NULL when it will or the file cannot be read (execvp then says
 * what is wrong). Linux (attach_linux.c): ld.so ignores LD_PRELOAD's paths in a start that gains
 * privileges (another user's set-user-ID or another group's set-group-ID program, file
 * capabilities for a user other than root; not on a nosuid mount), cannot load the library into
 * a program of another architecture, and a statically linked program has no ld.so. The file is
 * the user's choice but read as untrusted: fl_open_regular, then elf/'s file reader. Darwin:
 * NULL. NOT AS-SAFE. */
const char *fl_tool_not_attachable(const char *name);

/* ---- Reading JSON input (json_parse.c): a tree, bounded for untrusted files ---- */

#define FL_TOOL_JSON_DEPTH_MAX 16u
#define FL_TOOL_JSON_NODES_MAX (1u << 20)
enum { FL_TOOL_JSON_NULL, FL_TOOL_JSON_BOOL, FL_TOOL_JSON_NUMBER, FL_TOOL_JSON_STRING,
       FL_TOOL_JSON_ARRAY, FL_TOOL_JSON_OBJECT };
typedef struct fl_tool_jv {
    int kind;
    unsigned line, col;       /* where the value starts in the text (for messages) */
    bool b;                   /* BOOL */
    char *str;                /* STRING: decoded, NUL-terminated (no NUL inside); NUMBER: its text */
    size_t len;
    struct fl_tool_jv **items; /* ARRAY, OBJECT: n values */
    char **keys;               /* OBJECT: their keys (unique) */
    size_t n, cap;
} fl_tool_jv_t;
/* Parses a whole document; NULL with "line L, column C: what" in err on malformed input, more
 * than FL_TOOL_JSON_NODES_MAX values or nesting deeper than FL_TOOL_JSON_DEPTH_MAX. */
fl_tool_jv_t *fl_tool_json_parse(const char *text, size_t len, char *err, size_t errcap);
void fl_tool_json_free(fl_tool_jv_t *v);
const fl_tool_jv_t *fl_tool_json_get(const fl_tool_jv_t *obj, const char *key); /* or NULL */
/* The value of a hexadecimal digit, or -1. */
int fl_tool_hex_digit(char c);
/* A 64-bit unsigned number: a string "0x<hex>" or a JSON integer; FL_EINVAL otherwise. */
int fl_tool_json_u64(const fl_tool_jv_t *v, uint64_t *out);

/* `faultline demangle [--simplified] [NAME...]` (demangle.c; docs/demangling.md): each name,
 * or each line of stdin, demangled (fl_tool_demangle; full form unless --simplified) or as it
 * is, one a line, through the cleaner (so cut at 4095 bytes). */
int fl_tool_cmd_demangle(int argc, char **argv);

/* `faultline unwind STATE` (unwind.c; docs/unwind-state.md). */
int fl_tool_cmd_unwind(int argc, char **argv);

/* ---- Renderings (show.c, apple.c, tombstone.c, json.c) ---- */

typedef enum fl_tool_format {
    FL_TOOL_FMT_TEXT,      /* faultline's own layout, Apple-like (the default of show) */
    FL_TOOL_FMT_APPLE,     /* close to Apple's crash log (.crash) */
    FL_TOOL_FMT_TOMBSTONE, /* close to Android's tombstone text */
    FL_TOOL_FMT_JSON,
    FL_TOOL_FMT_SENTRY     /* a Sentry event (sentry.c, docs/interop.md) */
} fl_tool_format_t;

/* If argv[*i] is --json, --format NAME or --format=NAME, consumes it (and its value) into
 * *format: 1; not one: 0; a missing or unknown format: -1 (the message is printed). */
int fl_tool_cli_format(int argc, char **argv, int *i, fl_tool_format_t *format);
/* "text", "apple", "tombstone", "json", "sentry"; false for anything else. */
bool fl_tool_format_parse(const char *name, fl_tool_format_t *out);
void fl_tool_render(FILE *out, fl_tool_format_t f, const Faultline__Report *r, bool truncated,
                    fl_tool_symbolizer_t *s);
/* Reads the report at path (its error said on stderr) and renders it, symbolicated with opts
 * (show, symbolicate REPORT, run). 0, the reader's error, or FL_ENOMEM. */
int fl_tool_render_file(FILE *o, fl_tool_format_t f, const char *path, const fl_tool_symopts_t *opts);

void fl_tool_show_text(FILE *out, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *s);
void fl_tool_show_apple(FILE *out, const Faultline__Report *r, bool truncated,
                        fl_tool_symbolizer_t *s);
void fl_tool_show_tombstone(FILE *out, const Faultline__Report *r, bool truncated,
                            fl_tool_symbolizer_t *s);
/* The JSON document other tools parse (its shape is described in json.c). */
void fl_tool_show_json(FILE *out, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *s);
/* The same with registers for frames of threads[0]: frame k lists names[i] = values[k * nnames
 * + i] for each bit i of known[k] (`faultline unwind`: what the walk knew at each frame). */
typedef struct fl_tool_frame_regs {
    size_t count, nnames;
    const char *const *names;
    const uint64_t *values;
    const uint64_t *known;
} fl_tool_frame_regs_t;
void fl_tool_show_json_regs(FILE *out, const Faultline__Report *r, bool truncated,
                            fl_tool_symbolizer_t *s, const fl_tool_frame_regs_t *fr);
/* The report as a Sentry event (platform native; the crashed thread's stack and registers in
 * the exception, the others in threads; images in debug_meta). */
void fl_tool_show_sentry(FILE *out, const Faultline__Report *r, bool truncated,
                         fl_tool_symbolizer_t *s);
/* The debug identifier Sentry and Breakpad give an image, as a GUID string (buf >= 37 bytes):
 * an ELF build-id's first 16 bytes (zero-padded) with the first three fields byte-swapped
 * (build-id 613807ff6021bac7... -> ff073861-2160-c7ba-...), a Mach-O UUID (`uuid`) unchanged. */
void fl_tool_sentry_debug_id(char *buf, size_t cap, const uint8_t *id, size_t len, bool uuid);
/* From a DSN (SCHEME://KEY[:SECRET]@HOST[:PORT][/PATH]/PROJECT) the envelope endpoint
 * SCHEME://HOST[:PORT][/PATH]/api/PROJECT/envelope/ and the "X-Sentry-Auth: ..." header line.
 * FL_EINVAL for anything else (or control characters), FL_ERANGE when a buffer is too small. */
int fl_tool_sentry_dsn(const char *dsn, char *url, size_t url_cap, char *auth, size_t auth_cap);
/* A report's bytes as a Sentry envelope (malloc'd): its event and, when the report kept stack
 * memory, its minidump as an event.minidump attachment. fl_report_decode's errors, FL_ENOMEM. */
int fl_tool_sentry_envelope(const uint8_t *report, size_t len, const char *dsn, uint8_t **out,
                            size_t *out_len);

/* ---- Formatting helpers (format.c) ---- */

/* Writes s as a JSON string literal; invalid UTF-8 becomes U+FFFD, and control characters (C0,
 * DEL, C1) are escaped as \uXXXX, so that the document shown raw cannot drive a terminal
 * (json.c). */
void fl_tool_json_string(FILE *o, const char *s);

/* A JSON writer for the documents the CLI prints (json.c): values are indented two spaces a
 * level; key is NULL inside an array. Nesting is at most FL_TOOL_JW_DEPTH levels. */
#define FL_TOOL_JW_DEPTH 12
typedef struct fl_tool_jw {
    FILE *o;
    int depth;
    bool first[FL_TOOL_JW_DEPTH];
} fl_tool_jw_t;
void fl_tool_jw_next(fl_tool_jw_t *j, const char *key); /* separator, indentation and key */
void fl_tool_jw_open(fl_tool_jw_t *j, const char *key, char c); /* '{' or '[' */
void fl_tool_jw_close(fl_tool_jw_t *j, char c);
void fl_tool_jw_str(fl_tool_jw_t *j, const char *key, const char *s); /* NULL: null */
void fl_tool_jw_int(fl_tool_jw_t *j, const char *key, int64_t v);
void fl_tool_jw_bool(fl_tool_jw_t *j, const char *key, bool v);
void fl_tool_jw_hex(fl_tool_jw_t *j, const char *key, uint64_t v); /* "0x..." */
void fl_tool_jw_null(fl_tool_jw_t *j, const char *key);

#define FL_TOOL_HEX_MAX 64u /* bytes rendered by fl_tool_hex; longer input is cut */

/* CRC-32 (ISO-HDLC, as zlib and .gnu_debuglink use it) of n bytes, continuing from crc (0 to
 * start). */
uint32_t fl_tool_crc32(uint32_t crc, const void *p, size_t n);
/* "2024-05-01T12:00:00.123Z"; "" for 0. buf >= 40 bytes. */
void fl_tool_fmt_time(char *buf, size_t cap, uint64_t unix_ns);
const char *fl_tool_basename(const char *path);
/* Lowercase hex of the first FL_TOOL_HEX_MAX bytes at most; buf >= 2 * FL_TOOL_HEX_MAX + 1. */
void fl_tool_hex(char *buf, const uint8_t *p, size_t n);
/* Index in r->threads of the crashed thread (flagged, else the signal's tid; in a hang report,
 * which has none, the watchdog's monitored thread), or -1. */
int fl_tool_crashed_thread(const Faultline__Report *r);
/* Whether the report is a hang (Header.kind KIND_HANG, or a Hang record without a header). */
bool fl_tool_is_hang(const Faultline__Report *r);
/* "tid 1234 stuck for at least 2.004 s (threshold 800 ms, checked every 200 ms), recovered"
 * (or "still stuck when last written"); "" for a report without a Hang record. Raw values:
 * numbers only, nothing to clean. */
void fl_tool_hang_text(char *buf, size_t cap, const Faultline__Report *r);
const char *fl_tool_arch_name(int arch);
const char *fl_tool_method_name(int method);
/* A stack deeper than max_frames kept its innermost and outermost frames (Thread.frames_omitted
 * between frames[frames_omitted_at - 1] and frames[frames_omitted_at]): the frames omitted before
 * frames[k] if the gap is right there, else 0; and frames[k]'s depth, counting the omitted ones. */
uint32_t fl_tool_gap_before(const Faultline__Thread *t, size_t k);
size_t fl_tool_frame_depth(const Faultline__Thread *t, size_t k);
const char *fl_tool_state_name(int state);
/* "; stack read from its system call" for a thread not captured whose frames were read from
 * where it sat in a system call (frame 0's method syscall), else "". */
const char *fl_tool_state_detail(const Faultline__Thread *t);
const char *fl_tool_build_id_kind_name(int kind);
const char *fl_tool_kind_name(int kind);
/* The one cleaner every string bound for a terminal passes through (text from a report, a
 * binary, a debug file, a file name, a server): fl_clean_term, cut at 4095 bytes. Idempotent,
 * so that text composed of cleaned parts can be cleaned again after a cut. Four rotating
 * buffers let one printf take several. */
const char *fl_tool_clean(const char *s);
/* "SIGSEGV (SEGV_MAPERR)" or numbers where names are missing. */
void fl_tool_signal_text(char *buf, size_t cap, const Faultline__Signal *s);
/* Report.interrupted_signal in one line: "SIGSEGV (SEGV_MAPERR) at 0x..., in frame 5" (the
 * address of a fault, the sender of a sent signal). */
void fl_tool_interrupted_text(char *buf, size_t cap, const Faultline__Signal *s);
/* "EXC_BAD_ACCESS (KERN_INVALID_ADDRESS) codes 0x1 0x10"; "" without a Mach exception. */
void fl_tool_mach_text(char *buf, size_t cap, const Faultline__MachException *m);

#endif
