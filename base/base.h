/* SPDX-License-Identifier: MIT */
/* base: async-signal-safe primitives (syscalls, safe memory reads, formatting, memory maps). */
#ifndef FAULTLINE_BASE_H
#define FAULTLINE_BASE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "faultline/faultline.h"

#define FL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Overflow-checked address arithmetic (AS-SAFE) ---- */

/* *out = a + b; false on overflow. */
static inline bool fl_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
/* *out = a * b; false on overflow. */
static inline bool fl_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
/* True when [off, off+len) lies within [0, size). */
static inline bool fl_range_ok(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

/* ---- Strings and numbers, no libc formatting (AS-SAFE) ---- */

size_t fl_strlen(const char *s);                          /* AS-SAFE */
size_t fl_strnlen(const char *s, size_t max);             /* AS-SAFE */
int fl_strcmp(const char *a, const char *b);              /* AS-SAFE */
/* Copies at most cap-1 bytes and always terminates (cap > 0). Returns strlen(src) like strlcpy. */
size_t fl_strlcpy(char *dst, const char *src, size_t cap); /* AS-SAFE */
/* Length (1 to 4) of the well-formed UTF-8 sequence that starts s (shortest form, no
 * surrogates, at most U+10FFFF), reading at most n bytes, *cp its code point; 0 if s starts
 * none (or n is 0; *cp untouched). The one UTF-8 rule of reports, the cleaner and JSON. */
size_t fl_utf8_seq(const char *s, size_t n, uint32_t *cp); /* AS-SAFE */
/* The one cleaner for text bound for a terminal (fl_tool_clean, fl_log_stderr): s copied into
 * dst (cap > 0 bytes with the NUL) with C0 controls, DEL, C1 controls (U+0080..U+009F) and each
 * byte of invalid UTF-8 as '?', valid UTF-8 kept, cut between sequences. Idempotent. Returns
 * the length written. AS-SAFE. */
size_t fl_clean_term(char *dst, size_t cap, const char *s);
void *fl_memcpy(void *dst, const void *src, size_t n);   /* AS-SAFE */
void *fl_memset(void *dst, int c, size_t n);             /* AS-SAFE */
int fl_memcmp(const void *a, const void *b, size_t n);   /* AS-SAFE */
/* Writes the decimal/hex form of v into buf (cap >= 21/17 + 1 suffices), NUL-terminated.
 * Returns the length written, or 0 if cap was too small. AS-SAFE. */
size_t fl_fmt_u64(char *buf, size_t cap, uint64_t v);
size_t fl_fmt_i64(char *buf, size_t cap, int64_t v);
size_t fl_fmt_hex(char *buf, size_t cap, uint64_t v); /* no "0x" prefix, lowercase */
/* Parses hex digits at *s (no prefix), advances *s past them; false if none. AS-SAFE. */
bool fl_parse_hex(const char **s, const char *end, uint64_t *out);

/* A bounded string builder over a caller's buffer: appends truncate silently and the result
 * is always NUL-terminated. AS-SAFE. */
typedef struct fl_strbuf {
    char *buf;
    size_t cap;
    size_t len;
} fl_strbuf_t;
void fl_strbuf_init(fl_strbuf_t *sb, char *buf, size_t cap); /* AS-SAFE */
void fl_strbuf_puts(fl_strbuf_t *sb, const char *s);         /* AS-SAFE */
void fl_strbuf_putu(fl_strbuf_t *sb, uint64_t v);            /* AS-SAFE */
void fl_strbuf_putx(fl_strbuf_t *sb, uint64_t v);            /* AS-SAFE; "0x" + hex */

/* ---- System calls (AS-SAFE; return -errno on failure, never touch errno) ----
 * Linux: raw system calls (sys_linux.c). Darwin: libSystem's wrappers (sys_darwin.c): Darwin's
 * system call numbers and conventions are not a stable ABI, and these wrappers are
 * async-signal-safe there. */

long fl_sys_write(int fd, const void *buf, size_t len);   /* AS-SAFE */
/* Writes all of buf, retrying on EINTR and short writes; 0 or -errno. AS-SAFE. */
long fl_sys_write_all(int fd, const void *buf, size_t len);
long fl_sys_read(int fd, void *buf, size_t len);          /* AS-SAFE */
long fl_sys_pread(int fd, void *buf, size_t len, int64_t off); /* AS-SAFE */
long fl_sys_pwrite(int fd, const void *buf, size_t len, int64_t off); /* AS-SAFE */
long fl_sys_openat(int dirfd, const char *path, int flags, int mode); /* AS-SAFE */
long fl_sys_close(int fd);                                /* AS-SAFE */
/* Calls fn(arg) with the stack pointer at `top` (16-byte aligned: the high end of memory the
 * caller owns for the call), then returns on the caller's stack. The crash handler runs its
 * capture on faultline's own stack this way, whatever stack the signal came on (a program's
 * small alternate stack). base/stack_<arch>.c. AS-SAFE. */
void fl_call_on_stack(void (*fn)(void *), void *arg, void *top);
long fl_sys_mprotect(void *addr, size_t len, int prot);  /* AS-SAFE */
long fl_sys_sigaltstack(const stack_t *ss, stack_t *old); /* AS-SAFE */
struct stat;
long fl_sys_fstat(int fd, struct stat *st);               /* AS-SAFE */
/* fcntl(fd, F_DUPFD_CLOEXEC, min): a copy of fd at the lowest free number >= min. AS-SAFE. */
long fl_sys_dupfd_cloexec(int fd, int min);
/* fd itself if it is above 2, else a close-on-exec copy of it at 3 or above (fd then closed),
 * -1 if none: a descriptor faultline keeps must leave 0, 1 and 2 to the program, whose next
 * open takes them back when it was started with them closed (daemons count on it). AS-SAFE. */
int fl_fd_above_std(int fd);
long fl_sys_renameat(int olddir, const char *oldp, int newdir, const char *newp); /* AS-SAFE */
long fl_sys_unlinkat(int dirfd, const char *path, int flags); /* AS-SAFE */
long fl_sys_mkdirat(int dirfd, const char *path, int mode); /* AS-SAFE */
long fl_sys_geteuid(void);                                /* AS-SAFE */
long fl_sys_fsync(int fd);                                /* AS-SAFE */
long fl_sys_getpid(void);                                 /* AS-SAFE */
/* The calling thread's id: Linux's tid; on Darwin the low 32 bits of the 64-bit thread id
 * (pthread_threadid_np, the id thread_info(THREAD_IDENTIFIER_INFO) reports). AS-SAFE. */
long fl_sys_gettid(void);
long fl_sys_clock_gettime(int clk, uint64_t *ns);         /* AS-SAFE; ns since the clock's epoch */
/* The same, by a system call rather than the vDSO (Darwin: fl_sys_clock_gettime): for a read in
 * a process that may never ask the time again (fl_install in a preloaded program), where the
 * vDSO's first use costs three page faults (its data pages and libc's wrapper), each dearer
 * than one system call. AS-SAFE. */
long fl_sys_clock_gettime_syscall(int clk, uint64_t *ns);
struct utsname;
/* uname(2) (Linux: the system call, which faults in no libc page of its own). AS-SAFE. */
long fl_sys_uname(struct utsname *u);
/* The size of a memory page (Linux: from the auxiliary vector, which the loader already
 * touched, unlike sysconf's code and tables). AS-SAFE. */
size_t fl_page_size(void);
/* Makes [addr, addr + len) resident and written now: Linux 5.14+ madvise(MADV_POPULATE_WRITE),
 * without a page fault (a first-touch fault costs 15-50 us on the project's VM, the call ~7);
 * elsewhere, or if the kernel refuses, a write to each page. AS-SAFE. */
void fl_sys_prefault(void *addr, size_t len);
/* The value of environment variable `name`, or NULL. Linux reads environ itself (libc's getenv
 * is one more code page to fault in at start); Darwin calls getenv (a library has no environ
 * there). NOT AS-SAFE (setenv may change the environment under it). */
const char *fl_env_get(const char *name);
/* The environment of programs started with libfaultline-preload.so in LD_PRELOAD, for the
 * runtimes that need a word to work with it (docs/preload.md). AddressSanitizer refuses to
 * start unless its runtime comes first among the libraries, which LD_PRELOAD puts the preload
 * library ahead of, so its check goes: ASAN_OPTIONS becomes "verify_asan_link_order=0" then
 * what it held (a setting of the user's, later, wins), unless it says so already (or is longer
 * than 4 KiB). Go's runtime ends a crash it handles itself (a fault in C code called through
 * cgo, an unrecovered panic) with exit(2), where no signal handler can see it: GOTRACEBACK=crash,
 * unless the user set GOTRACEBACK, makes it end the process with SIGABRT instead, after its
 * own traceback. NOT AS-SAFE (setenv). */
void fl_env_runtimes_prepare(void);
/* Random bytes: Linux getrandom(2) (flags as there); Darwin getentropy (flags ignored, at most
 * 256 bytes). Returns the count written or -errno. AS-SAFE. */
long fl_sys_getrandom(void *buf, size_t len, unsigned flags);
/* Sleeps; returns early on a signal. AS-SAFE. */
long fl_sys_nanosleep(uint64_t ns);
/* Sends sig to the calling thread (Linux tgkill, Darwin pthread_kill). AS-SAFE. */
long fl_sys_raise(int sig);
/* Waits while *addr == val, at most timeout_ns, woken by fl_sys_futex_wake (Linux: a futex;
 * Darwin: the ulock calls, compiled only). May return early; callers re-check and bound their
 * total wait by the clock. AS-SAFE. */
long fl_sys_futex_wait(volatile int *addr, int val, uint64_t timeout_ns);
long fl_sys_futex_wake(volatile int *addr, int count); /* AS-SAFE */

/* Linux only (sys_linux.c), and called only by *_linux.c files: */
long fl_sys_tgkill(int tgid, int tid, int sig);           /* AS-SAFE */
long fl_sys_prctl_get_name(char name[16]);                /* AS-SAFE; calling thread's name */
/* The calling thread's seccomp mode (prctl PR_GET_SECCOMP: 0 none, 2 a filter) or -errno. Under
 * a filter that does not allow prctl this call is the filter's to judge (systemd's @process set,
 * part of @system-service, allows it). AS-SAFE. */
long fl_sys_seccomp_mode(void);
long fl_sys_set_thread_name(const char *name);             /* the calling thread's; <= 15 bytes */
long fl_sys_process_vm_readv(int pid, void *dst, uint64_t src, size_t len); /* AS-SAFE */
long fl_sys_pipe2(int fds[2], int flags);                 /* AS-SAFE */
long fl_sys_getdents64(int fd, void *buf, size_t len);    /* AS-SAFE; struct linux_dirent64 records */
/* A POSIX timer (CLOCK_MONOTONIC) that sends SIGKILL to the process after ns: its id, or
 * -errno. AS-SAFE (Linux). */
int fl_sys_kill_timer(uint64_t ns);
long fl_sys_timer_delete(int id);                         /* AS-SAFE (Linux) */
long fl_sys_readlinkat(int dirfd, const char *path, char *buf, size_t len); /* AS-SAFE; no NUL added */
long fl_sys_getuid(void);                                 /* AS-SAFE */
/* Queues `sig` with the siginfo_t at `info` to thread tid of process tgid. AS-SAFE. */
long fl_sys_rt_tgsigqueueinfo(int tgid, int tid, int sig, const void *info);
/* Maps len bytes of zero-filled private memory (read and write) into *out. AS-SAFE. */
long fl_sys_mmap_anon(size_t len, void **out);

/* Opens a file whose name we did not choose for reading, without ever blocking: O_NONBLOCK
 * (a FIFO's open would wait for a writer), O_NOCTTY, O_CLOEXEC, then fstat: the descriptor only
 * if it is a regular file (*size set), else closed and FL_ENOTFILE; FL_EIO (errno says why) if
 * it cannot be opened. dirfd is a directory descriptor or AT_FDCWD; flags are added to the
 * open's (O_NOFOLLOW). AS-SAFE. */
int fl_open_regular(int dirfd, const char *path, int flags, uint64_t *size);

/* Maps the first size bytes of fd read-only, for the tools reading files they did not write
 * (binaries, debug files, caches): if the file shrinks while mapped, reads past its new end see
 * zeros instead of killing the process with SIGBUS, and a line on stderr names path (printable
 * ASCII only). The first call installs the SIGBUS handler that does this, when SIGBUS still has
 * its default action or the program called fl_file_map_own_sigbus (otherwise never over a
 * handler: in an application, fl_symbolize_local's files are then read without it); it also
 * takes "past the end of the object" faults in mappings made by libraries (libdw), without a
 * name. 0, FL_EINVAL (size 0), FL_EIO (errno). NOT AS-SAFE. */
int fl_file_map(int fd, uint64_t size, const char *path, const void **out);
/* For programs whose SIGBUS is theirs to give (the CLI, tests; a sanitizer's runtime may hold
 * it): fl_file_map installs its handler over whatever handles SIGBUS. NOT AS-SAFE. */
void fl_file_map_own_sigbus(void);
/* Unmaps what fl_file_map mapped. NOT AS-SAFE. */
void fl_file_unmap(const void *map, uint64_t size);

/* Where reports go when nobody says (the preload library, `faultline run`):
 * $XDG_STATE_HOME/faultline/reports, else $HOME/.local/state/faultline/reports, else
 * ${TMPDIR:-/tmp}/faultline-UID/faultline/reports, that last one only if faultline-UID is a
 * directory (not a link) of this user's with no access for others, made 0700 if missing (else
 * a line on stderr says why not). NULL if none, or if it does not fit in cap. NOT AS-SAFE. */
const char *fl_report_dir_default(char *buf, size_t cap);

/* mkdir -p: every missing directory of `path` made with `mode` (existing ones are left as they
 * are). 0, FL_ERANGE (longer than 1023 bytes) or FL_EIO (a mkdir failed other than by EEXIST:
 * its errno in *sys_errno unless NULL; errno itself is left alone). AS-SAFE. */
int fl_make_dirs(const char *path, int mode, int *sys_errno);

/* Calls fn with each name in the directory `path` (relative to dirfd; "." and ".." included),
 * read on a descriptor of its own, until fn returns nonzero, which is then returned. 0 at the
 * end, FL_EIO, FL_ENOSYS on Darwin (dir_darwin.c). AS-SAFE (4 KiB of stack). */
int fl_dir_names(int dirfd, const char *path, int (*fn)(void *ctx, const char *name), void *ctx);

/* The usual text and name of a file-system errno value ("permission denied (EACCES)"), NULL
 * for others (their number is then shown). AS-SAFE. */
const char *fl_errno_text(int e);

/* Writes a diagnostic line "faultline: <msg>\n" to stderr (fd 2), ignoring errors. AS-SAFE. */
void fl_log_stderr(const char *msg);

/* ---- The memory reader (LLVM libunwind's AddressSpace, Crashpad's ProcessMemory) ---- */

/* A source of bytes at 64-bit addresses: the live process (through the safe reader) or a
 * buffer/file image. Parsers in elf/ and macho/ read only through this. */
typedef struct fl_reader fl_reader_t;
struct fl_reader {
    /* Copies len bytes at addr into dst: 0, FL_EFAULT (unreadable) or FL_EINVAL. */
    int (*read)(const fl_reader_t *r, uint64_t addr, void *dst, size_t len);
    const void *base;  /* buffer readers: the bytes */
    uint64_t size;     /* buffer readers: their count */
    uint64_t origin;   /* buffer readers: the address of base[0] */
    const fl_reader_t *fallback; /* range readers: for what lies outside [origin, origin+size) */
};

/* Where r holds [addr, addr+len) as plain bytes (readers with `base` set answer [origin,
 * origin+size) from base), a pointer to them; else NULL. AS-SAFE. */
static inline const void *fl_reader_direct(const fl_reader_t *r, uint64_t addr, size_t len) {
    if (r->base && addr >= r->origin && addr - r->origin <= r->size &&
        len <= r->size - (addr - r->origin))
        return (const char *)r->base + (addr - r->origin);
    return (const void *)0;
}

/* Reads through r; AS-SAFE when r is AS-SAFE (the live reader and buffer readers are).
 * What fl_reader_direct answers is copied inline: a frame-pointer walk over a stack read this
 * way costs a few ns per frame, not a call. */
static inline int fl_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    const void *p = fl_reader_direct(r, addr, len);
    if (p) {
        __builtin_memcpy(dst, p, len);
        return 0;
    }
    return r->read(r, addr, dst, len);
}
static inline int fl_read_u64(const fl_reader_t *r, uint64_t addr, uint64_t *out) { /* AS-SAFE */
    return fl_read(r, addr, out, sizeof *out);
}
static inline int fl_read_u32(const fl_reader_t *r, uint64_t addr, uint32_t *out) { /* AS-SAFE */
    return fl_read(r, addr, out, sizeof *out);
}
/* Reads a NUL-terminated string of at most cap-1 bytes; FL_ERANGE if no NUL within cap-1
 * (dst then holds the truncated prefix, terminated). AS-SAFE. */
int fl_read_cstr(const fl_reader_t *r, uint64_t addr, char *dst, size_t cap);

/* A reader over [buf, buf+size) that answers for addresses [origin, origin+size). AS-SAFE. */
void fl_reader_init_buffer(fl_reader_t *r, const void *buf, uint64_t size, uint64_t origin);
/* A reader over an open file: addresses are file offsets, read with pread (the descriptor is
 * kept in `origin`; the caller closes it). AS-SAFE. */
void fl_reader_init_fd(fl_reader_t *r, int fd);

/* A reader that loads [lo, hi) directly (a range the caller has just seen mapped readable, such
 * as the crashed thread's stack mapping in /proc/self/maps) and sends everything else to
 * `fallback`. A system call per read costs ~1 µs; a frame-pointer step reads twice. AS-SAFE. */
void fl_reader_init_range(fl_reader_t *r, uint64_t lo, uint64_t hi, const fl_reader_t *fallback);

/* The live process's safe reader: reads memory of unknown validity without faulting.
 * Linux: fl_memory_init probes the methods at install time (process_vm_readv on self, which
 * qemu-user and some seccomp policies refuse; then write() into a pre-opened pipe, which the
 * kernel validates) and keeps the first that works. Darwin: vm_read_overwrite on our own task
 * (FL_MEMORY_MACH, the only method; forcing another is FL_ENOSYS). NOT AS-SAFE (opens a pipe). */
typedef enum {
    FL_MEMORY_NONE = 0, FL_MEMORY_VM_READV = 1, FL_MEMORY_PIPE = 2, FL_MEMORY_MACH = 3
} fl_memory_method_t;
int fl_memory_init(fl_memory_method_t force /* NONE = probe */);
fl_memory_method_t fl_memory_method(void);       /* AS-SAFE */
/* Called at each capture: re-reads our pid for the process_vm_readv method (after a fork), and
 * makes the pipe method a new pipe if the program closed or reused either of its descriptors
 * (nothing to do on Darwin). (process_vm_readv also moves, by itself, to the reading thread's
 * id once the main thread has exited.) AS-SAFE. */
void fl_memory_refresh_pid(void);
const fl_reader_t *fl_memory_reader(void);       /* AS-SAFE; valid after fl_memory_init */

/* Darwin only (memory_darwin.c): the VM region holding addr, or when addr is unmapped the first
 * one above it (vm_region_64): [*start, *end) and its current protection as FL_MAP_* bits. 0, or
 * FL_ENOTFOUND when nothing is mapped at or above addr. AS-SAFE (one Mach call). */
int fl_memory_region(uint64_t addr, uint64_t *start, uint64_t *end, uint32_t *perms);

/* ---- A register file in DWARF numbering (the unwind tables' own: compact unwind and CFI) ----
 * x86_64: rax rdx rcx rbx rsi rdi rbp rsp 0..7, r8..r15 8..15, the return address (rip) 16;
 * arm64: x0..x30 0..30, sp 31, pc 32. Other DWARF registers (vector and float) are not tracked.
 * r[i] is known when bit i of `valid` is set. */
#define FL_DWARF_REGS 33u
typedef struct fl_dwarf_regs {
    uint64_t r[FL_DWARF_REGS];
    uint64_t valid;
} fl_dwarf_regs_t;

/* ---- Loaded images: the platform-neutral model (filled by elf/ on Linux, macho/ on Darwin) ---- */

#define FL_BUILD_ID_MAX 32u
#define FL_IMAGE_PATH_MAX 512u
#define FL_IMAGES_MAX 2048u

enum { /* values equal faultline.Image.BuildIdKind in proto/faultline.proto */
    FL_BUILD_ID_NONE = 0,
    FL_BUILD_ID_GNU = 1,
    FL_BUILD_ID_TEXT_HASH = 2,    /* the first executable segment's first 4096 bytes, folded */
    FL_BUILD_ID_MACHO_UUID = 3,
    FL_BUILD_ID_TEXT_SECTION = 4  /* .text's first 4096 bytes, folded (Breakpad's and Sentry's) */
};

/* One loaded image as found in memory. ELF: ranges from the PT_LOADs. Mach-O: start/end and
 * text_start/text_end are the __TEXT segment (the other segments of a dyld shared cache image lie
 * elsewhere, among other images'), build_id the LC_UUID. */
typedef struct fl_image {
    uint64_t slide;        /* load bias: runtime address = file vaddr + slide */
    uint64_t start, end;   /* lowest PT_LOAD start .. highest PT_LOAD end (runtime) */
    uint64_t text_start, text_end; /* lowest/highest end of the executable PT_LOADs (runtime) */
    uint64_t phdr_addr;    /* ELF: runtime address of the program headers (0 if unknown) */
    uint64_t eh_frame_hdr; /* ELF: runtime address of PT_GNU_EH_FRAME (0 if none) */
    uint64_t eh_frame_hdr_size;
    /* The CFI records where no .eh_frame_hdr names them (0, 0 if none or unknown): Mach-O's
     * __TEXT,__eh_frame; a static ELF executable's .eh_frame from its section headers. */
    uint64_t eh_frame, eh_frame_size;
    uint64_t unwind_info;  /* Mach-O: runtime address of __TEXT,__unwind_info (0 if none) */
    uint64_t function_starts; /* Mach-O: runtime address of LC_FUNCTION_STARTS' table (0: none) */
    uint32_t function_starts_size;
    /* Where this capture's memory map shows the unwind tables readable, so that they are read in
     * place rather than through the safe reader (fl_images_map_tables; 0, 0: not known). */
    uint64_t tables_lo, tables_hi;
    /* What tells this image from another loaded at the same place (its ranges, tables and build
     * id, hashed; never 0 once fl_images_sort set it): the key of cached unwind rows. */
    uint64_t id;
    uint64_t unwind_info_size;
    /* ELF: what names the loader's entry it was read from (fl_elf_images_refresh; 0: none). */
    uint64_t loader_key;
    uint32_t cputype;      /* Mach-O: the header's cputype (0 for ELF) */
    uint16_t phnum;
    uint8_t build_id_len;
    uint8_t build_id_kind; /* FL_BUILD_ID_* */
    uint8_t build_id[FL_BUILD_ID_MAX];
    bool is_main, is_vdso;
    bool path_truncated;
    char path[FL_IMAGE_PATH_MAX];
} fl_image_t;

typedef struct fl_image_list {
    fl_image_t image[FL_IMAGES_MAX];
    unsigned count;
    bool truncated;    /* more images than FL_IMAGES_MAX */
    bool inconsistent; /* the loader's list was being changed while it was read */
    /* Indices of the images by ascending start, valid while sorted == count (fl_images_sort):
     * lookups are then binary searches, not scans (a process can have hundreds of images, and
     * the walker looks up every return address). */
    unsigned sorted;
    uint16_t by_start[FL_IMAGES_MAX];
} fl_image_list_t;

/* Builds list->by_start (heapsort: bounded, in place) and sets each image's id. The collectors
 * call it. AS-SAFE. */
void fl_images_sort(fl_image_list_t *list);
/* The identity fl_images_sort stores in img->id. AS-SAFE. */
uint64_t fl_image_identity(const fl_image_t *img);

/* The image whose [start, end) holds addr, or NULL. AS-SAFE. */
const fl_image_t *fl_images_find(const fl_image_list_t *list, uint64_t addr);

/* True when addr lies in an executable segment ([text_start, text_end)) of some image. AS-SAFE. */
bool fl_images_is_text(const fl_image_list_t *list, uint64_t addr);

/* ---- Memory maps of the live process ---- */

#define FL_MAPS_MAX 8192u
#define FL_MAP_R 1u
#define FL_MAP_W 2u
#define FL_MAP_X 4u

typedef struct fl_map {
    uint64_t start, end, offset;
    uint32_t perms;    /* FL_MAP_* */
    uint32_t name_off; /* offset of the NUL-terminated path in fl_maps_t.names, or UINT32_MAX */
} fl_map_t;

typedef struct fl_maps {
    fl_map_t map[FL_MAPS_MAX];
    unsigned count;
    bool truncated;          /* more mappings than FL_MAPS_MAX or names than fit */
    char names[128 * 1024];
    uint32_t names_len;
} fl_maps_t;

/* Parses /proc/self/maps into m with raw syscalls and a caller-supplied scratch buffer
 * (scratch_len >= 4096). AS-SAFE. Needs one free file descriptor. */
int fl_maps_read(fl_maps_t *m, char *scratch, size_t scratch_len);
/* Sets each image's tables_lo/tables_hi: the readable mappings around its unwind tables
 * (.eh_frame_hdr, else its CFI records), contiguous ones joined. AS-SAFE. */
void fl_images_map_tables(fl_image_list_t *list, const fl_maps_t *maps);
/* The mapping containing addr, or NULL. Binary search; AS-SAFE. */
const fl_map_t *fl_maps_find(const fl_maps_t *m, uint64_t addr);
/* The stack mapping of a thread whose stack pointer is sp: the writable mapping holding it, or
 * for an overflowed stack (sp in the guard gap below it) the writable mapping starting at most
 * 64 KiB above sp; NULL if neither. AS-SAFE. */
const fl_map_t *fl_maps_stack(const fl_maps_t *m, uint64_t sp);
const char *fl_maps_name(const fl_maps_t *m, const fl_map_t *map); /* AS-SAFE; "" if none */

/* ---- Fault guard: recover from a fault inside code we cannot make read safely ----
 * LLVM libunwind dereferences memory directly. Around such calls the crash path opens a guard;
 * if the guarded code faults, the crash handler (which sees the nested signal) jumps back to
 * the guard instead of dying, and the guarded call reports failure. One guard per thread id. */
#include <setjmp.h>
typedef struct fl_guard {
    sigjmp_buf env;
    volatile int tid;   /* owner while active, 0 when idle */
    volatile int fired; /* set by fl_guard_recover when it jumps */
} fl_guard_t;

/* Opens a guard for thread `tid`: evaluates true on entry, false after a recovered fault. Use as
 *   if (FL_GUARD_ENTER(g, tid)) { risky(); } FL_GUARD_LEAVE(g);
 * The signal mask is not saved (that would be a system call per guard): after a recovered fault
 * the thread keeps the mask of the signal handler that recovered it, which inside faultline's
 * crash handler is the mask it already had. Callers outside that handler restore their mask
 * when g->fired. AS-SAFE. (sigsetjmp must run in the caller's frame, hence a macro.) */
#define FL_GUARD_ENTER(g, tid) (fl_guard_arm((g), (tid)), sigsetjmp((g)->env, 0) == 0)
#define FL_GUARD_LEAVE(g) fl_guard_disarm(g)
void fl_guard_arm(fl_guard_t *g, int tid); /* AS-SAFE */
void fl_guard_disarm(fl_guard_t *g);       /* AS-SAFE */
/* Called from a signal handler for a synchronous fault: if this thread has an armed guard,
 * jumps back to it (does not return); otherwise returns. AS-SAFE. */
void fl_guard_recover(void);

#endif
