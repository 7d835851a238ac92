#!/usr/bin/env python3
"""The GELU, Swish and embedding fusions on graphs exported by PyTorch: nn.GELU in both its
forms, hand-written erf and tanh GELUs (Pow and x*x*x), Linear + GELU (one FusedMatMul with
the activation), x * sigmoid(1.702 x), SiLU, and a BERT embedding block (word + position +
token-type nn.Embedding + LayerNorm) at opset 17 (one LayerNormalization op) and at opset 13
(the LayerNorm decomposed), and gated FFNs: LLaMA's SwiGLU MLP (no biases, with its down
projection), the seed's GeGLU (erf GELU, biases) and a tanh-GELU GeGLU without biases, each
gate-up pair one FusedGatedMatMul (also F.glu's and chunk(2)'s one projection cut in
halves), and x + Linear(x) as one FusedMatMulResidual. For each
model: `nnfuse compile` must apply the expected pass
(effect_times >= 1 in fusion_result.json) and write the fused op into a checker-valid model;
`nnfuse run` on that fused model must give PyTorch's outputs; and `nnfuse verify` (fused
against unfused) must pass.

Usage: /usr/bin/python3 transformer_variants.py NNFUSE
"""
import math, os, sys, warnings
import onnx
import torch, torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
E, B, S, VOCAB = 32, 2, 7, 50


class Fn(nn.Module):
    def __init__(s, f):
        super().__init__()
        s.f = f

    def forward(s, x):
        return s.f(x)


def erf_gelu(x):  # BERT's original gelu
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def tanh_gelu_pow(x):  # HF's gelu_new
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def tanh_gelu_cube(x):  # x * x * x for the cube
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def quick_gelu(x):  # CLIP's
    return x * torch.sigmoid(1.702 * x)


class Dense(nn.Module):
    """Linear + activation on a [B, S, E] input (exported as MatMul + Add + the activation)."""

    def __init__(s, act):
        super().__init__()
        s.fc, s.act = nn.Linear(E, 2 * E), act

    def forward(s, x):
        return s.act(s.fc(x))


class SwiGLU(nn.Module):
    """LLaMA's MLP: down(silu(gate(x)) * up(x)), no biases."""

    def __init__(s):
        super().__init__()
        s.gate, s.up = nn.Linear(E, 3 * E, bias=False), nn.Linear(E, 3 * E, bias=False)
        s.down = nn.Linear(3 * E, E, bias=False)

    def forward(s, x):
        return s.down(nn.functional.silu(s.gate(x)) * s.up(x))


class GeGLU(nn.Module):
    """The seed's fused_ffn: act(x W1 + b1) * (x W2 + b2)."""

    def __init__(s, act, bias):
        super().__init__()
        s.w1, s.w2, s.act = nn.Linear(E, 2 * E, bias=bias), nn.Linear(E, 2 * E, bias=bias), act

    def forward(s, x):
        return s.act(s.w1(x)) * s.w2(x)


class ChunkGLU(nn.Module):
    """One projection cut in halves: F.glu (a * sigmoid(b)) or chunk(2) with silu(a) * b."""

    def __init__(s, glu):
        super().__init__()
        s.fc, s.glu = nn.Linear(E, 4 * E), glu

    def forward(s, x):
        h = s.fc(x)
        if s.glu:
            return nn.functional.glu(h, dim=-1)
        a, b = h.chunk(2, dim=-1)
        return nn.functional.silu(a) * b


class Residual(nn.Module):
    """x + Linear(x): a residual block's projection (no LayerNorm after it)."""

    def __init__(s, bias):
        super().__init__()
        s.fc = nn.Linear(E, E, bias=bias)

    def forward(s, x):
        return x + s.fc(x)


class Embeddings(nn.Module):
    """BERT's embedding block: the position ids are a buffer, so they export as a constant."""

    def __init__(s):
        super().__init__()
        s.word, s.pos, s.tok = nn.Embedding(VOCAB, E), nn.Embedding(S, E), nn.Embedding(2, E)
        s.ln = nn.LayerNorm(E, eps=1e-12)
        s.register_buffer("position_ids", torch.arange(S).unsqueeze(0))
        with torch.no_grad():
            s.ln.weight.uniform_(0.5, 1.5)
            s.ln.bias.uniform_(-0.5, 0.5)

    def forward(s, input_ids, token_type_ids):
        e = s.word(input_ids) + s.pos(s.position_ids) + s.tok(token_type_ids)
        return s.ln(e)


def act_inputs():
    return {"x": torch.randn(B, S, E) * 3}


def embed_inputs():
    return {"input_ids": torch.randint(0, VOCAB, (B, S)),
            "token_type_ids": torch.randint(0, 2, (B, S))}


# name, module, inputs, opset, {pass: min effect_times}, [(fused op, domain, attrs)]
CASES = [
    ("gelu_module", Fn(nn.GELU()), act_inputs, 13, {"GeluFusionPass": 1},
     [("Gelu", "ai.nnfuse", {"approximate": "none"})]),
    ("gelu_module_tanh", Fn(nn.GELU(approximate="tanh")), act_inputs, 13, {"GeluFusionPass": 1},
     [("Gelu", "ai.nnfuse", {"approximate": "tanh"})]),
    ("gelu_erf_hand", Fn(erf_gelu), act_inputs, 13, {"GeluFusionPass": 1},
     [("Gelu", "ai.nnfuse", {"approximate": "none"})]),
    ("gelu_tanh_pow", Fn(tanh_gelu_pow), act_inputs, 13, {"GeluFusionPass": 1},
     [("Gelu", "ai.nnfuse", {"approximate": "tanh"})]),
    ("gelu_tanh_cube", Fn(tanh_gelu_cube), act_inputs, 13, {"GeluFusionPass": 1},
     [("Gelu", "ai.nnfuse", {"approximate": "tanh"})]),
    ("quick_gelu", Fn(quick_gelu), act_inputs, 13, {"GeluFusionPass": 1},
     [("Swish", "ai.nnfuse", {"alpha": 1.702})]),
    ("silu", Fn(nn.SiLU()), act_inputs, 13, {"GeluFusionPass": 1},
     [("Swish", "ai.nnfuse", {"alpha": 1.0})]),
    ("linear_gelu", Dense(nn.GELU()), act_inputs, 13, {"MatMulBiasAddFusionPass": 1},
     [("FusedMatMul", "ai.nnfuse", {"activation": "Gelu"})]),
    ("linear_gelu_tanh", Dense(Fn(tanh_gelu_pow)), act_inputs, 13,
     {"MatMulBiasAddFusionPass": 1}, [("FusedMatMul", "ai.nnfuse", {"activation": "GeluTanh"})]),
    ("linear_quick_gelu", Dense(Fn(quick_gelu)), act_inputs, 13, {"MatMulBiasAddFusionPass": 1},
     [("FusedMatMul", "ai.nnfuse", {"activation": "Swish", "activation_alpha": 1.702})]),
    ("swiglu_mlp", SwiGLU(), act_inputs, 13, {"GatedFFNFusionPass": 1},
     [("FusedGatedMatMul", "ai.nnfuse", {"activation": "SiLU"}), ("MatMul", "", {})]),
    ("geglu_ffn", GeGLU(nn.GELU(), True), act_inputs, 13, {"GatedFFNFusionPass": 1},
     [("FusedGatedMatMul", "ai.nnfuse", {"activation": "Gelu"})]),
    ("geglu_tanh_no_bias", GeGLU(Fn(tanh_gelu_pow), False), act_inputs, 13,
     {"GatedFFNFusionPass": 1}, [("FusedGatedMatMul", "ai.nnfuse", {"activation": "GeluTanh"})]),
    ("glu_halves", ChunkGLU(True), act_inputs, 13, {"GatedFFNChunkFusionPass": 1},
     [("FusedGatedMatMul", "ai.nnfuse", {"activation": "Sigmoid"})]),
    ("swiglu_chunk", ChunkGLU(False), act_inputs, 13, {"GatedFFNChunkFusionPass": 1},
     [("FusedGatedMatMul", "ai.nnfuse", {"activation": "SiLU"})]),
    ("linear_residual", Residual(True), act_inputs, 13, {"MatMulResidualFusionPass": 1},
     [("FusedMatMulResidual", "ai.nnfuse", {})]),
    ("linear_residual_no_bias", Residual(False), act_inputs, 13, {"MatMulResidualFusionPass": 1},
     [("FusedMatMulResidual", "ai.nnfuse", {})]),
    ("embeddings_op17", Embeddings(), embed_inputs, 17, {"EmbedLayerNormFusionPass": 1},
     [("EmbedLayerNorm", "ai.nnfuse", {})]),
    ("embeddings_op13", Embeddings(), embed_inputs, 13, {"EmbedLayerNormFusionPass": 1},
     [("EmbedLayerNorm", "ai.nnfuse", {})]),
]


def check(nnfuse, tmp, name, module, make_inputs, opset, passes, ops):
    module = module.eval()
    inputs = make_inputs()
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, opset)
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path, passes)
    if rep is None:
        return errors
    fused = onnx.load(out)
    nodes = [(n.op_type, n.domain) for n in fused.graph.node]
    for op, domain, attrs in ops:
        hits = [n for n in fused.graph.node if n.op_type == op and n.domain == domain]
        if len(hits) != 1:
            errors.append("expected one %s node in domain '%s', got %d; nodes: %s" %
                          (op, domain, len(hits), nodes))
        else:
            errors += vc.attr_errors(hits[0], attrs)
    # The whole activation (or embedding block) is one node: nothing else is left over.
    if len(fused.graph.node) != len(ops):
        errors.append("expected %d node(s) in the fused model, got %s" % (len(ops), nodes))

    return errors + vc.run_and_verify(nnfuse, path, out, feeds, want)


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "activation and embedding models"))
