#!/usr/bin/env bash
# The main job: installs what nnfuse needs, builds it, then on the bundled model
# (models/tiny_resnet.onnx) shows what it contains, compiles it with fusion (what fused, what
# did not and why), runs it and checks the outputs against PyTorch's, verifies fused against
# unfused, and times it with and without fusion, alternating. Then the same for automatic
# fusion on models/tiny_mlp.onnx: the regions it turned into generated kernels (their source
# written out), checked against PyTorch and the unfused graph, timed with it on and off.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
TARGET=nnfuse ./scripts/build.sh
NNFUSE=build/nnfuse
MODEL=models/tiny_resnet.onnx
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# compare_with_pytorch GOT.npy WANT.npy: the largest error relative to the largest magnitude.
compare_with_pytorch() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got - ref).max() / np.abs(ref).max())
print("compared with PyTorch: max error %.2e of the largest magnitude" % err)
sys.exit(0 if err <= 1e-4 else 1)
PY
}

# alternate MODEL LABEL_A ARGS_A... -- LABEL_B ARGS_B...: nnfuse bench under both, A B A B.
alternate() {
  /usr/bin/python3 - "$NNFUSE" "$@" <<'PY'
import json, statistics, subprocess, sys
nnfuse, model, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
sep = rest.index("--")
(label_a, *args_a), (label_b, *args_b) = rest[:sep], rest[sep + 1:]
def bench(extra):
    out = subprocess.run([nnfuse, "bench", model, "--runs", "200", "--json"] + extra,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])
a, b = [], []
for _ in range(5):
    a.append(bench(args_a))
    b.append(bench(args_b))
ma = statistics.median(r["median_ms"] for r in a)
mb = statistics.median(r["median_ms"] for r in b)
width = max(len(label_a), len(label_b)) + 1
print("%-*s %.3f ms, %d kernels per inference" % (width, label_a + ":", ma, a[0]["kernels"]))
print("%-*s %.3f ms, %d kernels per inference" % (width, label_b + ":", mb, b[0]["kernels"]))
print("%s / %s latency: %.2f" % (label_b, label_a, mb / ma))
PY
}

echo
echo "== nnfuse info $MODEL"
$NNFUSE info $MODEL
echo
echo "== nnfuse compile $MODEL (fusion report: fusion_result.json)"
$NNFUSE compile $MODEL -o "$OUT/tiny_resnet.fused.onnx" --report "$OUT/fusion_result.json"
echo
echo "== nnfuse run (fused), compared with PyTorch"
$NNFUSE run $MODEL --input input=models/tiny_resnet_input.npy --output-dir "$OUT/out" --runs 20
compare_with_pytorch "$OUT/out/logits.npy" models/tiny_resnet_logits.npy
echo
echo "== nnfuse verify (fused against unfused)"
$NNFUSE verify $MODEL --bisect
echo
echo "== fused against unfused, alternating 5 rounds of 200 runs"
alternate "$MODEL" unfused --no-fusion -- fused

MLP=models/tiny_mlp.onnx
echo
echo "== automatic fusion: nnfuse compile $MLP --dump-kernels (Mish, a per-feature Swish and a"
echo "   written-out softmax between Linear layers: no hand-written pattern covers them)"
$NNFUSE compile $MLP -o "$OUT/tiny_mlp.fused.onnx" --report "$OUT/mlp_result.json" \
  --dump-kernels "$OUT/kernels" | grep -E "nodes ->|GeluFusionPass|AutoFusionPass|time:"
/usr/bin/python3 - "$OUT/mlp_result.json" <<'PY'
import json, sys
for f in json.load(open(sys.argv[1]))["fused_nodes"]:
    if f["pass"] == "AutoFusionPass":
        print("  generated kernel %-8s <- %s" % (f["node"], ", ".join(f["fused_from"])))
PY
echo "  sources: $(ls "$OUT/kernels" | tr '\n' ' ')"
$NNFUSE run $MLP --input x=models/tiny_mlp_input.npy --output-dir "$OUT/mlp_out" --runs 20
compare_with_pytorch "$OUT/mlp_out/probs.npy" models/tiny_mlp_probs.npy
$NNFUSE verify $MLP
echo '{"Switch":{"GraphFusion":{"AutoFusionPass":"off"}}}' > "$OUT/noauto.json"
echo
echo "== automatic fusion on against off, alternating 5 rounds of 200 runs"
alternate $MLP "automatic fusion off" --fusion_switch_file "$OUT/noauto.json" -- \
  "automatic fusion on"
