/* SPDX-License-Identifier: MIT */
/* faultline-upload: `faultline upload`'s own executable, the only one of the CLI linking libcurl. */
#include "tools/tool.h"

int main(int argc, char **argv) { return fl_tool_cmd_upload(argc - 1, argv + 1); }
