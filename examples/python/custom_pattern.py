#!/usr/bin/env python3
"""User fusion patterns from Python: the seed's Conv -> BatchNormalization -> Relu and a Mish,
each computed in numpy. Compiling a model fuses every match; the report lists each fused node
under the pattern's name; verify compares the fused model with the unfused one.

    python3 examples/python/custom_pattern.py models/tiny_resnet.onnx models/tiny_mlp.onnx
"""
import sys

import numpy as np

import nnfuse


@nnfuse.fusion_pattern(ops=["Conv", "BatchNormalization", "Relu"], name="PyConvBnRelu")
class ConvBnRelu:
    """relu(batchnorm(conv(x, w) + b)) for 2-D NCHW convolutions of group 1."""

    def infer_shape(self, shapes, ctx):
        (n, _, h, w), (m, _, kh, kw) = shapes[0], shapes[1]
        a = ctx["attrs"][0]
        if a.get("group", 1) != 1:
            raise ValueError("only group 1")
        s, p, d = a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0]), a.get("dilations", [1, 1])
        out = [(size + p[i] + p[i + 2] - d[i] * (k - 1) - 1) // s[i] + 1
               for i, (size, k) in enumerate([(h, kh), (w, kw)])]
        return [(n, m, *out)]

    def compute(self, inputs, ctx):
        src = {where: k for k, where in enumerate(ctx["inputs"])}  # (node, input) -> index
        x, w = inputs[0], inputs[1]
        bias = inputs[src[(0, 2)]] if (0, 2) in src else np.zeros(w.shape[0], np.float32)
        scale, shift, mean, var = (inputs[src[(1, i)]] for i in range(1, 5))
        a = ctx["attrs"][0]
        s, p, d = a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0]), a.get("dilations", [1, 1])
        xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
        n, c, h, wd = xp.shape
        m, _, kh, kw = w.shape
        oh = (h - d[0] * (kh - 1) - 1) // s[0] + 1
        ow = (wd - d[1] * (kw - 1) - 1) // s[1] + 1
        y = np.zeros((n, m, oh, ow), np.float64)
        for u in range(kh):
            for v in range(kw):
                patch = xp[:, :, u * d[0]:u * d[0] + s[0] * oh:s[0],
                           v * d[1]:v * d[1] + s[1] * ow:s[1]]
                y += np.einsum("nchw,mc->nmhw", patch, w[:, :, u, v])
        y += bias.reshape(1, -1, 1, 1)
        eps = ctx["attrs"][1].get("epsilon", 1e-5)
        y = (y - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + eps)
        y = y * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)
        return [np.maximum(y, 0).astype(np.float32)]


@nnfuse.fusion_pattern(ops=["Softplus", "Tanh", "Mul"], name="PyMish")
class Mish:
    def infer_shape(self, shapes):
        return [shapes[0]]

    def compute(self, inputs):
        x = inputs[0].astype(np.float64)
        return [(x * np.tanh(np.log1p(np.exp(x)))).astype(np.float32)]


def check(path, pattern):
    m = nnfuse.compile(path)
    fused = [f for f in m.report["fused_nodes"] if f["pass"] == pattern]
    v = m.verify()
    print("%s: %s fused %d time(s); %d nodes -> %d; verify %s (relative error %.3g)"
          % (path, pattern, len(fused), m.num_imported_nodes, m.num_nodes,
             "passed" if v["pass"] else "FAILED", v["outputs"][0]["relative_error"]))
    return bool(fused) and v["pass"]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    ok = check(sys.argv[1], "PyConvBnRelu") and check(sys.argv[2], "PyMish")
    sys.exit(0 if ok else 1)
