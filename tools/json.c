/* SPDX-License-Identifier: MIT */
/* `faultline show --json`: the report as one JSON document for other tools. */
#include <inttypes.h>
#include <string.h>

#include "tools/tool.h"

/* Shape (addresses are "0x..." lowercase hex strings; parts missing from a truncated report
 * are null):
 * {"report_id", "truncated", "complete",
 *  "process": {"pid", "path", "app_name", "app_version", "start_time"}, "time",
 *  "os": {"name", "release", "version", "machine", "hostname"}, "arch", "kind", "reason",
 *  "signal": {"number", "name", "code", "code_name", "address", "sender_pid"}, "crashed_tid",
 *  "mach_exception": {"type", "name", "codes": ["0x.."], "code_name"} (null without one),
 *  "hang": {"monitored_tid", "started", "duration_ms" (at least; a number with 3 decimals),
 *           "threshold_ms", "check_interval_ms", "recovered", "sequence"} (null without one),
 *  "annotations": {k: v},
 *  "threads_total" (threads the process had, of which "threads" lists at most max_threads;
 *                   null when the report does not say),
 *  "threads": [{"tid", "name", "crashed", "monitored", "state", "registers": {name: "0x.."},
 *               "frames": [{"pc", "sp", "method", "image", "symbol", "offset", "file",
 *                           "line"}],  (file and line: DWARF, null when unknown; `faultline
 *                           unwind` adds "registers": {name: "0x.."}, those the walk knew)
 *               "frames_truncated", "frames_omitted", "frames_omitted_at" (frames[at] follows
 *               the gap; both 0 without one), "unwind_stop"}],
 *  "images": [{"path", "build_id", "build_id_kind", "slide", "start", "end", "text_start",
 *              "text_end", "is_main", "is_vdso", "path_truncated"}],
 *  "notes": [text]} */

#define DEPTH_MAX 8 /* the document nests 5 deep */

typedef struct json {
    FILE *o;
    int depth;
    bool first[DEPTH_MAX];
} json_t;

/* Writes s as a JSON string. Invalid UTF-8 (paths need not be UTF-8) becomes U+FFFD so that
 * strict parsers accept the document; C1 controls are escaped as C0 ones are, so that the
 * document printed raw cannot drive a terminal (JSON allows either; the value is the same). */
void fl_tool_json_string(FILE *o, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', o);
    while (*p) {
        uint32_t c = 0;
        size_t n = fl_tool_utf8_seq((const char *)p, &c);
        if (c == '"' || c == '\\') {
            fprintf(o, "\\%c", (int)c);
        } else if (n && (c < 0x20 || (c >= 0x7f && c <= 0x9f))) {
            switch (c) {
            case '\n': fputs("\\n", o); break;
            case '\t': fputs("\\t", o); break;
            case '\r': fputs("\\r", o); break;
            default: fprintf(o, "\\u%04x", (unsigned)c);
            }
        } else if (n) {
            fwrite(p, 1, n, o);
        } else {
            fputs("\\ufffd", o);
        }
        p += n ? n : 1;
    }
    fputc('"', o);
}

/* Separator, newline and indentation before a value, then its key inside an object. */
static void next(json_t *j, const char *key) {
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->o);
        j->first[j->depth] = false;
        fprintf(j->o, "\n%*s", 2 * j->depth, "");
    }
    if (key) {
        fl_tool_json_string(j->o, key);
        fputs(": ", j->o);
    }
}

static void open_(json_t *j, const char *key, char c) {
    next(j, key);
    fputc(c, j->o);
    j->first[++j->depth] = true;
}

static void close_(json_t *j, char c) {
    if (!j->first[j->depth])
        fprintf(j->o, "\n%*s", 2 * (j->depth - 1), "");
    j->depth--;
    fputc(c, j->o);
}

static void j_str(json_t *j, const char *key, const char *s) {
    next(j, key);
    if (s)
        fl_tool_json_string(j->o, s);
    else
        fputs("null", j->o);
}

static void j_int(json_t *j, const char *key, int64_t v) {
    next(j, key);
    fprintf(j->o, "%" PRId64, v);
}

static void j_bool(json_t *j, const char *key, bool v) {
    next(j, key);
    fputs(v ? "true" : "false", j->o);
}

static void j_hex(json_t *j, const char *key, uint64_t v) {
    next(j, key);
    fprintf(j->o, "\"0x%" PRIx64 "\"", v);
}

static void j_null(json_t *j, const char *key) {
    next(j, key);
    fputs("null", j->o);
}

static void header_fields(json_t *j, const Faultline__Header *h) {
    char buf[40];
    if (!h) {
        static const char *const keys[] = {"process", "time", "os", "arch", "kind", "reason"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            j_null(j, keys[i]);
        return;
    }
    open_(j, "process", '{');
    j_int(j, "pid", h->pid);
    j_str(j, "path", h->process_path);
    j_str(j, "app_name", h->app_name);
    j_str(j, "app_version", h->app_version);
    fl_tool_fmt_time(buf, sizeof buf, h->process_start_unix_ns);
    j_str(j, "start_time", buf[0] ? buf : NULL);
    close_(j, '}');
    fl_tool_fmt_time(buf, sizeof buf, h->time_unix_ns);
    j_str(j, "time", buf[0] ? buf : NULL);
    open_(j, "os", '{');
    j_str(j, "name", h->os_name);
    j_str(j, "release", h->os_release);
    j_str(j, "version", h->os_version);
    j_str(j, "machine", h->machine);
    j_str(j, "hostname", h->hostname);
    close_(j, '}');
    j_str(j, "arch", fl_tool_arch_name(h->arch));
    j_str(j, "kind", fl_tool_kind_name(h->kind));
    j_str(j, "reason", h->reason);
}

static void signal_fields(json_t *j, const Faultline__Signal *s) {
    if (!s) {
        j_null(j, "signal");
        j_null(j, "crashed_tid");
        return;
    }
    open_(j, "signal", '{');
    j_int(j, "number", s->number);
    j_str(j, "name", s->name);
    j_int(j, "code", s->code);
    j_str(j, "code_name", s->code_name);
    if (s->has_address)
        j_hex(j, "address", s->address);
    else
        j_null(j, "address");
    if (s->sender_pid)
        j_int(j, "sender_pid", s->sender_pid);
    else
        j_null(j, "sender_pid");
    close_(j, '}');
    j_int(j, "crashed_tid", s->crashed_tid);
}

static void mach_fields(json_t *j, const Faultline__MachException *m) {
    if (!m) {
        j_null(j, "mach_exception");
        return;
    }
    open_(j, "mach_exception", '{');
    j_int(j, "type", m->type);
    j_str(j, "name", m->name);
    open_(j, "codes", '[');
    for (size_t i = 0; i < m->n_codes; i++)
        j_hex(j, NULL, m->codes[i]);
    close_(j, ']');
    j_str(j, "code_name", m->code_name);
    close_(j, '}');
}

static void hang_fields(json_t *j, const Faultline__Hang *h) {
    if (!h) {
        j_null(j, "hang");
        return;
    }
    char buf[40];
    open_(j, "hang", '{');
    j_int(j, "monitored_tid", h->monitored_tid);
    fl_tool_fmt_time(buf, sizeof buf, h->started_unix_ns);
    j_str(j, "started", buf[0] ? buf : NULL);
    next(j, "duration_ms");
    fprintf(j->o, "%" PRIu64 ".%03" PRIu64, h->duration_ns / 1000000u, h->duration_ns % 1000000u / 1000u);
    j_int(j, "threshold_ms", h->threshold_ms);
    j_int(j, "check_interval_ms", (int64_t)(h->check_interval_ns / 1000000u));
    j_bool(j, "recovered", h->recovered);
    j_int(j, "sequence", h->sequence);
    close_(j, '}');
}

static void thread_obj(json_t *j, const Faultline__Thread *t, fl_tool_symbolizer_t *sym,
                       const fl_tool_frame_regs_t *fr) {
    open_(j, NULL, '{');
    j_int(j, "tid", t->tid);
    j_str(j, "name", t->name);
    j_bool(j, "crashed", t->crashed);
    j_bool(j, "monitored", t->monitored);
    j_str(j, "state", fl_tool_state_name(t->state));
    open_(j, "registers", '{');
    for (size_t k = 0; k < t->n_registers; k++)
        j_hex(j, t->registers[k]->name, t->registers[k]->value);
    close_(j, '}');
    open_(j, "frames", '[');
    for (size_t k = 0; k < t->n_frames; k++) {
        const Faultline__Frame *f = t->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, f, k, &s);
        open_(j, NULL, '{');
        j_hex(j, "pc", f->pc);
        j_hex(j, "sp", f->sp);
        j_str(j, "method", fl_tool_method_name(f->method));
        if (f->signal_trampoline) j_bool(j, "signal_trampoline", true);
        if (f->interrupted) j_bool(j, "interrupted", true);
        if (s.image >= 0)
            j_int(j, "image", s.image);
        else
            j_null(j, "image");
        j_str(j, "symbol", s.symbol);
        if (s.symbol)
            j_int(j, "offset", (int64_t)s.offset);
        else
            j_null(j, "offset");
        j_str(j, "file", s.file);
        if (s.file)
            j_int(j, "line", s.line);
        else
            j_null(j, "line");
        if (fr && k < fr->count) {
            open_(j, "registers", '{');
            for (size_t i = 0; i < fr->nnames; i++)
                if (fr->known[k] >> i & 1) j_hex(j, fr->names[i], fr->values[k * fr->nnames + i]);
            close_(j, '}');
        }
        close_(j, '}');
    }
    close_(j, ']');
    j_bool(j, "frames_truncated", t->frames_truncated);
    j_int(j, "frames_omitted", t->frames_omitted);
    j_int(j, "frames_omitted_at", t->frames_omitted ? t->frames_omitted_at : 0);
    j_str(j, "unwind_stop", t->unwind_stop);
    close_(j, '}');
}

static void image_obj(json_t *j, const Faultline__Image *img) {
    char id[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(id, img->build_id.data, img->build_id.len);
    open_(j, NULL, '{');
    j_str(j, "path", img->path);
    j_str(j, "build_id", id[0] ? id : NULL);
    j_str(j, "build_id_kind", fl_tool_build_id_kind_name(img->build_id_kind));
    j_hex(j, "slide", img->slide);
    j_hex(j, "start", img->start);
    j_hex(j, "end", img->end);
    j_hex(j, "text_start", img->text_start);
    j_hex(j, "text_end", img->text_end);
    j_bool(j, "is_main", img->is_main);
    j_bool(j, "is_vdso", img->is_vdso);
    j_bool(j, "path_truncated", img->path_truncated);
    close_(j, '}');
}

void fl_tool_show_json(FILE *o, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *sym) {
    fl_tool_show_json_regs(o, r, truncated, sym, NULL);
}

void fl_tool_show_json_regs(FILE *o, const Faultline__Report *r, bool truncated,
                            fl_tool_symbolizer_t *sym, const fl_tool_frame_regs_t *fr) {
    json_t j = {.o = o};
    open_(&j, NULL, '{');
    char id[2 * FL_TOOL_HEX_MAX + 1];
    if (r->header)
        fl_tool_hex(id, r->header->report_id.data, r->header->report_id.len);
    j_str(&j, "report_id", r->header ? id : NULL);
    j_bool(&j, "truncated", truncated);
    j_bool(&j, "complete", r->complete);
    header_fields(&j, r->header);
    signal_fields(&j, r->signal);
    mach_fields(&j, r->mach_exception);
    hang_fields(&j, r->hang);
    open_(&j, "annotations", '{');
    for (size_t i = 0; i < r->n_annotations; i++)
        j_str(&j, r->annotations[i]->key, r->annotations[i]->value);
    close_(&j, '}');
    if (r->threads_total)
        j_int(&j, "threads_total", r->threads_total);
    else
        j_null(&j, "threads_total");
    open_(&j, "threads", '[');
    for (size_t i = 0; i < r->n_threads; i++)
        thread_obj(&j, r->threads[i], sym, i == 0 ? fr : NULL);
    close_(&j, ']');
    open_(&j, "images", '[');
    for (size_t i = 0; i < r->n_images; i++)
        image_obj(&j, r->images[i]);
    close_(&j, ']');
    open_(&j, "notes", '[');
    for (size_t i = 0; i < r->n_notes; i++)
        j_str(&j, NULL, r->notes[i]->text);
    close_(&j, ']');
    close_(&j, '}');
    fputc('\n', o);
}
