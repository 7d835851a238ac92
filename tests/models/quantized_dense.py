#!/usr/bin/env python3
"""Dynamically quantized models as ONNX Runtime's own quantize_dynamic writes them (the usual
int8 transformer on a CPU: DynamicQuantizeLinear, then per dense layer MatMulInteger, Cast, Mul
by the scales' product and the bias Add), from PyTorch exports: a BERT-style encoder (its Q, K, V
projections sharing one DynamicQuantizeLinear, a GELU after the first feed-forward layer) and an
MLP. For each model:
  - `nnfuse compile` makes one MatMulIntegerToFloat per MatMulInteger and leaves none;
  - `nnfuse bench --strict` puts no compute op on a reference kernel;
  - its outputs match the quantized graph's arithmetic as written (onnx's reference evaluator,
    numpy's exact integers: the oracle) within 1e-4 of their largest magnitude, and PyTorch's
    float model within 5e-2; ONNX Runtime's distance to the oracle is printed beside them (on
    CPUs without VNNI its u8s8 kernels saturate pairs of products to int16);
  - `nnfuse verify --nodes` passes (end to end, and every fused node alone on the unfused
    graph's values), and the ONNX Runtime export (`compile --format ort`) passes the
    checker and computes in ONNX Runtime what the quantized model computes there;
  - for the MLP, the model as ONNX Runtime's optimizer saves it (com.microsoft
    DynamicQuantizeMatMul per dense layer) loads, runs on no reference kernel and matches the
    oracle within 1e-4 too. (The encoder's optimized form also holds ONNX Runtime's
    SkipLayerNormalization, FusedMatMul and Gelu, which nnfuse does not import.)

Usage: /usr/bin/python3 quantized_dense.py NNFUSE
"""
import os, sys, tempfile, warnings
import numpy as np
import onnx
import torch, torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ort_export  # noqa: E402
import ort_quantize  # noqa: E402
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Layer(nn.Module):
    """A post-norm BERT layer written as HF's BertLayer exports (separate Q, K, V)."""

    def __init__(s, h=64, heads=4):
        super().__init__()
        s.nh, s.dh = heads, h // heads
        s.q, s.k, s.v, s.o = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        s.ln1, s.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        s.up, s.down = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(s, x):
        b, t, h = x.shape
        split = lambda y: y.view(b, t, s.nh, s.dh).transpose(1, 2)  # noqa: E731
        q, k, v = split(s.q(x)), split(s.k(x)), split(s.v(x))
        a = torch.softmax(q @ k.transpose(-1, -2) / s.dh ** 0.5, dim=-1) @ v
        x = s.ln1(x + s.o(a.transpose(1, 2).reshape(b, t, h)))
        return s.ln2(x + s.down(nn.functional.gelu(s.up(x))))


class Encoder(nn.Module):
    def __init__(s):
        super().__init__()
        s.layers = nn.Sequential(Layer(), Layer())

    def forward(s, x):
        return s.layers(x)


class MLP(nn.Module):
    def __init__(s):
        super().__init__()
        s.net = nn.Sequential(nn.Linear(48, 96), nn.ReLU(), nn.Linear(96, 33), nn.Tanh(),
                              nn.Linear(33, 10))

    def forward(s, x):
        return s.net(x)


CASES = [
    ("bert_encoder", Encoder(), {"x": (1, 16, 64)}, False),
    ("mlp", MLP(), {"x": (5, 48)}, True),
]


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-6))


def check(nnfuse, tmp, name, module, shapes, ort_optimized):
    module = module.eval()
    inputs = {k: torch.randn(*v) for k, v in shapes.items()}
    fp32 = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, fp32, 14)
    path = ort_quantize.quantize_dynamic(fp32, os.path.join(tmp, name + "_int8.onnx"))
    integer_products = [n.op_type for n in onnx.load(path).graph.node].count("MatMulInteger")
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path,
                                        {"MatMulIntegerToFloatFusionPass": integer_products})
    if rep is None:
        return errors
    ops = [n.op_type for n in onnx.load(out).graph.node]
    if ops.count("MatMulIntegerToFloat") != integer_products or "MatMulInteger" in ops:
        errors.append("%d MatMulIntegerToFloat for %d MatMulInteger: %s" %
                      (ops.count("MatMulIntegerToFloat"), integer_products, ops))
    rc, log = vc.run([nnfuse, "bench", path, "--strict", "--runs", "2"] + feeds)
    if rc != 0:
        errors.append("bench --strict failed (%d): %s" % (rc, log.strip()[-400:]))
    arrays = {k: v.numpy() for k, v in inputs.items()}
    oracle = ort_quantize.reference_run(path, arrays)["y"]
    ort_out = ort_export.ort_run(path, arrays)["y"]
    with tempfile.TemporaryDirectory() as res:
        rc, log = vc.run([nnfuse, "run", path, "--output-dir", res] + feeds)
        if rc != 0:
            return errors + ["run failed (%d): %s" % (rc, log.strip())]
        got = np.load(os.path.join(res, "y.npy"))
    to_oracle, to_fp32 = rel(got, oracle), rel(got, want)
    note = (" (from the oracle: nnfuse %.2g, ONNX Runtime %.2g; nnfuse from PyTorch's float "
            "model %.2g)" % (to_oracle, rel(ort_out, oracle), to_fp32))
    if to_oracle > 1e-4:
        errors.append("output differs from the quantized graph's arithmetic: %.3g" % to_oracle)
    if to_fp32 > 5e-2:
        errors.append("output is %.3g from the float model's" % to_fp32)
    rc, log = vc.run([nnfuse, "verify", path, "--nodes"] + feeds)
    if rc != 0 or "all agree" not in log:
        errors.append("verify --nodes failed (%d): %s" % (rc, log.strip()))
    if ort_optimized:
        errors += optimized_errors(nnfuse, tmp, name, path, feeds, oracle)
    return errors + export_errors(nnfuse, tmp, name, path, arrays, ort_out), note


def optimized_errors(nnfuse, tmp, name, path, feeds, oracle):
    """ONNX Runtime's optimized form of the quantized model (its com.microsoft
    DynamicQuantizeMatMul) runs on fast kernels and computes the oracle's output."""
    opt = ort_quantize.ort_optimize(path, os.path.join(tmp, name + "_ort_optimized.onnx"))
    fused = [n.op_type for n in onnx.load(opt).graph.node if n.domain == "com.microsoft"]
    if "DynamicQuantizeMatMul" not in fused:
        return ["ONNX Runtime's optimized form has no DynamicQuantizeMatMul: %s" % fused]
    rc, log = vc.run([nnfuse, "bench", opt, "--strict", "--runs", "2"] + feeds)
    if rc != 0:
        return ["the ORT-optimized form: bench --strict failed (%d): %s" % (rc, log[-400:])]
    with tempfile.TemporaryDirectory() as res:
        rc, log = vc.run([nnfuse, "run", opt, "--output-dir", res] + feeds)
        if rc != 0:
            return ["the ORT-optimized form: run failed (%d): %s" % (rc, log.strip())]
        d = rel(np.load(os.path.join(res, "y.npy")), oracle)
    print("     ORT-optimized form (%d DynamicQuantizeMatMul): %.2g from the oracle" %
          (fused.count("DynamicQuantizeMatMul"), d))
    return [] if d <= 1e-4 else ["the ORT-optimized form is %.3g from the oracle" % d]


def export_errors(nnfuse, tmp, name, path, arrays, ort_out):
    """The ONNX Runtime export passes the checker and gives in ORT what the quantized model gives
    there (its kernels' own arithmetic on both sides)."""
    out = os.path.join(tmp, name + ".ort.onnx")
    rc, log = vc.run([nnfuse, "compile", path, "-o", out, "--format", "ort"])
    if rc != 0:
        return ["compile --format ort failed (%d): %s" % (rc, log.strip())]
    try:
        onnx.checker.check_model(onnx.load(out))
    except Exception as e:  # noqa: BLE001 - any checker failure is a test failure
        return ["the ORT export fails the ONNX checker: %s" % str(e).splitlines()[0]]
    d = rel(ort_export.ort_run(out, arrays)["y"], ort_out)
    print("     ort export: %d nodes, %.2g from the quantized model in ORT" %
          (len(onnx.load(out).graph.node), d))
    return [] if d <= 1e-4 else ["ORT running the export differs from ORT running the model by "
                                 "%.3g" % d]


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "dynamically quantized models"))
