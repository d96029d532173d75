# Cross build for aarch64 Linux on an x86_64 Debian 12 host (scripts/build-arm64.sh):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DVMM_ARM64_SYSROOT=$(scripts/arm64-sysroot.sh) -DVMM_STATIC=ON
# Compiler: gcc-aarch64-linux-gnu.  Libraries: Debian's multiarch :arm64
# packages beside the amd64 ones (/usr/lib/aarch64-linux-gnu, headers in
# /usr/include and /usr/include/aarch64-linux-gnu, which this gcc already
# searches), plus VMM_ARM64_SYSROOT for what is not co-installable (libfdt,
# scripts/arm64-sysroot.sh).  No CMAKE_SYSROOT: the multiarch libraries live
# in the host's own root.  Tests run under qemu-aarch64-static.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
# find_library() then looks in lib/aarch64-linux-gnu under each prefix,
# never in the host's lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# try_compile() projects and the configure steps after the first see the
# cache, not -D: pass the private directory on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VMM_ARM64_SYSROOT)
if(NOT VMM_ARM64_SYSROOT AND DEFINED ENV{VMM_ARM64_SYSROOT})
  set(VMM_ARM64_SYSROOT "$ENV{VMM_ARM64_SYSROOT}")
endif()
set(VMM_ARM64_SYSROOT "${VMM_ARM64_SYSROOT}" CACHE PATH
    "Unpacked arm64 .debs that cannot be installed (scripts/arm64-sysroot.sh)")
if(VMM_ARM64_SYSROOT)
  # Searched before the system's directories: usr/include, usr/lib/<arch>.
  list(PREPEND CMAKE_PREFIX_PATH "${VMM_ARM64_SYSROOT}/usr")
endif()

# pkg-config: the arm64 .pc files only (never the host's, whose -L would
# name amd64 libraries), arch-neutral ones, and the private directory's.
set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
if(VMM_ARM64_SYSROOT)
  set(ENV{PKG_CONFIG_LIBDIR}
      "$ENV{PKG_CONFIG_LIBDIR}:${VMM_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig")
endif()
set(ENV{PKG_CONFIG_PATH} "")

# Programs (dtc, iasl, sh) are the host's; libraries and headers the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# CTest and add_custom_command run the aarch64 programs through user-mode
# QEMU (qemu-user-static), with or without binfmt_misc.
find_program(VMM_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(VMM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${VMM_QEMU_AARCH64}")
endif()
