/* SPDX-License-Identifier: MIT */
/* The faultline CLI's internal interfaces: symbolication and the text and JSON renderings. */
#ifndef FAULTLINE_TOOLS_TOOL_H
#define FAULTLINE_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "faultline.pb-c.h"

/* Everything here is NOT AS-SAFE. */

/* ---- Symbolication (symbolize.c) ---- */

typedef struct fl_tool_symbolizer fl_tool_symbolizer_t;

/* A frame as resolved against the report's images. */
typedef struct fl_tool_sym {
    int image;          /* index into report->images whose [start, end) holds the pc, or -1 */
    const char *symbol; /* NULL unless a file with the image's build-id was found and resolves it */
    uint64_t offset;    /* recorded pc - symbol address */
} fl_tool_sym_t;

/* Symbol files are looked up per image: at the image's recorded path, then in each of `dirs`
 * as DIR/.build-id/xx/rest.debug and DIR/<basename>. A file is used only when its build-id (or
 * text hash, for BUILD_ID_TEXT_HASH images) equals the recorded one. Opened files are cached
 * until fl_tool_symbolizer_free. NULL on allocation failure. */
fl_tool_symbolizer_t *fl_tool_symbolizer_new(const Faultline__Report *r, char *const *dirs,
                                             size_t ndirs);
void fl_tool_symbolizer_free(fl_tool_symbolizer_t *s);
/* Resolves frame `index` of a thread. Callers' pcs are return addresses, so they are looked up
 * at pc-1 (the call, which may be the last instruction of its function) while the offset stays
 * relative to the recorded pc; frame 0 and context frames are exact. */
void fl_tool_symbolize(fl_tool_symbolizer_t *s, const Faultline__Frame *f, size_t index,
                       fl_tool_sym_t *out);

/* ---- Renderings (show.c, json.c) ---- */

/* Text in the spirit of Apple's crash log. */
void fl_tool_show_text(FILE *out, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *s);
/* The JSON document other tools parse (its shape is described in json.c). */
void fl_tool_show_json(FILE *out, const Faultline__Report *r, bool truncated,
                       fl_tool_symbolizer_t *s);

/* ---- Formatting helpers (format.c) ---- */

#define FL_TOOL_HEX_MAX 64u /* bytes rendered by fl_tool_hex; longer input is cut */

/* "2024-05-01T12:00:00.123Z"; "" for 0. buf >= 40 bytes. */
void fl_tool_fmt_time(char *buf, size_t cap, uint64_t unix_ns);
const char *fl_tool_basename(const char *path);
/* Lowercase hex of the first FL_TOOL_HEX_MAX bytes at most; buf >= 2 * FL_TOOL_HEX_MAX + 1. */
void fl_tool_hex(char *buf, const uint8_t *p, size_t n);
/* Index in r->threads of the crashed thread (flagged, else the signal's tid), or -1. */
int fl_tool_crashed_thread(const Faultline__Report *r);
const char *fl_tool_arch_name(int arch);
const char *fl_tool_method_name(int method);
const char *fl_tool_state_name(int state);
const char *fl_tool_build_id_kind_name(int kind);
const char *fl_tool_kind_name(int kind);

#endif
