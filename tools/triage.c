/* SPDX-License-Identifier: MIT */
/* `faultline triage DIR...`: every report symbolicated and grouped by crash signature, largest group first. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "tools/tool.h"

#define EXIT_USAGE 2
#define TRIAGE_FILES_MAX 10000000u /* files looked at in one run; the rest are named as skipped */
#define SET_MAX 32u                /* distinct app versions / signals / reasons listed per group */
#define PROGRESS_MIN 200u          /* files before a progress bar is worth drawing */

/* A small set of strings (app versions, signals, reasons): the first SET_MAX, then a count of
 * more. */
typedef struct strset {
    char *v[SET_MAX];
    unsigned n;
    size_t more;
} strset_t;

typedef struct member {
    char *path;
    char id[33];
} member_t;

typedef struct group {
    char *sig;
    uint64_t hash;
    size_t count;
    uint64_t first_ns, last_ns;
    strset_t versions, signals;
    strset_t reasons; /* why an abort's process aborted: abort_message, terminate_type */
    member_t *m;
    size_t nm, cap;
    char *stack;   /* the representative's crashed thread, rendered (text lines) */
    char *stack_json;
    char *rep_path; /* the representative: the earliest report of the group */
    uint64_t rep_ns;
} group_t;

typedef struct damaged {
    char *path;
    char *why;
} damaged_t;

typedef struct triage {
    group_t **tab; /* open addressing by signature */
    size_t cap, n;
    damaged_t *bad;
    size_t nbad, bad_cap;
    size_t reports, truncated;
    unsigned frames;
} triage_t;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void set_add(strset_t *s, const char *v) {
    for (unsigned i = 0; i < s->n; i++)
        if (strcmp(s->v[i], v) == 0) return;
    char *c = s->n < SET_MAX ? strdup(v) : NULL;
    if (c) s->v[s->n++] = c;
    else s->more++;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool tab_grow(triage_t *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    group_t **n = calloc(cap, sizeof *n);
    if (!n) return false;
    for (size_t i = 0; i < t->cap; i++) {
        group_t *g = t->tab[i];
        if (!g) continue;
        size_t k = g->hash & (cap - 1);
        while (n[k]) k = (k + 1) & (cap - 1);
        n[k] = g;
    }
    free(t->tab);
    t->tab = n;
    t->cap = cap;
    return true;
}

static group_t *group_for(triage_t *t, const char *sig) {
    if (t->n * 2 >= t->cap && !tab_grow(t)) return NULL;
    uint64_t h = hash_str(sig);
    size_t k = h & (t->cap - 1);
    for (; t->tab[k]; k = (k + 1) & (t->cap - 1))
        if (t->tab[k]->hash == h && strcmp(t->tab[k]->sig, sig) == 0) return t->tab[k];
    group_t *g = calloc(1, sizeof *g);
    if (!g || !(g->sig = strdup(sig))) {
        free(g);
        return NULL;
    }
    g->hash = h;
    t->tab[k] = g;
    t->n++;
    return g;
}

static void add_damaged(triage_t *t, const char *path, const char *why) {
    if (!grow((void **)&t->bad, &t->bad_cap, t->nbad + 1, sizeof *t->bad)) return;
    t->bad[t->nbad].path = strdup(path);
    t->bad[t->nbad].why = strdup(why);
    t->nbad++;
}

/* Appends to a growing string (NULL-safe on allocation failure: the text is then cut). */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (w < 0 || !grow((void **)&b->p, &b->cap, b->n + (size_t)w + 1, 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)w + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)w;
}

/* A JSON string into the buffer (the same escaping as fl_tool_json_string, via a memory stream). */
static void sb_json(sbuf_t *b, const char *s) {
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    if (!f) return;
    fl_tool_json_string(f, s ? s : "");
    fclose(f);
    if (mem) sb_printf(b, "%s", s ? mem : "null");
    free(mem);
}

/* The representative stack: every frame of the signature's thread, as text and as JSON. */
static void render_stack(group_t *g, const Faultline__Report *r, fl_tool_symbolizer_t *sym,
                         int t) {
    sbuf_t text = {0}, json = {0};
    const Faultline__Thread *th = r->threads[t];
    sb_printf(&json, "[");
    for (size_t k = 0; k < th->n_frames; k++) {
        const Faultline__Frame *f = th->frames[k];
        fl_tool_sym_t s;
        fl_tool_symbolize(sym, th, k, &s);
        const char *image = s.image >= 0 ? fl_tool_basename(r->images[s.image]->path) : "???";
        if (fl_tool_gap_before(th, k)) {
            sb_printf(&text, "      ... %" PRIu32 " frames omitted ...\n", fl_tool_gap_before(th, k));
            sb_printf(&json, ",\n        {\"omitted\": %" PRIu32 "}", fl_tool_gap_before(th, k));
        }
        sb_printf(&text, "      %-3zu %-28s 0x%016" PRIx64 " ", fl_tool_frame_depth(th, k),
                  fl_tool_clean(image[0] ? image : "???"), f->pc);
        if (f->signal_trampoline) sb_printf(&text, "%s", s.symbol);
        else if (s.symbol) sb_printf(&text, "%s + %" PRIu64, fl_tool_clean(s.symbol), s.offset);
        else sb_printf(&text, "???");
        if (s.file) sb_printf(&text, " (%s:%" PRIu32 ")", fl_tool_clean(fl_tool_basename(s.file)), s.line);
        sb_printf(&text, "\n");
        sb_printf(&json, "%s\n        {\"pc\": \"0x%" PRIx64 "\", \"image\": ", k ? "," : "", f->pc);
        if (s.image >= 0) sb_json(&json, r->images[s.image]->path);
        else sb_printf(&json, "null");
        /* As show --json: the full form and the link name. */
        char full[FL_TOOL_NAME_MAX];
        sb_printf(&json, ", \"symbol\": ");
        if (s.mangled)
            sb_json(&json, fl_tool_symbol_display(s.mangled, FL_DEMANGLE_FULL, full, sizeof full));
        else if (s.symbol) sb_json(&json, s.symbol);
        else sb_printf(&json, "null");
        sb_printf(&json, ", \"mangled\": ");
        if (s.mangled) sb_json(&json, s.mangled);
        else sb_printf(&json, "null");
        if (s.symbol) sb_printf(&json, ", \"offset\": %" PRIu64, s.offset);
        else sb_printf(&json, ", \"offset\": null");
        sb_printf(&json, ", \"file\": ");
        if (s.file) sb_json(&json, s.file);
        else sb_printf(&json, "null");
        if (s.file) sb_printf(&json, ", \"line\": %" PRIu32 "}", s.line);
        else sb_printf(&json, ", \"line\": null}");
    }
    sb_printf(&json, "%s]", th->n_frames ? "\n      " : "");
    free(g->stack);
    free(g->stack_json);
    g->stack = text.p;
    g->stack_json = json.p;
}

static void triage_one(triage_t *t, fl_tool_symstore_t *st, const char *path) {
    Faultline__Report *r;
    bool truncated;
    int err = fl_report_read_file(path, &r, &truncated);
    if (err) {
        char why[256];
        snprintf(why, sizeof why, "%s", err == FL_EIO ? strerror(errno) : fl_strerror(err));
        add_damaged(t, path, why);
        return;
    }
    fl_tool_symbolizer_t *sym = fl_tool_symbolizer_new(st, r);
    char sig[FL_TOOL_SIG_MAX];
    int th = fl_tool_sig_thread(r);
    if (!sym) {
        add_damaged(t, path, "out of memory");
    } else if (th < 0 || fl_tool_signature(r, sym, t->frames, sig, sizeof sig) < 0) {
        add_damaged(t, path, truncated ? "truncated before a thread with frames"
                                       : "no thread with frames");
    } else {
        group_t *g = group_for(t, sig);
        member_t *m;
        if (!g || !grow((void **)&g->m, &g->cap, g->nm + 1, sizeof *g->m) ||
            !(g->m[g->nm].path = strdup(path))) {
            add_damaged(t, path, "out of memory");
        } else {
            t->reports++;
            t->truncated += truncated;
            m = &g->m[g->nm++];
            const Faultline__Header *h = r->header;
            m->id[0] = 0;
            if (h) fl_tool_hex(m->id, h->report_id.data, h->report_id.len > 16 ? 16 : h->report_id.len);
            uint64_t ns = h ? h->time_unix_ns : 0;
            g->count++;
            if (g->count == 1 || ns < g->first_ns) g->first_ns = ns;
            if (g->count == 1 || ns > g->last_ns) g->last_ns = ns;
            char buf[600];
            snprintf(buf, sizeof buf, "%s %s", h && h->app_name[0] ? h->app_name : "?",
                     h && h->app_version[0] ? h->app_version : "?");
            set_add(&g->versions, buf);
            if (r->signal) fl_tool_signal_text(buf, sizeof buf, r->signal);
            else snprintf(buf, sizeof buf, "%s", fl_tool_is_hang(r) ? "hang"
                                                 : h && h->kind == FAULTLINE__HEADER__KIND__KIND_SNAPSHOT ? "snapshot" : "none");
            set_add(&g->signals, buf);
            if (r->abort_message && r->abort_message[0]) set_add(&g->reasons, r->abort_message);
            char type[512];
            if (fl_tool_terminate_type(r, type, sizeof type)) {
                snprintf(buf, sizeof buf, "C++ exception %s", type);
                set_add(&g->reasons, buf);
            }
            if (!g->stack || ns < g->rep_ns) {
                render_stack(g, r, sym, th);
                g->rep_ns = ns;
                g->rep_path = g->m[g->nm - 1].path;
            }
        }
    }
    fl_tool_symbolizer_free(sym);
    fl_report_free(r);
}

/* ---- Collecting the files ---- */

typedef struct files {
    char **v;
    size_t n, cap, skipped;
} files_t;

static void add_file(files_t *f, const char *path) {
    if (f->n >= TRIAGE_FILES_MAX) {
        f->skipped++;
        return;
    }
    char *c = strdup(path);
    if (!c || !grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v)) {
        free(c);
        f->skipped++;
        return;
    }
    f->v[f->n++] = c;
}

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular files of dir (not hidden: writers' temporary files start with '.'), not recursing. */
static int add_dir(files_t *f, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    size_t first = f->n;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *p;
        if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) continue;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) add_file(f, p);
        free(p);
    }
    closedir(d);
    qsort(f->v + first, f->n - first, sizeof *f->v, str_cmp);
    return 0;
}

/* ---- Output ---- */

static int group_cmp(const void *a, const void *b) {
    const group_t *x = *(group_t *const *)a, *y = *(group_t *const *)b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
    return strcmp(x->sig, y->sig);
}

static void print_set_text(const char *label, const strset_t *s) {
    printf("    %-12s", label);
    for (unsigned i = 0; i < s->n; i++) printf("%s%s", i ? ", " : "", fl_tool_clean(s->v[i]));
    if (s->more) printf(" and %zu more", s->more);
    putchar('\n');
}

static void print_set_json(const char *key, const strset_t *s) {
    printf(",\n    \"%s\": [", key);
    for (unsigned i = 0; i < s->n; i++) {
        if (i) fputs(", ", stdout);
        fl_tool_json_string(stdout, s->v[i]);
    }
    putchar(']');
}

static void print_text(const triage_t *t, group_t **g, size_t n, const files_t *f) {
    printf("%zu report%s in %zu group%s", t->reports, t->reports == 1 ? "" : "s", n,
           n == 1 ? "" : "s");
    if (t->truncated) printf(" (%zu truncated, grouped by their complete part)", t->truncated);
    printf("; %zu damaged\n", t->nbad);
    for (size_t i = 0; i < n; i++) {
        char a[40], b[40];
        fl_tool_fmt_time(a, sizeof a, g[i]->first_ns);
        fl_tool_fmt_time(b, sizeof b, g[i]->last_ns);
        printf("\n#%zu  %zu report%s  %s\n", i + 1, g[i]->count, g[i]->count == 1 ? "" : "s",
               fl_tool_clean(g[i]->sig));
        printf("    %-12s%s\n    %-12s%s\n", "first seen", a[0] ? a : "-", "last seen", b[0] ? b : "-");
        print_set_text("versions", &g[i]->versions);
        print_set_text("signals", &g[i]->signals);
        if (g[i]->reasons.n) print_set_text("reasons", &g[i]->reasons);
        printf("    stack of %s:\n%s", fl_tool_clean(g[i]->rep_path), g[i]->stack ? g[i]->stack : "");
        printf("    reports:\n");
        for (size_t k = 0; k < g[i]->nm; k++)
            printf("      %s  %s\n", g[i]->m[k].id[0] ? g[i]->m[k].id : "-", fl_tool_clean(g[i]->m[k].path));
    }
    if (t->nbad) {
        printf("\ndamaged (%zu):\n", t->nbad);
        for (size_t i = 0; i < t->nbad; i++)
            printf("      %s: %s\n", fl_tool_clean(t->bad[i].path), t->bad[i].why);
    }
    if (f->skipped) printf("\nnot triaged: %zu more files (limit %u a run)\n", f->skipped, TRIAGE_FILES_MAX);
}

/* A list of groups; damaged reports come last as one group with "damaged": true. */
static void print_json(const triage_t *t, group_t **g, size_t n) {
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        char a[40], b[40];
        fl_tool_fmt_time(a, sizeof a, g[i]->first_ns);
        fl_tool_fmt_time(b, sizeof b, g[i]->last_ns);
        printf("%s\n  {\n    \"signature\": ", i ? "," : "");
        fl_tool_json_string(stdout, g[i]->sig);
        printf(",\n    \"damaged\": false,\n    \"count\": %zu,\n    \"first_seen\": ", g[i]->count);
        if (a[0]) printf("\"%s\"", a);
        else fputs("null", stdout);
        fputs(",\n    \"last_seen\": ", stdout);
        if (b[0]) printf("\"%s\"", b);
        else fputs("null", stdout);
        print_set_json("app_versions", &g[i]->versions);
        print_set_json("signals", &g[i]->signals);
        print_set_json("reasons", &g[i]->reasons);
        fputs(",\n    \"representative\": ", stdout);
        fl_tool_json_string(stdout, g[i]->rep_path);
        printf(",\n    \"stack\": %s", g[i]->stack_json ? g[i]->stack_json : "[]");
        fputs(",\n    \"reports\": [", stdout);
        for (size_t k = 0; k < g[i]->nm; k++) {
            if (k) fputs(", ", stdout);
            fl_tool_json_string(stdout, g[i]->m[k].path);
        }
        fputs("],\n    \"report_ids\": [", stdout);
        for (size_t k = 0; k < g[i]->nm; k++) printf("%s\"%s\"", k ? ", " : "", g[i]->m[k].id);
        fputs("]\n  }", stdout);
    }
    if (t->nbad) {
        printf("%s\n  {\n    \"signature\": \"(damaged)\",\n    \"damaged\": true,\n    \"count\": %zu,"
               "\n    \"reports\": [", n ? "," : "", t->nbad);
        for (size_t i = 0; i < t->nbad; i++) {
            if (i) fputs(", ", stdout);
            fl_tool_json_string(stdout, t->bad[i].path);
        }
        fputs("],\n    \"errors\": [", stdout);
        for (size_t i = 0; i < t->nbad; i++) {
            if (i) fputs(", ", stdout);
            fl_tool_json_string(stdout, t->bad[i].why);
        }
        fputs("]\n  }", stdout);
    }
    fputs(n || t->nbad ? "\n]\n" : "]\n", stdout);
}

static void progress(size_t done, size_t total) {
    unsigned pct = (unsigned)(done * 100 / (total ? total : 1));
    char bar[41];
    unsigned fill = pct * 40 / 100;
    for (unsigned i = 0; i < 40; i++) bar[i] = i < fill ? '#' : '.';
    bar[40] = 0;
    fprintf(stderr, "\rtriage: [%s] %3u%%  %zu/%zu", bar, pct, done, total);
}

int fl_tool_cmd_triage(int argc, char **argv) {
    fl_tool_cli_t c;
    if (!fl_tool_cli_init(&c, argc)) return 1;
    bool json = false;
    int show_progress = -1; /* -1: when stderr is a terminal */
    unsigned frames = FL_TOOL_SIG_FRAMES;
    files_t f = {0};
    int rc = 0;
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t npaths = 0;
    if (!paths) return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int k = fl_tool_cli_option(&c, argc, argv, &i);
        if (k < 0) goto usage;
        if (k > 0) continue;
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--no-progress") == 0) {
            show_progress = 0;
        } else if (strcmp(a, "--progress") == 0) {
            show_progress = 1;
        } else if (strcmp(a, "--frames") == 0 || strncmp(a, "--frames=", 9) == 0) {
            const char *v = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : "";
            char *end;
            unsigned long n = strtoul(v, &end, 10);
            if (!v[0] || *end || n < 1 || n > FL_TOOL_SIG_FRAMES_MAX) {
                fprintf(stderr, "faultline: --frames takes 1 to %u\n", FL_TOOL_SIG_FRAMES_MAX);
                goto usage;
            }
            frames = (unsigned)n;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "faultline: unknown option %s\n", fl_tool_clean(a));
            goto usage;
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (!npaths) {
        fprintf(stderr, "faultline: triage needs report directories or files\n");
        goto usage;
    }
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            fprintf(stderr, "faultline: cannot read %s: %s\n", fl_tool_clean(paths[i]),
                    strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (add_dir(&f, paths[i]) != 0) {
                fprintf(stderr, "faultline: cannot list %s: %s\n", fl_tool_clean(paths[i]),
                        strerror(errno));
                rc = 1;
            }
        } else {
            add_file(&f, paths[i]);
        }
    }
    fl_tool_symstore_t *st = fl_tool_symstore_new(&c.sym);
    triage_t t = {.frames = frames};
    if (!st) {
        fprintf(stderr, "faultline: out of memory\n");
        rc = 1;
    } else {
        if (show_progress < 0) show_progress = isatty(2) && f.n >= PROGRESS_MIN;
        size_t step = f.n / 200 + 1;
        for (size_t i = 0; i < f.n; i++) {
            triage_one(&t, st, f.v[i]);
            if (show_progress && (i % step == 0 || i + 1 == f.n)) progress(i + 1, f.n);
        }
        if (show_progress && f.n) fputs("\r\033[K", stderr);
        group_t **g = calloc(t.n ? t.n : 1, sizeof *g);
        size_t n = 0;
        for (size_t i = 0; g && i < t.cap; i++)
            if (t.tab[i]) g[n++] = t.tab[i];
        if (!g) {
            fprintf(stderr, "faultline: out of memory\n");
            rc = 1;
        } else {
            qsort(g, n, sizeof *g, group_cmp);
            if (json) print_json(&t, g, n);
            else print_text(&t, g, n, &f);
        }
        free(g);
        if (json && f.skipped)
            fprintf(stderr, "faultline: %zu more files not triaged (limit %u a run)\n", f.skipped,
                    TRIAGE_FILES_MAX);
        if (fflush(stdout) != 0 || ferror(stdout)) rc = 1;
    }
    for (size_t i = 0; i < t.cap; i++) {
        group_t *g = t.tab[i];
        if (!g) continue;
        for (size_t k = 0; k < g->nm; k++) free(g->m[k].path);
        for (unsigned k = 0; k < g->versions.n; k++) free(g->versions.v[k]);
        for (unsigned k = 0; k < g->signals.n; k++) free(g->signals.v[k]);
        for (unsigned k = 0; k < g->reasons.n; k++) free(g->reasons.v[k]);
        free(g->m);
        free(g->sig);
        free(g->stack);
        free(g->stack_json);
        free(g);
    }
    free(t.tab);
    for (size_t i = 0; i < t.nbad; i++) {
        free(t.bad[i].path);
        free(t.bad[i].why);
    }
    free(t.bad);
    fl_tool_symstore_free(st);
    for (size_t i = 0; i < f.n; i++) free(f.v[i]);
    free(f.v);
    free(paths);
    fl_tool_cli_free(&c);
    return rc;
usage:
    free(paths);
    fl_tool_cli_free(&c);
    return fl_tool_usage(NULL);
}
