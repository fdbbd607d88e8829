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
 *  "interrupted_signal": {the same, and "frame": its frame in the crashed thread} (null
 *                        without one: docs/report-format.md),
 *  "abort_message": what the C library said as it aborted (null without one),
 *  "terminate": {"type" (demangled), "mangled"}: the C++ exception std::terminate was called
 *               with (null without one),
 *  "mach_exception": {"type", "name", "codes": ["0x.."], "code_name"} (null without one),
 *  "hang": {"monitored_tid", "started", "duration_ms" (at least; a number with 3 decimals),
 *           "threshold_ms", "check_interval_ms", "recovered", "sequence"} (null without one),
 *  "annotations": {k: v},
 *  "threads_total" (threads the process had, of which "threads" lists at most max_threads;
 *                   null when the report does not say),
 *  "threads": [{"tid", "name", "crashed", "monitored", "state", "registers": {name: "0x.."},
 *               "frames": [{"pc", "sp", "method", "image", "symbol", "mangled", "offset",
 *                           "file", "line"}],  (symbol: the full demangled form, as c++filt or
 *                           swift-demangle print it; mangled: the link name it stands for, null
 *                           without a symbol or for "<signal handler called>"; file and line:
 *                           DWARF, null when unknown; `faultline unwind` adds "registers":
 *                           {name: "0x.."}, those the walk knew)
 *               "frames_truncated", "frames_omitted", "frames_omitted_at" (frames[at] follows
 *               the gap; both 0 without one), "unwind_stop"}],
 *  "images": [{"path", "build_id", "build_id_kind", "slide", "start", "end", "text_start",
 *              "text_end", "is_main", "is_vdso", "path_truncated"}],
 *  "notes": [text]} */

/* Writes s as a JSON string. Invalid UTF-8 (paths need not be UTF-8) becomes U+FFFD so that
 * strict parsers accept the document; C1 controls are escaped as C0 ones are, so that the
 * document printed raw cannot drive a terminal (JSON allows either; the value is the same). */
void fl_tool_json_string(FILE *o, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', o);
    while (*p) {
        uint32_t c = 0;
        size_t n = fl_utf8_seq((const char *)p, fl_strnlen((const char *)p, 4), &c);
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
void fl_tool_jw_next(fl_tool_jw_t *j, const char *key) {
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

void fl_tool_jw_open(fl_tool_jw_t *j, const char *key, char c) {
    fl_tool_jw_next(j, key);
    fputc(c, j->o);
    j->first[++j->depth] = true;
}

void fl_tool_jw_close(fl_tool_jw_t *j, char c) {
    if (!j->first[j->depth])
        fprintf(j->o, "\n%*s", 2 * (j->depth - 1), "");
    j->depth--;
    fputc(c, j->o);
}

void fl_tool_jw_str(fl_tool_jw_t *j, const char *key, const char *s) {
    fl_tool_jw_next(j, key);
    if (s)
        fl_tool_json_string(j->o, s);
    else
        fputs("null", j->o);
}

void fl_tool_jw_int(fl_tool_jw_t *j, const char *key, int64_t v) {
    fl_tool_jw_next(j, key);
    fprintf(j->o, "%" PRId64, v);
}

void fl_tool_jw_bool(fl_tool_jw_t *j, const char *key, bool v) {
    fl_tool_jw_next(j, key);
    fputs(v ? "true" : "false", j->o);
}

void fl_tool_jw_hex(fl_tool_jw_t *j, const char *key, uint64_t v) {
    fl_tool_jw_next(j, key);
    fprintf(j->o, "\"0x%" PRIx64 "\"", v);
}

void fl_tool_jw_null(fl_tool_jw_t *j, const char *key) {
    fl_tool_jw_next(j, key);
    fputs("null", j->o);
}

static void header_fields(fl_tool_jw_t *j, const Faultline__Header *h) {
    char buf[40];
    if (!h) {
        static const char *const keys[] = {"process", "time", "os", "arch", "kind", "reason"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            fl_tool_jw_null(j, keys[i]);
        return;
    }
    fl_tool_jw_open(j, "process", '{');
    fl_tool_jw_int(j, "pid", h->pid);
    fl_tool_jw_str(j, "path", h->process_path);
    fl_tool_jw_str(j, "app_name", h->app_name);
    fl_tool_jw_str(j, "app_version", h->app_version);
    fl_tool_fmt_time(buf, sizeof buf, h->process_start_unix_ns);
    fl_tool_jw_str(j, "start_time", buf[0] ? buf : NULL);
    fl_tool_jw_close(j, '}');
    fl_tool_fmt_time(buf, sizeof buf, h->time_unix_ns);
    fl_tool_jw_str(j, "time", buf[0] ? buf : NULL);
    fl_tool_jw_open(j, "os", '{');
    fl_tool_jw_str(j, "name", h->os_name);
    fl_tool_jw_str(j, "release", h->os_release);
    fl_tool_jw_str(j, "version", h->os_version);
    fl_tool_jw_str(j, "machine", h->machine);
    fl_tool_jw_str(j, "hostname", h->hostname);
    fl_tool_jw_close(j, '}');
    fl_tool_jw_str(j, "arch", fl_tool_arch_name(h->arch));
    fl_tool_jw_str(j, "kind", fl_tool_kind_name(h->kind));
    fl_tool_jw_str(j, "reason", h->reason);
}

/* A Signal as the object `key`; interrupted: Report.interrupted_signal, with its frame. */
static void signal_object(fl_tool_jw_t *j, const char *key, const Faultline__Signal *s,
                          bool interrupted) {
    if (!s) {
        fl_tool_jw_null(j, key);
        return;
    }
    fl_tool_jw_open(j, key, '{');
    fl_tool_jw_int(j, "number", s->number);
    fl_tool_jw_str(j, "name", s->name);
    fl_tool_jw_int(j, "code", s->code);
    fl_tool_jw_str(j, "code_name", s->code_name);
    if (s->has_address)
        fl_tool_jw_hex(j, "address", s->address);
    else
        fl_tool_jw_null(j, "address");
    if (s->sender_pid)
        fl_tool_jw_int(j, "sender_pid", s->sender_pid);
    else
        fl_tool_jw_null(j, "sender_pid");
    if (interrupted) fl_tool_jw_int(j, "frame", s->frame);
    fl_tool_jw_close(j, '}');
}

static void signal_fields(fl_tool_jw_t *j, const Faultline__Report *r) {
    signal_object(j, "signal", r->signal, false);
    if (r->signal)
        fl_tool_jw_int(j, "crashed_tid", r->signal->crashed_tid);
    else
        fl_tool_jw_null(j, "crashed_tid");
    signal_object(j, "interrupted_signal", r->interrupted_signal, true);
    fl_tool_jw_str(j, "abort_message", r->abort_message && r->abort_message[0] ? r->abort_message : NULL);
    char type[512];
    if (fl_tool_terminate_type(r, type, sizeof type)) {
        fl_tool_jw_open(j, "terminate", '{');
        fl_tool_jw_str(j, "type", type);
        fl_tool_jw_str(j, "mangled", r->terminate_type);
        fl_tool_jw_close(j, '}');
    } else {
        fl_tool_jw_null(j, "terminate");
    }
}

static void mach_fields(fl_tool_jw_t *j, const Faultline__MachException *m) {
    if (!m) {
        fl_tool_jw_null(j, "mach_exception");
        return;
    }
    fl_tool_jw_open(j, "mach_exception", '{');
    fl_tool_jw_int(j, "type", m->type);
    fl_tool_jw_str(j, "name", m->name);
    fl_tool_jw_open(j, "codes", '[');
    for (size_t i = 0; i < m->n_codes; i++)
        fl_tool_jw_hex(j, NULL, m->codes[i]);
    fl_tool_jw_close(j, ']');
    fl_tool_jw_str(j, "code_name", m->code_name);
    fl_tool_jw_close(j, '}');
}

static void hang_fields(fl_tool_jw_t *j, const Faultline__Hang *h) {
    if (!h) {
        fl_tool_jw_null(j, "hang");
        return;
    }
    char buf[40];
    fl_tool_jw_open(j, "hang", '{');
    fl_tool_jw_int(j, "monitored_tid", h->monitored_tid);
    fl_tool_fmt_time(buf, sizeof buf, h->started_unix_ns);
    fl_tool_jw_str(j, "started", buf[0] ? buf : NULL);
    fl_tool_jw_next(j, "duration_ms");
    fprintf(j->o, "%" PRIu64 ".%03" PRIu64, h->duration_ns / 1000000u, h->duration_ns % 1000000u / 1000u);
    fl_tool_jw_int(j, "threshold_ms", h->threshold_ms);
    fl_tool_jw_int(j, "check_interval_ms", (int64_t)(h->check_interval_ns / 1000000u));
    fl_tool_jw_bool(j, "recovered", h->recovered);
    fl_tool_jw_int(j, "sequence", h->sequence);
    fl_tool_jw_close(j, '}');
}

static void thread_obj(fl_tool_jw_t *j, const Faultline__Thread *t, fl_tool_symbolizer_t *sym,
                       const fl_tool_frame_regs_t *fr) {
    fl_tool_jw_open(j, NULL, '{');
    fl_tool_jw_int(j, "tid", t->tid);
    fl_tool_jw_str(j, "name", t->name);
    fl_tool_jw_bool(j, "crashed", t->crashed);
    fl_tool_jw_bool(j, "monitored", t->monitored);
    fl_tool_jw_str(j, "state", fl_tool_state_name(t->state));
    fl_tool_jw_open(j, "registers", '{');
    for (size_t k = 0; k < t->n_registers; k++)
        fl_tool_jw_hex(j, t->registers[k]->name, t->registers[k]->value);
    fl_tool_jw_close(j, '}');
    fl_tool_jw_open(j, "frames", '[');
    for (size_t k = 0; k < t->n_frames; k++) {
        const Faultline__Frame *f = t->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, t, k, &s);
        fl_tool_jw_open(j, NULL, '{');
        fl_tool_jw_hex(j, "pc", f->pc);
        fl_tool_jw_hex(j, "sp", f->sp);
        fl_tool_jw_str(j, "method", fl_tool_method_name(f->method));
        if (f->signal_trampoline) fl_tool_jw_bool(j, "signal_trampoline", true);
        if (f->interrupted) fl_tool_jw_bool(j, "interrupted", true);
        if (s.image >= 0)
            fl_tool_jw_int(j, "image", s.image);
        else
            fl_tool_jw_null(j, "image");
        char full[FL_TOOL_NAME_MAX];
        fl_tool_jw_str(j, "symbol", s.mangled ? fl_tool_symbol_display(s.mangled, FL_DEMANGLE_FULL, full,
                                                                       sizeof full)
                                              : s.symbol);
        fl_tool_jw_str(j, "mangled", s.mangled);
        if (s.symbol)
            fl_tool_jw_int(j, "offset", (int64_t)s.offset);
        else
            fl_tool_jw_null(j, "offset");
        fl_tool_jw_str(j, "file", s.file);
        if (s.file)
            fl_tool_jw_int(j, "line", s.line);
        else
            fl_tool_jw_null(j, "line");
        if (fr && k < fr->count) {
            fl_tool_jw_open(j, "registers", '{');
            for (size_t i = 0; i < fr->nnames; i++)
                if (fr->known[k] >> i & 1) fl_tool_jw_hex(j, fr->names[i], fr->values[k * fr->nnames + i]);
            fl_tool_jw_close(j, '}');
        }
        fl_tool_jw_close(j, '}');
    }
    fl_tool_jw_close(j, ']');
    fl_tool_jw_bool(j, "frames_truncated", t->frames_truncated);
    fl_tool_jw_int(j, "frames_omitted", t->frames_omitted);
    fl_tool_jw_int(j, "frames_omitted_at", t->frames_omitted ? t->frames_omitted_at : 0);
    fl_tool_jw_str(j, "unwind_stop", t->unwind_stop);
    fl_tool_jw_close(j, '}');
}

static void image_obj(fl_tool_jw_t *j, const Faultline__Image *img) {
    char id[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(id, img->build_id.data, img->build_id.len);
    fl_tool_jw_open(j, NULL, '{');
    fl_tool_jw_str(j, "path", img->path);
    fl_tool_jw_str(j, "build_id", id[0] ? id : NULL);
    fl_tool_jw_str(j, "build_id_kind", fl_tool_build_id_kind_name(img->build_id_kind));
    fl_tool_jw_hex(j, "slide", img->slide);
    fl_tool_jw_hex(j, "start", img->start);
    fl_tool_jw_hex(j, "end", img->end);
    fl_tool_jw_hex(j, "text_start", img->text_start);
    fl_tool_jw_hex(j, "text_end", img->text_end);
    fl_tool_jw_bool(j, "is_main", img->is_main);
    fl_tool_jw_bool(j, "is_vdso", img->is_vdso);
    fl_tool_jw_bool(j, "path_truncated", img->path_truncated);
    fl_tool_jw_close(j, '}');
}

void fl_tool_show_json(FILE *o, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *sym) {
    fl_tool_show_json_regs(o, r, truncated, sym, NULL);
}

void fl_tool_show_json_regs(FILE *o, const Faultline__Report *r, bool truncated,
                            fl_tool_symbolizer_t *sym, const fl_tool_frame_regs_t *fr) {
    fl_tool_jw_t j = {.o = o};
    fl_tool_jw_open(&j, NULL, '{');
    char id[2 * FL_TOOL_HEX_MAX + 1];
    if (r->header)
        fl_tool_hex(id, r->header->report_id.data, r->header->report_id.len);
    fl_tool_jw_str(&j, "report_id", r->header ? id : NULL);
    fl_tool_jw_bool(&j, "truncated", truncated);
    fl_tool_jw_bool(&j, "complete", r->complete);
    header_fields(&j, r->header);
    signal_fields(&j, r);
    mach_fields(&j, r->mach_exception);
    hang_fields(&j, r->hang);
    fl_tool_jw_open(&j, "annotations", '{');
    for (size_t i = 0; i < r->n_annotations; i++)
        fl_tool_jw_str(&j, r->annotations[i]->key, r->annotations[i]->value);
    fl_tool_jw_close(&j, '}');
    if (r->threads_total)
        fl_tool_jw_int(&j, "threads_total", r->threads_total);
    else
        fl_tool_jw_null(&j, "threads_total");
    fl_tool_jw_open(&j, "threads", '[');
    for (size_t i = 0; i < r->n_threads; i++)
        thread_obj(&j, r->threads[i], sym, i == 0 ? fr : NULL);
    fl_tool_jw_close(&j, ']');
    fl_tool_jw_open(&j, "images", '[');
    for (size_t i = 0; i < r->n_images; i++)
        image_obj(&j, r->images[i]);
    fl_tool_jw_close(&j, ']');
    fl_tool_jw_open(&j, "notes", '[');
    for (size_t i = 0; i < r->n_notes; i++)
        fl_tool_jw_str(&j, NULL, r->notes[i]->text);
    fl_tool_jw_close(&j, ']');
    fl_tool_jw_close(&j, '}');
    fputc('\n', o);
}
