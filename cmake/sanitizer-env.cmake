# SPDX-License-Identifier: MIT
# Read by ctest, not cmake: the sanitizer build's tests/CMakeLists.txt names it in
# TEST_INCLUDE_FILES, so ctest runs it before any test and every test, and every process a test
# starts (the CLI under the Python tests), inherits these options, unless the caller set its own.
# Any report stops the process with a failing status (UBSan's is already fatal by
# -fno-sanitize-recover); leaks fail it too; UBSan prints where. LeakSanitizer does not scan
# threads' TLS (use_tls=0): clang 14's crashes walking the dynamic TLS of a library loaded with
# dlopen (libdw, which the CLI loads for line tables) on Debian 12's glibc; lsan.supp takes out
# what that makes look leaked.
if(NOT DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "halt_on_error=1:detect_leaks=1:strict_string_checks=1")
endif()
if(NOT DEFINED ENV{UBSAN_OPTIONS})
  set(ENV{UBSAN_OPTIONS} "halt_on_error=1:print_stacktrace=1")
endif()
if(NOT DEFINED ENV{LSAN_OPTIONS})
  set(ENV{LSAN_OPTIONS} "use_tls=0:suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp")
endif()
