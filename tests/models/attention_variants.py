#!/usr/bin/env python3
"""The attention fusion on graphs exported by PyTorch: BERT's self-attention (separate Q, K, V
Linears, Div by sqrt(d), additive mask from attention_mask), GPT-2's (one c_attn Linear split
in three, causal mask by torch.where over a tril bool buffer, or by masked_fill(~tril, -inf)),
nn.MultiheadAttention (batch_first and sequence-first, with and without key_padding_mask), and
scaled_dot_product_attention as torch 2 exports it (the scale applied to Q and to K, sqrt of
it each; no mask and causal), and decoders as Hugging Face writes them (LLaMA and Mistral with
grouped-query K/V and rotary embeddings, multi-query, GPT-NeoX's partial rotary, GPT-J's
interleaved partial rotary on [B, S, H, D], T5's
unscaled scores with a relative position bias, and decode steps with a KV cache: past K and V
in, present out), at opsets 13 and 14. For each model: `nnfuse compile` must apply
the expected passes (effect_times >= 1 in fusion_result.json) and write MultiHeadAttention
into a checker-valid model, or, for a form that does not fuse, report the attention it
declined; `nnfuse run` on the fused model must give PyTorch's outputs; and `nnfuse verify`
(fused against unfused) must pass.

Usage: /usr/bin/python3 attention_variants.py NNFUSE
"""
import math, os, sys, warnings
import onnx
import torch, torch.nn as nn, torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_check as vc  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
B = 2


def heads(x, h):
    """[B, S, H*D] -> [B, H, S, D]"""
    b, t, e = x.shape
    return x.view(b, t, h, e // h).permute(0, 2, 1, 3)


def merge(o):
    """[B, H, S, D] -> [B, S, H*D]"""
    o = o.permute(0, 2, 1, 3).contiguous()
    return o.view(o.size(0), o.size(1), -1)


class BertSelfAttention(nn.Module):
    def __init__(s, e, h):
        super().__init__()
        s.h, s.d = h, e // h
        s.query, s.key, s.value = nn.Linear(e, e), nn.Linear(e, e), nn.Linear(e, e)

    def forward(s, x, attention_mask):
        q, k, v = heads(s.query(x), s.h), heads(s.key(x), s.h), heads(s.value(x), s.h)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(s.d)
        w = w + (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        return merge(torch.matmul(F.softmax(w, dim=-1), v))


class GPT2Attention(nn.Module):
    def __init__(s, e, h, masked_fill, max_positions=32):
        super().__init__()
        s.e, s.h, s.masked_fill = e, h, masked_fill
        s.c_attn, s.c_proj = nn.Linear(e, 3 * e), nn.Linear(e, e)
        n = max_positions
        s.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n))

    def forward(s, x):
        q, k, v = s.c_attn(x).split(s.e, dim=2)
        q, k, v = heads(q, s.h), heads(k, s.h), heads(v, s.h)
        w = torch.matmul(q, k.transpose(-1, -2)) / (float(v.size(-1)) ** 0.5)
        t = q.size(-2)
        causal = s.bias[:, :, :t, :t]
        if s.masked_fill:
            w = w.masked_fill(~causal, float("-inf"))
        else:
            mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
            w = torch.where(causal, w, mask_value)
        return s.c_proj(merge(torch.matmul(F.softmax(w, dim=-1), v)))


class MHA(nn.Module):
    def __init__(s, e, h, batch_first, key_padding):
        super().__init__()
        s.key_padding = key_padding
        s.mha = nn.MultiheadAttention(e, h, batch_first=batch_first)

    def forward(s, x, *mask):
        kpm = mask[0] if s.key_padding else None
        return s.mha(x, x, x, key_padding_mask=kpm, need_weights=False)[0]


class SDPA(nn.Module):
    """scaled_dot_product_attention as torch 2 exports it: sqrt(scale) on Q and on K^T; the
    causal form adds a 0 / -inf bias built from a lower-triangular bool mask."""

    def __init__(s, e, h, causal):
        super().__init__()
        s.h, s.causal = h, causal
        s.qkv, s.out = nn.Linear(e, 3 * e), nn.Linear(e, e)

    def forward(s, x):
        b, t, e = x.shape
        q, k, v = s.qkv(x).chunk(3, dim=-1)
        q, k, v = heads(q, s.h), heads(k, s.h), heads(v, s.h)
        sc = math.sqrt(1.0 / math.sqrt(e // s.h))
        w = torch.matmul(q * sc, k.transpose(-2, -1) * sc)
        if s.causal:
            keep = torch.ones(t, t, dtype=torch.bool).tril(diagonal=0)
            w = w + torch.zeros(t, t).masked_fill(~keep, float("-inf"))
        p = torch.softmax(w, dim=-1)
        return s.out(merge(torch.matmul(p, v)))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Decoder(nn.Module):
    """A decoder's self-attention as Hugging Face writes LLaMA, Mistral, GPT-NeoX and T5:
    bias-free q, k, v projections (k and v with `kv` heads), rotary embeddings (rotate-half
    over the first `rot` dims of each head; cos and sin tables indexed by position), K and V
    widened by repeat_kv (Expand + Reshape), scores scaled by 1/sqrt(d) (T5: not at all), a
    causal mask (an additive -inf triu, or masked_fill of a tril bool) and an additive
    relative position bias (T5)."""

    def __init__(s, e, h, kv, rot, causal="triu", scale=True, rel_bias=False, t=9):
        super().__init__()
        s.h, s.kv, s.d, s.rot, s.causal, s.scale = h, kv, e // h, rot, causal, scale
        s.q = nn.Linear(e, e, bias=False)
        s.k = nn.Linear(e, kv * s.d, bias=False)
        s.v = nn.Linear(e, kv * s.d, bias=False)
        s.o = nn.Linear(e, e, bias=False)
        s.bias = nn.Parameter(torch.randn(1, h, t, t)) if rel_bias else None
        if rot:
            inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
            f = torch.outer(torch.arange(64).float(), inv)
            s.register_buffer("cos", torch.cat((f, f), -1).cos(), persistent=False)
            s.register_buffer("sin", torch.cat((f, f), -1).sin(), persistent=False)

    def rope(s, x, pos):
        cos, sin = s.cos[pos].unsqueeze(1), s.sin[pos].unsqueeze(1)
        if s.rot == s.d:
            return x * cos + rotate_half(x) * sin
        xr, xp = x[..., : s.rot], x[..., s.rot:]
        return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)

    def widen(s, x):
        b, kv, t, d = x.shape
        n = s.h // s.kv
        return x[:, :, None, :, :].expand(b, kv, n, t, d).reshape(b, kv * n, t, d)

    def forward(s, x, past_k=None, past_v=None):
        b, t, _ = x.shape
        q = s.q(x).view(b, t, s.h, s.d).transpose(1, 2)
        k = s.k(x).view(b, t, s.kv, s.d).transpose(1, 2)
        v = s.v(x).view(b, t, s.kv, s.d).transpose(1, 2)
        p = 0 if past_k is None else past_k.shape[2]
        if s.rot:
            pos = torch.arange(p, p + t).unsqueeze(0)
            q, k = s.rope(q, pos), s.rope(k, pos)
        if past_k is not None:
            k, v = torch.cat((past_k, k), dim=2), torch.cat((past_v, v), dim=2)
            s.present = (k, v)
        k, v = s.widen(k), s.widen(v)
        w = torch.matmul(q, k.transpose(2, 3))
        if s.scale:
            w = w / math.sqrt(s.d)
        if s.bias is not None:
            w = w + s.bias
        if s.causal == "triu":
            w = w + torch.full((t, t), float("-inf")).triu(1)[None, None]
        elif s.causal == "masked_fill":
            keep = torch.ones(t, t, dtype=torch.bool).tril()
            w = w.masked_fill(~keep, torch.finfo(w.dtype).min)
        p = torch.softmax(w.float(), dim=-1).to(q.dtype)
        return s.o(torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1))


def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJ(nn.Module):
    """GPT-J's self-attention as Hugging Face writes it: interleaved rotary embeddings
    (rotate_every_two, sin and cos repeat_interleave'd) over the first `rot` dims of each head,
    applied to [B, S, H, D] before the heads are permuted; causal by torch.where."""

    def __init__(s, e, h, rot):
        super().__init__()
        s.h, s.d, s.rot = h, e // h, rot
        s.q, s.k, s.v = (nn.Linear(e, e, bias=False) for _ in range(3))
        s.o = nn.Linear(e, e, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        f = torch.outer(torch.arange(64).float(), inv)
        s.register_buffer("sincos", torch.cat((f.sin(), f.cos()), dim=1), persistent=False)

    def rope(s, x, sin, cos):
        xr, xp = x[:, :, :, : s.rot], x[:, :, :, s.rot:]
        return torch.cat([xr * cos + rotate_every_two(xr) * sin, xp], dim=-1)

    def forward(s, x):
        b, t, e = x.shape
        q = s.q(x).view(b, t, s.h, s.d)
        k = s.k(x).view(b, t, s.h, s.d)
        v = s.v(x).view(b, t, s.h, s.d).permute(0, 2, 1, 3)
        sc = s.sincos[torch.arange(t)].unsqueeze(0)
        sin, cos = torch.split(sc, sc.shape[-1] // 2, dim=-1)
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        q = s.rope(q, sin, cos).permute(0, 2, 1, 3)
        k = s.rope(k, sin, cos).permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2))
        keep = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
        w = torch.where(keep, w, torch.tensor(torch.finfo(w.dtype).min)) / math.sqrt(s.d)
        p = torch.softmax(w, dim=-1)
        return s.o(torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b, t, e))


class DecodeStep(Decoder):
    """One decode step of Decoder with a KV cache: x [B, 1, E] at position P, past K and V
    [B, kv, P, D]; the output and both present caches, flattened into one."""

    def forward(s, x, past_k, past_v):
        y = super().forward(x, past_k, past_v)
        return torch.cat([y.flatten(), s.present[0].flatten(), s.present[1].flatten()])


def decode_in(e, kv, d, p):
    def make():
        return {"x": torch.randn(B, 1, e), "past_k": torch.randn(B, kv, p, d),
                "past_v": torch.randn(B, kv, p, d)}
    return make


def x_in(e, t, seq_first=False):
    def make():
        x = torch.randn(B, t, e)
        return {"x": x.transpose(0, 1).contiguous() if seq_first else x}
    return make


def bert_in(e, t):
    def make():
        m = torch.ones(B, t, dtype=torch.int64)
        m[1, t - 3:] = 0
        return {"x": torch.randn(B, t, e), "attention_mask": m}
    return make


def kpm_in(e, t):
    def make():
        m = torch.zeros(B, t, dtype=torch.bool)
        m[1, t - 2:] = True
        return {"x": torch.randn(B, t, e), "key_padding_mask": m}
    return make


ATT = "AttentionFusionPass"
QKV = "QKVProjectionFusionPass"
MHA_OP = {"op": "MultiHeadAttention"}
# name, module, inputs, opset, {pass: min effect_times}, expected MultiHeadAttention attrs (None:
# the attention is not fused; AttentionFusionPass must report it declined)
CASES = [
    ("bert_op13", BertSelfAttention(32, 4), bert_in(32, 7), 13, {ATT: 1, QKV: 1},
     {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 1 / math.sqrt(8)}),
    ("bert_op14", BertSelfAttention(64, 2), bert_in(64, 16), 14, {ATT: 1, QKV: 1},
     {"num_heads": 2, "causal": 0, "qkv_packed": 1, "scale": 1 / math.sqrt(32)}),
    ("gpt2_where_op13", GPT2Attention(48, 3, False), x_in(48, 9), 13, {ATT: 1},
     {"num_heads": 3, "causal": 1, "qkv_packed": 1, "scale": 1 / 4.0}),
    ("gpt2_where_op14", GPT2Attention(32, 2, False), x_in(32, 16), 14, {ATT: 1},
     {"num_heads": 2, "causal": 1, "qkv_packed": 1, "scale": 1 / 4.0}),
    ("gpt2_masked_fill_op14", GPT2Attention(32, 4, True), x_in(32, 11), 14, {ATT: 1},
     {"num_heads": 4, "causal": 1, "qkv_packed": 1, "scale": 1 / math.sqrt(8)}),
    ("mha_batch_first_op14", MHA(32, 4, True, False), x_in(32, 7), 14, {ATT: 1},
     {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 1 / math.sqrt(8)}),
    ("mha_seq_first_op13", MHA(32, 2, False, False), x_in(32, 9, True), 13, {ATT: 1},
     {"num_heads": 2, "causal": 0, "qkv_packed": 1, "scale": 1 / 4.0}),
    ("mha_key_padding_op14", MHA(32, 4, True, True), kpm_in(32, 7), 14, {ATT: 1},
     {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 1 / math.sqrt(8)}),
    ("sdpa_op13", SDPA(32, 4, False), x_in(32, 8), 13, {ATT: 1},
     {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 1 / math.sqrt(8)}),
    # torch.tril exports from opset 14.
    ("sdpa_causal_op14", SDPA(64, 4, True), x_in(64, 12), 14, {ATT: 1},
     {"num_heads": 4, "causal": 1, "qkv_packed": 1, "scale": 1 / 4.0}),
    # Decoders: grouped- and multi-query K/V, rotary embeddings (full, partial), no scale.
    ("llama_gqa_op14", Decoder(64, 4, 2, 16), x_in(64, 9), 14, {ATT: 1, QKV: 1},
     {"num_heads": 4, "kv_num_heads": 2, "causal": 1, "qkv_packed": 1, "scale": 0.25}),
    ("mistral_gqa_op14", Decoder(64, 8, 2, 8, "masked_fill"), x_in(64, 9), 14, {ATT: 1, QKV: 1},
     {"num_heads": 8, "kv_num_heads": 2, "causal": 1, "qkv_packed": 1,
      "scale": 1 / math.sqrt(8)}),
    ("mqa_op14", Decoder(64, 4, 1, 16), x_in(64, 9), 14, {ATT: 1, QKV: 1},
     {"num_heads": 4, "kv_num_heads": 1, "causal": 1, "qkv_packed": 1, "scale": 0.25}),
    ("neox_partial_rotary_op14", Decoder(64, 4, 4, 4), x_in(64, 9), 14, {ATT: 1, QKV: 1},
     {"num_heads": 4, "causal": 1, "qkv_packed": 1, "scale": 0.25}),
    ("llama_decode_step_op14", DecodeStep(64, 4, 2, 16, None), decode_in(64, 2, 16, 11), 14,
     {ATT: 1, QKV: 1},
     {"num_heads": 4, "kv_num_heads": 2, "causal": 0, "qkv_packed": 1, "scale": 0.25}),
    ("mha_decode_step_op14", DecodeStep(64, 4, 4, 8, None), decode_in(64, 4, 16, 5), 14,
     {ATT: 1, QKV: 1}, {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 0.25}),
    ("gptj_interleaved_rotary_op14", GPTJ(64, 4, 8), x_in(64, 9), 14, {ATT: 1, QKV: 1},
     {"num_heads": 4, "causal": 1, "qkv_packed": 1, "scale": 0.25, "rotary_interleaved": 1}),
    ("t5_no_scale_bias_op14", Decoder(64, 4, 4, 0, None, False, True), x_in(64, 9), 14,
     {ATT: 1, QKV: 1}, {"num_heads": 4, "causal": 0, "qkv_packed": 1, "scale": 1.0}),
]


def check(nnfuse, tmp, name, module, make_inputs, opset, passes, attrs):
    module = module.eval()
    inputs = make_inputs()
    path = os.path.join(tmp, name + ".onnx")
    want = vc.export(module, inputs, path, opset, grad=True)
    feeds = vc.save_feeds(tmp, name, {k: v.numpy() for k, v in inputs.items()})
    out, rep, errors = vc.compile_model(nnfuse, tmp, name, path, passes)
    if rep is None:
        return errors
    rejected = [r["reason"] for r in rep["graph_fusion"].get(ATT, {}).get("rejected", [])]
    att = rep["graph_fusion"].get(ATT, {})
    fused = onnx.load(out)
    ops = [n.op_type for n in fused.graph.node]
    hits = [n for n in fused.graph.node
            if n.op_type == "MultiHeadAttention" and n.domain == "ai.nnfuse"]
    note = ""
    if attrs is not None:
        if len(hits) != 1:
            errors.append("expected one MultiHeadAttention, got %d; nodes: %s" % (len(hits), ops))
        else:
            errors += vc.attr_errors(hits[0], attrs, missing=0)
        if "Softmax" in ops:
            errors.append("a Softmax is left over: %s" % ops)
    else:
        # Not fused: the attention must be matched and declined with a reason.
        if hits or att.get("effect_times", 0) != 0:
            errors.append("expected no MultiHeadAttention; nodes: %s" % ops)
        if not rejected:
            errors.append("%s did not report the attention it declined" % ATT)
        note = " (not fused: %s)" % "; ".join(rejected)

    return errors + vc.run_and_verify(nnfuse, path, out, feeds, want), note


if __name__ == "__main__":
    sys.exit(vc.main(__doc__, CASES, check, "attention models"))
