/* SPDX-License-Identifier: MIT */
/* Triage's name normalisation and crash-machinery list, and the CLI's CRC-32 (against zlib's check value). */
#include "test.h"
#include "tools/tool.h"

static void norm(const char *in, const char *want) {
    char buf[FL_TOOL_SIG_NAME_MAX];
    fl_tool_sig_normalize(in, buf, sizeof buf);
    CHECK_STREQ(buf, want);
}

int main(void) {
    /* Clones of one function are that function. */
    norm("crash_here", "crash_here");
    norm("crash_here.cold", "crash_here");
    norm("crash_here.cold.12", "crash_here");
    norm("crash_here.constprop.0", "crash_here");
    norm("crash_here.isra.0", "crash_here");
    norm("crash_here.part.3", "crash_here");
    norm("crash_here.constprop.0.isra.0", "crash_here");
    norm("crash_here.lto_priv.0", "crash_here");
    norm("crash_here.llvm.1234567890", "crash_here");
    norm("crash_here.localalias", "crash_here");
    norm("ns::f(int) [clone .cold]", "ns::f");
    norm("ns::f(int) [clone .constprop.0] [clone .isra.0]", "ns::f");
    /* Dots that are not clone suffixes stay. */
    norm("_GLOBAL__sub_I_main.cpp", "_GLOBAL__sub_I_main.cpp");
    norm("a.b", "a.b");
    /* Parameters, qualifiers, template arguments and return types go. */
    norm("fixture::Widget::draw(int) const", "fixture::Widget::draw");
    norm("void ns::f<int, std::vector<int, std::allocator<int> > >(int)", "ns::f<T>");
    norm("std::vector<int, std::allocator<int> >::push_back(int const&)",
         "std::vector<T>::push_back");
    norm("std::vector<double, std::allocator<double> >::push_back(double const&)",
         "std::vector<T>::push_back");
    norm("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper");
    norm("ns::Foo::operator()(int)", "ns::Foo::operator()");
    norm("ns::Foo::operator<(ns::Foo const&) const", "ns::Foo::operator<");
    norm("ns::Foo::operator->() const", "ns::Foo::operator->");
    norm("std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
         "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
         "std::operator<< <T>");
    norm("operator new(unsigned long)", "operator new");
    norm("ns::Foo::operator bool() const", "ns::Foo::operator bool");
    norm("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()");
    norm("int ns::g<ns::Tag>(ns::Tag&&) &&", "ns::g<T>");
    /* Rust (demangled in the simplified form): arguments go, qualified paths stay. */
    norm("core::ptr::drop_in_place::<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place::<T>");
    norm("core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>",
         "core::ptr::drop_in_place<T>");
    norm("<mycrate::Foo as core::fmt::Debug>::fmt", "<mycrate::Foo as core::fmt::Debug>::fmt");
    norm("<alloc::vec::Vec<i32> as core::ops::drop::Drop>::drop",
         "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop");
    norm("<(i32, &str) as mycrate::Tr>::f", "<(i32, &str) as mycrate::Tr>::f");
    norm("<mycrate::Foo<u8>>::new", "<mycrate::Foo<T>>::new");
    norm("mycrate::apply::<mycrate::main::{closure#0}>::{closure#0}",
         "mycrate::apply::<T>::{closure#0}");
    /* Malformed input is cut, never overrun. */
    norm("broken<unclosed(int", "broken");
    norm("runtime.raise.abi0", "runtime.raise"); /* Go's assembly functions */
    norm("main.init.0.func1", "main.init.0.func1"); /* Go: the first init's closure */
    norm("main.init.0", "main.init"); /* (as a C name's numeric suffix would be) */
    norm("sync.(*Mutex).unlockSlow", "sync.(*Mutex).unlockSlow"); /* Go's method receiver */
    norm("main.T.Method", "main.T.Method");
    norm("f.0.isra.0", "f");
    char small[8];
    fl_tool_sig_normalize("a_rather_long_name(int)", small, sizeof small);
    CHECK_STREQ(small, "a_rathe");

    static const char *const machinery[] = {
        "abort", "raise", "__GI_raise", "__GI_abort", "__pthread_kill_implementation", "pthread_kill",
        "__assert_fail", "__GI___assert_fail", "malloc_printerr", "__libc_message", "_int_free",
        "__fortify_fail", "__stack_chk_fail", "std::terminate", "__cxa_throw",
        "std::__throw_logic_error", "_Unwind_RaiseException", "fl_crash_handler", "fl_snapshot",
        "__restore_rt",
        /* Go's crash path (GOTRACEBACK=crash) */
        "runtime.raise", "runtime.dieFromSignal", "runtime.sigfwdgo", "runtime.sigtramp",
        "runtime.crash", "runtime.fatalthrow", "runtime.fatalthrow.func1", "runtime.throw",
        "runtime.sigpanic", "runtime.gopanic", "runtime.fatalpanic", "runtime.panicmem",
        "runtime.goPanicIndex", "sync.fatal"};
    for (size_t i = 0; i < sizeof machinery / sizeof machinery[0]; i++)
        if (!fl_tool_sig_is_machinery(machinery[i])) {
            CHECK(!"machinery not recognised");
            fprintf(stderr, "  %s\n", machinery[i]);
        }
    static const char *const app[] = {"main", "null_c", "abort_b", "__GI_my_function",
                                      "ns::Widget::draw", "flush", "raise_level", "?",
                                      "crasher+0x1234", "runtime.mapassign_faststr",
                                      "runtime.main", "main.main"};
    for (size_t i = 0; i < sizeof app / sizeof app[0]; i++)
        if (fl_tool_sig_is_machinery(app[i])) {
            CHECK(!"application frame taken for machinery");
            fprintf(stderr, "  %s\n", app[i]);
        }

    /* CRC-32 check value of "123456789" (zlib, .gnu_debuglink); split calls continue it. */
    CHECK_EQ_U64(fl_tool_crc32(0, "123456789", 9), 0xcbf43926u);
    CHECK_EQ_U64(fl_tool_crc32(fl_tool_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
    CHECK_EQ_U64(fl_tool_crc32(0, "", 0), 0);
    TEST_END();
}
