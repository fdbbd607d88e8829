/* SPDX-License-Identifier: MIT */
/* `faultline show --format sentry`: a report as a Sentry event (docs/interop.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report.h"
#include "tools/tool.h"

/* Sentry limits tag keys to 32 characters and values to 200, on one line: annotations that fit
 * are tags as well (searchable), and every annotation is in the "annotations" context. */
#define TAG_KEY_MAX 32u
#define TAG_VALUE_MAX 200u

void fl_tool_sentry_debug_id(char *buf, size_t cap, const uint8_t *id, size_t len, bool uuid) {
    uint8_t g[16] = {0};
    memcpy(g, id, len < 16 ? len : 16);
    if (!uuid) {
        /* A GUID's first three fields are little-endian: the build-id's bytes read as one (as
         * Breakpad's FileID and Sentry's symbolic do). */
        static const uint8_t order[8] = {3, 2, 1, 0, 5, 4, 7, 6};
        uint8_t t[8];
        for (unsigned i = 0; i < 8; i++) t[i] = g[order[i]];
        memcpy(g, t, 8);
    }
    snprintf(buf, cap,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", g[0], g[1],
             g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

static bool tag_ok(const char *k, const char *v) {
    if (!k[0] || strcmp(k, "faultline.kind") == 0 || strlen(k) > TAG_KEY_MAX || strlen(v) > TAG_VALUE_MAX) return false;
    for (const char *p = v; *p; p++)
        if (*p == '\n' || *p == '\r') return false;
    return true;
}

/* Frames outermost first, as Sentry wants them; the crashed thread's with its registers. */
static void stacktrace(fl_tool_jw_t *j, const Faultline__Report *r, const Faultline__Thread *t,
                       fl_tool_symbolizer_t *sym, bool regs) {
    fl_tool_jw_open(j, "stacktrace", '{');
    fl_tool_jw_open(j, "frames", '[');
    for (size_t n = t->n_frames; n-- > 0;) {
        const Faultline__Frame *f = t->frames[n];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, t, n, &s);
        fl_tool_jw_open(j, NULL, '{');
        fl_tool_jw_hex(j, "instruction_addr", f->pc);
        if (s.image >= 0) {
            fl_tool_jw_str(j, "package", r->images[s.image]->path);
            fl_tool_jw_hex(j, "image_addr", r->images[s.image]->start);
        }
        if (s.symbol) {
            /* function: the full demangled name (Sentry shortens it itself); symbol: as linked. */
            char full[FL_TOOL_NAME_MAX];
            fl_tool_jw_str(j, "function", s.mangled ? fl_tool_symbol_display(s.mangled, FL_DEMANGLE_FULL,
                                                                             full, sizeof full)
                                                    : s.symbol);
            if (s.mangled) fl_tool_jw_str(j, "symbol", s.mangled);
            fl_tool_jw_hex(j, "symbol_addr", f->pc - s.offset);
        }
        if (s.file) {
            fl_tool_jw_str(j, "filename", fl_tool_basename(s.file));
            fl_tool_jw_str(j, "abs_path", s.file);
            fl_tool_jw_int(j, "lineno", s.line);
        }
        fl_tool_jw_close(j, '}');
    }
    fl_tool_jw_close(j, ']');
    if (regs && t->n_registers) {
        fl_tool_jw_open(j, "registers", '{');
        for (size_t k = 0; k < t->n_registers; k++)
            fl_tool_jw_hex(j, t->registers[k]->name, t->registers[k]->value);
        fl_tool_jw_close(j, '}');
    }
    /* Callers' pcs are return addresses, frame 0's is exact: Sentry looks callers up at pc - 1
     * as faultline does (frames after a signal trampoline, exact too, are rare enough). */
    fl_tool_jw_str(j, "instruction_addr_adjustment", "all_but_first");
    fl_tool_jw_close(j, '}');
}

/* The exception: the signal or Mach exception of a crash, or a hang's finding; `crashed` the
 * thread whose stack it carries (the crashed, or the monitored one). */
static void exception(fl_tool_jw_t *j, const Faultline__Report *r, int crashed,
                      fl_tool_symbolizer_t *sym) {
    const Faultline__Signal *s = r->signal;
    const Faultline__MachException *m = r->mach_exception;
    const Faultline__Hang *hang = r->hang;
    char type[64], value[512];
    if (hang && !s && !m) {
        /* A hang: Sentry's app-hang shape (sentry-native's and sentry-cocoa's AppHang). */
        snprintf(type, sizeof type, "AppHang");
        snprintf(value, sizeof value, "the monitored thread (tid %" PRId32 ") did not beat for %" PRIu64
                                      ".%03" PRIu64 " s (threshold %" PRIu32 " ms)%s",
                 hang->monitored_tid, hang->duration_ns / 1000000000u,
                 hang->duration_ns % 1000000000u / 1000000u, hang->threshold_ms,
                 hang->recovered ? ", then recovered" : "");
    } else if (m) {
        snprintf(type, sizeof type, "%s", m->name[0] ? m->name : "EXC_UNKNOWN");
        fl_tool_mach_text(value, sizeof value, m);
    } else {
        if (s->name[0]) snprintf(type, sizeof type, "%s", s->name);
        else snprintf(type, sizeof type, "signal %" PRId32, s->number);
        fl_tool_signal_text(value, sizeof value, s);
    }
    if (s && s->has_address) {
        size_t n = strlen(value);
        snprintf(value + n, sizeof value - n, " at 0x%" PRIx64, s->address);
    }
    if (r->interrupted_signal) {
        char in[256];
        size_t n = strlen(value);
        fl_tool_interrupted_text(in, sizeof in, r->interrupted_signal);
        snprintf(value + n, sizeof value - n, ", while handling %s", in);
    }
    if (r->abort_message && r->abort_message[0]) {
        size_t n = strlen(value);
        snprintf(value + n, sizeof value - n, ": %s", r->abort_message);
    }
    char cxx[256];
    if (fl_tool_terminate_type(r, cxx, sizeof cxx)) {
        size_t n = strlen(value);
        snprintf(value + n, sizeof value - n, ": uncaught C++ exception of type %s", cxx);
    }
    fl_tool_jw_open(j, "exception", '{');
    fl_tool_jw_open(j, "values", '[');
    fl_tool_jw_open(j, NULL, '{');
    fl_tool_jw_str(j, "type", type);
    fl_tool_jw_str(j, "value", value);
    if (crashed >= 0) fl_tool_jw_int(j, "thread_id", r->threads[crashed]->tid);
    fl_tool_jw_open(j, "mechanism", '{');
    fl_tool_jw_str(j, "type", hang && !s && !m ? "AppHang" : m ? "mach_exception" : "signalhandler");
    fl_tool_jw_bool(j, "handled", hang && !s && !m); /* a hang did not end the process */
    fl_tool_jw_bool(j, "synthetic", true); /* the type is the signal's name, not the program's */
    fl_tool_jw_open(j, "meta", '{');
    if (s) {
        fl_tool_jw_open(j, "signal", '{');
        fl_tool_jw_int(j, "number", s->number);
        fl_tool_jw_int(j, "code", s->code);
        if (s->name[0]) fl_tool_jw_str(j, "name", s->name);
        if (s->code_name[0]) fl_tool_jw_str(j, "code_name", s->code_name);
        fl_tool_jw_close(j, '}');
    }
    if (m) {
        fl_tool_jw_open(j, "mach_exception", '{');
        fl_tool_jw_int(j, "exception", m->type);
        fl_tool_jw_int(j, "code", m->n_codes > 0 ? (int64_t)m->codes[0] : 0);
        fl_tool_jw_int(j, "subcode", m->n_codes > 1 ? (int64_t)m->codes[1] : 0);
        if (m->name[0]) fl_tool_jw_str(j, "name", m->name);
        fl_tool_jw_close(j, '}');
    }
    fl_tool_jw_close(j, '}');
    fl_tool_jw_close(j, '}');
    if (crashed >= 0) stacktrace(j, r, r->threads[crashed], sym, true);
    fl_tool_jw_close(j, '}');
    fl_tool_jw_close(j, ']');
    fl_tool_jw_close(j, '}');
}

static void images(fl_tool_jw_t *j, const Faultline__Report *r) {
    const char *arch = fl_tool_arch_name(r->header ? r->header->arch : 0);
    fl_tool_jw_open(j, "debug_meta", '{');
    fl_tool_jw_open(j, "images", '[');
    for (size_t i = 0; i < r->n_images; i++) {
        const Faultline__Image *img = r->images[i];
        bool macho = img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID;
        fl_tool_jw_open(j, NULL, '{');
        fl_tool_jw_str(j, "type", macho ? "macho" : "elf");
        fl_tool_jw_str(j, "code_file", img->path);
        if (img->build_id.len) {
            char id[2 * FL_TOOL_HEX_MAX + 1], debug_id[40];
            fl_tool_sentry_debug_id(debug_id, sizeof debug_id, img->build_id.data,
                                    img->build_id.len, macho);
            fl_tool_jw_str(j, "debug_id", debug_id);
            /* Only a real build-id is a code id (Sentry's rule); Mach-O has none. */
            fl_tool_hex(id, img->build_id.data, img->build_id.len);
            if (img->build_id_kind == FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU)
                fl_tool_jw_str(j, "code_id", id);
        } else {
            fl_tool_jw_str(j, "debug_id", "00000000-0000-0000-0000-000000000000");
        }
        fl_tool_jw_hex(j, "image_addr", img->start);
        fl_tool_jw_int(j, "image_size", (int64_t)(img->end > img->start ? img->end - img->start : 0));
        fl_tool_jw_hex(j, "image_vmaddr", img->start - img->slide);
        if (strcmp(arch, "unknown") != 0) fl_tool_jw_str(j, "arch", arch);
        fl_tool_jw_close(j, '}');
    }
    fl_tool_jw_close(j, ']');
    fl_tool_jw_close(j, '}');
}

static void contexts(fl_tool_jw_t *j, const Faultline__Report *r, bool truncated) {
    const Faultline__Header *h = r->header;
    char buf[1024];
    fl_tool_jw_open(j, "contexts", '{');
    if (h) {
        fl_tool_jw_open(j, "os", '{');
        fl_tool_jw_str(j, "type", "os");
        fl_tool_jw_str(j, "name", h->os_name);
        fl_tool_jw_str(j, "kernel_version", h->os_release);
        snprintf(buf, sizeof buf, "%s %s %s", h->os_name, h->os_release, h->os_version);
        fl_tool_jw_str(j, "raw_description", buf);
        fl_tool_jw_close(j, '}');
        fl_tool_jw_open(j, "device", '{');
        fl_tool_jw_str(j, "type", "device");
        fl_tool_jw_str(j, "arch", h->arch ? fl_tool_arch_name(h->arch) : h->machine);
        fl_tool_jw_close(j, '}');
        fl_tool_jw_open(j, "app", '{');
        fl_tool_jw_str(j, "type", "app");
        if (h->app_name[0]) fl_tool_jw_str(j, "app_name", h->app_name);
        if (h->app_version[0]) fl_tool_jw_str(j, "app_version", h->app_version);
        fl_tool_fmt_time(buf, sizeof buf, h->process_start_unix_ns);
        if (buf[0]) fl_tool_jw_str(j, "app_start_time", buf);
        fl_tool_jw_close(j, '}');
    }
    if (r->n_annotations) {
        fl_tool_jw_open(j, "annotations", '{');
        for (size_t i = 0; i < r->n_annotations; i++)
            fl_tool_jw_str(j, r->annotations[i]->key, r->annotations[i]->value);
        fl_tool_jw_close(j, '}');
    }
    /* What the report says beyond Sentry's own contexts. */
    fl_tool_jw_open(j, "faultline", '{');
    if (h) {
        fl_tool_jw_str(j, "kind", fl_tool_kind_name(h->kind));
        if (h->reason[0]) fl_tool_jw_str(j, "reason", h->reason);
        fl_tool_jw_str(j, "process_path", h->process_path);
        fl_tool_jw_int(j, "pid", h->pid);
    }
    if (r->threads_total) fl_tool_jw_int(j, "threads_total", r->threads_total);
    fl_tool_jw_bool(j, "truncated", truncated);
    if (r->n_notes) {
        fl_tool_jw_open(j, "notes", '[');
        for (size_t i = 0; i < r->n_notes; i++) fl_tool_jw_str(j, NULL, r->notes[i]->text);
        fl_tool_jw_close(j, ']');
    }
    fl_tool_jw_close(j, '}');
    fl_tool_jw_close(j, '}');
}

void fl_tool_show_sentry(FILE *o, const Faultline__Report *r, bool truncated,
                         fl_tool_symbolizer_t *sym) {
    const Faultline__Header *h = r->header;
    bool crash = h && h->kind == FAULTLINE__HEADER__KIND__KIND_CRASH;
    int crashed = fl_tool_crashed_thread(r);
    if (crashed < 0 && r->hang) /* a hang: the monitored thread's stack is the exception's */
        for (size_t i = 0; i < r->n_threads && crashed < 0; i++)
            if (r->threads[i]->monitored || r->threads[i]->tid == r->hang->monitored_tid) crashed = (int)i;
    char buf[1024];
    fl_tool_jw_t j = {.o = o};
    fl_tool_jw_open(&j, NULL, '{');
    if (h && h->report_id.len == 16) {
        fl_tool_hex(buf, h->report_id.data, h->report_id.len);
        fl_tool_jw_str(&j, "event_id", buf);
    }
    if (h) {
        fl_tool_fmt_time(buf, sizeof buf, h->time_unix_ns);
        if (buf[0]) fl_tool_jw_str(&j, "timestamp", buf);
    }
    fl_tool_jw_str(&j, "platform", "native");
    fl_tool_jw_str(&j, "level", crash ? "fatal" : r->hang ? "error" : "info");
    fl_tool_jw_str(&j, "logger", "faultline");
    if (h && (h->app_name[0] || h->app_version[0])) {
        snprintf(buf, sizeof buf, "%s%s%s", h->app_name, h->app_name[0] && h->app_version[0] ? "@" : "",
                 h->app_version);
        fl_tool_jw_str(&j, "release", buf);
    }
    if (h && h->hostname[0]) fl_tool_jw_str(&j, "server_name", h->hostname);
    fl_tool_jw_open(&j, "sdk", '{');
    fl_tool_jw_str(&j, "name", "faultline");
    fl_tool_jw_str(&j, "version", FL_TOOL_VERSION);
    fl_tool_jw_close(&j, '}');
    fl_tool_jw_open(&j, "tags", '{');
    fl_tool_jw_str(&j, "faultline.kind", h ? fl_tool_kind_name(h->kind) : "unknown");
    for (size_t i = 0; i < r->n_annotations; i++)
        if (tag_ok(r->annotations[i]->key, r->annotations[i]->value))
            fl_tool_jw_str(&j, r->annotations[i]->key, r->annotations[i]->value);
    fl_tool_jw_close(&j, '}');
    contexts(&j, r, truncated);
    bool exc = r->signal || r->mach_exception || r->hang;
    if (exc) {
        exception(&j, r, crashed, sym);
    } else {
        /* A snapshot: no exception, a message saying why it was taken. */
        fl_tool_jw_open(&j, "logentry", '{');
        snprintf(buf, sizeof buf, "%s%s%s", h ? fl_tool_kind_name(h->kind) : "report",
                 h && h->reason[0] ? ": " : "", h ? h->reason : "");
        fl_tool_jw_str(&j, "formatted", buf);
        fl_tool_jw_close(&j, '}');
    }
    fl_tool_jw_open(&j, "threads", '{');
    fl_tool_jw_open(&j, "values", '[');
    for (size_t i = 0; i < r->n_threads; i++) {
        const Faultline__Thread *t = r->threads[i];
        fl_tool_jw_open(&j, NULL, '{');
        fl_tool_jw_int(&j, "id", t->tid);
        if (t->name[0]) fl_tool_jw_str(&j, "name", t->name);
        fl_tool_jw_bool(&j, "crashed", (int)i == crashed && crash);
        fl_tool_jw_bool(&j, "current", (int)i == (crashed >= 0 ? crashed : 0));
        if (h) fl_tool_jw_bool(&j, "main", t->tid == h->pid);
        /* The crashed thread's stack is the exception's (Sentry's rule: not twice). */
        if (t->n_frames && !((int)i == crashed && exc)) stacktrace(&j, r, t, sym, false);
        fl_tool_jw_close(&j, '}');
    }
    fl_tool_jw_close(&j, ']');
    fl_tool_jw_close(&j, '}');
    images(&j, r);
    fl_tool_jw_close(&j, '}');
    fputc('\n', o);
}

int fl_tool_sentry_dsn(const char *dsn, char *url, size_t url_cap, char *auth, size_t auth_cap) {
    /* SCHEME://KEY[:SECRET]@HOST[:PORT][/PATH]/PROJECT */
    const char *scheme_end = strstr(dsn, "://");
    if (!scheme_end || (strncmp(dsn, "http://", 7) != 0 && strncmp(dsn, "https://", 8) != 0))
        return FL_EINVAL;
    const char *key = scheme_end + 3, *at = strchr(key, '@');
    if (!at || at == key) return FL_EINVAL;
    const char *host = at + 1, *slash = strrchr(host, '/');
    if (!slash || slash == host || !slash[1]) return FL_EINVAL;
    size_t key_len = strcspn(key, ":@");
    for (const char *p = dsn; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == ',') return FL_EINVAL;
    for (const char *p = slash + 1; *p; p++)
        if (*p < '0' || *p > '9') return FL_EINVAL; /* the project id is a number */
    int n = snprintf(url, url_cap, "%.*s%.*s/api/%s/envelope/", (int)(key - dsn), dsn,
                     (int)(slash - host), host, slash + 1);
    int m = snprintf(auth, auth_cap,
                     "X-Sentry-Auth: Sentry sentry_version=7, sentry_client=faultline/%s, "
                     "sentry_key=%.*s", FL_TOOL_VERSION, (int)key_len, key);
    return n < 0 || (size_t)n >= url_cap || m < 0 || (size_t)m >= auth_cap ? FL_ERANGE : 0;
}

int fl_tool_sentry_envelope(const uint8_t *report, size_t len, const char *dsn, uint8_t **out,
                            size_t *out_len) {
    Faultline__Report *r = NULL;
    bool truncated = false;
    int err = fl_report_decode(report, len, &r, &truncated);
    if (err) return err;
    char *ev = NULL, *env = NULL;
    size_t ev_len = 0, env_len = 0;
    uint8_t *md = NULL;
    size_t md_len = 0;
    /* Names from the files at the images' recorded paths (what the device has), no cache. */
    fl_tool_symopts_t opts = {0};
    fl_tool_symstore_t *st = fl_tool_symstore_new(&opts);
    fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, r) : NULL;
    FILE *o = sym ? open_memstream(&ev, &ev_len) : NULL;
    err = FL_ENOMEM;
    if (o) {
        fl_tool_show_sentry(o, r, truncated, sym);
        if (fclose(o) == 0) err = 0;
    }
    /* The minidump too when the report kept stack memory: Sentry walks it again server-side. */
    if (!err && r->n_memory && fl_tool_minidump(r, &md, &md_len) != 0) md = NULL;
    FILE *e = err ? NULL : open_memstream(&env, &env_len);
    if (e) {
        char id[2 * FL_TOOL_HEX_MAX + 1] = "", now[40];
        if (r->header && r->header->report_id.len == 16)
            fl_tool_hex(id, r->header->report_id.data, 16);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        fl_tool_fmt_time(now, sizeof now, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
        fprintf(e, "{\"event_id\":\"%s\",\"dsn\":", id);
        fl_tool_json_string(e, dsn);
        fprintf(e, ",\"sent_at\":\"%s\"}\n", now);
        fprintf(e, "{\"type\":\"event\",\"length\":%zu,\"content_type\":\"application/json\"}\n", ev_len);
        fwrite(ev, 1, ev_len, e);
        fputc('\n', e);
        if (md) {
            fprintf(e, "{\"type\":\"attachment\",\"length\":%zu,\"filename\":\"%s.dmp\","
                       "\"attachment_type\":\"event.minidump\"}\n", md_len, id[0] ? id : "report");
            fwrite(md, 1, md_len, e);
            fputc('\n', e);
        }
        err = fclose(e) == 0 ? 0 : FL_ENOMEM;
    } else if (!err) {
        err = FL_ENOMEM;
    }
    free(ev);
    free(md);
    fl_tool_symbolizer_free(sym);
    fl_tool_symstore_free(st);
    fl_report_free(r);
    if (err) {
        free(env);
        return err;
    }
    *out = (uint8_t *)env;
    *out_len = env_len;
    return 0;
}
