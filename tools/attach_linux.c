/* SPDX-License-Identifier: MIT */
/* `faultline run` on Linux: whether ld.so will preload the library into the program at all. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/config.h"
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
    if (!program_path(name, path, sizeof path)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0) return NULL;
    const char *why = NULL;
    struct statvfs vf;
    bool nosuid = fstatvfs(fd, &vf) == 0 && (vf.f_flag & ST_NOSUID);
    ElfW(Ehdr) eh;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        /* (execvp will say) */
    } else if (!nosuid && (st.st_mode & S_ISUID) && st.st_uid != getuid()) {
        why = "is set-user-ID to another user";
    } else if (!nosuid && (st.st_mode & S_ISGID) && st.st_gid != getgid()) {
        why = "is set-group-ID to another group";
    } else if (!nosuid && getuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) > 0) {
        why = "has file capabilities";
    } else if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
               memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0) {
        if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
            eh.e_machine != FL_ELF_MACHINE) {
            why = "is built for another architecture or word size than the library";
        } else if (eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum && eh.e_phnum <= 256) {
            ElfW(Phdr) ph[256];
            size_t len = (size_t)eh.e_phnum * sizeof ph[0];
            bool interp = false;
            if (pread(fd, ph, len, (off_t)eh.e_phoff) == (ssize_t)len) {
                for (unsigned k = 0; k < eh.e_phnum; k++) interp |= ph[k].p_type == PT_INTERP;
                if (!interp) why = "is statically linked";
            }
        }
    }
    close(fd);
    return why;
}
