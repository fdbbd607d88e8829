/* SPDX-License-Identifier: MIT */
/* Writes a sample report whose first images and crashed-thread frames come from the command line,
 * for CLI tests on binaries this machine cannot run (Mach-O).
 * Usage: fl_mkreport DIR [--image PATH,KIND,IDHEX,SLIDE,START,END]... [--frame PC]...
 *   KIND: macho (LC_UUID) or gnu (build-id); numbers in hex. Prints the report's path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/sample.h"

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int parse_image(char *spec, fl_image_t *img) {
    char *f[6];
    for (int i = 0; i < 6; i++) {
        f[i] = strsep(&spec, ",");
        if (!f[i]) return -1;
    }
    memset(img, 0, sizeof *img);
    snprintf(img->path, sizeof img->path, "%s", f[0]);
    img->build_id_kind = strcmp(f[1], "macho") == 0 ? FL_BUILD_ID_MACHO_UUID : FL_BUILD_ID_GNU;
    size_t n = strlen(f[2]) / 2;
    if (n > FL_BUILD_ID_MAX) return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(f[2][2 * i]), lo = hexval(f[2][2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        img->build_id[i] = (uint8_t)(hi << 4 | lo);
    }
    img->build_id_len = (uint8_t)n;
    img->slide = strtoull(f[3], NULL, 16);
    img->start = img->text_start = strtoull(f[4], NULL, 16);
    img->end = img->text_end = strtoull(f[5], NULL, 16);
    return 0;
}

int main(int argc, char **argv) {
    static fl_image_t images[16];
    static fl_frame_t frames[64];
    unsigned ni = 0, nf = 0;
    if (argc < 2) return 2;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--image") == 0 && ni < 16) {
            if (parse_image(argv[i + 1], &images[ni++]) != 0) {
                fprintf(stderr, "fl_mkreport: bad image %s\n", argv[i + 1]);
                return 2;
            }
        } else if (strcmp(argv[i], "--frame") == 0 && nf < 64) {
            frames[nf] = (fl_frame_t){strtoull(argv[i + 1], NULL, 16), 0x7ff000 + 16 * nf,
                                      nf ? FL_FRAME_FP : FL_FRAME_CONTEXT, 0};
            nf++;
        } else {
            return 2;
        }
    }
    sample_opts_t o = {.images = images, .image_count = ni, .frames0 = frames, .frame_count0 = nf};
    sample_t s;
    int e = sample_write(argv[1], &o, &s);
    if (e) {
        fprintf(stderr, "fl_mkreport: %s\n", fl_strerror(e));
        return 1;
    }
    printf("%s\n", s.path);
    return 0;
}
