#!/usr/bin/env bash
# The main job: installs what nnfuse needs, builds it, then on the bundled model
# (models/tiny_resnet.onnx) shows what it contains, compiles it with fusion (what fused, what
# did not and why), runs it and checks the outputs against PyTorch's, verifies fused against
# unfused, and times it with and without fusion, alternating.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
TARGET=nnfuse ./scripts/build.sh
NNFUSE=build/nnfuse
MODEL=models/tiny_resnet.onnx
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo
echo "== nnfuse info $MODEL"
$NNFUSE info $MODEL
echo
echo "== nnfuse compile $MODEL (fusion report: fusion_result.json)"
$NNFUSE compile $MODEL -o "$OUT/tiny_resnet.fused.onnx" --report "$OUT/fusion_result.json"
echo
echo "== nnfuse run (fused), compared with PyTorch"
$NNFUSE run $MODEL --input input=models/tiny_resnet_input.npy --output-dir "$OUT/out" --runs 20
/usr/bin/python3 - "$OUT/out/logits.npy" models/tiny_resnet_logits.npy <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got - ref).max() / np.abs(ref).max())
print("compared with PyTorch: max error %.2e of the largest magnitude" % err)
sys.exit(0 if err <= 1e-4 else 1)
PY
echo
echo "== nnfuse verify (fused against unfused)"
$NNFUSE verify $MODEL --bisect
echo
echo "== fused against unfused, alternating 5 rounds of 200 runs"
/usr/bin/python3 - "$NNFUSE" "$MODEL" <<'PY'
import json, statistics, subprocess, sys
nnfuse, model = sys.argv[1], sys.argv[2]
def bench(extra):
    out = subprocess.run([nnfuse, "bench", model, "--runs", "200", "--json"] + extra,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])
fused, plain = [], []
for _ in range(5):
    plain.append(bench(["--no-fusion"]))
    fused.append(bench([]))
f = statistics.median(r["median_ms"] for r in fused)
p = statistics.median(r["median_ms"] for r in plain)
print("unfused: %.3f ms, %d kernels per inference" % (p, plain[0]["kernels"]))
print("fused:   %.3f ms, %d kernels per inference" % (f, fused[0]["kernels"]))
print("fused / unfused latency: %.2f" % (f / p))
PY
