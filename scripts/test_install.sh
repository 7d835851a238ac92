#!/usr/bin/env bash
# Installs the built tree into a fresh prefix and builds the C++ example against the installed
# package only, once with find_package(nnfuse) and once with pkg-config, then runs both on the
# bundled model (compile, report, one run, eight concurrent runs that must match it) and runs
# the custom-pattern example; then imports the installed Python package, runs the bundled model
# through it, and runs the Python custom-pattern example.
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
# User fusion patterns registered from C++ fuse, are reported under their names and verify.
"$WORK/example/custom_pattern" models/tiny_resnet.onnx models/tiny_mlp.onnx
# shellcheck disable=SC2046
g++ -O1 examples/cpp/compile_and_run.cc -o "$WORK/compile_and_run_pc" \
  $(PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" pkg-config --cflags --libs nnfuse)
"$WORK/compile_and_run_pc" models/tiny_mlp.onnx
# The Python package, from the installed prefix alone.
PYDIR=$(ls -d "$WORK"/prefix/lib/python3*/dist-packages)
(cd "$WORK" && PYTHONPATH="$PYDIR" /usr/bin/python3 -c "
import nnfuse, numpy as np, sys
m = nnfuse.compile(sys.argv[1])
y = m.run({'input': np.load(sys.argv[2])})['logits']
want = np.load(sys.argv[3])
err = float(np.abs(y - want).max() / np.abs(want).max())
assert err <= 1e-4 and m.verify()['pass'], err
print('python: nnfuse from', nnfuse.__file__, '- tiny_resnet within', err, 'of PyTorch')
" "$OLDPWD/models/tiny_resnet.onnx" "$OLDPWD/models/tiny_resnet_input.npy" \
  "$OLDPWD/models/tiny_resnet_logits.npy")
# And from Python.
PYTHONPATH="$PYDIR" /usr/bin/python3 examples/python/custom_pattern.py models/tiny_resnet.onnx \
  models/tiny_mlp.onnx
echo "install check: passed"
