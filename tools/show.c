/* SPDX-License-Identifier: MIT */
/* `faultline show`: a report as text, in the spirit of Apple's crash log. */
#include <inttypes.h>
#include <string.h>

#include "tools/tool.h"

/* The value through the cleaner (again, for parts cleaned before): a row composed with snprintf
 * may end in a sequence its cut split. */
static void row(FILE *o, const char *label, const char *value) {
    if (value && value[0])
        fprintf(o, "%-20s %s\n", label, fl_tool_clean(value));
}

static void header_block(FILE *o, const Faultline__Header *h) {
    char buf[512], t[40];
    if (!h) {
        fprintf(o, "%-20s %s\n", "Header:", "(not in the report)");
        return;
    }
    snprintf(buf, sizeof buf, "%s [%" PRId32 "]",
             h->process_path[0] ? fl_tool_clean(h->process_path) : "???", h->pid);
    row(o, "Process:", buf);
    row(o, "Identifier:", fl_tool_clean(h->app_name));
    row(o, "Version:", fl_tool_clean(h->app_version));
    fl_tool_fmt_time(t, sizeof t, h->time_unix_ns);
    row(o, "Date/Time:", t);
    fl_tool_fmt_time(t, sizeof t, h->process_start_unix_ns);
    row(o, "Launch Time:", t);
    snprintf(buf, sizeof buf, "%s %s%s%s%s", fl_tool_clean(h->os_name), fl_tool_clean(h->os_release),
             h->os_version[0] ? " (" : "", fl_tool_clean(h->os_version), h->os_version[0] ? ")" : "");
    row(o, "OS Version:", buf);
    row(o, "Hostname:", fl_tool_clean(h->hostname));
    row(o, "Architecture:", h->arch ? fl_tool_arch_name(h->arch) : fl_tool_clean(h->machine));
    char id[2 * FL_TOOL_HEX_MAX + 1];
    fl_tool_hex(id, h->report_id.data, h->report_id.len);
    row(o, "Report Id:", id);
    row(o, "Report Kind:", fl_tool_kind_name(h->kind));
    row(o, "Reason:", fl_tool_clean(h->reason));
}

static void exception_block(FILE *o, const Faultline__Report *r, fl_tool_symbolizer_t *sym) {
    const Faultline__Signal *s = r->signal;
    char buf[256];
    if (r->mach_exception) {
        fl_tool_mach_text(buf, sizeof buf, r->mach_exception);
        row(o, "Mach Exception:", buf);
    }
    if (s) {
        fl_tool_signal_text(buf, sizeof buf, s);
        row(o, "Exception Type:", buf);
        if (s->has_address) {
            snprintf(buf, sizeof buf, "0x%016" PRIx64, s->address);
            row(o, "Exception Address:", buf);
        }
        if (s->code <= 0 && s->sender_pid) {
            snprintf(buf, sizeof buf, "pid %" PRId32, s->sender_pid);
            row(o, "Sent By:", buf);
        }
    }
    if (r->interrupted_signal) {
        fl_tool_interrupted_text(buf, sizeof buf, r->interrupted_signal);
        row(o, "While Handling:", buf);
    }
    row(o, "Abort Message:", r->abort_message);
    row(o, "C++ Exception:", fl_tool_terminate_type(r, buf, sizeof buf));
    if (r->hang) {
        fl_tool_hang_text(buf, sizeof buf, r);
        row(o, "Hang:", buf);
    }
    int c = fl_tool_crashed_thread(r);
    if (c >= 0) {
        const Faultline__Thread *t = r->threads[c];
        snprintf(buf, sizeof buf, "%d (tid %" PRId32 ")%s%s", c, t->tid, t->name[0] ? " " : "",
                 fl_tool_clean(t->name));
        row(o, fl_tool_is_hang(r) ? "Hung Thread:" : "Crashed Thread:", buf);
    } else if (s && s->crashed_tid) {
        snprintf(buf, sizeof buf, "tid %" PRId32 " (not in the report)", s->crashed_tid);
        row(o, "Crashed Thread:", buf);
    }
    /* Past the crash machinery (an abort's, a runtime's that ended the crash: Go's from
     * runtime.raise to the frame under runtime.sigpanic), where triage's signature starts. */
    int site = c >= 0 && !fl_tool_is_hang(r) ? fl_tool_crash_site(r, sym) : -1;
    if (site > 0) {
        const Faultline__Thread *t = r->threads[c];
        fl_tool_sym_t fs;
        fl_tool_symbolize(sym, t, (size_t)site, &fs);
        if (fs.symbol)
            snprintf(buf, sizeof buf, "frame %zu, %s + %" PRIu64, fl_tool_frame_depth(t, (size_t)site),
                     fl_tool_clean(fs.symbol), fs.offset);
        else
            snprintf(buf, sizeof buf, "frame %zu", fl_tool_frame_depth(t, (size_t)site));
        row(o, "Crash Site:", buf);
    }
    if (r->threads_total)
        snprintf(buf, sizeof buf, "%zu listed of %" PRIu32, r->n_threads, r->threads_total);
    else
        snprintf(buf, sizeof buf, "%zu listed", r->n_threads);
    row(o, "Threads:", buf);
}

static void thread_block(FILE *o, const Faultline__Report *r, size_t i, fl_tool_symbolizer_t *sym) {
    const Faultline__Thread *t = r->threads[i];
    fprintf(o, "\nThread %zu (tid %" PRId32 ")%s%s:", i, t->tid, t->name[0] ? " " : "",
            fl_tool_clean(t->name));
    if (t->crashed)
        fprintf(o, " [Crashed]");
    if (t->monitored)
        fprintf(o, " [Hung]");
    if (t->state != FAULTLINE__THREAD__STATE__STATE_CAPTURED)
        fprintf(o, " [not captured: %s%s]", fl_tool_state_name(t->state), fl_tool_state_detail(t));
    fputc('\n', o);
    for (size_t k = 0; k < t->n_frames; k++) {
        const Faultline__Frame *f = t->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, t, k, &s);
        const char *image =
            s.image >= 0 ? fl_tool_clean(fl_tool_basename(r->images[s.image]->path)) : "???";
        if (fl_tool_gap_before(t, k))
            fprintf(o, "    ... %" PRIu32 " frames omitted ...\n", fl_tool_gap_before(t, k));
        fprintf(o, "%-3zu %-31s 0x%016" PRIx64, fl_tool_frame_depth(t, k), image[0] ? image : "???",
                f->pc);
        if (f->signal_trampoline)
            fprintf(o, " %s", s.symbol); /* (no offset: it is not a function's) */
        else if (s.symbol)
            fprintf(o, " %s + %" PRIu64, fl_tool_clean(s.symbol), s.offset);
        else
            fprintf(o, " ???");
        if (s.file)
            fprintf(o, " (%s:%" PRIu32 ")", fl_tool_clean(fl_tool_basename(s.file)), s.line);
        fputc('\n', o);
    }
    if (t->frames_truncated)
        fprintf(o, "    (more frames not captured)\n");
    if (t->unwind_stop[0])
        fprintf(o, "    (unwind stopped: %s)\n", fl_tool_clean(t->unwind_stop));
}

static void registers_block(FILE *o, const Faultline__Report *r) {
    int c = fl_tool_crashed_thread(r);
    if (c < 0 || r->threads[c]->n_registers == 0)
        return;
    const Faultline__Thread *t = r->threads[c];
    fprintf(o, "\nThread %d %s with %s Thread State:\n", c, fl_tool_is_hang(r) ? "hung" : "crashed",
            fl_tool_arch_name(r->header ? r->header->arch : 0));
    for (size_t k = 0; k < t->n_registers; k++)
        fprintf(o, "%8s: 0x%016" PRIx64 "%s", fl_tool_clean(t->registers[k]->name), t->registers[k]->value,
                k % 4 == 3 || k + 1 == t->n_registers ? "\n" : "");
}

static void images_block(FILE *o, const Faultline__Report *r) {
    fprintf(o, "\nBinary Images:\n");
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        char id[2 * FL_TOOL_HEX_MAX + 1];
        fl_tool_hex(id, img->build_id.data, img->build_id.len);
        /* The end shown inclusive, as Apple's logs do. */
        fprintf(o, "0x%016" PRIx64 " - 0x%016" PRIx64 " %-24s <%s> %s%s\n", img->start,
                img->end > img->start ? img->end - 1 : img->end,
                fl_tool_clean(fl_tool_basename(img->path)), id[0] ? id : "no build-id",
                fl_tool_clean(img->path), img->path_truncated ? "..." : "");
    }
}

void fl_tool_show_text(FILE *o, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *sym) {
    if (truncated)
        fprintf(o, "Report was truncated; %zu threads, %zu images decoded%s.\n\n", r->n_threads,
                r->n_images, r->complete ? "" : " (the writer did not finish)");
    header_block(o, r->header);
    fputc('\n', o);
    exception_block(o, r, sym);
    if (r->n_annotations) {
        fprintf(o, "\nAnnotations:\n");
        for (size_t i = 0; i < r->n_annotations; i++)
            fprintf(o, "  %s: %s\n", fl_tool_clean(r->annotations[i]->key),
                    fl_tool_clean(r->annotations[i]->value));
    }
    for (size_t i = 0; i < r->n_threads; i++)
        thread_block(o, r, i, sym);
    registers_block(o, r);
    images_block(o, r);
    if (r->n_notes) {
        fprintf(o, "\nNotes:\n");
        for (size_t i = 0; i < r->n_notes; i++)
            fprintf(o, "  - %s\n", fl_tool_clean(r->notes[i]->text));
    }
}
