/* SPDX-License-Identifier: MIT */
/* DWARF line tables of ELF files through elfutils' libdw (compressed sections, DWARF 2 to 5). */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tools/tool.h"

/* libdw and its own libraries are loaded only when an index with lines is built (a cache miss),
 * not at every start of the CLI (tools/CMakeLists.txt says why). The types are checked against
 * the header's declarations. */
static struct {
    __typeof__(dwarf_begin) *begin;
    __typeof__(dwarf_end) *end;
    __typeof__(dwarf_get_units) *get_units;
    __typeof__(dwarf_getsrclines) *getsrclines;
    __typeof__(dwarf_onesrcline) *onesrcline;
    __typeof__(dwarf_lineaddr) *lineaddr;
    __typeof__(dwarf_lineno) *lineno;
    __typeof__(dwarf_lineendsequence) *lineendsequence;
    __typeof__(dwarf_linesrc) *linesrc;
} dw;

static bool load_libdw(void) {
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    if (state) return state > 0;
    state = -1;
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "faultline: no file:line from DWARF: %s\n", dlerror());
        return false;
    }
    const char *names[] = {"dwarf_begin", "dwarf_end", "dwarf_get_units", "dwarf_getsrclines",
                           "dwarf_onesrcline", "dwarf_lineaddr", "dwarf_lineno",
                           "dwarf_lineendsequence", "dwarf_linesrc"};
    void **slots = (void **)&dw;
    _Static_assert(sizeof dw == sizeof names / sizeof *names * sizeof(void *), "one slot a name");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!(slots[i] = dlsym(h, names[i]))) {
            fprintf(stderr, "faultline: no file:line from DWARF: libdw.so.1 lacks %s\n", names[i]);
            return false;
        }
    }
    state = 1;
    return true;
}

bool fl_tool_have_dwarf(void) { return true; }

int fl_tool_dwarf_lines(const char *path, fl_tool_line_fn fn, void *ctx) {
    if (!load_libdw()) return FL_ENOSYS;
    uint64_t fsize;
    int fd = fl_open_regular(AT_FDCWD, path, 0, &fsize);
    if (fd < 0) return fd;
    Dwarf *d = dw.begin(fd, DWARF_C_READ);
    if (!d) {
        close(fd);
        return FL_ENOTFOUND;
    }
    int rc = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie;
    while (rc == 0 && dw.get_units(d, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        /* Type units carry no code; skeleton units (split DWARF) name a .dwo we do not read. */
        if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
        Dwarf_Lines *lines;
        size_t n;
        if (dw.getsrclines(&cudie, &lines, &n) != 0) continue;
        for (size_t i = 0; i < n && rc == 0; i++) {
            Dwarf_Line *l = dw.onesrcline(lines, i);
            Dwarf_Addr addr;
            int lineno = 0;
            bool end = false;
            if (!l || dw.lineaddr(l, &addr) != 0) continue;
            dw.lineno(l, &lineno);
            dw.lineendsequence(l, &end);
            const char *src = dw.linesrc(l, NULL, NULL);
            rc = fn(ctx, addr, src, lineno > 0 ? (uint32_t)lineno : 0, end);
        }
    }
    dw.end(d);
    close(fd);
    return rc;
}
