#!/usr/bin/env python3
"""The normalization fusions on graphs exported by PyTorch: every LayerNorm spelling the
exporter produces, an RMSNorm, and post-LN and pre-LN residual blocks. For each model:
`nnfuse compile` must apply the expected pass (effect_times >= 1 in fusion_result.json) and
write the fused op into a checker-valid model; `nnfuse run` on that fused model must give
PyTorch's outputs; and `nnfuse verify` (fused against unfused) must pass.

Usage: /usr/bin/python3 norm_variants.py NNFUSE
"""
import os, sys, warnings
import onnx
import torch, torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
E = 32


class HandLayerNorm(nn.Module):
    """LayerNorm written out with (x - mean) * (x - mean) for the variance."""

    def __init__(s, e, eps=1e-5):
        super().__init__()
        s.w, s.b, s.eps = nn.Parameter(torch.ones(e)), nn.Parameter(torch.zeros(e)), eps

    def forward(s, x):
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        var = (d * d).mean(-1, keepdim=True)
        return d / torch.sqrt(var + s.eps) * s.w + s.b


class DoubleLayerNorm(nn.Module):
    """LayerNorm computed in double and cast back, as mixed-precision code writes it."""

    def __init__(s, e, eps=1e-5):
        super().__init__()
        s.w, s.b, s.eps = nn.Parameter(torch.ones(e)), nn.Parameter(torch.zeros(e)), eps

    def forward(s, x):
        xd = x.double()
        d = xd - xd.mean(-1, keepdim=True)
        y = d / torch.sqrt(d.pow(2).mean(-1, keepdim=True) + s.eps)
        return y.float() * s.w + s.b


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm."""

    def __init__(s, e, eps=1e-6):
        super().__init__()
        s.weight, s.eps = nn.Parameter(torch.ones(e)), eps

    def forward(s, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps) * s.weight


class PostLN(nn.Module):
    """BERT's output block: LayerNorm(x + Linear(x))."""

    def __init__(s, e):
        super().__init__()
        s.dense, s.ln = nn.Linear(e, e), nn.LayerNorm(e, eps=1e-12)

    def forward(s, x):
        return s.ln(x + s.dense(x))


class PreLN(nn.Module):
    """GPT-2-like blocks: x = x + f(LN(x)), then x = x + f2(h) + f3(h) with h = LN(x). The
    first LN has one dense reader, so it goes into it (LayerNormMatMul); the second has two,
    so the Add before it and it become a SkipLayerNorm whose sum, read by the second residual
    Add, the fused node must hand on as output 1."""

    def __init__(s, e):
        super().__init__()
        s.ln1, s.f1, s.ln2, s.f2 = nn.LayerNorm(e), nn.Linear(e, e), nn.LayerNorm(e), nn.Linear(e, e)
        s.f3 = nn.Linear(e, e)
        s.ln_f = nn.LayerNorm(e)

    def forward(s, x):
        x = x + s.f1(s.ln1(x))
        h = s.ln2(x)
        x = x + s.f2(h) + s.f3(h)
        return s.ln_f(x)


# name, module, opset, {pass: min effect_times}, [(fused op, domain)], extra check
CASES = [
    ("layernorm_op13", nn.LayerNorm(E), 13, {"LayerNormFusionPass": 1},
     [("LayerNormalization", "ai.nnfuse")], None),
    ("layernorm_op17_residual", PostLN(E), 17, {"SkipLayerNormFusionPass": 1},
     [("SkipLayerNorm", "ai.nnfuse")], None),
    ("hand_mul_op13", HandLayerNorm(E), 13, {"LayerNormFusionPass": 1},
     [("LayerNormalization", "ai.nnfuse")], None),
    ("hand_mul_op17", HandLayerNorm(E), 17, {"LayerNormFusionPass": 1},
     [("LayerNormalization", "")], None),
    ("cast_double", DoubleLayerNorm(E), 13, {"LayerNormFusionPass": 1},
     [("LayerNormalization", "ai.nnfuse")], "no_cast"),
    ("rmsnorm", RMSNorm(E), 13, {"RMSNormFusionPass": 1}, [("RMSNorm", "ai.nnfuse")], None),
    ("post_ln_op13", PostLN(E), 13, {"LayerNormFusionPass": 1, "SkipLayerNormFusionPass": 1},
     [("SkipLayerNorm", "ai.nnfuse")], None),
    ("pre_ln_op13", PreLN(E), 13, {"LayerNormFusionPass": 3, "SkipLayerNormFusionPass": 2,
                                   "LayerNormMatMulFusionPass": 1},
     [("SkipLayerNorm", "ai.nnfuse")], "sum_output"),
    ("pre_ln_op17", PreLN(E), 17, {"SkipLayerNormFusionPass": 2, "LayerNormMatMulFusionPass": 1},
     [("SkipLayerNorm", "ai.nnfuse")], "sum_output"),
]


def check(nnfuse, tmp, name, module, opset, passes, ops, extra):
    module = vc.randomize_norms(module).eval()
    x = torch.randn(2, 7, E)
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, {"x": x}, path, opset)
    feeds = vc.save_feeds(tmp, name, {"x": x.numpy()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path, passes)
    if rep is None:
        return errors
    fused = onnx.load(out)
    nodes = [(n.op_type, n.domain) for n in fused.graph.node]
    names = {n.name for n in fused.graph.node}
    for op in ops:
        if op in nodes:
            continue
        # A later fusion may have absorbed it: the fused node's pass chain ("A+B") says so.
        pass_of = {"SkipLayerNorm": "SkipLayerNormFusionPass", "RMSNorm": "RMSNormFusionPass",
                   "LayerNormalization": "LayerNormFusionPass"}[op[0]]
        absorbed = [f["node"] for f in rep["fused_nodes"]
                    if f["node"] in names and pass_of in f["pass"].split("+")[:-1]]
        if not absorbed:
            errors.append("fused model has no %s node in domain '%s' (nor one absorbed by a "
                          "later fusion); nodes: %s" % (op[0], op[1], nodes))
    if extra == "no_cast" and any(op == "Cast" for op, _ in nodes):
        errors.append("the Casts to double and back were not absorbed: %s" % nodes)
    if extra == "sum_output" and not any(
            n.op_type == "SkipLayerNorm" and len(n.output) == 2 for n in fused.graph.node):
        errors.append("no SkipLayerNorm hands its sum on as output 1: %s" % nodes)

    return errors + vc.run_and_verify(nnfuse, path, out, feeds, want)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "normalization models"))
