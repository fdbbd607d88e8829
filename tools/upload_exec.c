/* SPDX-License-Identifier: MIT */
/* `faultline upload`: runs faultline-upload, so that only uploading loads libcurl and its libraries. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

#define UPLOAD_EXE "faultline-upload"

int fl_tool_upload_exec(const char *self, int argc, char **argv) {
    char *args[argc + 2];
    memcpy(args + 1, argv, (size_t)argc * sizeof *argv);
    args[argc + 1] = NULL;
    /* Next to this executable first: a build tree's faultline runs its own faultline-upload,
     * never an older installed one. */
    const char *slash = strrchr(self, '/');
    char path[4096];
    int next_err = ENOENT;
    if (slash && (size_t)(slash - self) + sizeof UPLOAD_EXE + 1 <= sizeof path) {
        snprintf(path, sizeof path, "%.*s/" UPLOAD_EXE, (int)(slash - self), self);
        args[0] = path;
        execv(path, args);
        next_err = errno;
    }
    args[0] = UPLOAD_EXE;
    execvp(UPLOAD_EXE, args);
    int err = errno == ENOENT ? next_err : errno;
    fprintf(stderr, "faultline upload: cannot run %s (%s%s and PATH): %s\n"
            "  it is built with libcurl when faultline is configured with FL_BUILD_UPLOAD=ON\n",
            UPLOAD_EXE, slash ? "looked next to " : "looked in", slash ? fl_tool_clean(self) : "",
            strerror(err));
    return 1;
}
