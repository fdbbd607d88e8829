/* SPDX-License-Identifier: MIT */
/* DWARF line tables of ELF files through elfutils' libdw (compressed sections, DWARF 2 to 5). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "tools/tool.h"

bool fl_tool_have_dwarf(void) { return true; }

int fl_tool_dwarf_lines(const char *path, fl_tool_line_fn fn, void *ctx) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return FL_EIO;
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    if (!dw) {
        close(fd);
        return FL_ENOTFOUND;
    }
    int rc = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie;
    while (rc == 0 && dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        /* Type units carry no code; skeleton units (split DWARF) name a .dwo we do not read. */
        if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
        Dwarf_Lines *lines;
        size_t n;
        if (dwarf_getsrclines(&cudie, &lines, &n) != 0) continue;
        for (size_t i = 0; i < n && rc == 0; i++) {
            Dwarf_Line *l = dwarf_onesrcline(lines, i);
            Dwarf_Addr addr;
            int lineno = 0;
            bool end = false;
            if (!l || dwarf_lineaddr(l, &addr) != 0) continue;
            dwarf_lineno(l, &lineno);
            dwarf_lineendsequence(l, &end);
            const char *src = dwarf_linesrc(l, NULL, NULL);
            rc = fn(ctx, addr, src, lineno > 0 ? (uint32_t)lineno : 0, end);
        }
    }
    dwarf_end(dw);
    close(fd);
    return rc;
}
