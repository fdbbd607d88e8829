/* SPDX-License-Identifier: MIT */
/* The sample report read by an independent decoder, protoc --decode (argv: protoc, proto dir). */
#include <stdlib.h>

#include "sample.h"
#include "test.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PROTOC PROTO_DIR\n", argv[0]);
        return 2;
    }
    char dir[4096];
    if (!sample_tmpdir(dir, sizeof dir)) {
        perror("mkdtemp");
        return 1;
    }
    sample_t s;
    CHECK_EQ_U64(sample_write(dir, NULL, &s), 0);
    char *out = NULL, *err = NULL;
    char *cmd[] = {argv[1], "--decode=faultline.Report", "-I", argv[2], "faultline.proto", NULL};
    int rc = sample_run(cmd, s.path, &out, &err);
    CHECK_EQ_U64(rc, 0);
    if (rc != 0)
        fprintf(stderr, "protoc: %s\n", err ? err : "");
    if (out) {
        CHECK(strstr(out, "magic: \"faultline\"") != NULL);
        CHECK(strstr(out, "format_version: 2") != NULL);
        CHECK(strstr(out, "threads_total: 5\n") != NULL);
        CHECK(strstr(out, "complete: true") != NULL);
        CHECK(strstr(out, "process_path: \"/opt/sample/bin/sample-app\"") != NULL);
        CHECK(strstr(out, "name: \"SIGSEGV\"") != NULL);
        CHECK(strstr(out, "code_name: \"SEGV_MAPERR\"") != NULL);
        CHECK(strstr(out, "build_id_kind: BUILD_ID_TEXT_HASH") != NULL);
        /* Compact threads (sample.c): frame 0 of thread 0 at image 0's text + 0x100, the next
         * frame in the next image (2 MiB + 4 bytes on); sps 64 bytes apart, so in units of 16;
         * methods context then cfi. */
        fl_image_t img0;
        sample_make_image(&img0, 0);
        char want[128];
        snprintf(want, sizeof want, "  frame_pc_deltas: %llu\n  frame_pc_deltas: %u\n",
                 (unsigned long long)img0.text_start + 0x100, 0x200004u);
        CHECK(strstr(out, want) != NULL);
        CHECK(strstr(out, "  frame_sp_deltas: 4\n  frame_sp_deltas: 4\n") != NULL);
        CHECK(strstr(out, "  frame_methods: \"!2") != NULL); /* 0x21: context, cfi; 0x32 */
        CHECK(strstr(out, "  frame_sp_shift: 4\n") != NULL);
        CHECK(strstr(out, "  register_values: ") != NULL);
        for (unsigned t = 0; t < SAMPLE_THREADS; t++) {
            snprintf(want, sizeof want, "tid: %u\n", SAMPLE_TID0 + t);
            CHECK(strstr(out, want) != NULL);
        }
        CHECK(strstr(out, "path: \"[vdso]\"") != NULL);
        for (unsigned i = 2; i < SAMPLE_IMAGES; i++) {
            snprintf(want, sizeof want, "path: \"/usr/lib/x86_64-linux-gnu/libsample%u.so.1\"", i);
            CHECK(strstr(out, want) != NULL);
        }
        /* Every thread and image as its own occurrence of the repeated field. */
        size_t threads = 0, images = 0;
        for (const char *p = out; (p = strstr(p, "\nthreads {")) != NULL; p++)
            threads++;
        for (const char *p = out; (p = strstr(p, "\nimages {")) != NULL; p++)
            images++;
        CHECK_EQ_U64(threads, SAMPLE_THREADS);
        CHECK_EQ_U64(images, SAMPLE_IMAGES);
    }
    free(out);
    free(err);
    sample_rmtree(dir);
    TEST_END();
}
