/* SPDX-License-Identifier: MIT */
/* Crash signatures for triage: normalised names of the crashed thread's top frames, past the crash machinery. */
#include <inttypes.h>
#include <string.h>

#include "tools/tool.h"

/* Suffixes compilers give clones of a function (GCC: .cold, .constprop.N, .isra.N, .part.N,
 * .lto_priv.N, .localalias; LLVM: .llvm.N, .__uniq.N; plain .N from LTO renaming). */
static bool clone_word(const char *p) {
    static const char *const words[] = {"cold",   "constprop", "isra",  "part",
                                        "lto_priv", "localalias", "llvm", "__uniq",
                                        "clone",  "specialized", "abi0"}; /* (abi0: Go's assembly) */
    /* A number alone, or before more suffixes ("f.0", "f.0.isra.0"); not a name's own part
     * (Go's "main.init.0.func1": the first init function's closure). (A loop over numbers: a
     * hostile name may hold thousands.) */
    while (*p >= '0' && *p <= '9') {
        while (*p >= '0' && *p <= '9') p++;
        if (*p == 0) return true;
        if (*p != '.') return false;
        p++;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);
        if (strncmp(p, words[i], n) == 0 && (p[n] == 0 || p[n] == '.')) return true;
    }
    return false;
}

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The index just past the bracket that closes the one at s[i] (open/close given), or 0. */
static size_t match(const char *s, size_t i, char open, char close) {
    int depth = 0;
    for (size_t k = i; s[k]; k++) {
        if (s[k] == open) depth++;
        else if (s[k] == close && --depth == 0) return k + 1;
    }
    return 0;
}

typedef struct out {
    char *p;
    size_t n, cap;
} out_t;

static void put(out_t *o, const char *s, size_t len) {
    for (size_t i = 0; i < len && o->n + 1 < o->cap; i++) o->p[o->n++] = s[i];
    o->p[o->n] = 0;
}

void fl_tool_sig_normalize(const char *name, char *buf, size_t cap) {
    char tmp[FL_TOOL_NAME_MAX];
    size_t n = 0;
    /* 1. Without the demangler's " [clone .cold]" notes. */
    for (const char *p = name; *p && n + 1 < sizeof tmp;) {
        if (strncmp(p, " [clone ", 8) == 0) {
            const char *end = strchr(p, ']');
            if (end) {
                p = end + 1;
                continue;
            }
        }
        tmp[n++] = *p++;
    }
    tmp[n] = 0;
    /* 2. Without clone suffixes of plain names ("f.constprop.0.isra.0" is f). */
    for (size_t i = 1; i < n; i++)
        if (tmp[i] == '.' && ident_char(tmp[i - 1]) && clone_word(tmp + i + 1)) {
            tmp[i] = 0;
            n = i;
            break;
        }
    /* 3. Templates to <T>, the parameter list and what follows it dropped. */
    out_t o = {buf, 0, cap};
    buf[0] = 0;
    unsigned qual = 0; /* open Rust qualified paths ("<T as Trait>") */
    for (size_t i = 0; i < n;) {
        if (strncmp(tmp + i, "operator", 8) == 0 && !ident_char(tmp[i + 8]) &&
            (i == 0 || !ident_char(tmp[i - 1]))) {
            put(&o, tmp + i, 8);
            i += 8;
            if (tmp[i] == '(' && tmp[i + 1] == ')') {
                put(&o, "()", 2);
                i += 2;
            } else {
                while (tmp[i] && strchr("<>=!+-*/%^&|~,[]", tmp[i])) put(&o, tmp + i++, 1);
            }
            continue;
        }
        char c = tmp[i];
        /* A '<' that follows no name, '>' or "::" (turbofish) and whose '>' is followed by "::"
         * opens a Rust qualified path ("<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop"),
         * not arguments: the type and trait say which function it is, so they are kept (their
         * own arguments normalised). */
        size_t qend;
        if (c == '<' &&
            (i == 0 || !(ident_char(tmp[i - 1]) || tmp[i - 1] == '>' || tmp[i - 1] == ':')) &&
            (qend = match(tmp, i, '<', '>')) != 0 && strncmp(tmp + qend, "::", 2) == 0) {
            qual++;
            put(&o, "<", 1);
            i++;
            continue;
        }
        if (qual && (c == '>' || c == '(')) { /* its end; a tuple or fn type in it, whole */
            size_t end = c == '>' ? i + 1 : match(tmp, i, '(', ')');
            if (!end) break;
            qual -= c == '>';
            put(&o, tmp + i, end - i);
            i = end;
            continue;
        }
        if (c == '<') {
            size_t end = match(tmp, i, '<', '>');
            if (!end) break;
            put(&o, "<T>", 3);
            i = end;
        } else if (c == '{') { /* {lambda(int)#1}: kept whole */
            size_t end = match(tmp, i, '{', '}');
            if (!end) end = n;
            put(&o, tmp + i, end - i);
            i = end;
        } else if (c == '(' && i > 0 && tmp[i - 1] == '.') {
            /* Go's method receiver ("sync.(*Mutex).Unlock"): part of the name, kept whole. */
            size_t end = match(tmp, i, '(', ')');
            if (!end) break;
            put(&o, tmp + i, end - i);
            i = end;
        } else if (c == '(') {
            if (strncmp(tmp + i, "(anonymous namespace)", 21) == 0) {
                put(&o, tmp + i, 21);
                i += 21;
                continue;
            }
            break; /* the parameter list */
        } else {
            put(&o, tmp + i, 1);
            i++;
        }
    }
    /* 4. Without a leading return type ("void f<T>"): cut at the last space outside brackets
     * that starts a name and does not follow "operator" ("operator new"). */
    size_t cut = 0;
    int depth = 0;
    for (size_t i = 0; i < o.n; i++) {
        char c = buf[i];
        if (c == '(' || c == '{' || c == '<') depth++;
        else if ((c == ')' || c == '}' || c == '>') && depth > 0) depth--;
        else if (c == ' ' && depth == 0 && !(i >= 8 && strncmp(buf + i - 8, "operator", 8) == 0) &&
                 i + 1 < o.n && (ident_char(buf[i + 1]) || buf[i + 1] == ':' || buf[i + 1] == '('))
            cut = i + 1; /* not before "<T>": "operator<< <T>" keeps its space */
    }
    if (cut) memmove(buf, buf + cut, o.n - cut + 1);
    size_t len = strlen(buf);
    while (len && buf[len - 1] == ' ') buf[--len] = 0;
}

bool fl_tool_sig_is_machinery(const char *name) {
    static const char *const exact[] = {
        /* signals and abort */
        "abort", "raise", "gsignal", "pthread_kill", "__pthread_kill", "__pthread_kill_internal",
        "__pthread_kill_implementation", "tgkill", "kill",
        /* assertions and fortify */
        "__assert_fail", "__assert_fail_base", "__assert_perror_fail", "__assert", "__assert_rtn",
        "__libc_message", "__libc_fatal", "__fortify_fail", "__fortify_fail_abort", "__chk_fail",
        "__stack_chk_fail", "__stack_chk_fail_local",
        /* glibc's heap checks and the allocator under them */
        "malloc_printerr", "_int_free", "_int_malloc", "_int_realloc", "_int_memalign",
        "malloc_consolidate", "unlink_chunk", "free", "__libc_free", "cfree", "malloc",
        "__libc_malloc", "realloc", "__libc_realloc", "calloc", "__libc_calloc",
        "tcache_double_free_verify",
        /* signal trampolines */
        "__restore_rt", "_sigtramp", "__kernel_rt_sigreturn",
        /* C++ runtime: terminate and throw */
        "std::terminate", "__cxxabiv1::__terminate", "__gnu_cxx::__verbose_terminate_handler",
        "__cxa_throw", "__cxa_rethrow", "__cxa_pure_virtual", "__cxa_deleted_virtual",
        "__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_call_unexpected", "std::__terminate",
        "abort_message", "__abort_message",
        /* Go's runtime: the signal it raises to end a crash (GOTRACEBACK=crash), its handler
         * and the throw and panic paths that lead there */
        "runtime.raise", "runtime.raiseproc", "runtime.dieFromSignal", "runtime.crash",
        "runtime.sigfwdgo", "runtime.sigfwd", "runtime.sigtrampgo", "runtime.sigtramp",
        "runtime.cgoSigtramp", "runtime.sighandler", "runtime.badsignal", "runtime.sigpanic",
        "runtime.throw", "runtime.fatal", "runtime.startpanic_m", "runtime.dopanic_m",
        "runtime.gopanic", "runtime.systemstack", "runtime.systemstack_switch", "runtime.mcall",
        "sync.fatal", "sync.throw"}; /* (the sync package's way to them) */
    static const char *const prefixes[] = {"fl_", "std::__throw_", "_Unwind_",
                                           "runtime.fatalthrow", "runtime.fatalpanic",
                                           "runtime.panic", "runtime.goPanic"};
    const char *n = name;
    /* glibc's internal aliases: __GI_raise is raise, __GI___assert_fail is __assert_fail. */
    if (strncmp(n, "__GI_", 5) == 0) n += 5;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(n, exact[i]) == 0) return true;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(n, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

int fl_tool_sig_thread(const Faultline__Report *r) {
    int c = fl_tool_crashed_thread(r);
    if (c >= 0) return r->threads[c]->n_frames ? c : -1;
    for (size_t i = 0; i < r->n_threads; i++)
        if (r->threads[i]->n_frames) return (int)i;
    return -1;
}

/* The key of frame k; returns whether it has a symbol. */
static bool frame_key(const Faultline__Report *r, fl_tool_symbolizer_t *s,
                      const Faultline__Thread *th, size_t k, char *key, size_t cap) {
    const Faultline__Frame *f = th->frames[k];
    fl_tool_sym_t sym;
    fl_tool_symbolize(s, th, k, &sym);
    if (sym.symbol && !sym.jit) {
        fl_tool_sig_normalize(sym.symbol, key, cap);
        if (key[0]) return true;
    }
    if (sym.image >= 0) {
        const Faultline__Image *img = r->images[sym.image];
        const char *base = fl_tool_basename(img->path);
        snprintf(key, cap, "%s+0x%" PRIx64, base[0] ? base : "?", f->pc - img->slide);
    } else {
        snprintf(key, cap, "?");
    }
    return false;
}

static bool is_fault(const char *name) {
    static const char *const faults[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS"};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (strcmp(name, faults[i]) == 0) return true;
    return false;
}

/* The frame the crash began at, when a handler of the program's that was handling a fault
 * ended the process: that fault is the crash, wherever the handler was when it gave up. Known
 * from the report's interrupted_signal (a fault the kernel raised: the JVM's and Rust's
 * handlers abort); or, for a handler without SA_SIGINFO, whose frame says nothing, when the
 * crash is a fault's signal the process sent itself from inside a handler (Python's
 * faulthandler, zstd and vim raise the signal they caught again): the frame the innermost
 * signal frame interrupted. Else 0. */
static size_t crash_top(const Faultline__Report *r, int t, size_t n) {
    const Faultline__Signal *in = r->interrupted_signal, *s = r->signal;
    if (t != fl_tool_crashed_thread(r)) return 0;
    if (in) return in->code > 0 && in->frame < n && is_fault(in->name) ? in->frame : 0;
    if (!s || s->code > 0 || !is_fault(s->name) || !r->header || s->sender_pid != r->header->pid)
        return 0;
    const Faultline__Thread *th = r->threads[t];
    for (size_t k = 0; k + 1 < n; k++)
        if (th->frames[k]->signal_trampoline) return k + 1;
    return 0;
}

/* The first frame of thread t past the crash machinery (n when all of it is machinery), and
 * where the crash began (*from: crash_top). */
static size_t past_machinery(const Faultline__Report *r, fl_tool_symbolizer_t *s, int t,
                             size_t n, size_t *from) {
    const Faultline__Thread *th = r->threads[t];
    char key[FL_TOOL_SIG_NAME_MAX];
    /* The machinery ends at the last machinery frame of the leading run of machinery and
     * unnamed frames: without debug symbols a libc-internal frame (__pthread_kill_implementation
     * is not exported) has no name, yet raise and abort above it still mark it. */
    size_t start = *from = crash_top(r, t, n);
    for (size_t k = *from; k < n; k++) {
        bool named = frame_key(r, s, th, k, key, sizeof key);
        if (th->frames[k]->signal_trampoline || (named && fl_tool_sig_is_machinery(key)))
            start = k + 1; /* (a handler that raised the signal again is machinery too) */
        else if (named) break;
    }
    return start;
}

int fl_tool_crash_site(const Faultline__Report *r, fl_tool_symbolizer_t *s) {
    int t = fl_tool_sig_thread(r);
    if (t < 0 || t != fl_tool_crashed_thread(r)) return -1;
    const Faultline__Thread *th = r->threads[t];
    size_t n = th->n_frames < FL_TOOL_SIG_SCAN_MAX ? th->n_frames : FL_TOOL_SIG_SCAN_MAX, from;
    size_t start = past_machinery(r, s, t, n, &from);
    return (int)(start < n ? start : from);
}

int fl_tool_signature(const Faultline__Report *r, fl_tool_symbolizer_t *s, unsigned nframes,
                      char *buf, size_t cap) {
    int t = fl_tool_sig_thread(r);
    if (t < 0 || cap < 2) return -1;
    const Faultline__Thread *th = r->threads[t];
    size_t n = th->n_frames < FL_TOOL_SIG_SCAN_MAX ? th->n_frames : FL_TOOL_SIG_SCAN_MAX;
    if (nframes == 0) nframes = 1;
    if (nframes > FL_TOOL_SIG_FRAMES_MAX) nframes = FL_TOOL_SIG_FRAMES_MAX;
    char last[FL_TOOL_SIG_NAME_MAX] = "", key[FL_TOOL_SIG_NAME_MAX];
    size_t from, start = past_machinery(r, s, t, n, &from);
    /* A hang is grouped apart from any crash in the same place. */
    const char *prefix = fl_tool_is_hang(r) ? "hang: " : "";
    size_t base = strlen(prefix) < cap ? strlen(prefix) : 0;
    /* Two passes at most: the second keeps the machinery when nothing else is on the stack. */
    for (int pass = 0; pass < 2; pass++, start = from) {
        size_t len = base;
        unsigned keys = 0;
        memcpy(buf, prefix, base);
        buf[base] = 0;
        for (size_t k = start; k < n && keys < nframes; k++) {
            frame_key(r, s, th, k, key, sizeof key);
            if (keys && strcmp(key, last) == 0) continue; /* recursion: one key per run */
            int w = snprintf(buf + len, cap - len, "%s%s", keys ? " | " : "", key);
            if (w < 0 || (size_t)w >= cap - len) {
                len = cap - 1;
                break;
            }
            len += (size_t)w;
            keys++;
            memcpy(last, key, sizeof last);
        }
        if (keys) return (int)len;
    }
    return -1;
}
