# Cross-compiling voxrt's CPU build for arm64 on Debian (scripts/test_arm64.sh): Debian's cross
# compiler (g++-aarch64-linux-gnu) and the :arm64 development packages of the dependencies, installed
# multiarch beside the host's (libraries under /usr/lib/aarch64-linux-gnu, headers in /usr/include,
# which header-only packages such as nlohmann-json and CLI11 share with the host). Tests run under
# qemu-aarch64-static, through CTest's emulator.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Only arm64 libraries: the host's /usr/lib/x86_64-linux-gnu must never be linked.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# libc6:arm64 (installed with the dev packages) gives qemu-aarch64-static the arm64 loader and libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
