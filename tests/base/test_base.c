/* SPDX-License-Identifier: MIT */
/* base: the safe reader (both methods) on good, unmapped and protected memory; maps; formatting. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"
#include "test.h"

static void test_reader(fl_memory_method_t method) {
    CHECK(fl_memory_init(method) == 0);
    CHECK(fl_memory_method() == method);
    const fl_reader_t *r = fl_memory_reader();
    long page = sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED);
    memset(mem, 'a', (size_t)page * 3);
    char *hole = mem + page, *last = mem + 2 * page;
    CHECK(munmap(hole, (size_t)page) == 0);
    char buf[64];
    /* readable */
    CHECK(fl_read(r, (uint64_t)(uintptr_t)mem, buf, sizeof buf) == 0 && buf[0] == 'a' && buf[63] == 'a');
    /* unmapped, straddling into the hole, NULL, the top of the address space, overflow */
    CHECK(fl_read(r, (uint64_t)(uintptr_t)hole, buf, 8) == FL_EFAULT);
    CHECK(fl_read(r, (uint64_t)(uintptr_t)(hole - 4), buf, 8) == FL_EFAULT);
    CHECK(fl_read(r, 0, buf, 8) == FL_EFAULT);
    CHECK(fl_read(r, UINT64_MAX - 3, buf, 8) == FL_EFAULT);
    /* PROT_NONE */
    CHECK(mprotect(last, (size_t)page, PROT_NONE) == 0);
    CHECK(fl_read(r, (uint64_t)(uintptr_t)last, buf, 8) == FL_EFAULT);
    /* a large read spanning many pipe chunks */
    static char big[3 * 4096 + 123], copy[sizeof big];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
    CHECK(fl_read(r, (uint64_t)(uintptr_t)big, copy, sizeof copy) == 0 && memcmp(big, copy, sizeof big) == 0);
    /* strings: whole, truncated, ending right before an unmapped page */
    char s[16];
    CHECK(fl_read_cstr(r, (uint64_t)(uintptr_t)"hello", s, sizeof s) == 0 && strcmp(s, "hello") == 0);
    CHECK(fl_read_cstr(r, (uint64_t)(uintptr_t)"0123456789abcdefXYZ", s, sizeof s) == FL_ERANGE &&
          strcmp(s, "0123456789abcde") == 0);
    memcpy(hole - 3, "ok", 3);
    CHECK(fl_read_cstr(r, (uint64_t)(uintptr_t)(hole - 3), s, sizeof s) == 0 && strcmp(s, "ok") == 0);
    munmap(mem, (size_t)page);
    munmap(last, (size_t)page);
}

static void test_maps(void) {
    static fl_maps_t m;
    static char scratch[4096], text[1 << 20];
    /* Oracle: the same file read whole, right before, with nothing allocated in between (an
     * allocation may map memory: ASan's allocator maps a region per size class). Every line's
     * range must be found. */
    int fd = open("/proc/self/maps", O_RDONLY);
    size_t len = 0;
    ssize_t got;
    while (fd >= 0 && (got = read(fd, text + len, sizeof text - 1 - len)) > 0) len += (size_t)got;
    if (fd >= 0) close(fd);
    text[len] = 0;
    CHECK(fl_maps_read(&m, scratch, sizeof scratch) == 0);
    CHECK(m.count > 5 && !m.truncated);
    unsigned lines = 0, found = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        unsigned long long a, b;
        if (sscanf(line, "%llx-%llx", &a, &b) != 2) continue;
        lines++;
        const fl_map_t *e = fl_maps_find(&m, a);
        if (e && e->start == a && e->end == b) found++;
    }
    CHECK(lines > 0 && found == lines);
    int local;
    const fl_map_t *stack = fl_maps_find(&m, (uint64_t)(uintptr_t)&local);
    CHECK(stack && (stack->perms & FL_MAP_W) && strcmp(fl_maps_name(&m, stack), "[stack]") == 0);
    const fl_map_t *code = fl_maps_find(&m, (uint64_t)(uintptr_t)&test_maps);
    CHECK(code && (code->perms & FL_MAP_X));
}

static void test_format(void) {
    char b[32];
    CHECK(fl_fmt_u64(b, sizeof b, 0) == 1 && strcmp(b, "0") == 0);
    CHECK(fl_fmt_u64(b, sizeof b, UINT64_MAX) == 20 && strcmp(b, "18446744073709551615") == 0);
    CHECK(fl_fmt_i64(b, sizeof b, INT64_MIN) == 20 && strcmp(b, "-9223372036854775808") == 0);
    CHECK(fl_fmt_hex(b, sizeof b, 0xdeadbeef) == 8 && strcmp(b, "deadbeef") == 0);
    CHECK(fl_fmt_u64(b, 3, 12345) == 0); /* too small: nothing */
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, b, 8);
    fl_strbuf_puts(&sb, "abc");
    fl_strbuf_putx(&sb, 0xff);
    fl_strbuf_puts(&sb, "overflow");
    CHECK(strcmp(b, "abc0xff") == 0);
    const char *h = "7f00zz", *p = h;
    uint64_t v;
    CHECK(fl_parse_hex(&p, h + 6, &v) && v == 0x7f00 && p == h + 4);
    CHECK(strcmp(fl_strerror(FL_EFAULT), "memory could not be read") == 0);
    CHECK(strcmp(fl_strerror(12345), "unknown error") == 0);
}

/* The probe picks process_vm_readv where it reads our memory, else the pipe. Under qemu-user
 * process_vm_readv copies from the host's address space, not the guest's: the probe must see
 * that, and forcing the method must fail. */
static void test_probe(void) {
    fl_memory_method_t want = fl_test_emulated() ? FL_MEMORY_PIPE : FL_MEMORY_VM_READV;
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK_EQ_U64(fl_memory_method(), want);
    if (want == FL_MEMORY_PIPE) CHECK(fl_memory_init(FL_MEMORY_VM_READV) == FL_ENOSYS);
}

int main(void) {
    test_probe();
    if (!fl_test_emulated()) test_reader(FL_MEMORY_VM_READV);
    test_reader(FL_MEMORY_PIPE);
    test_maps();
    test_format();
    TEST_END();
}
