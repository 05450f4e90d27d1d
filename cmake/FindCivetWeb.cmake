# FindCivetWeb: civetweb's C library as CivetWeb::civetweb.
#
# Debian 12's libcivetweb-dev ships a CMake config whose civetweb::server
# target names /usr/bin/civetweb, which the package does not install, so
# find_package(civetweb CONFIG) fails; this module finds the header and the
# library directly.
find_path(CivetWeb_INCLUDE_DIR civetweb.h)
find_library(CivetWeb_LIBRARY civetweb)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CivetWeb REQUIRED_VARS CivetWeb_LIBRARY CivetWeb_INCLUDE_DIR)

if(CivetWeb_FOUND AND NOT TARGET CivetWeb::civetweb)
  find_package(Threads REQUIRED)
  add_library(CivetWeb::civetweb UNKNOWN IMPORTED)
  set_target_properties(CivetWeb::civetweb PROPERTIES
    IMPORTED_LOCATION "${CivetWeb_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CivetWeb_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
endif()
mark_as_advanced(CivetWeb_INCLUDE_DIR CivetWeb_LIBRARY)
