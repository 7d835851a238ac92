#!/usr/bin/env python3
"""The normalization fusions of convolutional networks on graphs exported by PyTorch:
GroupNorm (exported as Reshape, InstanceNormalization, Reshape, Mul, Add, or written out as
mean and variance) with and without its affine part and with the SiLU or ReLU after it,
InstanceNorm2d, and a diffusion UNet's ResBlock (GroupNorm - SiLU - Conv with the time
embedding, in the convs' channels-last layout; the embedding's Linear and Add go into the
GroupNorm after them; a projected skip's 1x1 Conv into the last conv's kernel: at most 4
kernels a ResBlock); an inception block, whose three 1x1 branch openings become one product
(FusedConvSplit), squeeze-and-excitation blocks, whose scale becomes one SqueezeExcite, and
inverted residuals, whose expansion and depthwise conv become one ExpandDepthwise, as do a
mobile network's stem and the depthwise conv after it; and convs of other ranks (R3D's 3-D residual block, Conformer's 1-D convolution module).
For each model: `nnfuse compile` must apply the expected pass and write
the GroupNorm node into a checker-valid model with the expected groups and activation; the
fused model must give PyTorch's outputs; `nnfuse verify` must pass; and the ONNX Runtime export
must run in ORT.

Usage: /usr/bin/python3 cnn_variants.py NNFUSE
"""
import os, sys, warnings
import onnx
import torch, torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class Chain(nn.Module):
    """Conv - norm - activation - Conv: the norm reads and writes the convs' layout."""

    def __init__(s, norm, act, c=32):
        super().__init__()
        s.c1, s.norm, s.act, s.c2 = nn.Conv2d(8, c, 3, padding=1), norm, act, nn.Conv2d(c, 8, 1)

    def forward(s, x):
        return s.c2(s.act(s.norm(s.c1(x))))


class Alone(nn.Module):
    """The norm on the input itself (plain layout) and an optional activation."""

    def __init__(s, norm, act=None):
        super().__init__()
        s.norm, s.act = norm, act or nn.Identity()

    def forward(s, x):
        return s.act(s.norm(x))


class DecomposedGroupNorm(nn.Module):
    """GroupNorm written out: mean and variance of the [N, G, -1] view, as hand-written and
    older model code does."""

    def __init__(s, groups, c, eps=1e-5):
        super().__init__()
        s.groups, s.eps = groups, eps
        s.weight, s.bias = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))

    def forward(s, x):
        n, c, h, w = x.shape
        g = x.reshape(n, s.groups, -1)
        m = g.mean(-1, keepdim=True)
        v = ((g - m) ** 2).mean(-1, keepdim=True)
        y = ((g - m) / torch.sqrt(v + s.eps)).reshape(n, c, h, w)
        return y * s.weight[:, None, None] + s.bias[:, None, None]


class ResBlock(nn.Module):
    """diffusers' ResnetBlock2D: GroupNorm - SiLU - Conv, + Linear(SiLU(temb)) (or temb itself,
    already one value a channel, with project=False), GroupNorm - SiLU - Conv, + x (through a
    1x1 Conv where the channels change, cout)."""

    def __init__(s, c=32, temb=64, project=True, cout=None):
        super().__init__()
        cout = cout or c
        s.n1, s.c1 = nn.GroupNorm(8, c), nn.Conv2d(c, cout, 3, padding=1)
        s.t = nn.Linear(temb, cout) if project else None
        s.n2, s.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
        s.skip = nn.Conv2d(c, cout, 1) if cout != c else nn.Identity()

    def forward(s, x, temb):
        t = s.t(nn.functional.silu(temb)) if s.t else temb
        h = s.c1(nn.functional.silu(s.n1(x))) + t[:, :, None, None]
        return s.skip(x) + s.c2(nn.functional.silu(s.n2(h)))


class SpatialAttention(nn.Module):
    """A UNet's attention block: GroupNorm, the feature map flattened to H*W tokens, one-head
    self-attention, the output projection, folded back into the map, plus the residual."""

    def __init__(s, c=32):
        super().__init__()
        s.conv, s.norm = nn.Conv2d(8, c, 3, padding=1), nn.GroupNorm(8, c)
        s.q, s.k, s.v, s.o = (nn.Linear(c, c) for _ in range(4))

    def forward(s, x):
        x = s.conv(x)
        b, c, h, w = x.shape
        t = s.norm(x).view(b, c, h * w).transpose(1, 2)
        p = torch.softmax(s.q(t) @ s.k(t).transpose(1, 2) / c ** 0.5, dim=-1)
        return x + s.o(p @ s.v(t)).transpose(1, 2).reshape(b, c, h, w)


class Inception(nn.Module):
    """GoogLeNet's block: a 1x1 branch, two 1x1 -> 3x3 branches and a pooled 1x1 branch, each
    conv with BatchNorm and ReLU, concatenated."""

    def __init__(s, c=24):
        super().__init__()

        def cbr(i, o, k):
            return nn.Sequential(nn.Conv2d(i, o, k, padding=k // 2, bias=False),
                                 nn.BatchNorm2d(o), nn.ReLU())
        s.b1 = cbr(c, 16, 1)
        s.b2 = nn.Sequential(cbr(c, 24, 1), cbr(24, 32, 3))
        s.b3 = nn.Sequential(cbr(c, 8, 1), cbr(8, 16, 3))
        s.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), cbr(c, 16, 1))

    def forward(s, x):
        return torch.cat([s.b1(x), s.b2(x), s.b3(x), s.b4(x)], 1)


class SqueezeExcite(nn.Module):
    """MobileNetV3's (ReLU, Hardsigmoid) or EfficientNet's (SiLU, Sigmoid) block: a depthwise
    conv, the scale from its pooled map, the scaled map into a 1x1 projection."""

    def __init__(s, act, gate, c=32, squeezed=8):
        super().__init__()
        s.dw = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), act())
        s.fc1, s.fc2 = nn.Conv2d(c, squeezed, 1), nn.Conv2d(squeezed, c, 1)
        s.act, s.gate = act(), gate()
        s.project = nn.Conv2d(c, 16, 1)

    def forward(s, x):
        x = s.dw(x)
        scale = s.gate(s.fc2(s.act(s.fc1(x.mean((2, 3), keepdim=True)))))
        return s.project(x * scale)


class InvertedResidual(nn.Module):
    """MobileNetV2's (ReLU6, 3x3) or EfficientNet's (SiLU, 5x5) block: a 1x1 expansion, a
    depthwise conv and a 1x1 projection, each with BatchNorm, the input added when the shapes
    allow."""

    def __init__(s, act, c, expanded, k, stride):
        super().__init__()
        s.expand = nn.Sequential(nn.Conv2d(c, expanded, 1, bias=False), nn.BatchNorm2d(expanded),
                                 act())
        s.dw = nn.Sequential(nn.Conv2d(expanded, expanded, k, stride, k // 2, groups=expanded,
                                       bias=False), nn.BatchNorm2d(expanded), act())
        s.project = nn.Sequential(nn.Conv2d(expanded, c, 1, bias=False), nn.BatchNorm2d(c))
        s.residual = stride == 1

    def forward(s, x):
        y = s.project(s.dw(s.expand(x)))
        return x + y if s.residual else y


class StemBlock(nn.Module):
    """A mobile network's stem (a 3x3 conv of stride 2 over the image, BatchNorm, activation)
    and its first block, MobileNetV2's or EfficientNet's without the SE: a depthwise 3x3 and a 1x1
    projection."""

    def __init__(s, act, c=32, cout=16):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), act())
        s.dw = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), nn.BatchNorm2d(c),
                             act())
        s.project = nn.Sequential(nn.Conv2d(c, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(s, x):
        return s.project(s.dw(s.stem(x)))


class BasicBlock3d(nn.Module):
    """R3D-18's residual block of 3x3x3 convs (video), strided with a projected skip."""

    def __init__(s, cin=16, cout=32):
        super().__init__()
        s.c1 = nn.Sequential(nn.Conv3d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm3d(cout),
                             nn.ReLU())
        s.c2 = nn.Sequential(nn.Conv3d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm3d(cout))
        s.skip = nn.Sequential(nn.Conv3d(cin, cout, 1, 2, bias=False), nn.BatchNorm3d(cout))

    def forward(s, x):
        return torch.relu(s.c2(s.c1(x)) + s.skip(x))


class ConformerConv(nn.Module):
    """Conformer's convolution module (speech): pointwise conv to 2C, GLU, depthwise conv of
    kernel 31, BatchNorm, SiLU, pointwise conv, the input added; channels-first [N, C, T]."""

    def __init__(s, c=32, k=31):
        super().__init__()
        s.pw1, s.dw = nn.Conv1d(c, 2 * c, 1), nn.Conv1d(c, c, k, padding=k // 2, groups=c)
        s.bn, s.pw2 = nn.BatchNorm1d(c), nn.Conv1d(c, c, 1)

    def forward(s, x):
        y = nn.functional.glu(s.pw1(x), dim=1)
        return x + s.pw2(nn.functional.silu(s.bn(s.dw(y))))


X8 = {"x": (1, 8, 12, 10)}
X16 = {"x": (1, 16, 9, 11)}
# name, module, inputs, {pass: min effect_times}, [(num_groups, activation) of each GroupNorm]
CASES = [
    ("groupnorm_silu", Chain(nn.GroupNorm(8, 32), nn.SiLU()), X8, {"GroupNormFusionPass": 1},
     [(8, "SiLU")]),
    ("groupnorm_relu", Chain(nn.GroupNorm(4, 32), nn.ReLU()), X8, {"GroupNormFusionPass": 1},
     [(4, "Relu")]),
    ("groupnorm_no_affine", Alone(nn.GroupNorm(4, 16, affine=False)), X16,
     {"GroupNormFusionPass": 1}, [(4, "")]),
    ("groupnorm_decomposed", Chain(DecomposedGroupNorm(8, 32), nn.SiLU()), X8,
     {"LayerNormFusionPass": 1, "GroupNormFusionPass": 1}, [(8, "SiLU")]),
    ("groupnorm_one_group", Alone(nn.GroupNorm(1, 16), nn.SiLU()), X16,
     {"GroupNormFusionPass": 1}, [(1, "SiLU")]),
    ("instancenorm_affine_relu", Chain(nn.InstanceNorm2d(32, affine=True), nn.ReLU()), X8,
     {"GroupNormFusionPass": 1}, [(32, "Relu")]),
    ("instancenorm", Alone(nn.InstanceNorm2d(16)), X16, {"GroupNormFusionPass": 1}, [(16, "")]),
    # The flatten to tokens and the fold back are views of the conv's channels-last storage.
    ("spatial_attention", SpatialAttention(), X8,
     {"GroupNormFusionPass": 1, "SpatialTransposeViewPass": 2}, [(8, "")]),
    # The time embedding's Linear and Add go into the second GroupNorm: 4 kernels and the SiLU.
    ("unet_resblock", ResBlock(), {"x": (1, 32, 12, 12), "temb": (1, 64)},
     {"GroupNormFusionPass": 2}, [(8, "SiLU"), (8, "SiLU")]),
    # The channels change: the skip's 1x1 Conv runs in the second conv's kernel.
    ("unet_resblock_projected", ResBlock(cout=48), {"x": (1, 32, 12, 12), "temb": (1, 64)},
     {"GroupNormFusionPass": 2, "ConvSkipConvFusionPass": 1}, [(8, "SiLU"), (8, "SiLU")]),
    # Two images, each its own embedding, given one value a channel.
    ("unet_resblock_batch_addend", ResBlock(project=False), {"x": (2, 32, 12, 12), "temb": (2, 32)},
     {"GroupNormFusionPass": 2}, [(8, "SiLU"), (8, "SiLU")]),
    # The three 1x1 branch openings as one product, its channels cut into the branches.
    ("inception_block", Inception(), {"x": (1, 24, 10, 10)}, {"HorizontalConvFusionPass": 1}, []),
    ("squeeze_excite_mobilenet", SqueezeExcite(nn.ReLU, nn.Hardsigmoid), {"x": (1, 32, 14, 14)},
     {"SqueezeExciteFusionPass": 1}, []),
    ("squeeze_excite_efficientnet", SqueezeExcite(nn.SiLU, nn.Sigmoid), {"x": (2, 32, 14, 14)},
     {"SqueezeExciteFusionPass": 1}, []),
    # Expanded tensors of 4.6 MiB and 1.7 MiB: the expansion and the depthwise conv as one
    # kernel.
    ("inverted_residual_mobilenet", InvertedResidual(nn.ReLU6, 16, 96, 3, 2),
     {"x": (1, 16, 112, 112)}, {"ExpandDepthwiseFusionPass": 1}, []),
    ("inverted_residual_efficientnet", InvertedResidual(nn.SiLU, 24, 144, 5, 1),
     {"x": (1, 24, 56, 56)}, {"ExpandDepthwiseFusionPass": 1}, []),
    # A stem of 1.5 MiB at 224 x 224 and the depthwise conv after it: one kernel gathering the
    # stem's 27 taps a pixel.
    ("stem_mobilenet", StemBlock(nn.ReLU6), {"x": (1, 3, 224, 224)},
     {"ExpandDepthwiseFusionPass": 1}, []),
    ("stem_efficientnet", StemBlock(nn.SiLU), {"x": (2, 3, 160, 200)},
     {"ExpandDepthwiseFusionPass": 1}, []),
    # Convs of other ranks: 3-D on a blocked layout, 1-D as 2-D of height 1.
    ("resnet3d_block", BasicBlock3d(), {"x": (1, 16, 4, 14, 14)},
     {"ConvAddFusionPass": 1, "ConvSkipConvFusionPass": 1}, []),
    ("conformer_conv_module", ConformerConv(), {"x": (1, 32, 100)},
     {"ConvAddFusionPass": 1}, []),
]

# Per case: ops of ai.nnfuse the fused graph must hold, with their counts.
FUSED_OPS = {"inception_block": {"FusedConvSplit": 1},
             "squeeze_excite_mobilenet": {"SqueezeExcite": 1},
             "squeeze_excite_efficientnet": {"SqueezeExcite": 1},
             "inverted_residual_mobilenet": {"ExpandDepthwise": 1},
             "inverted_residual_efficientnet": {"ExpandDepthwise": 1},
             "stem_mobilenet": {"ExpandDepthwise": 1},
             "stem_efficientnet": {"ExpandDepthwise": 1},
             "resnet3d_block": {"FusedConv": 2},
             "conformer_conv_module": {"FusedConv": 2}}


def check(nnfuse, tmp, name, module, shapes, passes, norms):
    module = vc.randomize_norms(module).eval()
    inputs = {k: torch.randn(*v) for k, v in shapes.items()}
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, 14)
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path, passes)
    if rep is None:
        return errors
    fused = onnx.load(out)
    got = [n for n in fused.graph.node if n.op_type == "GroupNorm" and n.domain == "ai.nnfuse"]
    if len(got) != len(norms):
        errors.append("%d GroupNorm nodes, expected %d: %s" %
                      (len(got), len(norms), [n.op_type for n in fused.graph.node]))
    for node, (groups, act) in zip(got, norms):
        errors += vc.attr_errors(node, {"num_groups": groups, "activation": act}, missing="")
    left = [n.op_type for n in fused.graph.node
            if n.op_type in ("InstanceNormalization", "LayerNormalization", "Sigmoid", "Unsqueeze",
                             "Gemm")
            or (n.op_type in ("Reshape", "Add") and name != "spatial_attention")]
    if left:
        errors.append("ops of the norm left after fusion: %s" % left)
    for op, count in FUSED_OPS.get(name, {}).items():
        have = sum(1 for n in fused.graph.node if n.op_type == op and n.domain == "ai.nnfuse")
        if have != count:
            errors.append("%d %s nodes, expected %d: %s" %
                          (have, op, count, [n.op_type for n in fused.graph.node]))
    if name.startswith("squeeze_excite") and any(
            n.op_type in ("GlobalAveragePool", "ReduceMean") for n in fused.graph.node):
        errors.append("the pool left out of SqueezeExcite: %s" %
                      [n.op_type for n in fused.graph.node])
    if name.startswith("stem_") and len(fused.graph.node) != 2:
        errors.append("%d kernels for a stem and its block, 2 expected: %s" %
                      (len(fused.graph.node), [n.op_type for n in fused.graph.node]))
    if name.startswith("unet_resblock") and len(fused.graph.node) > 4:
        errors.append("%d kernels in a ResBlock, at most 4 expected: %s" %
                      (len(fused.graph.node), [n.op_type for n in fused.graph.node]))
    return errors + vc.run_and_verify(nnfuse, path, out, feeds, want)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "convolutional normalization models"))
