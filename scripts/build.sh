#!/usr/bin/env bash
# Configures and builds nnfuse into BUILD_DIR (default build/); TARGET limits the build to those
# targets, separated by spaces (default: everything, tests included). Extra arguments go to
# CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"${JOBS:-2}" ${TARGET:+--target $TARGET}
