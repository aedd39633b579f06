#!/bin/sh
# vit.pc and CMakeLists.txt as a project that vendors vit.h uses them: the
# three files copied into third_party/vit of a fresh folder, then
# examples/01_sdpa.c built through pkg-config and through CMake's
# add_subdirectory + vit::vit, each run and compared with the Makefile's
# build; both report vit.h's own version. Neither asks for OpenMP (vit.h
# has its own thread pool) and both link threads; CMake without a build
# type compiles optimised (Release), not at its default -O0.
# Usage: tests/package.sh WORKDIR   (from the repository root, after `make examples`)
set -eu
W=$1
rm -rf "$W" && mkdir -p "$W/third_party/vit" "$W/app"
cp vit.h vit.pc CMakeLists.txt "$W/third_party/vit/"
cp examples/01_sdpa.c "$W/app/main.c"
want=$(build/examples/01_sdpa)
version=$(sed -n 's/^#define VIT_VERSION_STRING "\(.*\)"/\1/p' vit.h)
cd "$W"

# pkg-config
export PKG_CONFIG_PATH="$PWD/third_party/vit"
[ "$(pkg-config --modversion vit)" = "$version" ] || { echo "vit.pc says $(pkg-config --modversion vit), vit.h $version"; exit 1; }
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -O2 -mavx2 -mfma $(pkg-config --cflags vit) app/main.c -o sdpa-pc $(pkg-config --libs vit)
pc_flags="$(pkg-config --cflags --libs vit)"
case " $pc_flags " in *openmp*) echo "vit.pc asks for OpenMP: $pc_flags"; exit 1 ;; esac
case " $pc_flags " in *" -pthread "*) ;; *) echo "vit.pc does not link threads (-pthread): $pc_flags"; exit 1 ;; esac
grep -e -fopenmp -e OpenMP:: third_party/vit/vit.pc third_party/vit/CMakeLists.txt && { echo "vit.pc or CMakeLists.txt asks for OpenMP"; exit 1; }
[ "$(./sdpa-pc)" = "$want" ] || { echo "pkg-config build: output differs"; exit 1; }

# CMake: add_subdirectory, vit::vit, threads, no OpenMP
cat > app/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(app C)
add_subdirectory(../third_party/vit vit)
get_directory_property(v DIRECTORY ../third_party/vit DEFINITION vit_h_VERSION)
message(STATUS "vit.h version ${v}")
get_target_property(vit_libs vit::vit INTERFACE_LINK_LIBRARIES)
message(STATUS "vit::vit links ${vit_libs}")
add_executable(sdpa main.c)
option(APP_WERROR "warnings are errors" ON)
target_compile_options(sdpa PRIVATE -mavx2 -mfma -Wall -Wextra $<$<BOOL:${APP_WERROR}>:-Werror>)
target_link_libraries(sdpa PRIVATE vit::vit)
CMAKE
cmake -S app -B cmake-build -DCMAKE_BUILD_TYPE=RelWithDebInfo > cmake.txt  # -O2: GCC 12 at -O3 reports false maybe-uninitialized in vit.h
grep -qF "vit.h version $version" cmake.txt || { echo "CMake did not read version $version from vit.h:"; cat cmake.txt; exit 1; }
cmake --build cmake-build --verbose > build.txt 2>&1 || { cat build.txt; exit 1; }
grep -- "openmp" build.txt && { echo "vit::vit asks for OpenMP"; exit 1; }
grep -q "vit::vit links .*Threads::Threads" cmake.txt || { echo "vit::vit does not link Threads::Threads:"; cat cmake.txt; exit 1; }
[ "$(./cmake-build/sdpa)" = "$want" ] || { echo "CMake build: output differs"; exit 1; }
# CMake without CMAKE_BUILD_TYPE: Release, -O3 on the compile line (no
# -Werror here: GCC 12 at -O3 reports false maybe-uninitialized in vit.h).
cmake -S app -B cmake-default -DAPP_WERROR=OFF > cmake-default.txt || { cat cmake-default.txt; exit 1; }
grep -qx "CMAKE_BUILD_TYPE:STRING=Release" cmake-default/CMakeCache.txt ||
  { echo "CMake without a build type: not Release"; grep CMAKE_BUILD_TYPE cmake-default/CMakeCache.txt; exit 1; }
cmake --build cmake-default --verbose > build-default.txt 2>&1 || { cat build-default.txt; exit 1; }
grep -- "main.c" build-default.txt | grep -q -- "-O3" || { echo "CMake without a build type: main.c not built with -O3:"; cat build-default.txt; exit 1; }
[ "$(./cmake-default/sdpa)" = "$want" ] || { echo "CMake default build: output differs"; exit 1; }
echo "pkg-config and CMake builds of 01_sdpa: same output as make's, version $version"
