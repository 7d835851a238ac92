#!/usr/bin/env python3
"""Statically quantized models as ONNX Runtime's own quantize_static writes them, in both of its
forms: QDQ (QuantizeLinear/DequantizeLinear around float ops) and QOperator (QLinearConv and
ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool, QGemm, and MaxPool over uint8),
from PyTorch exports: a ResNet-style network (residual Adds, max pooling, a 1x1 downsampling
convolution, global pooling, a dense head) and a branchy one (LeakyReLU, average pooling,
Concat, x * sigmoid(x)). For each model and form:
  - nnfuse loads it, and `nnfuse bench --strict` puts no compute op on a reference kernel;
  - its output is within one output quantization step of the quantized graph's arithmetic as
    written (onnx's reference evaluator on the QDQ form, the oracle: both forms come from one
    calibration, so they state the same arithmetic); ONNX Runtime's distance is printed beside
    (its u8s8 kernels saturate pairs of products to int16 on CPUs without VNNI);
  - `nnfuse verify` passes;
  - in the QDQ form every conv takes the QuantizeLinear/DequantizeLinear pair after it as its
    epilogue (ConvQuantizeFusionPass), and the ONNX Runtime export (`compile --format ort`,
    the pair written out again) passes the checker and gives in ONNX Runtime what the model
    gives there, within one output step.

Usage: /usr/bin/python3 quantized_static.py NNFUSE
"""
import os, sys, tempfile, warnings
import numpy as np
import onnx
import onnx.numpy_helper
import torch, torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ort_export  # noqa: E402
import ort_quantize  # noqa: E402
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.c1 = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU())
        s.c2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout))
        s.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout))
                  if stride != 1 or cin != cout else nn.Identity())

    def forward(s, x):
        return torch.relu(s.c2(s.c1(x)) + s.down(x))


class ResNetLike(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(),
                               nn.MaxPool2d(2))
        s.blocks = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2))
        s.head = nn.Linear(32, 10)

    def forward(s, x):
        return s.head(torch.flatten(nn.functional.adaptive_avg_pool2d(s.blocks(s.stem(x)), 1), 1))


class Branchy(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Conv2d(3, 16, 3, 1, 1)
        s.a = nn.Conv2d(16, 8, 1)
        s.b = nn.Conv2d(16, 8, 1)
        s.head = nn.Linear(16, 5)

    def forward(s, x):
        x = nn.functional.leaky_relu(s.stem(x), 0.1)
        y = torch.cat([s.a(x), s.b(nn.functional.avg_pool2d(x, 3, 1, 1))], 1)
        y = y * torch.sigmoid(y)
        return s.head(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


CASES = [
    ("resnet_like", ResNetLike(), {"x": (1, 3, 24, 24)}),
    ("branchy", Branchy(), {"x": (1, 3, 16, 16)}),
]


def output_step(path):
    """The scale of the DequantizeLinear that makes the graph's output: one quantization step."""
    m = onnx.load(path)
    init = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear":
            return float(np.max(init[n.input[1]]))
    raise RuntimeError("%s: the output is not made by a DequantizeLinear" % path)


def check(nnfuse, tmp, name, module, shapes):
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    module = module.eval()
    inputs = {k: torch.randn(*v) for k, v in shapes.items()}
    arrays = {k: v.numpy() for k, v in inputs.items()}
    fp32 = os.path.join(tmp, name + ".onnx")
    vc.export(module, inputs, fp32, 13)
    feeds = vc.save_feeds(tmp, name, arrays)
    errors, notes, oracle = [], [], None
    for form in ("qdq", "qoperator"):
        path = ort_quantize.quantize_static(fp32, os.path.join(tmp, "%s_%s.onnx" % (name, form)),
                                            form)
        ops = [n.op_type for n in onnx.load(path).graph.node]
        if form == "qdq":
            oracle = ort_quantize.reference_run(path, arrays)["y"]
            step = output_step(path)
        elif "QLinearConv" not in ops:
            errors.append("%s: the QOperator form has no QLinearConv: %s" % (form, ops))
        rc, log = vc.run([nnfuse, "bench", path, "--strict", "--runs", "2"] + feeds)
        if rc != 0:
            errors.append("%s: bench --strict failed (%d): %s" % (form, rc, log.strip()[-400:]))
            continue
        with tempfile.TemporaryDirectory() as res:
            rc, log = vc.run([nnfuse, "run", path, "--output-dir", res] + feeds)
            if rc != 0:
                errors.append("%s: run failed (%d): %s" % (form, rc, log.strip()))
                continue
            got = np.load(os.path.join(res, "y.npy"))
        steps = float(np.abs(got - oracle).max()) / step
        ort_steps = float(np.abs(ort_export.ort_run(path, arrays)["y"] - oracle).max()) / step
        notes.append("%s %.2g steps from the oracle (ONNX Runtime %.2g)" % (form, steps,
                                                                           ort_steps))
        if steps > 1.0001:
            errors.append("%s: output is %.3g quantization steps (%.3g) from the quantized "
                          "graph's arithmetic" % (form, steps, step))
        rc, log = vc.run([nnfuse, "verify", path] + feeds)
        if rc != 0:
            errors.append("%s: verify failed (%d): %s" % (form, rc, log.strip()))
        if form == "qdq":
            errors += qdq_errors(nnfuse, tmp, name, path, ops.count("Conv"), arrays, step)
    return errors, " (" + "; ".join(notes) + ")"


def qdq_errors(nnfuse, tmp, name, path, convs, arrays, step):
    """Each conv of the QDQ form takes its pair; the ONNX Runtime export runs in ORT."""
    out, rep, errors = vc.compile_model(nnfuse, tmp, name + "_qdq", path,
                                        {"ConvQuantizeFusionPass": convs})
    if rep is None:
        return errors
    ort_path = os.path.join(tmp, name + "_qdq.ort.onnx")
    rc, log = vc.run([nnfuse, "compile", path, "-o", ort_path, "--format", "ort"])
    if rc != 0:
        return errors + ["compile --format ort failed (%d): %s" % (rc, log.strip())]
    try:
        onnx.checker.check_model(onnx.load(ort_path))
    except Exception as e:  # noqa: BLE001 - any checker failure is a test failure
        return errors + ["the ORT export fails the ONNX checker: %s" % str(e).splitlines()[0]]
    d = float(np.abs(ort_export.ort_run(ort_path, arrays)["y"] -
                     ort_export.ort_run(path, arrays)["y"]).max()) / step
    print("     ort export: %.2g output steps from the QDQ model in ORT" % d)
    return errors + ([] if d <= 1.0001 else ["ORT running the export is %.3g steps from ORT "
                                             "running the model" % d])


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "statically quantized models"))
