/* SPDX-License-Identifier: MIT */
/* report: the streaming protobuf writer used at crash time, and the reader used on the next start. */
#ifndef FAULTLINE_REPORT_H
#define FAULTLINE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "elf/elf.h"
#include "frames/frames.h"

#define FL_REPORT_MAGIC "faultline"
/* 2: threads carry registers and frames in compact packed fields (docs/report-format.md).
 * Readers accept 1 and 2. */
#define FL_REPORT_FORMAT_VERSION 2u
#define FL_REPORT_PREFIX "faultline-"
#define FL_REPORT_SUFFIX ".flr"
#define FL_REPORT_TMP_PREFIX ".tmp-"
/* "faultline-" + 32 hex digits of the report id + suffix */
#define FL_REPORT_NAME_MAX 64u

/* ---- Protobuf encoding into a fixed buffer (AS-SAFE, no allocation) ---- */

#define FL_PB_DEPTH_MAX 8u

typedef struct fl_pb {
    uint8_t *buf;
    size_t cap, len;
    bool overflow; /* something did not fit; the buffer's content must not be used */
    unsigned depth;
    size_t open[FL_PB_DEPTH_MAX]; /* start of each open nested message's body */
} fl_pb_t;

void fl_pb_init(fl_pb_t *pb, void *buf, size_t cap);                     /* AS-SAFE */
void fl_pb_varint(fl_pb_t *pb, unsigned field, uint64_t v);              /* AS-SAFE; skips 0 */
void fl_pb_sint(fl_pb_t *pb, unsigned field, int64_t v);                 /* AS-SAFE; int32/int64, skips 0 */
void fl_pb_bytes(fl_pb_t *pb, unsigned field, const void *p, size_t n);  /* AS-SAFE; skips empty */
/* Strings: proto3 requires UTF-8 (protoc and most decoders reject anything else), so each
 * invalid byte is written as U+FFFD. fl_pb_stringn reads at most max bytes of s. */
void fl_pb_string(fl_pb_t *pb, unsigned field, const char *s);           /* AS-SAFE; skips NULL/"" */
void fl_pb_stringn(fl_pb_t *pb, unsigned field, const char *s, size_t max); /* AS-SAFE */
/* Opens a length-delimited field (wire type 2) whose length is known only at its end: a nested
 * message, a packed repeated field, or a `bytes` field put together piece by piece. Every begin
 * needs an end. AS-SAFE. */
void fl_pb_begin(fl_pb_t *pb, unsigned field);
void fl_pb_end(fl_pb_t *pb);
/* Elements of a packed repeated field (between fl_pb_begin and fl_pb_end), with no tag and 0
 * included: a uint64/uint32/enum element, a sint64/sint32 element (zigzag), one byte of a
 * `bytes` field. AS-SAFE. */
void fl_pb_packed_varint(fl_pb_t *pb, uint64_t v);
void fl_pb_packed_zigzag(fl_pb_t *pb, int64_t v);
void fl_pb_packed_byte(fl_pb_t *pb, uint8_t b);
/* sint64's zigzag mapping: 0, -1, 1, -2, ... to 0, 1, 2, 3, ... AS-SAFE. */
uint64_t fl_pb_zigzag(int64_t v);

/* ---- The crash-time report writer (AS-SAFE) ---- */

/* Everything here is written as top-level fields of faultline.Report, each flushed to the file
 * as soon as it is complete (see proto/faultline.proto for why). */
typedef struct fl_report_writer {
    int dirfd;
    int fd;
    int err;            /* first error met (negative FL_E*); writes after it are dropped */
    int sys_errno;      /* errno of the system call behind err (FL_EIO), else 0 */
    uint64_t bytes;     /* bytes written to the file */
    uint8_t *scratch;   /* encoding buffer for one top-level item */
    size_t scratch_cap;
    uint8_t *out;       /* items gathered for one write (fl_report_writer_buffer), or NULL */
    size_t out_cap, out_len;
    char tmp_name[FL_REPORT_NAME_MAX];
    char final_name[FL_REPORT_NAME_MAX];
} fl_report_writer_t;

typedef struct fl_report_header {
    uint8_t report_id[16];
    uint64_t time_unix_ns;
    int32_t pid;
    int kind; /* 1 crash, 2 snapshot, 3 hang */
    int arch;
    const char *process_path, *app_name, *app_version, *reason;
    const char *os_name, *os_release, *os_version, *machine, *hostname;
    uint64_t process_start_unix_ns;
} fl_report_header_t;

typedef struct fl_report_signal {
    int number, code, sender_pid, crashed_tid;
    uint64_t address;
    bool has_address;
    uint32_t frame; /* the interrupted signal's frame in the crashed thread */
} fl_report_signal_t;

/* A Mach exception (Darwin's exception server): its type and codes as received. */
#define FL_REPORT_MACH_CODES_MAX 4u
typedef struct fl_report_mach_exception {
    int type;             /* exception_type_t */
    unsigned code_count;  /* codes used (the message's codeCnt, at most FL_REPORT_MACH_CODES_MAX) */
    uint64_t codes[FL_REPORT_MACH_CODES_MAX];
} fl_report_mach_exception_t;

/* What a reader accepts in one thread (more is damage): register values, and frames (more are
 * cut to this many, frames_truncated set). FL_MAX_FRAMES_LIMIT caps the writer to the same. */
#define FL_REPORT_REGS_MAX 256u
#define FL_REPORT_FRAMES_MAX 4096u

typedef struct fl_report_thread {
    int tid;
    const char *name;
    bool crashed;
    int state; /* faultline.Thread.State */
    const fl_regs_t *regs; /* NULL: none captured */
    const fl_frame_t *frames;
    unsigned frame_count;
    bool frames_truncated;
    unsigned frames_omitted, frames_omitted_at; /* fl_walk_result_t's omitted, omitted_at */
    const char *unwind_stop;
    bool monitored; /* the watchdog's monitored thread (a hang report) */
} fl_report_thread_t;

/* A hang found by the watchdog: faultline.Hang. */
typedef struct fl_report_hang {
    int monitored_tid;
    uint64_t started_unix_ns, duration_ns, check_interval_ns;
    unsigned threshold_ms, sequence;
    bool recovered;
} fl_report_hang_t;

/* FL_REPORT_PREFIX "<anything>" FL_REPORT_SUFFIX: the name of a finished report. AS-SAFE. */
bool fl_report_is_name(const char *name);
/* How many finished reports (fl_report_is_name) dirfd holds, counted up to cap (cap once
 * there are that many or more); FL_ENOSYS where the platform cannot list at crash time, FL_EIO.
 * AS-SAFE. */
int fl_report_dir_count(int dirfd, unsigned cap);
/* Creates "<dir>/.tmp-faultline-<id>.flr" (O_EXCL|O_NOFOLLOW, mode 0600) and writes the magic and
 * format version. `scratch` (>= 64 KiB advised, FL_EINVAL below 256 bytes) encodes one top-level
 * item at a time. Returns 0, FL_EINVAL or FL_EIO (w->sys_errno tells why). AS-SAFE. */
int fl_report_writer_open(fl_report_writer_t *w, int dirfd, const uint8_t id[16], uint8_t *scratch,
                          size_t scratch_cap);
/* Each writes one top-level field. An item larger than the scratch buffer is replaced by a Note
 * saying so, except a thread, which keeps as many of its innermost frames as fit
 * (frames_truncated set, plus a Note). A thread is written in the compact form only
 * (register_values, frame_*_deltas, frame_methods, frame_sp_shift; at most FL_REGS_MAX
 * registers; methods above 7 as 0, bit 3 of a method nibble the trampoline mark): see
 * docs/report-format.md. */
void fl_report_write_header(fl_report_writer_t *w, const fl_report_header_t *h);   /* AS-SAFE */
void fl_report_write_signal(fl_report_writer_t *w, const fl_report_signal_t *s);   /* AS-SAFE */
/* Report.interrupted_signal: the signal a handler was handling when the crash came. AS-SAFE. */
void fl_report_write_interrupted_signal(fl_report_writer_t *w, const fl_report_signal_t *s);
/* Report.abort_message: what the C library said as it aborted the process. AS-SAFE. */
void fl_report_write_abort_message(fl_report_writer_t *w, const char *msg);
/* Report.terminate_type: the C++ exception's type std::terminate was called with. AS-SAFE. */
void fl_report_write_terminate_type(fl_report_writer_t *w, const char *type);
/* Report.mach_exception, with the type's name ("EXC_BAD_ACCESS") and, where code[0] is a
 * kern_return_t or a machine code with a name, that name. Portable: the values are Mach's ABI. */
void fl_report_write_mach_exception(fl_report_writer_t *w, const fl_report_mach_exception_t *e); /* AS-SAFE */
void fl_report_write_thread(fl_report_writer_t *w, const fl_report_thread_t *t);   /* AS-SAFE */
void fl_report_write_hang(fl_report_writer_t *w, const fl_report_hang_t *h);       /* AS-SAFE */
/* Appends Report.hang (all of h: the final duration, recovered) to the finished report `name` in
 * dirfd, in one write, after its `complete`: the last occurrence of the field is the one readers
 * see (protobuf merges them, protobuf-c 1.4 keeps the last whole; docs/hangs.md). Opened
 * O_APPEND|O_NOFOLLOW, never
 * created: FL_ENOTFOUND when the report is gone (uploaded, pruned), FL_EIO. AS-SAFE. */
int fl_report_append_hang(int dirfd, const char *name, const fl_report_hang_t *h);
/* threads_total: how many threads the process had (the report lists at most max_threads);
 * nothing is written for 0. AS-SAFE. */
void fl_report_write_threads_total(fl_report_writer_t *w, uint32_t n);
void fl_report_write_image(fl_report_writer_t *w, const fl_image_t *img);          /* AS-SAFE */
void fl_report_write_annotation(fl_report_writer_t *w, const char *k, const char *v); /* AS-SAFE */
void fl_report_write_note(fl_report_writer_t *w, const char *text);                /* AS-SAFE */
/* Report.memory: len bytes of thread tid's memory from start (a stack, read by the caller).
 * AS-SAFE. */
void fl_report_write_memory(fl_report_writer_t *w, int tid, uint64_t start, const uint8_t *data,
                            size_t len);
/* Writes `complete` (unless an error occurred), fsyncs, closes the file and renames it to
 * "faultline-<id>.flr". Returns w->err or 0 (FL_ESTATE if the file was never opened). On an
 * earlier error the partial file is still renamed (its prefix decodes). AS-SAFE. */
int fl_report_writer_finish(fl_report_writer_t *w);
/* Gathers the items in buf (cap bytes) and writes them when it is full, at fl_report_writer_flush
 * and when the report ends (finish or abandon), instead of one write per item: a system call per
 * thread costs a capture of 1,000 threads milliseconds. Call right after a successful open.
 * AS-SAFE. */
void fl_report_writer_buffer(fl_report_writer_t *w, uint8_t *buf, size_t cap);
/* Writes what is gathered (the items up to here are then in the file whatever happens). AS-SAFE. */
void fl_report_writer_flush(fl_report_writer_t *w);

/* Closes and renames the report WITHOUT the `complete` marker: readers see it as cut short and
 * decode its complete prefix. For a capture that cannot go on (a fault in the handler). AS-SAFE. */
int fl_report_writer_abandon(fl_report_writer_t *w);
/* Says on stderr that a report could not be created in dir, with the writer's FL_E* error and
 * errno ("faultline: cannot create a crash report in DIR (error: ..., errno N)"). AS-SAFE. */
void fl_report_writer_log_failure(const fl_report_writer_t *w, const char *dir);

/* Signal and si_code names ("SIGSEGV", "SEGV_MAPERR") of the platform the library runs on
 * (signals_<platform>.c); "" when unknown. AS-SAFE. */
const char *fl_signal_name(int sig);
const char *fl_signal_code_name(int sig, int code);
/* Mach exception names ("EXC_BAD_ACCESS") and the name of an exception's code[0] on `arch`
 * (FL_REGS_ARCH_*: "KERN_INVALID_ADDRESS", "EXC_ARM_DA_ALIGN", "EXC_I386_GPFLT", ...); "" when
 * unknown. The values are Mach's ABI, so these work on any platform (mach_names.c). AS-SAFE. */
const char *fl_mach_exception_name(int type);
const char *fl_mach_exception_code_name(int arch, int type, uint64_t code0);

/* ---- Reading reports (NOT AS-SAFE) ---- */

struct Faultline__Report; /* generated by protoc-c from proto/faultline.proto */

/* Decodes a report held in memory (format versions 1 and 2). A report cut short decodes its
 * longest complete prefix and *truncated is set (return 0); so does a damaged one, up to its
 * first top-level field that does not decode (a thread whose compact fields disagree in length,
 * with an sp shift of 64 or more, or with more than FL_REPORT_REGS_MAX registers, counts as not
 * decoding). Each thread's compact
 * fields are expanded into `registers` (names from Header.arch; "reg<i>" when the arch or the
 * name is unknown) and `frames` (at most FL_REPORT_FRAMES_MAX, beyond which frames_truncated is
 * set), allocated like protobuf-c's own fields so that fl_report_free (or
 * faultline__report__free_unpacked) frees them. FL_ENOTREPORT when the magic is missing,
 * FL_EVERSION for a newer format, FL_EBADDATA when not even the prefix decodes, FL_ENOMEM. */
int fl_report_decode(const uint8_t *data, size_t len, struct Faultline__Report **out,
                     bool *truncated);
/* Reads and decodes a report file; errors as fl_report_decode plus FL_EIO. */
int fl_report_read_file(const char *path, struct Faultline__Report **out, bool *truncated);
void fl_report_free(struct Faultline__Report *r);

/* ---- The report store's files (NOT AS-SAFE) ---- */


/* What the start of a report file says, without reading all of it. */
typedef struct fl_report_peek {
    bool has_header;        /* false: the file ends (or is damaged) before its header */
    uint8_t id[16];
    uint64_t time_unix_ns;
    int32_t pid;
    int kind;
    int signal;             /* Signal.number, 0 if none (or it lies beyond the peek) */
    char hostname[256];
} fl_report_peek_t;

/* Decodes the header (and the signal) from the first 8 KiB of name in dirfd (O_NOFOLLOW).
 * 0 (has_header tells whether there is one), FL_EIO (errno), or fl_report_decode's error. */
int fl_report_peek(int dirfd, const char *name, fl_report_peek_t *out);

/* Remembers, for fl_last_crash, that the report p describes (if a crash not yet told) is
 * leaving the pending set: deleted, pruned or quarantined. Call before it leaves. Waits at
 * most 1 s for the state lock; 0, FL_EBUSY, FL_EIO. */
int fl_report_state_note_removed(int dirfd, const fl_report_peek_t *p);

/* ---- The run marker: how the previous run ended (docs/hangs.md) ----
 * One file per fl_install, <dir>/.run-<start ns, 16 hex digits>-<pid>, flock'ed by the process
 * (the lock dies with it: an ended run is one whose lock can be taken), holding this record in
 * host byte order. Fields are rewritten in place with pwrite, each region by one writer: state
 * and crash_id by the crash path and the clean exit, the hang region by the watchdog. */
#define FL_RUN_MARKER_PREFIX ".run-"
#define FL_RUN_MARKER_MAGIC "flrun01\n"
enum { /* fl_run_record_t.state */
    FL_RUN_STATE_RUNNING = 1,
    FL_RUN_STATE_CLEAN = 2,   /* exit, return from main, fl_uninstall */
    FL_RUN_STATE_CRASHED = 3  /* a crash capture began (crash_id names its report) */
};
typedef struct fl_run_record {
    char magic[8];
    int32_t pid;
    uint32_t state;
    uint64_t start_unix_ns;      /* fl_install's CLOCK_REALTIME */
    char boot_id[40];            /* /proc/sys/kernel/random/boot_id (Darwin: kern.bootsessionuuid) */
    uint8_t crash_id[16];
    /* The hang region (fl_run_hang_t), written whole: */
    uint32_t hang;               /* 1 while a hang is in progress */
    uint32_t hang_sequence;
    uint8_t hang_id[16];         /* the hang report's id */
    uint64_t hang_start_unix_ns;
    uint64_t hang_duration_ns;   /* at the watchdog's last check */
} fl_run_record_t;
_Static_assert(sizeof(fl_run_record_t) == 120, "the marker's layout is fixed");

typedef struct fl_run_marker {
    int fd;       /* -1: none. Open read-only (it holds the lock): no descriptor of ours is open
                   * for writing in the report directory, whose file system may be remounted
                   * read-only; each write opens the file for that write. */
    int dirfd;    /* the report directory */
    int pid;      /* the process that owns it: a fork child never writes its parent's marker */
    char name[64];
} fl_run_marker_t;

/* Creates this run's marker in dirfd (state RUNNING) and locks it; first removes markers of
 * ended runs beyond what fl_last_run needs (every clean one but the newest, and the oldest past
 * 64 unclean ones). FL_EIO. NOT AS-SAFE. */
int fl_run_marker_create(int dirfd, uint64_t start_unix_ns, fl_run_marker_t *m);
/* Records a state, with the report id for CRASHED (written before the state). CLEAN never
 * replaces CRASHED. Nothing happens in another process than the marker's (a fork child).
 * AS-SAFE. */
void fl_run_marker_set_state(const fl_run_marker_t *m, unsigned state, const uint8_t id[16]);
/* Rewrites the hang region: in progress (with the report id, start and duration so far), or
 * over. AS-SAFE. */
void fl_run_marker_set_hang(const fl_run_marker_t *m, bool in_progress, unsigned sequence,
                            const uint8_t id[16], uint64_t start_unix_ns, uint64_t duration_ns);
/* Removes the marker's file, to give its space to a crash report on a full file system: whether
 * there was one to remove (never in another process than the marker's). AS-SAFE. */
bool fl_run_marker_remove(fl_run_marker_t *m);
/* Closes the descriptor (the lock goes with the last copy of it). NOT AS-SAFE. */
void fl_run_marker_close(fl_run_marker_t *m);
/* This boot's id, 36 characters and a NUL; "" when unknown (bootid_<platform>.c). NOT AS-SAFE. */
void fl_report_boot_id(char out[40]);
/* Takes <dir>/.state.lock (fl_last_crash's), waiting at most 1 s: 0 (*fd to close), FL_EBUSY,
 * FL_EIO. NOT AS-SAFE. */
int fl_report_state_lock(int dirfd, int *fd);
/* Opens report_dir and takes its state lock (fl_report_state_lock): 0 (*dirfd and *lock to
 * close), FL_ENOTFOUND (no such directory), FL_EIO, FL_EBUSY. NOT AS-SAFE. */
int fl_report_dir_lock(const char *report_dir, int *dirfd, int *lock);

#endif
