# SPDX-License-Identifier: MIT
# The one place (with base/config.h) where the platform is chosen: sets FL_PLATFORM and FL_ARCH,
# which module CMakeLists use to pick *_linux.c / *_darwin.c / *_x86_64.c / *_arm64.c files.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(FL_PLATFORM linux)
elseif(CMAKE_SYSTEM_NAME STREQUAL "Darwin")
  set(FL_PLATFORM darwin)
else()
  message(FATAL_ERROR "faultline: unsupported system ${CMAKE_SYSTEM_NAME}")
endif()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(FL_ARCH x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(FL_ARCH arm64)
else()
  message(FATAL_ERROR "faultline: unsupported processor ${CMAKE_SYSTEM_PROCESSOR}")
endif()
message(STATUS "faultline: platform ${FL_PLATFORM}, arch ${FL_ARCH}")
