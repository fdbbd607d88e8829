/* SPDX-License-Identifier: MIT */
/* `faultline run` on Linux: whether ld.so will preload the library into the program at all. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/base.h"
#include "base/config.h"
#include "elf/elf.h"
#include "tools/tool.h"

/* The file execvp runs for name: name itself if it has a slash, else the first executable
 * regular file of that name along PATH (glibc's default when PATH is unset). */
static bool program_path(const char *name, char *out, size_t cap) {
    if (strchr(name, '/')) return snprintf(out, cap, "%s", name) < (int)cap;
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        struct stat st;
        if (snprintf(out, cap, "%.*s%s%s", (int)n, p, n ? "/" : "", name) < (int)cap &&
            access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return true;
        if (!end) return false;
        p = end;
    }
}

const char *fl_tool_not_attachable(const char *name) {
    char path[PATH_MAX];
    uint64_t size;
    int fd = program_path(name, path, sizeof path) ? fl_open_regular(AT_FDCWD, path, 0, &size) : -1;
    if (fd < 0) return NULL;
    struct stat st;
    struct statvfs vf;
    const char *why = NULL;
    /* (a nosuid mount ignores set-user-ID, set-group-ID and file capabilities) */
    if (fstatvfs(fd, &vf) == 0 && !(vf.f_flag & ST_NOSUID) && fstat(fd, &st) == 0) {
        if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
            why = "is set-user-ID to another user";
        else if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
            why = "is set-group-ID to another group";
        else if (getuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) > 0)
            why = "has file capabilities";
    }
    close(fd);
    fl_elf_file_t *f;
    /* Not an ELF file the reader takes (a script; a 32-bit program, which ld.so itself says it
     * cannot preload the library into): nothing to add. */
    if (why || fl_elf_file_open(path, &f) != 0) return why;
    if (fl_elf_file_machine(f) != FL_ELF_MACHINE)
        why = "is built for another architecture";
    else if (!fl_elf_file_has_segment(f, PT_INTERP))
        why = "is statically linked";
    fl_elf_file_close(f);
    return why;
}
