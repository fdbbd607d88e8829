# SPDX-License-Identifier: MIT
# Loaded by CMake after its Darwin platform rules (CMAKE_USER_MAKE_RULES_OVERRIDE_C, set in
# cmake/toolchain-zig-macos.cmake): shared libraries are linked by ld64.lld against zig's
# libSystem .tbd, so that -exported_symbols_list (cmake/faultline.exports) is honoured.
set(CMAKE_C_CREATE_SHARED_LIBRARY
  "${FL_LD64_LLD} -dylib -arch ${FL_LD64_ARCH} -platform_version macos ${FL_MACOS_MIN} ${FL_MACOS_SDK} <LINK_FLAGS> -o <TARGET> <SONAME_FLAG> <TARGET_INSTALLNAME_DIR><TARGET_SONAME> <OBJECTS> <LINK_LIBRARIES> ${FL_ZIG_LIBSYSTEM}")
# Platform/Darwin.cmake turns rpaths (and so @rpath install names) off when it cannot run sw_vers,
# i.e. whenever it runs on Linux; macOS 11 has both.
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG "-Wl,-rpath,")
unset(CMAKE_LINK_DEPENDENT_LIBRARY_FILES)
