/* SPDX-License-Identifier: MIT */
/* The CLI's one demangling dispatch (tools/demangle.c): which demangler each name reaches, in which form, and what is shown when they decline. A stand-in fl_demangle_swift, linked before demangle/'s, records its calls. */
#include <string.h>

#include "demangle/demangle.h"
#include "faultline/faultline.h"
#include "test.h"
#include "tools/tool.h"

static char g_swift_seen[256];
static unsigned g_swift_flags, g_swift_calls;

/* Takes one name, as a Swift demangler would; declines the rest. */
int fl_demangle_swift(const char *sym, char *out, size_t cap, unsigned flags) {
    g_swift_calls++;
    g_swift_flags = flags;
    snprintf(g_swift_seen, sizeof g_swift_seen, "%s", sym);
    if (cap == 0) return FL_EINVAL;
    if (strcmp(sym, "$s4main3fooyyF") != 0) return FL_ENOTFOUND;
    return snprintf(out, cap, "%s", flags & FL_DEMANGLE_SIMPLIFIED ? "foo()" : "main.foo() -> ()");
}

static void shows(const char *name, unsigned flags, const char *want) {
    char buf[256];
    CHECK_STREQ(fl_tool_symbol_display(name, flags, buf, sizeof buf), want);
}

int main(void) {
    /* Swift names reach the Swift demangler first, with the form asked for. */
    shows("$s4main3fooyyF", FL_DEMANGLE_FULL, "main.foo() -> ()");
    CHECK_EQ_U64(g_swift_flags, FL_DEMANGLE_FULL);
    shows("$s4main3fooyyF", FL_DEMANGLE_SIMPLIFIED, "foo()");
    CHECK_EQ_U64(g_swift_flags, FL_DEMANGLE_SIMPLIFIED);
    /* One it declines is shown as it is (after Rust and C++ declined it too). */
    g_swift_calls = 0;
    shows("$s4main3barSiyF", FL_DEMANGLE_SIMPLIFIED, "$s4main3barSiyF");
    CHECK_EQ_U64(g_swift_calls, 1);
    CHECK_STREQ(g_swift_seen, "$s4main3barSiyF");
    /* Mach-O link names: the leading '_' dropped before any demangler sees them. */
    CHECK_STREQ(fl_tool_symbol_link_name("_$s4main3fooyyF", FL_TOOL_BIN_MACHO), "$s4main3fooyyF");
    CHECK_STREQ(fl_tool_symbol_link_name("_$s4main3fooyyF", FL_TOOL_BIN_ELF), "_$s4main3fooyyF");
    /* Rust: v0, and legacy over C++ (the hash hidden in the simplified form). */
    shows("_RNvCs1234_7mycrate3foo", FL_DEMANGLE_FULL, "mycrate[3c1c0]::foo");
    shows("_RNvCs1234_7mycrate3foo", FL_DEMANGLE_SIMPLIFIED, "mycrate::foo");
    CHECK_STREQ(g_swift_seen, "_RNvCs1234_7mycrate3foo"); /* (Swift is asked first) */
    shows("_ZN7mycrate3foo17h0123456789abcdefE", FL_DEMANGLE_FULL, "mycrate::foo::h0123456789abcdef");
    shows("_ZN7mycrate3foo17h0123456789abcdefE", FL_DEMANGLE_SIMPLIFIED, "mycrate::foo");
#ifdef __linux__
    /* C++ is unchanged, in either form; a _ZN name without Rust's hash is C++'s. */
    shows("_ZN2ns1fEi", FL_DEMANGLE_FULL, "ns::f(int)");
    shows("_ZN2ns1fEi", FL_DEMANGLE_SIMPLIFIED, "ns::f(int)");
    shows("_ZN7mycrate3foo17h0000000000000000E", FL_DEMANGLE_SIMPLIFIED,
          "mycrate::foo::h0000000000000000");
#endif
    /* Plain names stay; a small buffer cuts, never overruns. */
    shows("main", FL_DEMANGLE_SIMPLIFIED, "main");
    char small[8];
    CHECK(fl_tool_demangle("_RNvCs1234_7mycrate3foo", FL_DEMANGLE_SIMPLIFIED, small, sizeof small));
    CHECK_STREQ(small, "mycrate");
    CHECK(!fl_tool_demangle("_RNvCs1234_7mycrate3foo", FL_DEMANGLE_SIMPLIFIED, small, 0));
    TEST_END();
}
