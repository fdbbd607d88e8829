/* SPDX-License-Identifier: MIT */
/* `faultline upload` in a build without libfaultline-upload (FL_BUILD_UPLOAD=OFF): says so. */
#include <stdio.h>

#include "tools/tool.h"

int fl_tool_cmd_upload(int argc, char **argv) {
    (void)argc, (void)argv;
    fputs("faultline upload: this build has no upload support (configured with "
          "FL_BUILD_UPLOAD=OFF)\n", stderr);
    return 1;
}
