# SPDX-License-Identifier: MIT
# Dependencies (all from Debian packages, installed by scripts/setup-deps.sh):
#  - protobuf-c (libprotobuf-c-dev, protobuf-c-compiler): generated code and the report reader;
#  - LLVM libunwind (libunwind-16-dev): linked statically as a private, renamed copy (see
#    cmake/privatize-libunwind.sh and docs/async-safety.md).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
set(FL_PROTOBUF_C_LINK PkgConfig::PROTOBUF_C)
find_program(FL_PROTOC_C NAMES protoc-c REQUIRED)

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
