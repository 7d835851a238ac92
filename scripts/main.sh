#!/usr/bin/env bash
# The main job: installs what nnfuse needs, builds it, and runs the bundled model
# (models/tiny_resnet.onnx), printing what it contains, its outputs and its timing, and
# checking the outputs against PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
NNFUSE=build/nnfuse
echo
echo "== nnfuse info models/tiny_resnet.onnx"
$NNFUSE info models/tiny_resnet.onnx
echo
echo "== nnfuse run models/tiny_resnet.onnx"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
$NNFUSE run models/tiny_resnet.onnx --input input=models/tiny_resnet_input.npy \
  --output-dir "$OUT" --runs 20
/usr/bin/python3 - "$OUT/logits.npy" models/tiny_resnet_logits.npy <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got - ref).max() / np.abs(ref).max())
print("compared with PyTorch: max error %.2e of the largest magnitude" % err)
sys.exit(0 if err <= 1e-4 else 1)
PY
