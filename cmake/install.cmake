# SPDX-License-Identifier: MIT
# Installs the public header, libfaultline.a/.so, the faultline CLI, a CMake package
# (find_package(faultline) -> faultline::faultline, faultline::faultline_static) and faultline.pc;
# with FL_BUILD_UPLOAD also upload.h, libfaultline-upload.a/.so (faultline::faultline_upload,
# faultline::faultline_upload_static) and faultline-upload.pc.
include(CMakePackageConfigHelpers)

set(FL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/faultline)

install(FILES ${PROJECT_SOURCE_DIR}/include/faultline/faultline.h
  ${PROJECT_BINARY_DIR}/proto/faultline.pb-c.h ${PROJECT_SOURCE_DIR}/proto/faultline.proto
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/faultline)
# A cross build's prefix holds the static library only (cmake/toolchain-*.cmake turns this off),
# so that `cc app.c $(pkg-config --libs --static faultline)` needs nothing at run time.
option(FL_INSTALL_SHARED "Install libfaultline.so too" ON)
set(FL_INSTALLED_LIBS faultline_static)
if(FL_INSTALL_SHARED)
  list(PREPEND FL_INSTALLED_LIBS faultline)
endif()
install(TARGETS ${FL_INSTALLED_LIBS} EXPORT faultline-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# libfaultline-upload (upload/CMakeLists.txt says why it is a library of its own).
if(TARGET faultline_upload)
  install(FILES ${PROJECT_SOURCE_DIR}/include/faultline/upload.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/faultline)
  install(TARGETS faultline_upload faultline_upload_static EXPORT faultline-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set(FL_UPLOAD_INSTALLED ON)
else()
  set(FL_UPLOAD_INSTALLED OFF)
endif()

# The CLI (tools/CMakeLists.txt: targets faultline_tool and faultline_upload_tool, files
# "faultline" and "faultline-upload").
if(TARGET faultline_tool)
  install(TARGETS faultline_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET faultline_upload_tool) # `faultline upload` runs it from the same directory
  install(TARGETS faultline_upload_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# CMake package. The static library's link interface names Threads::Threads and
# PkgConfig::PROTOBUF_C (and the upload one PkgConfig::FL_CURL, PkgConfig::FL_ZLIB): imported
# targets, not exported, which faultline-config.cmake recreates.
install(EXPORT faultline-targets NAMESPACE faultline:: FILE faultline-targets.cmake
  DESTINATION ${FL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/faultline-config.cmake.in
  ${PROJECT_BINARY_DIR}/faultline-config.cmake INSTALL_DESTINATION ${FL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/faultline-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/faultline-config.cmake
  ${PROJECT_BINARY_DIR}/faultline-config-version.cmake DESTINATION ${FL_CMAKE_DIR})

# pkg-config file. Its prefix is filled in at install time, so that it is the prefix actually
# installed to (cmake --install --prefix DIR), not the one configured.
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(FL_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(FL_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
set(FL_PC_PREFIX "@FL_PC_PREFIX@")
set(FL_PC_NAMES faultline)
if(FL_UPLOAD_INSTALLED)
  list(APPEND FL_PC_NAMES faultline-upload)
endif()
foreach(pc ${FL_PC_NAMES})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc.tmpl @ONLY)
  install(CODE "
    set(FL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${PROJECT_BINARY_DIR}/${pc}.pc.tmpl\" \"${PROJECT_BINARY_DIR}/${pc}.pc\" @ONLY)")
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# A cross build's prefix also carries the target's protobuf-c (the Debian package unpacked by
# scripts/setup-arm64-deps.sh), so that pkg-config resolves faultline.pc's Requires.private to it
# and not to the build host's libprotobuf-c.pc.
if(FL_BUNDLE_PROTOBUF_C_LIB)
  install(FILES ${FL_BUNDLE_PROTOBUF_C_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${FL_BUNDLE_PROTOBUF_C_INCLUDE}/protobuf-c
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(CODE "
    file(WRITE \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/libprotobuf-c.pc\"
      \"Name: libprotobuf-c\\nDescription: Protocol Buffers C library (bundled for faultline)\\n\"
      \"Version: ${PROTOBUF_C_VERSION}\\n\"
      \"Libs: -L\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR} -lprotobuf-c\\n\"
      \"Cflags: -I\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}\\n\")")
endif()
