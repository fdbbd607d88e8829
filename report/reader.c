/* SPDX-License-Identifier: MIT */
/* Decoding reports, including ones cut short: the longest prefix of complete top-level fields. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "report/report.h"

/* The reader's caps, so that a hostile report costs bounded time and memory (well under 1 s and
 * 100 MB): the bytes read from a file, the threads and images writers write at most, the frames of
 * all threads together (what a writer with the default limits writes at most: rendering them all
 * as JSON takes ~0.35 s), and what protobuf-c may allocate for one decode (which covers whatever
 * the counts do not: unknown fields, long repeated fields). Past one, the report decodes up to the
 * top-level field that would pass it, is marked truncated and gets a note naming the limit. */
#define READ_MAX ((size_t)16 << 20)
#define THREADS_MAX ((size_t)FL_MAX_THREADS_LIMIT)
#define IMAGES_MAX ((size_t)FL_IMAGES_MAX)
#define FRAMES_TOTAL_MAX ((size_t)FL_DEFAULT_MAX_THREADS * FL_DEFAULT_MAX_FRAMES) /* 262,144 */
#define FIELDS_MAX ((size_t)1 << 16) /* top-level: threads, images, annotations, notes, ... */
#define ALLOC_MAX ((size_t)48 << 20)
_Static_assert(READ_MAX < ALLOC_MAX, "a file within READ_MAX decodes within ALLOC_MAX");

/* Field 1 = "faultline", then field 2's tag; the version varint follows. */
static const uint8_t magic_prefix[12] = {0x0a, 9,   'f', 'a', 'u', 'l',
                                         't',  'l', 'i', 'n', 'e', 0x10};

static bool get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v) {
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && *pos < len; shift += 7) {
        uint8_t b = p[(*pos)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Steps over one field at *pos; false when it is cut short or not a valid field. */
static bool skip_field(const uint8_t *p, size_t len, size_t *pos) {
    uint64_t tag, n;
    if (!get_varint(p, len, pos, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
        return false;
    switch (tag & 7) {
    case 0: return get_varint(p, len, pos, &n);
    case 1: n = 8; break;
    case 5: n = 4; break;
    case 2:
        if (!get_varint(p, len, pos, &n))
            return false;
        break;
    default: return false; /* groups (3, 4) are not in our schema; 6 and 7 do not exist */
    }
    if (n > len - *pos)
        return false;
    *pos += (size_t)n;
    return true;
}

/* End offset of the first `max` complete top-level fields (or of all of them); *count gets how
 * many that is. */
static size_t prefix_end(const uint8_t *p, size_t len, size_t max, size_t *count) {
    size_t pos = 0, n = 0;
    while (n < max && pos < len) {
        size_t next = pos;
        if (!skip_field(p, len, &next))
            break;
        pos = next;
        n++;
    }
    *count = n;
    return pos;
}

/* The frames a Thread message's bytes hold (the packed deltas of version 2, the Frame messages of
 * version 1), counted without decoding: what protobuf-c will allocate for them. */
static size_t thread_frames(const uint8_t *p, size_t len) {
    size_t pos = 0, v1 = 0, pcs = 0, sps = 0;
    while (pos < len) {
        size_t at = pos;
        uint64_t tag, n;
        if (!skip_field(p, len, &pos) || !get_varint(p, len, &at, &tag))
            break;
        unsigned field = (unsigned)(tag >> 3);
        if (field == 5) {
            v1++;
        } else if ((field == 10 || field == 11) && (tag & 7) == 2 && get_varint(p, len, &at, &n)) {
            size_t k = 0; /* packed varints: one per byte without the continuation bit */
            for (const uint8_t *b = p + at, *e = p + pos; b < e; b++)
                k += !(*b & 0x80);
            *(field == 10 ? &pcs : &sps) += k;
        } else if (field == 10 || field == 11) {
            (*(field == 10 ? &pcs : &sps))++;
        }
    }
    return v1 + (pcs > sps ? pcs : sps);
}

/* The end of the longest prefix of complete top-level fields within the caps on fields, threads,
 * images and frames, and *count its fields (as prefix_end); *why names the cap that cut it
 * ("more than *limit <why>"), or stays NULL. */
static size_t capped_end(const uint8_t *p, size_t len, size_t *count, const char **why,
                         size_t *limit) {
    size_t pos = 0, threads = 0, images = 0, frames = 0, fields = 0;
    *why = NULL;
    while (pos < len) {
        if (fields == FIELDS_MAX) {
            *why = "top-level fields";
            *limit = FIELDS_MAX;
            break;
        }
        size_t next = pos, at = pos;
        uint64_t tag, n;
        if (!skip_field(p, len, &next) || !get_varint(p, len, &at, &tag))
            break;
        if (tag == (5u << 3 | 2) && get_varint(p, len, &at, &n)) {
            size_t f = thread_frames(p + at, next - at);
            if (++threads > THREADS_MAX) {
                *why = "threads";
                *limit = THREADS_MAX;
            } else if (f > FRAMES_TOTAL_MAX - frames) {
                *why = "frames in all threads";
                *limit = FRAMES_TOTAL_MAX;
            }
            frames += f;
        } else if (tag >> 3 == 6 && ++images > IMAGES_MAX) {
            *why = "images";
            *limit = IMAGES_MAX;
        }
        if (*why)
            break;
        pos = next;
        fields++;
    }
    *count = fields;
    return pos;
}

/* protobuf-c's allocations for one decode, on a budget (malloc underneath, so that
 * free_unpacked with the default allocator frees them). */
typedef struct budget {
    size_t left;
    bool exceeded;
} budget_t;

static void *budget_alloc(void *data, size_t size) {
    budget_t *b = data;
    size_t cost = size + 16; /* malloc's own overhead, roughly */
    if (cost < size || cost > b->left) {
        b->exceeded = true;
        return NULL;
    }
    b->left -= cost;
    return malloc(size);
}

static void budget_free(void *data, void *p) {
    (void)data;
    free(p);
}

/* ---- Version 2: compact threads, checked and then expanded into `registers` and `frames` ---- */

_Static_assert(FL_REPORT_FRAMES_MAX >= FL_MAX_FRAMES_LIMIT, "a reader cuts what writers write");

static bool thread_valid(const Faultline__Thread *t) {
    size_t n = t->n_frame_pc_deltas;
    return t->n_frame_sp_deltas == n && t->frame_methods.len == (n + 1) / 2 &&
           t->frame_sp_shift < 64 && t->n_register_values <= FL_REPORT_REGS_MAX;
}

/* protobuf-c's unpack within ALLOC_MAX, plus the checks protobuf-c cannot make: NULL for any
 * failure (*exceeded set when it was the budget's). */
static Faultline__Report *unpack(const uint8_t *data, size_t len, bool *exceeded) {
    budget_t b = {.left = ALLOC_MAX};
    ProtobufCAllocator a = {.alloc = budget_alloc, .free = budget_free, .allocator_data = &b};
    Faultline__Report *r = faultline__report__unpack(&a, len, data);
    *exceeded |= b.exceeded;
    for (size_t i = 0; r && i < r->n_threads; i++) {
        if (!thread_valid(r->threads[i])) {
            faultline__report__free_unpacked(r, NULL);
            r = NULL;
        }
    }
    return r;
}

/* Everything allocated here uses malloc, as protobuf-c's default allocator does, and is linked
 * into the message as soon as it is allocated: free_unpacked frees it, even after a failure. */
static int expand_registers(Faultline__Thread *t, int arch) {
    for (size_t i = 0; i < t->n_registers; i++)
        faultline__register__free_unpacked(t->registers[i], NULL);
    free(t->registers);
    t->n_registers = 0;
    t->registers = calloc(t->n_register_values, sizeof *t->registers);
    if (!t->registers)
        return FL_ENOMEM;
    for (size_t i = 0; i < t->n_register_values; i++) {
        Faultline__Register *g = malloc(sizeof *g);
        if (!g)
            return FL_ENOMEM;
        faultline__register__init(g);
        t->registers[t->n_registers++] = g;
        g->value = t->register_values[i];
        char fallback[32];
        const char *name = fl_regs_arch_name(arch, (unsigned)i);
        if (!name[0]) {
            snprintf(fallback, sizeof fallback, "reg%zu", i);
            name = fallback;
        }
        char *copy = strdup(name);
        if (!copy)
            return FL_ENOMEM;
        g->name = copy;
    }
    return 0;
}

static int expand_frames(Faultline__Thread *t) {
    size_t n = t->n_frame_pc_deltas;
    if (n > FL_REPORT_FRAMES_MAX) {
        n = FL_REPORT_FRAMES_MAX;
        t->frames_truncated = true;
    }
    for (size_t i = 0; i < t->n_frames; i++)
        faultline__frame__free_unpacked(t->frames[i], NULL);
    free(t->frames);
    t->n_frames = 0;
    t->frames = calloc(n, sizeof *t->frames);
    if (!t->frames)
        return FL_ENOMEM;
    uint64_t pc = 0, sp = 0;
    for (size_t i = 0; i < n; i++) {
        Faultline__Frame *f = malloc(sizeof *f);
        if (!f)
            return FL_ENOMEM;
        faultline__frame__init(f);
        t->frames[t->n_frames++] = f;
        pc += (uint64_t)t->frame_pc_deltas[i]; /* modulo 2^64, as written */
        sp += (uint64_t)t->frame_sp_deltas[i] << t->frame_sp_shift;
        f->pc = pc;
        f->sp = sp;
        unsigned nib = t->frame_methods.data[i / 2] >> (i % 2 * 4) & 15;
        f->method = (Faultline__Frame__Method)(nib & 7);
        f->signal_trampoline = nib >> 3;
        f->interrupted = i > 0 && t->frames[i - 1]->signal_trampoline;
    }
    return 0;
}

/* A thread that has the compact fields gets `registers` and `frames` from them (replacing any
 * it also had, which version 2 writers do not write). */
static int expand(Faultline__Report *r) {
    int arch = r->header ? (int)r->header->arch : 0;
    for (size_t i = 0; i < r->n_threads; i++) {
        Faultline__Thread *t = r->threads[i];
        int err = 0;
        if (t->n_register_values)
            err = expand_registers(t, arch);
        if (!err && t->n_frame_pc_deltas)
            err = expand_frames(t);
        if (err)
            return err;
    }
    return 0;
}

/* Appends a note (allocated like protobuf-c's own, so that free_unpacked frees it). */
static int add_note(Faultline__Report *r, const char *text) {
    Faultline__Note **v = realloc(r->notes, (r->n_notes + 1) * sizeof *v);
    if (!v)
        return FL_ENOMEM;
    r->notes = v;
    Faultline__Note *n = malloc(sizeof *n);
    char *copy = strdup(text);
    if (!n || !copy) {
        free(n);
        free(copy);
        return FL_ENOMEM;
    }
    faultline__note__init(n);
    n->text = copy;
    r->notes[r->n_notes++] = n;
    return 0;
}

/* fl_report_decode of the first len bytes of a file of file_size bytes. */
static int decode(const uint8_t *data, size_t len, uint64_t file_size,
                  struct Faultline__Report **out, bool *truncated) {
    *out = NULL;
    *truncated = false;
    if (!data || len < 13 || memcmp(data, magic_prefix, sizeof magic_prefix) != 0)
        return FL_ENOTREPORT;
    size_t pos = sizeof magic_prefix;
    uint64_t version;
    if (!get_varint(data, len, &pos, &version) || version == 0)
        return FL_ENOTREPORT;
    if (version > FL_REPORT_FORMAT_VERSION)
        return FL_EVERSION;

    const char *cap;
    size_t fields, limit = 0, end = capped_end(data, len, &fields, &cap, &limit);
    bool over_budget = false;
    Faultline__Report *r = unpack(data, end, &over_budget);
    bool damaged = false;
    if (!r) {
        /* A complete field whose content does not decode (damage, not truncation), or that
         * passes the allocation budget: keep the fields before it. Prefixes up to the bad field
         * decode and all longer ones fail, so binary search for the longest; the first two
         * (magic, version) are known good. */
        size_t good = 2, bad = fields;
        while (bad - good > 1) {
            size_t mid = good + (bad - good) / 2, n;
            size_t mid_end = prefix_end(data, len, mid, &n);
            Faultline__Report *t = unpack(data, mid_end, &over_budget);
            if (t) {
                faultline__report__free_unpacked(t, NULL);
                good = mid;
            } else {
                bad = mid;
            }
        }
        end = prefix_end(data, len, good, &fields);
        r = unpack(data, end, &over_budget);
        if (!r)
            return FL_EBADDATA;
        damaged = true;
    }
    int err = expand(r);
    char note[256];
    if (!err && (cap || over_budget || file_size > len)) {
        char what[64];
        if (cap)
            snprintf(what, sizeof what, "more than %zu %s", limit, cap);
        else
            snprintf(what, sizeof what, "%s than %zu MiB",
                     over_budget ? "decoding would allocate more" : "the file is larger",
                     (over_budget ? ALLOC_MAX : READ_MAX) >> 20);
        snprintf(note, sizeof note, "reader limit reached: %s; decoded the first %zu of %llu bytes",
                 what, end, (unsigned long long)file_size);
        err = add_note(r, note);
    }
    if (err) {
        faultline__report__free_unpacked(r, NULL);
        return err;
    }
    *out = r;
    *truncated = damaged || end < file_size || !r->complete;
    return 0;
}

int fl_report_decode(const uint8_t *data, size_t len, struct Faultline__Report **out,
                     bool *truncated) {
    return decode(data, len, len, out, truncated);
}

int fl_report_read_file(const char *path, struct Faultline__Report **out, bool *truncated) {
    *out = NULL;
    *truncated = false;
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0)
        return fd;
    /* At most READ_MAX bytes: a larger file decodes as far as they go (decode notes it). */
    size_t cap = fsize < READ_MAX ? (size_t)fsize : READ_MAX, len = 0;
    uint8_t *buf = malloc(cap ? cap : 1);
    int err = buf ? 0 : FL_ENOMEM;
    while (!err && len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            err = FL_EIO;
        else if (n == 0)
            break; /* shrank since fstat: what is there is the report */
        else
            len += (size_t)n;
    }
    int saved = errno;
    close(fd);
    if (!err)
        err = decode(buf, len, fsize > len ? fsize : len, out, truncated);
    free(buf);
    errno = saved;
    return err;
}

void fl_report_free(struct Faultline__Report *r) {
    if (r)
        faultline__report__free_unpacked(r, NULL);
}
