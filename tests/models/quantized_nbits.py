#!/usr/bin/env python3
"""Weight-only quantized models as ONNX Runtime's MatMulNBitsQuantizer writes them (its
com.microsoft MatMulNBits: int4 blocks of 32 along K with scales, symmetric or with zero
points), from PyTorch exports: an MLP whose first layer's K (100) is not a multiple of the block
and a layer with a bias, run with few rows (a decode step: the per-column dot products) and many
(a prefill: dequantized panels and sgemm). For each model and form:
  - nnfuse loads it and `nnfuse bench --strict` puts no compute op on a reference kernel;
  - its output matches ONNX Runtime's on the same file (level disabled, float32 arithmetic)
    within 1e-4 of the largest magnitude, and PyTorch's float model within 0.2 (4 bits of random
    weights in blocks of 32 move these layers' outputs by some 9%; ONNX Runtime's as much);
  - `nnfuse verify` passes, and the ONNX Runtime export (`compile --format ort`, MatMulNBits
    again) gives in ONNX Runtime what the model gives there;
  - a block size that is not a power of two, and a B of the wrong shape, are refused at load
    with an error naming the node.

Usage: /usr/bin/python3 quantized_nbits.py NNFUSE
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

class MLP(nn.Module):
    def __init__(s):
        super().__init__()
        s.up = nn.Linear(100, 256, bias=False)
        s.down = nn.Linear(256, 64)

    def forward(s, x):
        return s.down(nn.functional.gelu(s.up(x)))


CASES = [
    ("mlp_decode", MLP(), {"x": (1, 1, 100)}),
    ("mlp_prefill", MLP(), {"x": (2, 20, 100)}),
]


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-6))


def bad_input_errors(nnfuse, tmp, path):
    """A non-power-of-two block size and a B of the wrong shape: refused, naming the node."""
    errors = []
    for what in ("block_size", "B"):
        m = onnx.load(path)
        node = next(n for n in m.graph.node if n.op_type == "MatMulNBits")
        if what == "block_size":
            for a in node.attribute:
                if a.name == "block_size":
                    a.i = 24
        else:
            init = next(i for i in m.graph.initializer if i.name == node.input[1])
            init.dims[1] += 1
            init.raw_data += bytes(init.dims[0] * init.dims[2])
        bad = os.path.join(tmp, "bad_%s.onnx" % what)
        onnx.save(m, bad)
        rc, log = vc.run([nnfuse, "info", bad])
        if rc == 0 or "MatMulNBits node '%s'" % node.name not in log:
            errors.append("a bad %s was not refused naming the node (%d): %s" %
                          (what, rc, log.strip()[-300:]))
    return errors


def check(nnfuse, tmp, name, module, shapes):
    module = module.eval()
    inputs = {k: torch.randn(*v) for k, v in shapes.items()}
    arrays = {k: v.numpy() for k, v in inputs.items()}
    fp32 = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, fp32, 14)
    feeds = vc.save_feeds(tmp, name, arrays)
    errors, notes = [], []
    for form in ("symmetric", "asymmetric"):
        path = ort_quantize.quantize_nbits(fp32, os.path.join(tmp, "%s_%s.onnx" % (name, form)),
                                           form == "symmetric")
        nodes = [n.op_type for n in onnx.load(path).graph.node]
        if nodes.count("MatMulNBits") != 2:
            errors.append("%s: the quantizer wrote %s" % (form, nodes))
            continue
        rc, log = vc.run([nnfuse, "bench", path, "--strict", "--runs", "2"] + feeds)
        if rc != 0 or "cpu.matmul_nbits=2" not in log:
            errors.append("%s: bench --strict (%d): %s" % (form, rc, log.strip()[-400:]))
            continue
        with tempfile.TemporaryDirectory() as res:
            rc, log = vc.run([nnfuse, "run", path, "--output-dir", res] + feeds)
            if rc != 0:
                errors.append("%s: run failed (%d): %s" % (form, rc, log.strip()))
                continue
            got = np.load(os.path.join(res, "y.npy"))
        ort_out = ort_export.ort_run(path, arrays, "disabled")["y"]
        d, f = rel(got, ort_out), rel(got, want)
        notes.append("%s: %.2g from ONNX Runtime, %.2g from the float model" % (form, d, f))
        if d > 1e-4:
            errors.append("%s: output is %.3g from ONNX Runtime's" % (form, d))
        if f > 0.2:
            errors.append("%s: output is %.3g from the float model's" % (form, f))
        rc, log = vc.run([nnfuse, "verify", path] + feeds)
        if rc != 0:
            errors.append("%s: verify failed (%d): %s" % (form, rc, log.strip()))
        out = os.path.join(tmp, "%s_%s.ort.onnx" % (name, form))
        rc, log = vc.run([nnfuse, "compile", path, "-o", out, "--format", "ort"])
        if rc != 0:
            errors.append("%s: compile --format ort failed (%d): %s" % (form, rc, log.strip()))
        else:
            e = rel(ort_export.ort_run(out, arrays, "disabled")["y"], ort_out)
            if e > 1e-5:
                errors.append("%s: ORT running the export is %.3g from the model" % (form, e))
        if form == "asymmetric":
            errors += bad_input_errors(nnfuse, tmp, path)
    return errors, " (" + "; ".join(notes) + ")"


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "weight-only quantized models"))
