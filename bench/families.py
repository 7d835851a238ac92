"""The model families bench/sweep_families.py exports (random weights, eval mode): shapes known
only at run time (mixture-of-experts routing, masked selection, a detector's score filtering and
NMS), an export whose ops fuse into one (ConvNeXt-V2's GRN, ReduceL2 and all), and control flow
(a scripted greedy-decoding Loop with a growing KV cache, an If-gated block).

Each entry of FAMILIES builds (module, inputs, how) where `how` is "trace" or "script" (the
control flow is kept only by scripting). Companions measure what a family's mechanism costs:
  moe_*:      "<name>_dense", the same experts run on static slices of the routed token counts
              (no routing), for the routing overhead;
  greedy_loop: "greedy_step", one decoding step (the Loop's body) as a model of its own at the
              middle KV length, for the per-step overhead of the Loop.
Imported only by the export subprocess (it needs torch)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "models"))
from response_norm import GRN  # noqa: E402  (ConvNeXt-V2's GRN, channels last)

D, H, E, T = 256, 512, 8, 128   # model dim, expert hidden dim, experts, tokens


class Experts(nn.Module):
    """E SwiGLU experts: w2(silu(w1 x) * w3 x)."""

    def __init__(s):
        super().__init__()
        s.w1 = nn.ModuleList(nn.Linear(D, H, bias=False) for _ in range(E))
        s.w3 = nn.ModuleList(nn.Linear(D, H, bias=False) for _ in range(E))
        s.w2 = nn.ModuleList(nn.Linear(H, D, bias=False) for _ in range(E))

    def expert(s, i, x):
        return s.w2[i](F.silu(s.w1[i](x)) * s.w3[i](x))


class MoE(nn.Module):
    """Token routing to the top-k experts. `combine`: "index_add" (Switch and Mixtral as written
    in their reference code: each expert's tokens by nonzero, its outputs summed back with
    index_add) or "scatter" (tokens gathered with index_select, outputs scattered with
    scatter_add)."""

    def __init__(s, k, combine):
        super().__init__()
        s.k, s.combine = k, combine
        s.gate = nn.Linear(D, E, bias=False)
        s.experts = Experts()

    def routing(s, x):
        probs = F.softmax(s.gate(x), -1)
        w, idx = torch.topk(probs, s.k, dim=-1)
        if s.k > 1:
            w = w / w.sum(-1, keepdim=True)
        return w, idx

    def forward(s, x):
        b, t, d = x.shape
        x = x.reshape(-1, d)
        w, idx = s.routing(x)
        out = torch.zeros_like(x)
        for i in range(E):
            tok, slot = torch.nonzero(idx == i, as_tuple=True)
            if s.combine == "index_add":
                y = s.experts.expert(i, x[tok]) * w[tok, slot].unsqueeze(-1)
                out = out.index_add(0, tok, y)
            else:
                y = s.experts.expert(i, torch.index_select(x, 0, tok))
                y = y * w[tok, slot].unsqueeze(-1)
                out = out.scatter_add(0, tok.unsqueeze(-1).expand(-1, d), y)
        return out.reshape(b, t, d)


class DenseExperts(nn.Module):
    """The experts of `moe` over the first counts[i] tokens each (static slices): the expert
    work of the routed layer without its routing."""

    def __init__(s, moe, counts):
        super().__init__()
        s.experts, s.counts = moe.experts, [int(c) for c in counts]

    def forward(s, x):
        x = x.reshape(-1, D)
        out = torch.zeros_like(x)
        for i, c in enumerate(s.counts):
            if c:
                out = out + F.pad(s.experts.expert(i, x[:c]), (0, 0, 0, x.shape[0] - c))
        return out.reshape(1, -1, D)


def routed_counts(moe, x):
    with torch.no_grad():
        _, idx = moe.routing(x.reshape(-1, D))
    return [int((idx == i).sum()) for i in range(E)]


class MaskedMLP(nn.Module):
    """The rows whose gate score is positive (x[mask]) through a GELU MLP, added back in place."""

    def __init__(s):
        super().__init__()
        s.score = nn.Linear(D, 1)
        s.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        s.norm = nn.LayerNorm(D)

    def forward(s, x):
        x = x.reshape(-1, D)
        keep = torch.nonzero(s.score(x).squeeze(-1) > 0).squeeze(-1)
        y = s.mlp(s.norm(x[keep]))
        return x.index_add(0, keep, y)


class Block2(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        s.norm = nn.LayerNorm(c, eps=1e-6)
        s.pw1 = nn.Linear(c, 4 * c)
        s.grn = GRN(4 * c)
        s.pw2 = nn.Linear(4 * c, c)

    def forward(s, x):
        y = s.dw(x).permute(0, 2, 3, 1)
        y = s.pw2(s.grn(F.gelu(s.pw1(s.norm(y)))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtV2(nn.Module):
    """A ConvNeXt-V2 (atto-like widths 40-80-160-320, one block a stage) classifier."""

    def __init__(s, dims=(40, 80, 160, 320)):
        super().__init__()
        layers = [nn.Conv2d(3, dims[0], 4, stride=4)]
        for i, c in enumerate(dims):
            if i:
                layers += [nn.Conv2d(dims[i - 1], c, 2, stride=2)]
            layers += [Block2(c)]
        s.features = nn.Sequential(*layers)
        s.head = nn.Linear(dims[-1], 1000)

    def forward(s, x):
        return s.head(s.features(x).mean((2, 3)))


class DetectPost(nn.Module):
    """A detector's post-processing: the boxes whose best class score passes a threshold, NMS over
    them, and a box head (an MLP) over the features of the boxes kept."""

    def __init__(s):
        super().__init__()
        s.head = nn.Sequential(nn.Linear(D, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                               nn.Linear(1024, 4 + 21))

    def forward(s, boxes, scores, feats):
        import torchvision
        best = scores.max(-1).values
        keep = torch.nonzero(best > 0.5).squeeze(-1)
        b, sc, f = boxes[keep], best[keep], feats[keep]
        kept = torchvision.ops.nms(b, sc, 0.5)
        out = s.head(f[kept])
        return b[kept] + out[:, :4], out[:, 4:]


class Decoder(nn.Module):
    """One pre-norm decoder layer with a KV cache, tied embedding head."""

    def __init__(s, vocab=512, d=128, heads=4):
        super().__init__()
        s.d, s.heads = d, heads
        s.emb = nn.Embedding(vocab, d)
        s.norm1 = nn.LayerNorm(d)
        s.qkv = nn.Linear(d, 3 * d)
        s.proj = nn.Linear(d, d)
        s.norm2 = nn.LayerNorm(d)
        s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        s.out = nn.Linear(d, vocab)

    def step(s, h, k_cache, v_cache):
        # h [1, d]: the newest token's state; caches [heads, L, d/heads]
        q, k, v = s.qkv(s.norm1(h)).chunk(3, -1)
        dh = s.d // s.heads
        q = q.reshape(s.heads, 1, dh)
        k_cache = torch.cat([k_cache, k.reshape(s.heads, 1, dh)], 1)
        v_cache = torch.cat([v_cache, v.reshape(s.heads, 1, dh)], 1)
        a = torch.softmax(torch.matmul(q, k_cache.transpose(1, 2)) / (dh ** 0.5), -1)
        h = h + s.proj(torch.matmul(a, v_cache).reshape(1, s.d))
        h = h + s.ff(s.norm2(h))
        return h, k_cache, v_cache


class GreedyLoop(nn.Module):
    """Greedy decoding (scripted: exported as a Loop), twice as many steps as the prompt's cached
    positions (32 for the 16 given): each step attends over a KV cache that grows by one position,
    picks the argmax token and embeds it as the next input."""

    def __init__(s):
        super().__init__()
        s.dec = Decoder()

    def forward(s, h, k_cache, v_cache):
        tokens = torch.zeros(0, dtype=torch.long)
        for _ in range(2 * k_cache.shape[1]):
            y, k_cache, v_cache = s.dec.step(h, k_cache, v_cache)
            tok = torch.argmax(s.dec.out(y), -1)
            tokens = torch.cat([tokens, tok], 0)
            h = s.dec.emb(tok)
        return tokens, h, k_cache


class GreedyStep(nn.Module):
    """One step of GreedyLoop's body, as a model of its own."""

    def __init__(s, loop):
        super().__init__()
        s.dec = loop.dec

    def forward(s, h, k_cache, v_cache):
        y, k_cache, v_cache = s.dec.step(h, k_cache, v_cache)
        tok = torch.argmax(s.dec.out(y), -1)
        return s.dec.emb(tok), k_cache, v_cache


class Gated(nn.Module):
    """An If-gated block (scripted): a GELU MLP when the input's mean is positive, else a
    LayerNorm and a SiLU MLP."""

    def __init__(s):
        super().__init__()
        s.a = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        s.b = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.SiLU(), nn.Linear(2 * D, D))

    def forward(s, x):
        if bool(x.mean() > 0):
            y = s.a(x)
        else:
            y = s.b(x)
        return x + y


def kv(L):
    return torch.randn(4, L, 32), torch.randn(4, L, 32)


def build(name):
    """(module, {input name: tensor}, "trace" or "script"); companions included."""
    torch.manual_seed(0)
    x = torch.randn(1, T, D)
    if name in ("moe_switch", "moe_mixtral", "moe_scatter"):
        k = 1 if name == "moe_switch" else 2
        return MoE(k, "scatter" if name == "moe_scatter" else "index_add").eval(), {"x": x}, "trace"
    if name.endswith("_dense") and name[:-6] in ("moe_switch", "moe_mixtral", "moe_scatter"):
        moe, ins, _ = build(name[:-6])
        return DenseExperts(moe, routed_counts(moe, ins["x"])).eval(), ins, "trace"
    if name == "masked_mlp":
        return MaskedMLP().eval(), {"x": x}, "trace"
    if name == "convnext_v2":
        return ConvNeXtV2().eval(), {"x": torch.randn(1, 3, 224, 224)}, "trace"
    if name == "detect_post":
        n = 1000
        xy = torch.rand(n, 2) * 300
        boxes = torch.cat([xy, xy + 10 + torch.rand(n, 2) * 60], 1)
        return (DetectPost().eval(),
                {"boxes": boxes, "scores": torch.rand(n, 21), "feats": torch.randn(n, D)}, "trace")
    if name == "greedy_loop":
        kc, vc = kv(16)
        return GreedyLoop().eval(), {"h": torch.randn(1, 128), "k_cache": kc, "v_cache": vc}, "script"
    if name == "greedy_step":
        loop, _, _ = build("greedy_loop")
        kc, vc = kv(32)
        return GreedyStep(loop).eval(), {"h": torch.randn(1, 128), "k_cache": kc, "v_cache": vc}, "trace"
    if name == "if_gated":
        return Gated().eval(), {"x": x + 0.05}, "script"
    raise KeyError(name)


FAMILIES = ["moe_switch", "moe_mixtral", "moe_scatter", "masked_mlp", "convnext_v2", "detect_post",
            "greedy_loop", "if_gated"]
COMPANIONS = {"moe_switch": "moe_switch_dense", "moe_mixtral": "moe_mixtral_dense",
              "moe_scatter": "moe_scatter_dense", "greedy_loop": "greedy_step"}
