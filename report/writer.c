/* SPDX-License-Identifier: MIT */
/* The crash-time report writer: one top-level field at a time, each flushed at once. AS-SAFE. */
#include <errno.h>
#include <fcntl.h>

#include "report/report.h"

/* Crash-time code: no heap, no stdio. */
#pragma GCC poison malloc calloc realloc free printf fprintf snprintf sprintf

/* Report fields (proto/faultline.proto). */
enum {
    F_MAGIC = 1, F_VERSION = 2, F_HEADER = 3, F_SIGNAL = 4, F_THREAD = 5, F_IMAGE = 6,
    F_ANNOTATION = 7, F_NOTE = 8, F_THREADS_TOTAL = 9, F_MACH_EXCEPTION = 10,
    F_INTERRUPTED_SIGNAL = 12, F_ABORT_MESSAGE = 13, F_TERMINATE_TYPE = 14,
    F_COMPLETE = 15,
    F_MEMORY = 20
};
/* Thread fields. */
enum {
    T_TID = 1, T_NAME = 2, T_CRASHED = 3, T_FRAMES_TRUNCATED = 6, T_UNWIND_STOP = 7, T_STATE = 8,
    T_REGISTER_VALUES = 9, T_PC_DELTAS = 10, T_SP_DELTAS = 11, T_METHODS = 12, T_SP_SHIFT = 13,
    T_FRAMES_OMITTED = 14, T_FRAMES_OMITTED_AT = 15, T_MONITORED = 16
};

#define SCRATCH_MIN 256u

static void set_err(fl_report_writer_t *w, int err, long sys_ret) {
    if (!w->err) {
        w->err = err;
        w->sys_errno = sys_ret < 0 ? (int)-sys_ret : 0;
    }
}

static void write_now(fl_report_writer_t *w, const void *p, size_t n) {
    if (w->fd < 0 || w->err)
        return;
    long r = fl_sys_write_all(w->fd, p, n);
    if (r < 0)
        set_err(w, FL_EIO, r);
    else
        w->bytes += n;
}

void fl_report_writer_flush(fl_report_writer_t *w) {
    if (!w->out_len)
        return;
    size_t n = w->out_len;
    w->out_len = 0;
    write_now(w, w->out, n);
}

void fl_report_writer_buffer(fl_report_writer_t *w, uint8_t *buf, size_t cap) {
    fl_report_writer_flush(w);
    w->out = buf;
    w->out_cap = buf ? cap : 0;
}

static void write_raw(fl_report_writer_t *w, const void *p, size_t n) {
    if (w->fd < 0 || w->err || n == 0) /* (an empty item, without a buffer: w->out is NULL) */
        return;
    if (n > w->out_cap - w->out_len)
        fl_report_writer_flush(w);
    if (n > w->out_cap - w->out_len) {
        write_now(w, p, n);
        return;
    }
    fl_memcpy(w->out + w->out_len, p, n);
    w->out_len += n;
}

/* Starts encoding one top-level item into the scratch buffer; false when writing has stopped. */
static bool item_begin(fl_report_writer_t *w, fl_pb_t *pb) {
    if (w->fd < 0 || w->err)
        return false;
    fl_pb_init(pb, w->scratch, w->scratch_cap);
    return true;
}

/* Writes the encoded item; false (nothing written) when it did not fit the scratch buffer. */
static bool item_flush(fl_report_writer_t *w, const fl_pb_t *pb) {
    if (pb->overflow)
        return false;
    write_raw(w, pb->buf, pb->len);
    return true;
}

static void put_note(fl_report_writer_t *w, const char *text) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_NOTE);
    fl_pb_string(&pb, 1, text);
    fl_pb_end(&pb);
    item_flush(w, &pb);
}

/* Records, in place of an item that does not fit the scratch buffer, that it was dropped. */
static void note_dropped(fl_report_writer_t *w, const char *what, uint64_t id) {
    char msg[160];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, what);
    if (id != UINT64_MAX) {
        fl_strbuf_puts(&sb, " ");
        fl_strbuf_putu(&sb, id);
    }
    fl_strbuf_puts(&sb, " dropped: larger than the ");
    fl_strbuf_putu(&sb, w->scratch_cap);
    fl_strbuf_puts(&sb, "-byte scratch buffer");
    put_note(w, msg);
}

static void hex_id(char *dst, const uint8_t id[16]) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 16; i++) {
        dst[2 * i] = digits[id[i] >> 4];
        dst[2 * i + 1] = digits[id[i] & 15];
    }
    dst[32] = '\0';
}

int fl_report_writer_open(fl_report_writer_t *w, int dirfd, const uint8_t id[16], uint8_t *scratch,
                          size_t scratch_cap) {
    fl_memset(w, 0, sizeof *w);
    w->fd = -1;
    w->dirfd = dirfd;
    w->scratch = scratch;
    w->scratch_cap = scratch_cap;
    if (!id || !scratch || scratch_cap < SCRATCH_MIN) {
        w->err = FL_EINVAL;
        return w->err;
    }
    char hex[33];
    hex_id(hex, id);
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, w->final_name, sizeof w->final_name);
    fl_strbuf_puts(&sb, FL_REPORT_PREFIX);
    fl_strbuf_puts(&sb, hex);
    fl_strbuf_puts(&sb, FL_REPORT_SUFFIX);
    fl_strbuf_init(&sb, w->tmp_name, sizeof w->tmp_name);
    fl_strbuf_puts(&sb, FL_REPORT_TMP_PREFIX);
    fl_strbuf_puts(&sb, w->final_name);

    long fd = fl_sys_openat(dirfd, w->tmp_name,
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        set_err(w, FL_EIO, fd);
        return w->err;
    }
    w->fd = (int)fd;
    /* The fixed 13-byte prefix every reader checks first: magic (field 1), format_version (2). */
    static const uint8_t prefix[] = {F_MAGIC << 3 | 2, 9, 'f', 'a', 'u', 'l', 't', 'l', 'i', 'n',
                                     'e', F_VERSION << 3, FL_REPORT_FORMAT_VERSION};
    _Static_assert(sizeof prefix == 13 && FL_REPORT_FORMAT_VERSION < 128, "prefix layout");
    write_raw(w, prefix, sizeof prefix);
    if (w->err) { /* not even the prefix fits (disk full): leave nothing behind */
        fl_sys_close(w->fd);
        fl_sys_unlinkat(dirfd, w->tmp_name, 0);
        w->fd = -1;
    }
    return w->err;
}

void fl_report_write_header(fl_report_writer_t *w, const fl_report_header_t *h) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_HEADER);
    fl_pb_bytes(&pb, 1, h->report_id, sizeof h->report_id);
    fl_pb_varint(&pb, 2, h->time_unix_ns);
    fl_pb_sint(&pb, 3, h->pid);
    fl_pb_string(&pb, 4, h->process_path);
    fl_pb_string(&pb, 5, h->app_name);
    fl_pb_string(&pb, 6, h->app_version);
    fl_pb_string(&pb, 7, h->os_name);
    fl_pb_string(&pb, 8, h->os_release);
    fl_pb_string(&pb, 9, h->os_version);
    fl_pb_string(&pb, 10, h->machine);
    fl_pb_sint(&pb, 11, h->arch);
    fl_pb_string(&pb, 12, h->hostname);
    fl_pb_sint(&pb, 13, h->kind);
    fl_pb_string(&pb, 14, h->reason);
    fl_pb_varint(&pb, 15, h->process_start_unix_ns);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "header", UINT64_MAX);
}

static void write_signal(fl_report_writer_t *w, unsigned field, const fl_report_signal_t *s) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, field);
    fl_pb_sint(&pb, 1, s->number);
    fl_pb_string(&pb, 2, fl_signal_name(s->number));
    fl_pb_sint(&pb, 3, s->code);
    fl_pb_string(&pb, 4, fl_signal_code_name(s->number, s->code));
    fl_pb_varint(&pb, 5, s->address);
    fl_pb_varint(&pb, 6, s->has_address);
    fl_pb_sint(&pb, 7, s->sender_pid);
    fl_pb_sint(&pb, 8, s->crashed_tid);
    fl_pb_varint(&pb, 9, s->frame);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "signal", UINT64_MAX);
}

void fl_report_write_signal(fl_report_writer_t *w, const fl_report_signal_t *s) {
    write_signal(w, F_SIGNAL, s);
}

void fl_report_write_interrupted_signal(fl_report_writer_t *w, const fl_report_signal_t *s) {
    write_signal(w, F_INTERRUPTED_SIGNAL, s);
}

static void write_string(fl_report_writer_t *w, unsigned field, const char *s, const char *what) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_string(&pb, field, s);
    if (!item_flush(w, &pb))
        note_dropped(w, what, UINT64_MAX);
}

void fl_report_write_abort_message(fl_report_writer_t *w, const char *msg) {
    write_string(w, F_ABORT_MESSAGE, msg, "abort message");
}

void fl_report_write_terminate_type(fl_report_writer_t *w, const char *type) {
    write_string(w, F_TERMINATE_TYPE, type, "terminate type");
}

void fl_report_write_mach_exception(fl_report_writer_t *w, const fl_report_mach_exception_t *e) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    unsigned n = e->code_count < FL_REPORT_MACH_CODES_MAX ? e->code_count : FL_REPORT_MACH_CODES_MAX;
    fl_pb_begin(&pb, F_MACH_EXCEPTION);
    fl_pb_sint(&pb, 1, e->type);
    fl_pb_string(&pb, 2, fl_mach_exception_name(e->type));
    if (n) {
        fl_pb_begin(&pb, 3);
        for (unsigned i = 0; i < n; i++)
            fl_pb_packed_varint(&pb, e->codes[i]);
        fl_pb_end(&pb);
        fl_pb_string(&pb, 4, fl_mach_exception_code_name(fl_regs_arch(), e->type, e->codes[0]));
    }
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "mach exception", UINT64_MAX);
}

/* Packed sint64 field of frames[i].pc - frames[i-1].pc (or sp), frame -1's value being 0, in
 * units of 2^shift bytes (every value is a multiple). The difference is taken modulo 2^64, so
 * any pair of addresses round-trips. */
static void put_deltas(fl_pb_t *pb, unsigned field, const fl_frame_t *frames, unsigned n,
                       bool sp, unsigned shift) {
    uint64_t prev = 0;
    fl_pb_begin(pb, field);
    for (unsigned i = 0; i < n; i++) {
        uint64_t v = sp ? frames[i].sp : frames[i].pc;
        fl_pb_packed_zigzag(pb, (int64_t)(v - prev) / ((int64_t)1 << shift));
        prev = v;
    }
    fl_pb_end(pb);
}

/* The largest power of two up to 16 that divides every sp (callers' sps are 16-byte aligned by
 * the ABIs, a signal context's at least 8): a frame of up to 504 bytes then costs one byte. */
static unsigned sp_shift(const fl_frame_t *frames, unsigned n) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i++)
        bits |= frames[i].sp;
    unsigned shift = 0;
    while (shift < 4 && !(bits >> shift & 1))
        shift++;
    return shift;
}

/* A frame's nibble of frame_methods: the method (0..7) and, in bit 3, the trampoline mark. */
static uint32_t nibble(const fl_frame_t *f) {
    return (f->method <= 7 ? f->method : 0) | (f->flags & FL_FRAME_TRAMPOLINE ? 8u : 0u);
}

static void encode_thread(fl_pb_t *pb, const fl_report_thread_t *t, unsigned frames,
                          bool truncated) {
    fl_pb_begin(pb, F_THREAD);
    fl_pb_sint(pb, T_TID, t->tid);
    fl_pb_string(pb, T_NAME, t->name);
    fl_pb_varint(pb, T_CRASHED, t->crashed);
    fl_pb_varint(pb, T_FRAMES_TRUNCATED, truncated);
    fl_pb_string(pb, T_UNWIND_STOP, t->unwind_stop);
    fl_pb_sint(pb, T_STATE, t->state);
    fl_pb_varint(pb, T_MONITORED, t->monitored);
    unsigned nregs = t->regs ? fl_regs_count() : 0;
    if (nregs) {
        fl_pb_begin(pb, T_REGISTER_VALUES);
        for (unsigned i = 0; i < nregs && i < FL_REGS_MAX; i++)
            fl_pb_packed_varint(pb, t->regs->r[i]);
        fl_pb_end(pb);
    }
    if (frames) {
        unsigned shift = sp_shift(t->frames, frames);
        put_deltas(pb, T_PC_DELTAS, t->frames, frames, false, 0);
        put_deltas(pb, T_SP_DELTAS, t->frames, frames, true, shift);
        /* Two methods a byte, frame 2k in the low nibble of byte k; bit 3 of a nibble marks a
         * signal trampoline. */
        fl_pb_begin(pb, T_METHODS);
        for (unsigned i = 0; i < frames; i += 2) {
            uint32_t lo = nibble(&t->frames[i]), hi = i + 1 < frames ? nibble(&t->frames[i + 1]) : 0;
            fl_pb_packed_byte(pb, (uint8_t)(lo | hi << 4));
        }
        fl_pb_end(pb);
        fl_pb_varint(pb, T_SP_SHIFT, shift);
        if (t->frames_omitted && frames > t->frames_omitted_at) { /* the gap is among them */
            fl_pb_varint(pb, T_FRAMES_OMITTED, t->frames_omitted);
            fl_pb_varint(pb, T_FRAMES_OMITTED_AT, t->frames_omitted_at);
        }
    }
    fl_pb_end(pb);
}

void fl_report_write_thread(fl_report_writer_t *w, const fl_report_thread_t *t) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    unsigned n = t->frames ? t->frame_count : 0;
    encode_thread(&pb, t, n, t->frames_truncated);
    if (item_flush(w, &pb))
        return;
    /* Too big: keep the thread with as many of its innermost frames as fit (binary search on
     * the frame count; `fits` always fits, `over` never does). */
    fl_pb_init(&pb, w->scratch, w->scratch_cap);
    encode_thread(&pb, t, 0, true);
    if (pb.overflow) {
        note_dropped(w, "thread", (uint64_t)(int64_t)t->tid);
        return;
    }
    unsigned fits = 0, over = n;
    while (over - fits > 1) {
        unsigned mid = fits + (over - fits) / 2;
        fl_pb_init(&pb, w->scratch, w->scratch_cap);
        encode_thread(&pb, t, mid, true);
        if (pb.overflow)
            over = mid;
        else
            fits = mid;
    }
    fl_pb_init(&pb, w->scratch, w->scratch_cap);
    encode_thread(&pb, t, fits, true);
    item_flush(w, &pb);

    char msg[160];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, "thread ");
    fl_strbuf_putu(&sb, (uint64_t)(int64_t)t->tid);
    fl_strbuf_puts(&sb, ": kept ");
    fl_strbuf_putu(&sb, fits);
    fl_strbuf_puts(&sb, " of ");
    fl_strbuf_putu(&sb, n);
    fl_strbuf_puts(&sb, " frames (scratch buffer of ");
    fl_strbuf_putu(&sb, w->scratch_cap);
    fl_strbuf_puts(&sb, " bytes)");
    put_note(w, msg);
}

enum { F_HANG = 11 }; /* Report.hang */

static void encode_hang(fl_pb_t *pb, const fl_report_hang_t *h) {
    fl_pb_begin(pb, F_HANG);
    fl_pb_sint(pb, 1, h->monitored_tid);
    fl_pb_varint(pb, 2, h->started_unix_ns);
    fl_pb_varint(pb, 3, h->duration_ns);
    fl_pb_varint(pb, 4, h->threshold_ms);
    fl_pb_varint(pb, 5, h->check_interval_ns);
    fl_pb_varint(pb, 6, h->recovered);
    fl_pb_varint(pb, 7, h->sequence);
    fl_pb_end(pb);
}

void fl_report_write_hang(fl_report_writer_t *w, const fl_report_hang_t *h) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    encode_hang(&pb, h);
    if (!item_flush(w, &pb))
        note_dropped(w, "hang", UINT64_MAX);
}

int fl_report_append_hang(int dirfd, const char *name, const fl_report_hang_t *h) {
    uint8_t buf[128];
    fl_pb_t pb;
    fl_pb_init(&pb, buf, sizeof buf);
    encode_hang(&pb, h);
    if (pb.overflow)
        return FL_ERANGE;
    long fd = fl_sys_openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return fd == -ENOENT ? FL_ENOTFOUND : FL_EIO;
    /* One write of a few dozen bytes: a reader sees the record whole or not at all (a cut one
     * would only make the report read as truncated after its complete prefix). */
    long r = fl_sys_write_all((int)fd, pb.buf, pb.len);
    fl_sys_close((int)fd);
    return r < 0 ? FL_EIO : 0;
}

void fl_report_write_threads_total(fl_report_writer_t *w, uint32_t n) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_varint(&pb, F_THREADS_TOTAL, n);
    item_flush(w, &pb); /* at most 6 bytes: always fits the scratch buffer */
}

void fl_report_write_image(fl_report_writer_t *w, const fl_image_t *img) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_IMAGE);
    fl_pb_stringn(&pb, 1, img->path, sizeof img->path);
    fl_pb_bytes(&pb, 2, img->build_id,
                img->build_id_len < FL_BUILD_ID_MAX ? img->build_id_len : FL_BUILD_ID_MAX);
    fl_pb_varint(&pb, 3, img->build_id_kind);
    fl_pb_varint(&pb, 4, img->slide);
    fl_pb_varint(&pb, 5, img->start);
    fl_pb_varint(&pb, 6, img->end);
    fl_pb_varint(&pb, 7, img->text_start);
    fl_pb_varint(&pb, 8, img->text_end);
    fl_pb_varint(&pb, 9, img->is_main);
    fl_pb_varint(&pb, 10, img->is_vdso);
    fl_pb_varint(&pb, 11, img->path_truncated);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "image", UINT64_MAX);
}

void fl_report_write_annotation(fl_report_writer_t *w, const char *k, const char *v) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_ANNOTATION);
    fl_pb_string(&pb, 1, k);
    fl_pb_string(&pb, 2, v);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "annotation", UINT64_MAX);
}

void fl_report_write_note(fl_report_writer_t *w, const char *text) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_NOTE);
    fl_pb_string(&pb, 1, text);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "note", UINT64_MAX);
}

void fl_report_write_memory(fl_report_writer_t *w, int tid, uint64_t start, const uint8_t *data,
                            size_t len) {
    fl_pb_t pb;
    if (!item_begin(w, &pb))
        return;
    fl_pb_begin(&pb, F_MEMORY);
    fl_pb_sint(&pb, 1, tid);
    fl_pb_varint(&pb, 2, start);
    fl_pb_bytes(&pb, 3, data, len);
    fl_pb_end(&pb);
    if (!item_flush(w, &pb))
        note_dropped(w, "stack memory of thread", (uint64_t)(int64_t)tid);
}

static int close_and_rename(fl_report_writer_t *w, bool complete_marker) {
    if (w->fd < 0)
        return w->err ? w->err : FL_ESTATE;
    static const uint8_t complete[] = {F_COMPLETE << 3, 1};
    if (complete_marker)
        write_raw(w, complete, sizeof complete);
    fl_report_writer_flush(w);
    /* No fsync: once written, the data is the kernel's and survives the process's death; fsync
     * would only guard against a power loss in the next seconds, at ~0.4 ms on ext4 here. */
    fl_sys_close(w->fd);
    long r;
    w->fd = -1;
    /* Renamed even after an error: the prefix written so far decodes. */
    r = fl_sys_renameat(w->dirfd, w->tmp_name, w->dirfd, w->final_name);
    if (r < 0)
        set_err(w, FL_EIO, r);
    return w->err;
}

int fl_report_writer_finish(fl_report_writer_t *w) { return close_and_rename(w, true); }

int fl_report_writer_abandon(fl_report_writer_t *w) { return close_and_rename(w, false); }

typedef struct count_ctx {
    unsigned n, cap;
} count_ctx_t;

bool fl_report_is_name(const char *n) {
    size_t len = fl_strlen(n), pl = sizeof FL_REPORT_PREFIX - 1, sl = sizeof FL_REPORT_SUFFIX - 1;
    return len > pl + sl && fl_memcmp(n, FL_REPORT_PREFIX, pl) == 0 &&
           fl_memcmp(n + len - sl, FL_REPORT_SUFFIX, sl) == 0;
}

static int count_one(void *ctx, const char *name) {
    count_ctx_t *c = ctx;
    c->n += fl_report_is_name(name);
    return c->n >= c->cap;
}

int fl_report_dir_count(int dirfd, unsigned cap) {
    count_ctx_t c = {0, cap};
    int e = cap ? fl_dir_names(dirfd, ".", count_one, &c) : 0;
    return e < 0 ? e : (int)(c.n > INT32_MAX ? INT32_MAX : c.n);
}

void fl_report_writer_log_failure(const fl_report_writer_t *w, const char *dir) {
    char msg[1200]; /* (the directory's path is up to 1023 bytes) */
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, "cannot create a crash report in ");
    fl_strbuf_puts(&sb, dir);
    fl_strbuf_puts(&sb, " (error: ");
    const char *text = w->sys_errno ? fl_errno_text(w->sys_errno) : NULL;
    fl_strbuf_puts(&sb, text ? text : fl_strerror(w->err));
    if (w->sys_errno && !text) {
        fl_strbuf_puts(&sb, ", errno ");
        fl_strbuf_putu(&sb, (uint64_t)w->sys_errno);
    }
    /* A program that changed its user after start (a daemon dropping root) may no longer
     * write where it could at install. */
    if (w->sys_errno == EACCES || w->sys_errno == EPERM) {
        fl_strbuf_puts(&sb, "; the process runs as user ");
        fl_strbuf_putu(&sb, (uint64_t)fl_sys_geteuid());
    }
    fl_strbuf_puts(&sb, ")");
    fl_log_stderr(msg);
}
