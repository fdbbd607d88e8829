/* SPDX-License-Identifier: MIT */
/* `faultline show --format apple`: a report in the layout of Apple's crash logs (iOS/macOS .crash). */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "tools/tool.h"

/* The value through the cleaner (again, for parts cleaned before): a row composed with snprintf
 * may end in a sequence its cut split. */
static void row(FILE *o, const char *label, const char *value) {
    if (value && value[0]) fprintf(o, "%-21s%s\n", label, fl_tool_clean(value));
}

/* "2024-05-01 12:00:00.123 +0000", Apple's Date/Time form (in UTC). */
static void apple_time(char *buf, size_t cap, uint64_t ns) {
    buf[0] = 0;
    if (!ns) return;
    time_t secs = (time_t)(ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) return;
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03u +0000", day, (unsigned)(ns % 1000000000u / 1000000u));
}

/* 16 bytes as Apple writes identifiers: 8-4-4-4-12, upper case. */
static void uuid_text(char *buf, const uint8_t *p, size_t n) {
    if (n != 16) {
        fl_tool_hex(buf, p, n);
        return;
    }
    char *q = buf;
    for (unsigned i = 0; i < 16; i++) {
        q += sprintf(q, "%02X", p[i]);
        if (i == 3 || i == 5 || i == 7 || i == 9) *q++ = '-';
    }
    *q = 0;
}

/* The Mach exception a signal stands for when none was recorded (Linux): the inverse of
 * Darwin's ux_exception table, as KSCrash's Apple formatter does. */
static const char *exc_for_signal(const char *sig) {
    static const char *const map[][2] = {
        {"SIGSEGV", "EXC_BAD_ACCESS"},     {"SIGBUS", "EXC_BAD_ACCESS"},
        {"SIGILL", "EXC_BAD_INSTRUCTION"}, {"SIGFPE", "EXC_ARITHMETIC"},
        {"SIGTRAP", "EXC_BREAKPOINT"},     {"SIGABRT", "EXC_CRASH"},
        {"SIGSYS", "EXC_CRASH"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(sig, map[i][0]) == 0) return map[i][1];
    return "EXC_CRASH";
}

/* BSD's descriptions, as in "Termination Reason: Namespace SIGNAL, Code 11 Segmentation fault: 11". */
static const char *signal_description(const char *sig) {
    static const char *const map[][2] = {
        {"SIGSEGV", "Segmentation fault"}, {"SIGBUS", "Bus error"},
        {"SIGILL", "Illegal instruction"}, {"SIGFPE", "Floating point exception"},
        {"SIGTRAP", "Trace/BPT trap"},     {"SIGABRT", "Abort trap"},
        {"SIGSYS", "Bad system call"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(sig, map[i][0]) == 0) return map[i][1];
    return sig;
}

static void header(FILE *o, const Faultline__Report *r) {
    const Faultline__Header *h = r->header;
    char buf[1024], t[2 * FL_TOOL_HEX_MAX + 1]; /* (a hostile id is up to 32 bytes here: hex) */
    if (!h) {
        row(o, "Incident Identifier:", "(the report has no header)");
        return;
    }
    uuid_text(t, h->report_id.data, h->report_id.len > 32 ? 32 : h->report_id.len);
    row(o, "Incident Identifier:", t);
    row(o, "Hardware Model:", fl_tool_clean(h->machine));
    snprintf(buf, sizeof buf, "%s [%" PRId32 "]",
             h->process_path[0] ? fl_tool_clean(fl_tool_basename(h->process_path)) : "???", h->pid);
    row(o, "Process:", buf);
    row(o, "Path:", fl_tool_clean(h->process_path));
    row(o, "Identifier:", fl_tool_clean(h->app_name));
    row(o, "Version:", fl_tool_clean(h->app_version));
    const char *code = h->arch == FAULTLINE__ARCH__ARCH_X86_64  ? "X86-64 (Native)"
                       : h->arch == FAULTLINE__ARCH__ARCH_ARM64 ? "ARM-64 (Native)"
                                                                : "???";
    row(o, "Code Type:", code);
    fputc('\n', o);
    apple_time(t, sizeof t, h->time_unix_ns);
    row(o, "Date/Time:", t);
    apple_time(t, sizeof t, h->process_start_unix_ns);
    row(o, "Launch Time:", t);
    snprintf(buf, sizeof buf, "%s %s%s%s%s", fl_tool_clean(h->os_name), fl_tool_clean(h->os_release),
             h->os_version[0] ? " (" : "", fl_tool_clean(h->os_version), h->os_version[0] ? ")" : "");
    row(o, "OS Version:", buf);
    row(o, "Report Version:", "104");
}

static void exception(FILE *o, const Faultline__Report *r) {
    const Faultline__Signal *s = r->signal;
    const Faultline__MachException *m = r->mach_exception;
    char buf[512];
    if (!s && !m) {
        if (r->header && r->header->kind == FAULTLINE__HEADER__KIND__KIND_SNAPSHOT)
            row(o, "Exception Type:", "EXC_RESOURCE (snapshot of a running process)");
        if (fl_tool_is_hang(r)) {
            /* Apple files app hangs apart from crashes; its logs name the event and its length. */
            row(o, "Exception Type:", "EXC_RESOURCE (hang: the monitored thread stopped answering)");
            fl_tool_hang_text(buf, sizeof buf, r);
            row(o, "Hang Duration:", buf);
            int c = fl_tool_crashed_thread(r);
            if (c >= 0) {
                snprintf(buf, sizeof buf, "%d", c);
                row(o, "Hung Thread:", buf);
            }
        }
        return;
    }
    /* Raw: every value here goes out through row(), which cleans it (a cleaned string held here
     * would be overwritten by row's use of the cleaner's rotating buffers). */
    const char *sig = s && s->name[0] ? s->name : "";
    const char *exc = m && m->name[0] ? m->name : exc_for_signal(sig);
    snprintf(buf, sizeof buf, "%s%s%s%s", exc, sig[0] ? " (" : "", sig, sig[0] ? ")" : "");
    row(o, "Exception Type:", buf);
    /* The subtype names the fault: the Mach code's name, else the signal's si_code name. */
    const char *sub = m && m->code_name[0] ? m->code_name : s ? s->code_name : "";
    uint64_t addr = 0;
    bool has_addr = false;
    if (m && m->n_codes >= 2 && m->type == 1 /* EXC_BAD_ACCESS */) {
        addr = m->codes[1];
        has_addr = true;
    } else if (s && s->has_address) {
        addr = s->address;
        has_addr = true;
    }
    if (sub[0] && has_addr) {
        snprintf(buf, sizeof buf, "%s at 0x%016" PRIx64, sub, addr);
        row(o, "Exception Subtype:", buf);
    } else if (sub[0]) {
        row(o, "Exception Subtype:", sub);
    }
    if (m && m->n_codes) {
        size_t n = 0;
        buf[0] = 0;
        for (size_t i = 0; i < m->n_codes && n < sizeof buf; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s0x%016" PRIx64, i ? ", " : "", m->codes[i]);
        row(o, "Exception Codes:", buf);
    }
    if (r->interrupted_signal) { /* (Apple's logs put what their subtype cannot say here) */
        char in[256];
        fl_tool_interrupted_text(in, sizeof in, r->interrupted_signal);
        snprintf(buf, sizeof buf, "while handling %s", in);
        row(o, "Exception Note:", buf);
    }
    if (s) {
        snprintf(buf, sizeof buf, "Namespace SIGNAL, Code %" PRId32 " %s: %" PRId32, s->number,
                 signal_description(sig), s->number);
        row(o, "Termination Reason:", buf);
        if (s->code <= 0 && s->sender_pid)
            snprintf(buf, sizeof buf, "[%" PRId32 "]", s->sender_pid);
        else
            snprintf(buf, sizeof buf, "exc handler [%" PRId32 "]", r->header ? r->header->pid : 0);
        row(o, "Terminating Process:", buf);
    }
    int c = fl_tool_crashed_thread(r);
    if (c >= 0) {
        snprintf(buf, sizeof buf, "%d", c);
        row(o, "Triggered by Thread:", buf);
    }
}

static void app_info(FILE *o, const Faultline__Report *r, bool truncated) {
    const Faultline__Header *h = r->header;
    char type[512];
    bool reason = h && h->reason[0], abort_msg = r->abort_message && r->abort_message[0],
         terminate = fl_tool_terminate_type(r, type, sizeof type);
    if (!reason && !abort_msg && !terminate && !r->n_annotations && !r->n_notes && !truncated)
        return;
    fprintf(o, "\nApplication Specific Information:\n");
    if (abort_msg) fprintf(o, "%s\n", fl_tool_clean(r->abort_message));
    /* (libc++abi's words, which Apple's own logs show for an uncaught C++ exception) */
    if (terminate) fprintf(o, "terminating due to uncaught exception of type %s\n", fl_tool_clean(type));
    if (reason) fprintf(o, "%s\n", fl_tool_clean(h->reason));
    for (size_t i = 0; i < r->n_annotations; i++)
        fprintf(o, "%s: %s\n", fl_tool_clean(r->annotations[i]->key), fl_tool_clean(r->annotations[i]->value));
    if (truncated)
        fprintf(o, "faultline: the report was truncated; %zu threads, %zu images decoded%s\n",
                r->n_threads, r->n_images, r->complete ? "" : " (the writer did not finish)");
    for (size_t i = 0; i < r->n_notes; i++) fprintf(o, "faultline: %s\n", fl_tool_clean(r->notes[i]->text));
}

static void thread(FILE *o, const Faultline__Report *r, size_t i, fl_tool_symbolizer_t *sym) {
    const Faultline__Thread *t = r->threads[i];
    fputc('\n', o);
    if (t->name[0]) fprintf(o, "Thread %zu name:  %s\n", i, fl_tool_clean(t->name));
    fprintf(o, "Thread %zu%s%s:", i, t->crashed ? " Crashed" : "", t->monitored ? " Hung" : "");
    if (t->state != FAULTLINE__THREAD__STATE__STATE_CAPTURED)
        fprintf(o, " (not captured: %s%s)", fl_tool_state_name(t->state), fl_tool_state_detail(t));
    fputc('\n', o);
    for (size_t k = 0; k < t->n_frames; k++) {
        const Faultline__Frame *f = t->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, t, k, &s);
        const Faultline__Image *img = s.image >= 0 ? r->images[s.image] : NULL;
        const char *name = img ? fl_tool_clean(fl_tool_basename(img->path)) : "???";
        if (fl_tool_gap_before(t, k))
            fprintf(o, "... %" PRIu32 " frames omitted ...\n", fl_tool_gap_before(t, k));
        fprintf(o, "%-3zu %-30s\t0x%016" PRIx64 " ", fl_tool_frame_depth(t, k), name[0] ? name : "???",
                f->pc);
        if (f->signal_trampoline)
            fprintf(o, "%s", s.symbol);
        else if (s.symbol)
            fprintf(o, "%s + %" PRIu64, fl_tool_clean(s.symbol), s.offset);
        else if (img)
            fprintf(o, "0x%" PRIx64 " + %" PRIu64, img->start, f->pc - img->start);
        else
            fprintf(o, "0 + %" PRIu64, f->pc);
        if (s.file) fprintf(o, " (%s:%" PRIu32 ")", fl_tool_clean(fl_tool_basename(s.file)), s.line);
        fputc('\n', o);
    }
}

static void thread_state(FILE *o, const Faultline__Report *r) {
    int c = fl_tool_crashed_thread(r);
    if (c < 0 || r->threads[c]->n_registers == 0) return;
    const Faultline__Thread *t = r->threads[c];
    int arch = r->header ? r->header->arch : 0;
    fprintf(o, "\nThread %d %s with %s Thread State (64-bit):\n", c, fl_tool_is_hang(r) ? "hung" : "crashed",
            arch == FAULTLINE__ARCH__ARCH_ARM64 ? "ARM" : "X86");
    for (size_t k = 0; k < t->n_registers; k++) {
        const char *n = t->registers[k]->name;
        /* Apple's short names for the x86 flags register. */
        if (strcmp(n, "rflags") == 0) n = "rfl";
        /* "%5s" right-aligns the usual 2- and 3-letter names two spaces after the previous
         * value, as Apple does; longer names still get a space. */
        fprintf(o, "%s%5s: 0x%016" PRIx64, k % 4 && strlen(n) >= 5 ? " " : "", fl_tool_clean(n),
                t->registers[k]->value);
        if (k % 4 == 3 || k + 1 == t->n_registers) fputc('\n', o);
    }
}

static void images(FILE *o, const Faultline__Report *r) {
    fprintf(o, "\nBinary Images:\n");
    const char *arch = fl_tool_arch_name(r->header ? r->header->arch : 0);
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        char id[2 * FL_TOOL_HEX_MAX + 1];
        fl_tool_hex(id, img->build_id.data, img->build_id.len);
        fprintf(o, "%#18" PRIx64 " - %#18" PRIx64 " %s %s  <%s> %s%s\n", img->start,
                img->end > img->start ? img->end - 1 : img->end,
                fl_tool_clean(fl_tool_basename(img->path)), arch, id, fl_tool_clean(img->path),
                img->path_truncated ? "..." : "");
    }
}

void fl_tool_show_apple(FILE *o, const Faultline__Report *r, bool truncated,
                        fl_tool_symbolizer_t *sym) {
    header(o, r);
    fputc('\n', o);
    exception(o, r);
    app_info(o, r, truncated);
    for (size_t i = 0; i < r->n_threads; i++) thread(o, r, i, sym);
    thread_state(o, r);
    images(o, r);
}
