/* SPDX-License-Identifier: MIT */
/* Platform capability macros: the one header that maps the target to what it has. */
#ifndef FAULTLINE_BASE_CONFIG_H
#define FAULTLINE_BASE_CONFIG_H
#if defined(__linux__)
#define FL_HAVE_PROC_MAPS 1
#define FL_HAVE_ELF 1
/* si_code > 0 only for a fault the kernel raised (which repeats when the handler returns), and
 * si_pid is meaningful only for a sent signal. */
#define FL_SIGINFO_TELLS_ORIGIN 1
#elif defined(__APPLE__)
#define FL_HAVE_MACH 1
#define FL_HAVE_COMPACT_UNWIND 1
#define FL_SIGINFO_TELLS_ORIGIN 0
#else
#error "faultline: unsupported operating system"
#endif
/* For state that fl_install writes: the initialized-data section, whose page the loader has
 * written already (relocations, the partial .bss page it clears). Each .bss page first written
 * at start is one more page fault, 15-50 us on the project's VM (BENCHMARKS.md, issue 14). */
#if defined(__APPLE__)
#define FL_STARTUP_DATA __attribute__((section("__DATA,__data")))
#else
#define FL_STARTUP_DATA __attribute__((section(".data.fl_startup")))
#endif
#if defined(__x86_64__)
#define FL_ARCH_X86_64 1
#define FL_ELF_MACHINE 62u /* EM_X86_64: ELF files this build can load */
#elif defined(__aarch64__)
#define FL_ARCH_ARM64 1
#define FL_ELF_MACHINE 183u /* EM_AARCH64 */
#else
#error "faultline: unsupported architecture"
#endif
#endif
