/* SPDX-License-Identifier: MIT */
/* Formatting helpers shared by the text and JSON renderings. */
#include <string.h>
#include <time.h>

#include "tools/tool.h"

void fl_tool_fmt_time(char *buf, size_t cap, uint64_t unix_ns) {
    buf[0] = '\0';
    if (!unix_ns)
        return;
    time_t secs = (time_t)(unix_ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return;
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03uZ", day, (unsigned)(unix_ns % 1000000000u / 1000000u));
}

const char *fl_tool_basename(const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path ? path : "";
}

void fl_tool_hex(char *buf, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    if (n > FL_TOOL_HEX_MAX)
        n = FL_TOOL_HEX_MAX;
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = digits[p[i] >> 4];
        buf[2 * i + 1] = digits[p[i] & 15];
    }
    buf[2 * n] = '\0';
}

int fl_tool_crashed_thread(const Faultline__Report *r) {
    for (size_t i = 0; i < r->n_threads; i++)
        if (r->threads[i]->crashed)
            return (int)i;
    for (size_t i = 0; r->signal && r->signal->crashed_tid && i < r->n_threads; i++)
        if (r->threads[i]->tid == r->signal->crashed_tid)
            return (int)i;
    return -1;
}

const char *fl_tool_arch_name(int arch) {
    switch (arch) {
    case FAULTLINE__ARCH__ARCH_X86_64: return "x86_64";
    case FAULTLINE__ARCH__ARCH_ARM64: return "arm64";
    default: return "unknown";
    }
}

const char *fl_tool_method_name(int method) {
    switch (method) {
    case FAULTLINE__FRAME__METHOD__METHOD_CONTEXT: return "context";
    case FAULTLINE__FRAME__METHOD__METHOD_CFI: return "cfi";
    case FAULTLINE__FRAME__METHOD__METHOD_FRAME_POINTER: return "frame_pointer";
    case FAULTLINE__FRAME__METHOD__METHOD_LINK_REGISTER: return "link_register";
    case FAULTLINE__FRAME__METHOD__METHOD_SCAN: return "scan";
    default: return "unknown";
    }
}

const char *fl_tool_state_name(int state) {
    switch (state) {
    case FAULTLINE__THREAD__STATE__STATE_CAPTURED: return "captured";
    case FAULTLINE__THREAD__STATE__STATE_BLOCKED: return "blocked";
    case FAULTLINE__THREAD__STATE__STATE_TIMEOUT: return "timeout";
    case FAULTLINE__THREAD__STATE__STATE_EXITED: return "exited";
    case FAULTLINE__THREAD__STATE__STATE_OMITTED: return "omitted";
    default: return "unknown";
    }
}

const char *fl_tool_build_id_kind_name(int kind) {
    switch (kind) {
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_NONE: return "none";
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_GNU: return "gnu";
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_HASH: return "text_hash";
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID: return "macho_uuid";
    default: return "unknown";
    }
}

const char *fl_tool_kind_name(int kind) {
    switch (kind) {
    case FAULTLINE__HEADER__KIND__KIND_CRASH: return "crash";
    case FAULTLINE__HEADER__KIND__KIND_SNAPSHOT: return "snapshot";
    default: return "unknown";
    }
}
