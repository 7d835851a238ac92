#!/usr/bin/env python3
"""Models outside the convnet/transformer mainstream, exported from PyTorch in the test run:
a 2-layer bidirectional LSTM tagger, a GRU and a vanilla RNN (recurrent ops with their
Slice/Concat plumbing), a model with Einsum and TopK, a QDQ-quantized convnet (fake
quantization of activations per tensor and of weights per output channel, exported as
QuantizeLinear / DequantizeLinear pairs) and a QDQ-quantized BERT-style encoder layer, a
scripted model with a data-dependent Loop and an If, and a convnet stored in float16 (its export
with every float tensor, input and output converted to float16). For each: `nnfuse compile` writes a checker-valid model, the compiled model gives
PyTorch's outputs within 1e-4 of their largest magnitude (float16: within 1e-3, PyTorch run on
the float16-rounded weights and input, the output then rounded once more), `nnfuse verify`
(fused against unfused) passes, and the ONNX Runtime export runs in ORT.

Usage: /usr/bin/python3 load_variants.py NNFUSE
"""
import os, sys, warnings
import numpy as np
import onnx
from onnx import numpy_helper
import torch, torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Tagger(nn.Module):
    """Embedding, a 2-layer bidirectional LSTM, a per-token Linear."""

    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(100, 32)
        s.rnn = nn.LSTM(32, 48, num_layers=2, bidirectional=True, batch_first=True)
        s.out = nn.Linear(96, 10)

    def forward(s, ids):
        return s.out(s.rnn(s.emb(ids))[0])


class GruEncoder(nn.Module):
    """A GRU with an initial state given as an input; the last state projected."""

    def __init__(s):
        super().__init__()
        s.rnn = nn.GRU(16, 24, batch_first=True)
        s.out = nn.Linear(24, 4)

    def forward(s, x, h0):
        return s.out(s.rnn(x, h0)[1][0])


class EinsumTopK(nn.Module):
    """A bilinear score through einsum, the top 3 per row: their values and indices."""

    def __init__(s):
        super().__init__()
        s.w = nn.Parameter(torch.randn(8, 8) / 3)

    def forward(s, x):
        y = torch.einsum("bij,jk->bik", x, s.w)
        scores = torch.einsum("bik,bjk->bij", y, x)
        values, idx = torch.topk(scores, 3, dim=-1)
        return torch.cat([values, idx.to(values.dtype)], -1)


class QdqNet(nn.Module):
    """Conv - ReLU - Conv with fake-quantized activations (uint8, per tensor) and weights
    (int8, per output channel), as quantization-aware training exports them."""

    def __init__(s):
        super().__init__()
        s.c1, s.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 8, 3, padding=1)

    @staticmethod
    def act(x, scale):
        return torch.fake_quantize_per_tensor_affine(x, scale, 128, 0, 255)

    @staticmethod
    def weight(w):
        scale = w.detach().abs().amax(dim=tuple(range(1, w.dim()))) / 127
        zero = torch.zeros(w.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zero, 0, -128, 127)

    def forward(s, x):
        h = nn.functional.conv2d(s.act(x, 0.02), s.weight(s.c1.weight), s.c1.bias, padding=1)
        h = s.act(torch.relu(h), 0.05)
        return nn.functional.conv2d(h, s.weight(s.c2.weight), s.c2.bias, padding=1)


class QdqEncoder(nn.Module):
    """A BERT-style encoder layer (self-attention, LayerNorms, a GELU FFN) whose Linear layers
    read fake-quantized activations (uint8, per tensor) and weights (int8, per output channel),
    exported as QuantizeLinear / DequantizeLinear pairs."""

    def __init__(s, d=64, heads=4):
        super().__init__()
        s.h = heads
        s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        s.f1, s.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def lin(s, layer, x, scale):
        return nn.functional.linear(QdqNet.act(x, scale), QdqNet.weight(layer.weight), layer.bias)

    def forward(s, x):
        b, n, d = x.shape
        q, k, v = s.lin(s.qkv, x, 0.05).reshape(b, n, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-1, -2) / (d // s.h) ** 0.5).softmax(-1)
        x = s.n1(x + s.lin(s.o, (a @ v).transpose(1, 2).reshape(b, n, d), 0.05))
        return s.n2(x + s.lin(s.f2, nn.functional.gelu(s.lin(s.f1, x, 0.05)), 0.05))


class RnnNet(nn.Module):
    """A 2-layer vanilla RNN (tanh), the last step projected."""

    def __init__(s):
        super().__init__()
        s.rnn = nn.RNN(12, 20, num_layers=2, batch_first=True)
        s.out = nn.Linear(20, 5)

    def forward(s, x):
        return s.out(s.rnn(x)[0][:, -1])


class Steps(nn.Module):
    """A data-dependent number of refinement steps (a Loop over a captured Linear) and a
    branch on the result (an If)."""

    def __init__(s):
        super().__init__()
        s.lin = nn.Linear(8, 8)

    def forward(s, x, n):
        y = x
        for _ in range(int(n)):
            y = torch.tanh(s.lin(y)) + y
        if bool(y.sum() > 0):
            out = y * 2.0
        else:
            out = y - 1.0
        return out


class HalfConvNet(nn.Module):
    """Conv - BN - ReLU twice, a pool and a classifier: stored in float16 by to_float16."""

    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32),
                            nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(s, x):
        return s.f(x)


def to_float16(path):
    """Rewrites the ONNX model at `path` as a float16 model: float initializers, Constant
    values, Casts to float, the graph inputs and outputs."""
    m = onnx.load(path)
    g = m.graph
    F, H = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
    for i, t in enumerate(g.initializer):
        if t.data_type == F:
            g.initializer[i].CopyFrom(
                numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == F:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16)))
            if n.op_type == "Cast" and a.name == "to" and a.i == F:
                a.i = H
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == F:
            v.type.tensor_type.elem_type = H
    del g.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, path)


CASES = [
    ("bilstm_tagger", Tagger(), {"ids": torch.randint(0, 100, (2, 12))}, 14),
    ("gru_encoder", GruEncoder(), {"x": torch.randn(3, 7, 16), "h0": torch.randn(1, 3, 24)}, 14),
    ("einsum_topk", EinsumTopK(), {"x": torch.randn(2, 5, 8)}, 13),
    ("qdq_convnet", QdqNet(), {"x": torch.randn(1, 3, 16, 16)}, 13),
    ("qdq_encoder", QdqEncoder(), {"x": torch.randn(2, 16, 64)}, 13),
    ("rnn_tanh", RnnNet(), {"x": torch.randn(3, 9, 12)}, 14),
    ("loop_if", Steps(), {"x": torch.randn(2, 8), "n": torch.tensor(3)}, 13),
    ("float16_convnet", HalfConvNet(), {"x": torch.randn(2, 3, 16, 16)}, 13),
]


def check(nnfuse, tmp, name, module, inputs, opset):
    module.eval()
    path = os.path.join(tmp, name + ".onnx")
    tolerance = 1e-4
    if name == "loop_if":
        # Scripted, so that the loop and the branch are exported as Loop and If.
        with torch.no_grad():
            want = module(*inputs.values()).numpy()
            torch.onnx.export(torch.jit.script(module), tuple(inputs.values()), path,
                              opset_version=opset, input_names=list(inputs), output_names=["y"])
        ops = {n.op_type for n in onnx.load(path).graph.node}
        if not {"Loop", "If"} <= ops:
            return ["the export has no Loop and If: %s" % sorted(ops)]
    elif name == "float16_convnet":
        vc.randomize_norms(module)
        module.half().float()  # weights exactly representable in float16
        inputs = {k: v.half().float() for k, v in inputs.items()}
        vc.export(module, inputs, path, opset)
        with torch.no_grad():
            want = module(*inputs.values()).numpy()
        to_float16(path)
        inputs = {k: v.half() for k, v in inputs.items()}
        tolerance = 1e-3
    else:
        want = vc.export(module, inputs, path, opset)
    fused, _, errors = vc.compile_model(nnfuse, tmp, name, path, {})
    if errors:
        return errors
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    return vc.run_and_verify(nnfuse, path, fused, feeds, want, tolerance)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "models"))
