# SPDX-License-Identifier: MIT
# Dependencies, all from Debian packages (scripts/setup-deps.sh installs them):
#  - protobuf-c: protoc-c (protobuf-c-compiler) generates the report's code on the build machine.
#    Its runtime is libprotobuf-c-dev's on Linux; for Darwin, the same version's source from
#    Debian's source package (scripts/setup-darwin-deps.sh), compiled into the library.
#  - LLVM libunwind (libunwind-16-dev), Linux only: linked statically as a private, renamed copy
#    (see cmake/privatize-libunwind.sh and docs/async-safety.md). Darwin uses compact unwind.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_program(FL_PROTOC_C NAMES protoc-c REQUIRED)

if(FL_PLATFORM STREQUAL "linux")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
  set(FL_PROTOBUF_C_LINK PkgConfig::PROTOBUF_C)
  set(FL_PROTOBUF_C_SOURCES "")
  set(FL_PROTOBUF_C_INCLUDE "")

  set(FL_LIBUNWIND_ROOT "/usr/lib/llvm-16" CACHE PATH "Root of LLVM libunwind (include/, lib/libunwind.a)")
  find_file(FL_LIBUNWIND_A libunwind.a PATHS ${FL_LIBUNWIND_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
  find_path(FL_LIBUNWIND_INCLUDE libunwind.h PATHS ${FL_LIBUNWIND_ROOT}/include NO_DEFAULT_PATH REQUIRED)

  # One relocatable object holding all of libunwind with every global symbol renamed fl_lu_* and
  # its calls to the loader, the heap, stdio and locks redirected to our AS-safe shims
  # (frames/unwind_shims_linux.c). It never clashes with the application's own unwinder.
  set(FL_UNWIND_OBJECT ${PROJECT_BINARY_DIR}/fl_unwind_private.o)
  add_custom_command(OUTPUT ${FL_UNWIND_OBJECT}
    COMMAND ${CMAKE_COMMAND} -E env LD=${CMAKE_LINKER} OBJCOPY=${CMAKE_OBJCOPY} NM=${CMAKE_NM}
            sh ${PROJECT_SOURCE_DIR}/cmake/privatize-libunwind.sh ${FL_LIBUNWIND_A} ${FL_UNWIND_OBJECT}
    DEPENDS ${FL_LIBUNWIND_A} ${PROJECT_SOURCE_DIR}/cmake/privatize-libunwind.sh
    COMMENT "Privatising LLVM libunwind")
  add_custom_target(fl_unwind_private DEPENDS ${FL_UNWIND_OBJECT})
else()
  set(FL_PROTOBUF_C_DIR "${PROJECT_SOURCE_DIR}/.deps/protobuf-c-darwin" CACHE PATH
    "protobuf-c runtime source (scripts/setup-darwin-deps.sh)")
  if(NOT EXISTS "${FL_PROTOBUF_C_DIR}/protobuf-c/protobuf-c.c")
    message(FATAL_ERROR "faultline: no protobuf-c source in ${FL_PROTOBUF_C_DIR} "
      "(run scripts/setup-darwin-deps.sh)")
  endif()
  # Compiled into fl_proto (proto/CMakeLists.txt), so into libfaultline itself: macOS has no
  # protobuf-c. Hidden like the rest of the library, so the dylib does not export it.
  set(FL_PROTOBUF_C_SOURCES ${FL_PROTOBUF_C_DIR}/protobuf-c/protobuf-c.c)
  set(FL_PROTOBUF_C_INCLUDE ${FL_PROTOBUF_C_DIR})
  set(FL_PROTOBUF_C_LINK "")
  set(FL_UNWIND_OBJECT "")

  # elf/ (ELF files for the CLI) needs <elf.h>, which macOS lacks: musl's copy, which zig ships
  # (one self-contained header of the ELF ABI's constants and structs).
  get_filename_component(_fl_zig_dir "${FL_ZIG}" DIRECTORY)
  configure_file(${_fl_zig_dir}/lib/libc/include/generic-musl/elf.h
    ${PROJECT_BINARY_DIR}/compat/elf.h COPYONLY)
  include_directories(SYSTEM ${PROJECT_BINARY_DIR}/compat)
endif()
