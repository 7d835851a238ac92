#!/usr/bin/env python3
"""Static shapes on exports whose shapes the exporter computes at run time: GroupNorm (Reshape ->
InstanceNormalization -> Reshape(Shape(x)) -> Mul -> Add), torch's flatten(2) before a Linear
(Reshape to a Shape/Slice/Concat target), a channel shuffle (view/transpose/reshape on computed
dims), Resize by a scale factor, a rotary-style chunk (Slices with computed bounds), K/V widened
by expand + reshape (grouped-query attention), and a window partition (view/permute on computed
dims). For each model: `nnfuse info` must report every value with a static shape once shape
arithmetic folds; `nnfuse bench --strict --json` must run with no compute op on a reference
kernel (and count none at all); the fused model must give PyTorch's output within 1e-4 and
`nnfuse verify` must pass.

Usage: /usr/bin/python3 shape_variants.py NNFUSE
"""
import json, os, re, sys, warnings
import torch, torch.nn as nn, torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class GroupNormBlock(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1, s.gn, s.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.Conv2d(32, 16, 3)
        with torch.no_grad():
            s.gn.weight.uniform_(0.5, 1.5)
            s.gn.bias.uniform_(-0.5, 0.5)

    def forward(s, x):
        return s.c2(F.silu(s.gn(s.c1(x))))


class Flatten2Linear(nn.Module):
    """Patch embedding then a token-mixing Linear, as MLP-Mixer and ViT write it."""

    def __init__(s):
        super().__init__()
        s.c, s.mix, s.ch = nn.Conv2d(3, 48, 4, stride=4), nn.Linear(64, 64), nn.Linear(48, 32)

    def forward(s, x):
        y = s.c(x).flatten(2)  # [B, C, HW]
        y = s.mix(y).transpose(1, 2)  # token mixing over HW, then [B, HW, C]
        return s.ch(y)


class ChannelShuffle(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1, s.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)

    def forward(s, x):
        y = s.c1(x)
        b, c, h, w = y.shape
        y = y.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)
        return s.c2(y)


class Upsample(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1, s.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 8, 3, padding=1)

    def forward(s, x):
        y = F.interpolate(s.c1(x), scale_factor=2, mode="bilinear", align_corners=False)
        return s.c2(F.interpolate(y, scale_factor=0.5, mode="nearest"))


class RotaryChunk(nn.Module):
    """q * cos + rotate_half(q) * sin with rotate_half through chunk, then q @ k^T."""

    def __init__(s):
        super().__init__()
        s.q, s.k = nn.Linear(32, 32), nn.Linear(32, 32)
        t = torch.arange(16.0)[:, None] * torch.arange(16.0)[None, :] / 16
        s.register_buffer("cos", torch.cat([t.cos(), t.cos()], -1))
        s.register_buffer("sin", torch.cat([t.sin(), t.sin()], -1))

    def rot(s, x):
        a, b = x.chunk(2, dim=-1)
        return torch.cat([-b, a], -1)

    def forward(s, x):
        n = x.shape[1]
        q, k = s.q(x), s.k(x)
        q = q * s.cos[:n] + s.rot(q) * s.sin[:n]
        k = k * s.cos[:n] + s.rot(k) * s.sin[:n]
        return q @ k.transpose(-1, -2)


class GroupedKV(nn.Module):
    """K and V with 2 heads widened to 4 by expand + reshape, as grouped-query attention does."""

    def __init__(s):
        super().__init__()
        s.q, s.kv = nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(s, x):
        b, n, _ = x.shape
        q = s.q(x).view(b, n, 4, 8).transpose(1, 2)
        k, v = s.kv(x).view(b, n, 2, 16).transpose(1, 2).chunk(2, dim=-1)
        k = k[:, :, None].expand(b, 2, 2, n, 8).reshape(b, 4, n, 8)
        v = v[:, :, None].expand(b, 2, 2, n, 8).reshape(b, 4, n, 8)
        a = torch.softmax(q @ k.transpose(-1, -2) / 8 ** 0.5, -1)
        return (a @ v).transpose(1, 2).reshape(b, n, 32)


class WindowPartition(nn.Module):
    """Swin's window partition and merge on computed dims, with a Linear inside."""

    def __init__(s):
        super().__init__()
        s.l = nn.Linear(16, 16)

    def forward(s, x):
        b, h, w, c = x.shape
        ws = 4
        y = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        y = s.l(y.reshape(-1, ws * ws, c))
        y = y.view(b, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        return y.reshape(b, h, w, c)


CASES = [
    ("groupnorm", GroupNormBlock(), [1, 3, 16, 16]),
    ("flatten2_linear", Flatten2Linear(), [1, 3, 32, 32]),
    ("channel_shuffle", ChannelShuffle(), [1, 3, 16, 16]),
    ("upsample", Upsample(), [1, 3, 16, 16]),
    ("rotary_chunk", RotaryChunk(), [1, 16, 32]),
    ("grouped_kv", GroupedKV(), [2, 16, 32]),
    ("window_partition", WindowPartition(), [1, 8, 8, 16]),
]


def check(nnfuse, tmp, name, module, shape):
    module.eval()
    inputs = {"x": torch.randn(*shape)}
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, 13)
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    errors = []
    rc, log = vc.run([nnfuse, "info", path])
    m = re.search(r"static shapes: (\d+) of (\d+) values", log)
    if rc != 0 or not m:
        errors.append("info failed (%d): %s" % (rc, log.strip()[-500:]))
    elif m.group(1) != m.group(2):
        errors.append("info: " + log[m.start():].strip())
    rc, log = vc.run([nnfuse, "bench", path, "--strict", "--json", "--runs", "2"] + feeds)
    note = ""
    if rc != 0:
        errors.append("bench --strict failed (%d): %s" % (rc, log.strip()[-500:]))
    else:
        j = json.loads([l for l in log.splitlines() if l.startswith("{")][-1])
        if j["reference_kernels"] != 0:
            errors.append("%d nodes on the reference kernel" % j["reference_kernels"])
        note = " (%d kernels)" % j["kernels"]
    fused, _, errs = vc.compile_model(nnfuse, tmp, name, path, {})
    errors += errs
    if not errs:
        errors += vc.run_and_verify(nnfuse, path, fused, feeds, want)
    return errors, note


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "shape variants"))
