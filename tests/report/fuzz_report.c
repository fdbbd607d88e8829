/* SPDX-License-Identifier: MIT */
/* report: libFuzzer target over the report reader: fl_report_decode on the input (an exact-size
 * copy, so that a read past it is an ASan report) and fl_report_read_file on the same bytes in a
 * file. Aborts on any broken promise: an error code the API does not name, a decoded report
 * holding more than the reader's caps, a compact thread not expanded, fields it left NULL, or the
 * two paths disagreeing. Every string and array of the result is read whole.
 *
 * Seeds: corpus/fuzz_report/ (sample reports of tests/report/sample.c, a report of the
 * integration crasher; scripts/fuzz-seeds.sh makes them). Run: scripts/fuzz.sh BUILD fuzz_report
 * (a crash leaves crash-<sha1> in BUILD/fuzz/fuzz_report/: the input, replayed by passing it as
 * the only argument). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "report/report.h"
#include "fuzz.h"

static char g_dir[] = "/tmp/fuzz_report.XXXXXX";
static char g_path[sizeof g_dir + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tmpdir(g_dir);
    snprintf(g_path, sizeof g_path, "%s/r.flr", g_dir);
    return 0;
}

static size_t str(const char *s) {
    CHECK(s != NULL); /* protobuf-c gives "" for an absent string */
    return strlen(s);
}

static size_t bytes(ProtobufCBinaryData b) {
    size_t sum = 0;
    for (size_t i = 0; i < b.len; i++) sum += b.data[i];
    return sum;
}

/* Reads every field; returns a digest, so that two decodings of the same bytes can be compared
 * and nothing is optimised away. */
static uint64_t walk(const Faultline__Report *r) {
    uint64_t d = str(r->magic) + r->format_version + r->threads_total + r->complete;
    if (r->header) {
        const Faultline__Header *h = r->header;
        d += bytes(h->report_id) + h->time_unix_ns + (uint64_t)h->pid + str(h->process_path) +
             str(h->app_name) + str(h->app_version) + str(h->os_name) + str(h->os_release) +
             str(h->os_version) + str(h->machine) + (uint64_t)h->arch + str(h->hostname) +
             (uint64_t)h->kind + str(h->reason) + h->process_start_unix_ns;
    }
    if (r->signal)
        d += (uint64_t)r->signal->number + str(r->signal->name) + str(r->signal->code_name) +
             r->signal->address;
    if (r->mach_exception) {
        d += str(r->mach_exception->name) + str(r->mach_exception->code_name);
        for (size_t i = 0; i < r->mach_exception->n_codes; i++) d += r->mach_exception->codes[i];
    }
    for (size_t i = 0; i < r->n_threads; i++) {
        const Faultline__Thread *t = r->threads[i];
        CHECK(t != NULL);
        d += (uint64_t)t->tid + str(t->name) + str(t->unwind_stop) + (uint64_t)t->state;
        /* Compact fields are expanded (version 2), within the reader's caps. */
        CHECK(t->n_register_values <= FL_REPORT_REGS_MAX);
        if (t->n_register_values) CHECK(t->n_registers == t->n_register_values);
        if (t->n_frame_pc_deltas) {
            size_t want = t->n_frame_pc_deltas < FL_REPORT_FRAMES_MAX ? t->n_frame_pc_deltas
                                                                      : FL_REPORT_FRAMES_MAX;
            CHECK(t->n_frames == want);
            CHECK(t->n_frame_sp_deltas == t->n_frame_pc_deltas);
            CHECK(t->n_frame_pc_deltas <= FL_REPORT_FRAMES_MAX || t->frames_truncated);
        }
        for (size_t k = 0; k < t->n_registers; k++)
            d += str(t->registers[k]->name) + t->registers[k]->value;
        for (size_t k = 0; k < t->n_frames; k++) {
            const Faultline__Frame *f = t->frames[k];
            d += f->pc + f->sp + (uint64_t)f->method + f->signal_trampoline + f->interrupted;
            if (f->interrupted && t->n_frame_pc_deltas) /* (version 1 carries the flag as is) */
                CHECK(k > 0 && t->frames[k - 1]->signal_trampoline);
        }
        d += bytes(t->frame_methods);
    }
    for (size_t i = 0; i < r->n_images; i++)
        d += str(r->images[i]->path) + bytes(r->images[i]->build_id) + r->images[i]->start +
             r->images[i]->end;
    for (size_t i = 0; i < r->n_annotations; i++)
        d += str(r->annotations[i]->key) + str(r->annotations[i]->value);
    for (size_t i = 0; i < r->n_notes; i++) d += str(r->notes[i]->text);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Faultline__Report *r = NULL;
    bool truncated = true;
    int e = fl_report_decode(data, size, &r, &truncated);
    CHECK(e == 0 || e == FL_ENOTREPORT || e == FL_EVERSION || e == FL_EBADDATA);
    CHECK((e == 0) == (r != NULL));
    uint64_t digest = 0;
    if (r) {
        digest = walk(r);
        if (!truncated) CHECK(r->complete);
    }

    /* The same bytes from a file: the same answer. */
    FILE *f = fopen(g_path, "wb");
    CHECK(f != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);
    Faultline__Report *r2 = NULL;
    bool truncated2 = false;
    int e2 = fl_report_read_file(g_path, &r2, &truncated2);
    CHECK(e2 == e);
    if (r2) {
        CHECK(truncated2 == truncated);
        CHECK(walk(r2) == digest);
    }
    fl_report_free(r2);
    fl_report_free(r);
    return 0;
}
