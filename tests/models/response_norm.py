#!/usr/bin/env python3
"""Global Response Normalization (ConvNeXt-V2) exported from PyTorch: the paper's channels-last
GRN inside a ConvNeXt-V2 block, and timm's channels-first form on [N, C, H, W] maps. For each
model: `nnfuse compile` must make one GlobalResponseNorm node per GRN with no ReduceL2 left; the
fused model must give PyTorch's outputs within 1e-4; `nnfuse verify` must pass; `nnfuse bench
--strict` must put no compute op on a reference kernel; and the ONNX Runtime export (the op
decomposed into standard ops) must run in ONNX Runtime with nnfuse's outputs.

Usage: /usr/bin/python3 response_norm.py NNFUSE
"""
import os, sys, warnings
import onnx
import torch, torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class GRN(nn.Module):
    """ConvNeXt-V2's GRN on channels-last [N, H, W, C] maps, as the paper writes it."""

    def __init__(s, dim):
        super().__init__()
        s.gamma = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.5)
        s.beta = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.5)

    def forward(s, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return s.gamma * (x * nx) + s.beta + x


class GRNChannelsFirst(nn.Module):
    """timm's GlobalResponseNorm on [N, C, H, W]: x + addcmul(bias, weight, x * N)."""

    def __init__(s, dim):
        super().__init__()
        s.weight = nn.Parameter(torch.randn(dim) * 0.5)
        s.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(s, x):
        gx = x.norm(p=2, dim=(2, 3), keepdim=True)
        nx = gx / (gx.mean(dim=1, keepdim=True) + 1e-6)
        return x + torch.addcmul(s.bias.view(1, -1, 1, 1), s.weight.view(1, -1, 1, 1), x * nx)


class ConvNeXtV2Block(nn.Module):
    """The ConvNeXt-V2 block: depthwise 7x7 conv, LayerNorm, Linear, GELU, GRN, Linear, residual."""

    def __init__(s, dim=32):
        super().__init__()
        s.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        s.norm = nn.LayerNorm(dim, eps=1e-6)
        s.pwconv1 = nn.Linear(dim, 4 * dim)
        s.act = nn.GELU()
        s.grn = GRN(4 * dim)
        s.pwconv2 = nn.Linear(4 * dim, dim)

    def forward(s, x):
        y = s.dwconv(x).permute(0, 2, 3, 1)
        y = s.pwconv2(s.grn(s.act(s.pwconv1(s.norm(y)))))
        return x + y.permute(0, 3, 1, 2)


class TwoBlocks(nn.Module):
    def __init__(s, dim=16):
        super().__init__()
        s.b1, s.b2 = ConvNeXtV2Block(dim), ConvNeXtV2Block(dim)

    def forward(s, x):
        return s.b2(s.b1(x))


CASES = [
    ("grn_channels_last", GRN(64), {"x": (2, 14, 14, 64)}, 1),
    ("grn_channels_first", GRNChannelsFirst(48), {"x": (1, 48, 9, 11)}, 1),
    ("convnextv2_block", ConvNeXtV2Block(), {"x": (1, 32, 28, 28)}, 1),
    ("convnextv2_two_blocks", TwoBlocks(), {"x": (2, 16, 14, 14)}, 2),
]


def check(nnfuse, tmp, name, module, shapes, grns):
    module = module.eval()
    inputs = {k: torch.randn(*v) for k, v in shapes.items()}
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, 14)
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path,
                                        {"GlobalResponseNormFusionPass": grns})
    if rep is None:
        return errors
    ops = [n.op_type for n in onnx.load(out).graph.node]
    if ops.count("GlobalResponseNorm") != grns:
        errors.append("%d GlobalResponseNorm nodes, expected %d: %s" %
                      (ops.count("GlobalResponseNorm"), grns, ops))
    left = [op for op in ops if op in ("ReduceL2", "ReduceMean", "Div")]
    if left:
        errors.append("ops of the GRN left after fusion: %s" % left)
    rc, log = vc.run([nnfuse, "bench", path, "--strict", "--runs", "2"] + feeds)
    if rc != 0:
        errors.append("bench --strict failed (%d): %s" % (rc, log.strip()[-400:]))
    return errors + vc.run_and_verify(nnfuse, path, out, feeds, want)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "Global Response Normalization models"))
