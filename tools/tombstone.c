/* SPDX-License-Identifier: MIT */
/* `faultline show --format tombstone`: a report in the layout of Android's debuggerd tombstones. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "tools/tool.h"

static const char *process_path(const Faultline__Report *r) {
    return r->header && r->header->process_path[0] ? fl_tool_clean(r->header->process_path) : "?";
}

static void thread_head(FILE *o, const Faultline__Report *r, const Faultline__Thread *t) {
    fprintf(o, "pid: %" PRId32 ", tid: %" PRId32 ", name: %s  >>> %s <<<\n",
            r->header ? r->header->pid : 0, t->tid, t->name[0] ? fl_tool_clean(t->name) : "?",
            process_path(r));
    if (t->state != FAULTLINE__THREAD__STATE__STATE_CAPTURED)
        fprintf(o, "    (not captured: %s%s)\n", fl_tool_state_name(t->state), fl_tool_state_detail(t));
    if (t->monitored) fprintf(o, "    (hung: the watchdog's monitored thread)\n");
}

/* debuggerd's register block: four a line, "name value" in 16 hex digits. */
static void registers(FILE *o, const Faultline__Thread *t) {
    for (size_t k = 0; k < t->n_registers; k++) {
        fprintf(o, "%s%-3s %016" PRIx64, k % 4 ? "  " : "    ", fl_tool_clean(t->registers[k]->name),
                t->registers[k]->value);
        if (k % 4 == 3 || k + 1 == t->n_registers) fputc('\n', o);
    }
}

static void backtrace(FILE *o, const Faultline__Report *r, const Faultline__Thread *t,
                      fl_tool_symbolizer_t *sym) {
    if (!t->n_frames) return;
    fprintf(o, "\nbacktrace:\n");
    for (size_t k = 0; k < t->n_frames; k++) {
        const Faultline__Frame *f = t->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, t, k, &s);
        const Faultline__Image *img = s.image >= 0 ? r->images[s.image] : NULL;
        /* The pc relative to the image's load bias: a file address, as `pc` in tombstones. */
        uint64_t rel = img ? f->pc - img->slide : f->pc;
        if (fl_tool_gap_before(t, k))
            fprintf(o, "      ... %" PRIu32 " frames omitted ...\n", fl_tool_gap_before(t, k));
        fprintf(o, "      #%02zu pc %016" PRIx64 "  %s", fl_tool_frame_depth(t, k), rel,
                img ? fl_tool_clean(img->path) : "<unknown>");
        if (f->signal_trampoline) fprintf(o, " (%s)", s.symbol);
        else if (s.symbol) fprintf(o, " (%s+%" PRIu64 ")", fl_tool_clean(s.symbol), s.offset);
        if (img && img->build_id.len) {
            char id[2 * FL_TOOL_HEX_MAX + 1];
            fl_tool_hex(id, img->build_id.data, img->build_id.len);
            fprintf(o, " (BuildId: %s)", id);
        }
        fputc('\n', o);
    }
    if (t->frames_truncated) fprintf(o, "      (more frames not captured)\n");
}

void fl_tool_show_tombstone(FILE *o, const Faultline__Report *r, bool truncated,
                            fl_tool_symbolizer_t *sym) {
    const Faultline__Header *h = r->header;
    const Faultline__Signal *s = r->signal;
    fprintf(o, "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n");
    if (truncated)
        fprintf(o, "(report truncated: %zu threads, %zu images decoded%s)\n", r->n_threads,
                r->n_images, r->complete ? "" : "; the writer did not finish");
    if (h) {
        fprintf(o, "Build fingerprint: '%s/%s'\n", fl_tool_clean(h->app_name),
                fl_tool_clean(h->app_version));
        fprintf(o, "Revision: '0'\n");
        fprintf(o, "ABI: '%s'\n", fl_tool_arch_name(h->arch));
        if (h->time_unix_ns) {
            time_t secs = (time_t)(h->time_unix_ns / 1000000000u);
            struct tm tm;
            char day[32] = "";
            if (gmtime_r(&secs, &tm)) strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
            fprintf(o, "Timestamp: %s.%09" PRIu64 "+0000\n", day, h->time_unix_ns % 1000000000u);
        }
        if (h->process_start_unix_ns && h->time_unix_ns >= h->process_start_unix_ns)
            fprintf(o, "Process uptime: %" PRIu64 "s\n",
                    (h->time_unix_ns - h->process_start_unix_ns) / 1000000000u);
        fprintf(o, "Cmdline: %s\n", process_path(r));
    }
    int c = fl_tool_crashed_thread(r);
    if (c >= 0) thread_head(o, r, r->threads[c]);
    if (s) {
        char fault[32] = "--------";
        if (s->has_address) snprintf(fault, sizeof fault, "0x%016" PRIx64, s->address);
        fprintf(o, "signal %" PRId32 " (%s), code %" PRId32 " (%s), fault addr %s", s->number,
                s->name[0] ? fl_tool_clean(s->name) : "?", s->code,
                s->code_name[0] ? fl_tool_clean(s->code_name) : "?", fault);
        if (s->code <= 0 && s->sender_pid) fprintf(o, " (sent by pid %" PRId32 ")", s->sender_pid);
        fputc('\n', o);
    }
    if (r->interrupted_signal) {
        char buf[256];
        fl_tool_interrupted_text(buf, sizeof buf, r->interrupted_signal);
        fprintf(o, "while handling %s\n", buf);
    }
    if (r->abort_message && r->abort_message[0])
        fprintf(o, "Abort message: '%s'\n", fl_tool_clean(r->abort_message));
    char type[512];
    if (fl_tool_terminate_type(r, type, sizeof type)) /* (the words of Android's libc++) */
        fprintf(o, "Abort message: 'terminating due to uncaught exception of type %s'\n",
                fl_tool_clean(type));
    if (r->mach_exception) {
        char buf[512];
        fl_tool_mach_text(buf, sizeof buf, r->mach_exception);
        fprintf(o, "Mach exception: %s\n", fl_tool_clean(buf));
    }
    if (r->hang) {
        /* Android's ANR traces say "ANR in ..."; the reason line is ours. */
        char buf[256];
        fl_tool_hang_text(buf, sizeof buf, r);
        fprintf(o, "hang: %s\n", buf);
    }
    if (h && h->reason[0]) fprintf(o, "Abort message: '%s'\n", fl_tool_clean(h->reason));
    if (c >= 0) {
        registers(o, r->threads[c]);
        backtrace(o, r, r->threads[c], sym);
    }
    for (size_t i = 0; i < r->n_threads; i++) {
        if ((int)i == c) continue;
        fprintf(o, "\n--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---\n");
        thread_head(o, r, r->threads[i]);
        registers(o, r->threads[i]);
        backtrace(o, r, r->threads[i], sym);
    }
    fprintf(o, "\nmemory map (%zu entries):\n", r->n_images);
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        fprintf(o, "    %016" PRIx64 "-%016" PRIx64 "  %s", img->start,
                img->end > img->start ? img->end - 1 : img->end, fl_tool_clean(img->path));
        if (img->build_id.len) {
            char id[2 * FL_TOOL_HEX_MAX + 1];
            fl_tool_hex(id, img->build_id.data, img->build_id.len);
            fprintf(o, " (BuildId: %s)", id);
        }
        fprintf(o, " (load bias 0x%" PRIx64 ")\n", img->slide);
    }
    if (r->n_annotations) {
        fprintf(o, "\nannotations:\n");
        for (size_t i = 0; i < r->n_annotations; i++)
            fprintf(o, "    %s: %s\n", fl_tool_clean(r->annotations[i]->key),
                    fl_tool_clean(r->annotations[i]->value));
    }
    if (r->n_notes) {
        fprintf(o, "\nnotes:\n");
        for (size_t i = 0; i < r->n_notes; i++) fprintf(o, "    %s\n", fl_tool_clean(r->notes[i]->text));
    }
}
