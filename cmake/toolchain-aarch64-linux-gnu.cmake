# SPDX-License-Identifier: MIT
# Cross build for Linux arm64 with Debian's gcc-aarch64-linux-gnu; tests run under qemu-aarch64.
# The arm64 LLVM libunwind and protobuf-c come from scripts/setup-arm64-deps.sh (FL_ARM64_DEPS,
# default .deps/arm64/root); host programs (protoc-c, protoc, python3) are the x86_64 ones.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

if(NOT FL_ARM64_DEPS)
  get_filename_component(FL_ARM64_DEPS "${CMAKE_CURRENT_LIST_DIR}/../.deps/arm64/root" ABSOLUTE)
endif()
set(FL_ARM64_DEPS "${FL_ARM64_DEPS}" CACHE PATH "arm64 Debian packages (setup-arm64-deps.sh)")
set(FL_ARM64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "arm64 libc (libc6-dev-arm64-cross)")
set(FL_LIBUNWIND_ROOT "${FL_ARM64_DEPS}/usr/lib/llvm-16" CACHE PATH "arm64 LLVM libunwind")

set(CMAKE_FIND_ROOT_PATH "${FL_ARM64_SYSROOT}" "${FL_ARM64_DEPS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config sees only the arm64 packages, with their /usr paths moved under FL_ARM64_DEPS.
set(ENV{PKG_CONFIG_LIBDIR} "${FL_ARM64_DEPS}/usr/lib/aarch64-linux-gnu/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${FL_ARM64_DEPS}")
set(ENV{PKG_CONFIG_PATH} "")

# add_test() runs arm64 targets through this; other test commands name it themselves. The
# emulator opens the guest's absolute paths (/lib/libc.so.6, ...) under FL_EMULATOR_SYSROOT first.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${FL_ARM64_SYSROOT})
set(FL_EMULATOR_SYSROOT ${FL_ARM64_SYSROOT})

# The installed prefix (make arm64: build-arm64/prefix) is static and self-contained: no
# libfaultline.so, and the arm64 protobuf-c that faultline.pc requires (cmake/install.cmake).
set(FL_INSTALL_SHARED OFF CACHE BOOL "Install libfaultline.so too")
set(FL_BUNDLE_PROTOBUF_C_LIB "${FL_ARM64_DEPS}/usr/lib/aarch64-linux-gnu/libprotobuf-c.a")
set(FL_BUNDLE_PROTOBUF_C_INCLUDE "${FL_ARM64_DEPS}/usr/include")
