#!/usr/bin/env bash
# Installs the built tree into a fresh prefix and builds the C++ example against the installed
# package only, once with find_package(nnfuse) and once with pkg-config, then runs both on the
# bundled model (compile, report, one run, eight concurrent runs that must match it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
WORK="$PWD/$BUILD_DIR/install-check"
rm -rf "$WORK"
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >/dev/null
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
cmake -S examples/cpp -B "$WORK/example" "${GEN[@]}" -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/example" -j"${JOBS:-2}" >/dev/null
"$WORK/example/compile_and_run" models/tiny_resnet.onnx "$WORK/tiny_resnet.fused.onnx"
# shellcheck disable=SC2046
g++ -O1 examples/cpp/compile_and_run.cc -o "$WORK/compile_and_run_pc" \
  $(PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" pkg-config --cflags --libs nnfuse)
"$WORK/compile_and_run_pc" models/tiny_mlp.onnx
echo "install check: passed"
