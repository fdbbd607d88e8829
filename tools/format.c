/* SPDX-License-Identifier: MIT */
/* Formatting helpers shared by the text and JSON renderings. */
#include <inttypes.h>
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

/* Slicing by 8: eight tables let the loop take 8 bytes a step (about 1 byte a cycle), which
 * matters when checking the CRC of a debug file of hundreds of MB. */
static uint32_t crc_tab[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t fl_tool_crc32(uint32_t crc, const void *data, size_t n) {
    static bool ready;
    if (!ready) {
        crc_init();
        ready = true;
    }
    const uint8_t *p = data;
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^
              crc_tab[4][lo >> 24] ^ crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^
              crc_tab[0][p[7]];
    }
    while (n--) crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
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
    for (size_t i = 0; i < r->n_threads; i++)
        if (r->threads[i]->monitored)
            return (int)i;
    for (size_t i = 0; r->hang && r->hang->monitored_tid && i < r->n_threads; i++)
        if (r->threads[i]->tid == r->hang->monitored_tid)
            return (int)i;
    return -1;
}

bool fl_tool_is_hang(const Faultline__Report *r) {
    return r->header ? r->header->kind == FAULTLINE__HEADER__KIND__KIND_HANG : r->hang != NULL;
}

void fl_tool_hang_text(char *buf, size_t cap, const Faultline__Report *r) {
    const Faultline__Hang *h = r->hang;
    if (!cap)
        return;
    buf[0] = 0;
    if (!h)
        return;
    snprintf(buf, cap,
             "tid %" PRId32 " stuck for at least %" PRIu64 ".%03" PRIu64 " s (threshold %" PRIu32
             " ms, checked every %" PRIu64 " ms), %s",
             h->monitored_tid, h->duration_ns / 1000000000u, h->duration_ns / 1000000u % 1000u,
             h->threshold_ms, h->check_interval_ns / 1000000u,
             h->recovered ? "recovered" : "still stuck when last written");
}

const char *fl_tool_arch_name(int arch) {
    switch (arch) {
    case FAULTLINE__ARCH__ARCH_X86_64: return "x86_64";
    case FAULTLINE__ARCH__ARCH_ARM64: return "arm64";
    default: return "unknown";
    }
}

const char *fl_tool_state_detail(const Faultline__Thread *t) {
    return t->n_frames && t->frames[0]->method == FAULTLINE__FRAME__METHOD__METHOD_SYSCALL
               ? "; stack read from its system call"
               : "";
}

uint32_t fl_tool_gap_before(const Faultline__Thread *t, size_t k) {
    return t->frames_omitted && k == t->frames_omitted_at && k > 0 ? t->frames_omitted : 0;
}

size_t fl_tool_frame_depth(const Faultline__Thread *t, size_t k) {
    return t->frames_omitted && k >= t->frames_omitted_at && t->frames_omitted_at > 0
               ? k + t->frames_omitted
               : k;
}

const char *fl_tool_method_name(int method) {
    switch (method) {
    case FAULTLINE__FRAME__METHOD__METHOD_CONTEXT: return "context";
    case FAULTLINE__FRAME__METHOD__METHOD_CFI: return "cfi";
    case FAULTLINE__FRAME__METHOD__METHOD_FRAME_POINTER: return "frame_pointer";
    case FAULTLINE__FRAME__METHOD__METHOD_LINK_REGISTER: return "link_register";
    case FAULTLINE__FRAME__METHOD__METHOD_SCAN: return "scan";
    case FAULTLINE__FRAME__METHOD__METHOD_SYSCALL: return "syscall";
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
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_TEXT_SECTION: return "text_section";
    case FAULTLINE__IMAGE__BUILD_ID_KIND__BUILD_ID_MACHO_UUID: return "macho_uuid";
    default: return "unknown";
    }
}

const char *fl_tool_kind_name(int kind) {
    switch (kind) {
    case FAULTLINE__HEADER__KIND__KIND_CRASH: return "crash";
    case FAULTLINE__HEADER__KIND__KIND_SNAPSHOT: return "snapshot";
    case FAULTLINE__HEADER__KIND__KIND_HANG: return "hang";
    default: return "unknown";
    }
}

const char *fl_tool_clean(const char *s) {
    static char bufs[4][4096];
    static unsigned next;
    char *b = bufs[next++ % 4];
    fl_clean_term(b, sizeof bufs[0], s);
    return b;
}

void fl_tool_signal_text(char *buf, size_t cap, const Faultline__Signal *s) {
    char name[32], code[32];
    snprintf(name, sizeof name, "signal %" PRId32, s->number);
    snprintf(code, sizeof code, "code %" PRId32, s->code);
    snprintf(buf, cap, "%s (%s)", s->name[0] ? fl_tool_clean(s->name) : name,
             s->code_name[0] ? fl_tool_clean(s->code_name) : code);
}

void fl_tool_interrupted_text(char *buf, size_t cap, const Faultline__Signal *s) {
    char sig[128], at[64] = "";
    fl_tool_signal_text(sig, sizeof sig, s);
    if (s->has_address) snprintf(at, sizeof at, " at 0x%016" PRIx64, s->address);
    else if (s->code <= 0 && s->sender_pid) snprintf(at, sizeof at, " sent by pid %" PRId32, s->sender_pid);
    snprintf(buf, cap, "%s%s, in frame %" PRIu32, sig, at, s->frame);
}

void fl_tool_mach_text(char *buf, size_t cap, const Faultline__MachException *m) {
    buf[0] = 0;
    if (!m) return;
    size_t n = (size_t)snprintf(buf, cap, "%s", m->name[0] ? fl_tool_clean(m->name) : "");
    if (!m->name[0]) n = (size_t)snprintf(buf, cap, "exception %" PRId32, m->type);
    if (n < cap && m->code_name[0]) n += (size_t)snprintf(buf + n, cap - n, " (%s)", fl_tool_clean(m->code_name));
    if (n < cap && m->n_codes) n += (size_t)snprintf(buf + n, cap - n, " codes");
    for (size_t i = 0; i < m->n_codes && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, " 0x%" PRIx64, m->codes[i]);
}
