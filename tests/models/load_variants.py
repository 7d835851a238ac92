#!/usr/bin/env python3
"""Models outside the convnet/transformer mainstream, exported from PyTorch in the test run:
a 2-layer bidirectional LSTM tagger and a GRU (LSTM and GRU ops with their Slice/Concat
plumbing), a model with Einsum and TopK, and a QDQ-quantized convnet (fake quantization of
activations per tensor and of weights per output channel, exported as QuantizeLinear /
DequantizeLinear pairs). For each: `nnfuse compile` writes a checker-valid model, the
compiled model gives PyTorch's outputs within 1e-4 of their largest magnitude, and `nnfuse
verify` (fused against unfused) passes, and the ONNX Runtime export runs in ORT.

Usage: /usr/bin/python3 load_variants.py NNFUSE
"""
import os, sys, warnings
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
        scale = w.detach().abs().amax(dim=(1, 2, 3)) / 127
        zero = torch.zeros(w.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zero, 0, -128, 127)

    def forward(s, x):
        h = nn.functional.conv2d(s.act(x, 0.02), s.weight(s.c1.weight), s.c1.bias, padding=1)
        h = s.act(torch.relu(h), 0.05)
        return nn.functional.conv2d(h, s.weight(s.c2.weight), s.c2.bias, padding=1)


CASES = [
    ("bilstm_tagger", Tagger(), {"ids": torch.randint(0, 100, (2, 12))}, 14),
    ("gru_encoder", GruEncoder(), {"x": torch.randn(3, 7, 16), "h0": torch.randn(1, 3, 24)}, 14),
    ("einsum_topk", EinsumTopK(), {"x": torch.randn(2, 5, 8)}, 13),
    ("qdq_convnet", QdqNet(), {"x": torch.randn(1, 3, 16, 16)}, 13),
]


def check(nnfuse, tmp, name, module, inputs, opset):
    module.eval()
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, opset)
    fused, _, errors = vc.compile_model(nnfuse, tmp, name, path, {})
    if errors:
        return errors
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    return vc.run_and_verify(nnfuse, path, fused, feeds, want)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "models"))
