#!/usr/bin/env bash
# CI: cross-compile tern_gguf, tern_kernels and their tests for aarch64 and
# run them under qemu-user, so the NEON kernel sets (neon-sdot, neon-tbl)
# are checked against scalar on an x86 machine: once on qemu's default CPU
# ("max", has dotprod: both sets run), once on a Cortex-A53 (no dotprod).
# Debian packages only; about 2 minutes on 2 cores from a clean build
# directory.
#   .ci/arm-kernels.sh [build-dir]        (default: build-arm)
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
build=${1:-build-arm}
jobs=$(nproc)

if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
# googletest is Debian's source package (/usr/src/googletest): libgtest-dev
# holds host-architecture libraries only, so the cross build compiles it.
$sudo apt-get install -y -q --no-install-recommends \
  cmake make g++-aarch64-linux-gnu qemu-user googletest

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DTERN_KERNELS_ONLY=ON -DTERN_BUILD_BENCH=OFF \
  -DTERN_GTEST_SOURCE=/usr/src/googletest/googletest
cmake --build "$build" -j"$jobs"

# The Dispatch.Environment* death tests re-execute the test binary, which
# the kernel can run only if qemu is registered with binfmt_misc (often not
# possible in containers). Without it they are skipped here; they still run
# in the native build.
exclude=()
if [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] &&
   grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
  export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
else
  echo "note: no binfmt_misc entry for qemu-aarch64; skipping Dispatch.Environment* (re-exec) tests"
  exclude=(-E '^Dispatch\.Environment')
fi
ctest --test-dir "$build" --output-on-failure -j"$jobs" --no-tests=error "${exclude[@]}"

# Again on an ARMv8.0 core without dotprod: neon-sdot must report itself
# unavailable (its tests skip), neon-tbl and dispatch must still work, and
# nothing outside neon_sdot.cpp may use a dotprod instruction.
echo "== QEMU_CPU=cortex-a53 (no dotprod) =="
QEMU_CPU=cortex-a53 ctest --test-dir "$build" --output-on-failure -j"$jobs" --no-tests=error \
  "${exclude[@]}"
