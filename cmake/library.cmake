# The installable library: libvoxrt.so, the public headers (include/voxrt/), the CMake package
# (find_package(voxrt) -> voxrt::voxrt) and voxrt.pc, installed with the voxrt command.
#
# Shared rather than static: the engine links libsndfile, libmpg123, soxr and OpenBLAS (and CUDA's
# libraries in the CUDA build), none of which appears in a public header (libcurl and OpenSSL are
# `voxrt pull`'s, linked into the command alone). As a shared
# library those stay private: a consumer needs only the headers and libvoxrt.so, not the development
# packages of its dependencies, and pkg-config needs no Libs.private. Only the public API is
# exported (include/voxrt/export.h); everything from src/ is hidden.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(GLOB VOXRT_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/include/voxrt/*.h)

add_library(voxrt_library SHARED)
add_library(voxrt::voxrt ALIAS voxrt_library)
# The engine layer whole (it defines the exported API, which nothing inside the library calls) and
# of the layers below it what the engine uses; never the bench, the server, the formats or the hub.
target_link_libraries(voxrt_library PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,voxrt_engine>")
set_target_properties(voxrt_library PROPERTIES LINKER_LANGUAGE CXX)
# Every symbol resolved when the library is linked, not when a consumer's program is.
target_link_options(voxrt_library PRIVATE LINKER:--no-undefined)
target_sources(voxrt_library PUBLIC FILE_SET HEADERS BASE_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/include
  FILES ${VOXRT_PUBLIC_HEADERS})
# The public headers use std::span and designated initializers are shown in their examples.
target_compile_features(voxrt_library PUBLIC cxx_std_20)
# The soname carries the minor version while the API is 0.x: 0.1 and 0.2 are not compatible.
set_target_properties(voxrt_library PROPERTIES OUTPUT_NAME voxrt EXPORT_NAME voxrt
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})

install(TARGETS voxrt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `voxrt bench`'s default recording, found next to the installed program (src/cli/data_files.h).
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/tests/data/audio/jfk.wav DESTINATION ${CMAKE_INSTALL_DATADIR}/voxrt/audio)
install(TARGETS voxrt_library EXPORT voxrtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})  # for consumers whose CMake predates file sets (3.23)

set(VOXRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/voxrt)
install(EXPORT voxrtTargets NAMESPACE voxrt:: DESTINATION ${VOXRT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/voxrtConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/voxrtConfig.cmake INSTALL_DESTINATION ${VOXRT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/voxrtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/voxrtConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/voxrtConfigVersion.cmake
  DESTINATION ${VOXRT_CMAKE_DIR})

# voxrt.pc is written at install time, so that its prefix is the one installed into
# (`cmake --install build --prefix DIR`), not the one configured.
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_${kind}})
    set(VOXRT_PC_${kind} ${CMAKE_INSTALL_${kind}})
  else()
    set(VOXRT_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
install(CODE "
  set(VOXRT_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(VOXRT_PC_LIBDIR [=[${VOXRT_PC_LIBDIR}]=])
  set(VOXRT_PC_INCLUDEDIR [=[${VOXRT_PC_INCLUDEDIR}]=])
  set(VOXRT_PC_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/voxrt.pc.in\" \"${CMAKE_CURRENT_BINARY_DIR}/voxrt.pc\" @ONLY)
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/voxrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Each public header compiles on its own, with nothing but include/ on the include path (src/ is not
# there): a consumer can include any one of them first.
if(VOXRT_TESTS)
  set(VOXRT_HEADER_CHECKS)
  foreach(header ${VOXRT_PUBLIC_HEADERS})
    get_filename_component(name ${header} NAME_WE)
    set(check ${CMAKE_CURRENT_BINARY_DIR}/public_headers/${name}.cpp)
    file(CONFIGURE OUTPUT ${check} CONTENT "#include <voxrt/${name}.h>\n#include <voxrt/${name}.h>\n")
    list(APPEND VOXRT_HEADER_CHECKS ${check})
  endforeach()
  add_library(voxrt_public_headers_check OBJECT ${VOXRT_HEADER_CHECKS})
  target_link_libraries(voxrt_public_headers_check PRIVATE voxrt::voxrt)
  target_compile_options(voxrt_public_headers_check PRIVATE -Wall -Wextra -Wpedantic -Werror)
endif()
