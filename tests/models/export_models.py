#!/usr/bin/env python3
"""Exports real model architectures (torchvision, and a BERT written out with the same op
structure as Hugging Face BertModel) to ONNX with random but realistic weights, using Debian's
python3-torch, and saves PyTorch's own outputs beside each model as the oracle.

Usage: /usr/bin/python3 export_models.py OUTDIR [name ...]
"""
import math, os, sys
import torch, torch.nn as nn, torchvision

torch.manual_seed(0)


def wake_dead_params(m):
    """Random init leaves some parameters zero (ViT's head) or tiny (ConvNeXt's layer scale 1e-6):
    then whole blocks barely reach the output and a wrong kernel there would go unnoticed."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.numel() and float(p.abs().max()) < 1e-4:
                if "layer_scale" in name:
                    p.uniform_(0.1, 0.3)
                elif p.dim() >= 2:
                    p.normal_(0, 0.02)
    return m


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            with torch.no_grad():
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return m


# ---------- HF-style BERT written out by hand (same op structure as BertModel) ----------
class BertSelfAttention(nn.Module):
    def __init__(s, h, nh):
        super().__init__(); s.nh, s.dh = nh, h // nh
        s.query, s.key, s.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def split(s, x):
        b, t, _ = x.shape
        return x.view(b, t, s.nh, s.dh).permute(0, 2, 1, 3)

    def forward(s, x, mask):
        q, k, v = s.split(s.query(x)), s.split(s.key(x)), s.split(s.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(s.dh) + mask
        p = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)


class BertLayer(nn.Module):
    def __init__(s, h, nh, inter):
        super().__init__()
        s.attn = BertSelfAttention(h, nh)
        s.attn_out, s.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=1e-12)
        s.inter, s.out, s.ln2 = nn.Linear(h, inter), nn.Linear(inter, h), nn.LayerNorm(h, eps=1e-12)

    def forward(s, x, mask):
        x = s.ln1(s.attn_out(s.attn(x, mask)) + x)
        return s.ln2(s.out(nn.functional.gelu(s.inter(x))) + x)


class Bert(nn.Module):
    def __init__(s, layers=12, h=768, nh=12, inter=3072, vocab=30522, maxpos=512):
        super().__init__()
        s.word, s.pos, s.tok = nn.Embedding(vocab, h), nn.Embedding(maxpos, h), nn.Embedding(2, h)
        s.ln = nn.LayerNorm(h, eps=1e-12)
        s.layers = nn.ModuleList([BertLayer(h, nh, inter) for _ in range(layers)])
        s.pool = nn.Linear(h, h)

    def forward(s, input_ids, attention_mask, token_type_ids):
        t = input_ids.shape[1]
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = s.ln(s.word(input_ids) + s.pos(pos) + s.tok(token_type_ids))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for l in s.layers:
            x = l(x, mask)
        return x, torch.tanh(s.pool(x[:, 0]))


# ---------- an MLP of activations no library fuses (automatic fusion's territory) ----------
class ActMLP(nn.Module):
    """Linear layers with Mish and a per-feature Swish (x * sigmoid(beta * x)) between them, and
    a temperature softmax written out: chains that only generated kernels fuse."""

    def __init__(s, d=1024, layers=4):
        super().__init__()
        s.fc = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        s.beta = nn.Parameter(torch.rand(d) + 0.5)

    def forward(s, x):
        for i, fc in enumerate(s.fc):
            x = fc(x)
            if i % 2 == 0:
                x = x * torch.tanh(nn.functional.softplus(x))
            else:
                x = x * torch.sigmoid(s.beta * x)
        t = x / 0.7
        e = torch.exp(t - t.max(dim=-1, keepdim=True).values)
        return e / e.sum(dim=-1, keepdim=True)


# ---------- gated FFN stacks: the seed's GeGLU blocks and LLaMA's SwiGLU MLPs ----------
class RMSNorm(nn.Module):
    def __init__(s, d, eps=1e-6):
        super().__init__()
        s.w, s.eps = nn.Parameter(torch.rand(d) + 0.5), eps

    def forward(s, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps) * s.w


class GatedFFNStack(nn.Module):
    """`layers` pre-norm residual blocks x + down(act(n(x) W1 [+ b1]) * (n(x) W2 [+ b2])):
    GeGLU with LayerNorm and biases (`swiglu` False), or LLaMA's RMSNorm and bias-free SwiGLU."""

    def __init__(s, d=512, inter=1376, layers=4, swiglu=False):
        super().__init__()
        b = not swiglu
        s.swiglu = swiglu
        s.norm = nn.ModuleList(RMSNorm(d) if swiglu else nn.LayerNorm(d) for _ in range(layers))
        s.w1 = nn.ModuleList(nn.Linear(d, inter, bias=b) for _ in range(layers))
        s.w2 = nn.ModuleList(nn.Linear(d, inter, bias=b) for _ in range(layers))
        s.down = nn.ModuleList(nn.Linear(inter, d, bias=b) for _ in range(layers))

    def forward(s, x):
        for n, w1, w2, down in zip(s.norm, s.w1, s.w2, s.down):
            h = n(x)
            g = nn.functional.silu(w1(h)) if s.swiglu else nn.functional.gelu(w1(h))
            x = x + down(g * w2(h))
        return x


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    """Hugging Face LlamaAttention's op structure: bias-free projections, rotary embeddings
    (rotate-half, cos/sin tables indexed by position), grouped-query K/V widened by
    repeat_kv (Expand + Reshape), scaled scores plus a causal mask of -inf above the diagonal."""

    def __init__(s, d, heads, kv_heads, max_pos=2048, base=10000.0):
        super().__init__()
        s.h, s.kv, s.dh = heads, kv_heads, d // heads
        s.q = nn.Linear(d, d, bias=False)
        s.k = nn.Linear(d, kv_heads * s.dh, bias=False)
        s.v = nn.Linear(d, kv_heads * s.dh, bias=False)
        s.o = nn.Linear(d, d, bias=False)
        inv = 1.0 / (base ** (torch.arange(0, s.dh, 2).float() / s.dh))
        freqs = torch.outer(torch.arange(max_pos).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        s.register_buffer("cos", emb.cos(), persistent=False)
        s.register_buffer("sin", emb.sin(), persistent=False)

    def repeat_kv(s, x):
        b, kv, t, dh = x.shape
        n = s.h // s.kv
        return x[:, :, None, :, :].expand(b, kv, n, t, dh).reshape(b, kv * n, t, dh)

    def forward(s, x, pos, mask, past=None):
        b, t, _ = x.shape
        q = s.q(x).view(b, t, s.h, s.dh).transpose(1, 2)
        k = s.k(x).view(b, t, s.kv, s.dh).transpose(1, 2)
        v = s.v(x).view(b, t, s.kv, s.dh).transpose(1, 2)
        cos, sin = s.cos[pos].unsqueeze(1), s.sin[pos].unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:  # the KV cache: past [B, G, P, D] and the new keys and values
            k, v = torch.cat((past[0], k), dim=2), torch.cat((past[1], v), dim=2)
        present = (k, v)
        k, v = s.repeat_kv(k), s.repeat_kv(v)
        a = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(s.dh)
        if mask is not None:
            a = a + mask
        a = torch.softmax(a.float(), dim=-1).to(q.dtype)
        o = torch.matmul(a, v).transpose(1, 2).reshape(b, t, -1)
        return s.o(o), present


class Llama(nn.Module):
    """A LLaMA-style decoder (token embedding, pre-norm blocks of RMSNorm, grouped-query
    attention with rotary embeddings and SwiGLU, final RMSNorm, LM head), prefill of the whole
    prompt: input_ids [1, S], logits [1, S, vocab]."""

    def __init__(s, d=512, heads=8, kv_heads=2, inter=1376, layers=4, vocab=2048):
        super().__init__()
        s.embed = nn.Embedding(vocab, d)
        s.attn = nn.ModuleList(LlamaAttention(d, heads, kv_heads) for _ in range(layers))
        s.n1 = nn.ModuleList(RMSNorm(d) for _ in range(layers))
        s.n2 = nn.ModuleList(RMSNorm(d) for _ in range(layers))
        s.gate = nn.ModuleList(nn.Linear(d, inter, bias=False) for _ in range(layers))
        s.up = nn.ModuleList(nn.Linear(d, inter, bias=False) for _ in range(layers))
        s.down = nn.ModuleList(nn.Linear(inter, d, bias=False) for _ in range(layers))
        s.norm = RMSNorm(d)
        s.head = nn.Linear(d, vocab, bias=False)

    def forward(s, ids):
        t = ids.shape[1]
        pos = torch.arange(t).unsqueeze(0)
        mask = torch.full((t, t), float("-inf")).triu(1)[None, None]
        x = s.embed(ids)
        for i in range(len(s.attn)):
            x = x + s.attn[i](s.n1[i](x), pos, mask)[0]
            h = s.n2[i](x)
            x = x + s.down[i](nn.functional.silu(s.gate[i](h)) * s.up[i](h))
        return s.head(s.norm(x))


class LlamaDecode(Llama):
    """One decode step of Llama with a KV cache: the next token input_ids [1, 1] at position
    P, past_key_i and past_value_i [1, kv_heads, P, head_dim] per layer; logits [1, 1, vocab]
    and present_key_i, present_value_i [1, kv_heads, P + 1, head_dim] (past and the new)."""

    def forward(s, ids, *past):
        p = past[0].shape[2]
        pos = torch.arange(p, p + ids.shape[1]).unsqueeze(0)
        x = s.embed(ids)
        presents = []
        for i in range(len(s.attn)):
            a, present = s.attn[i](s.n1[i](x), pos, None, (past[2 * i], past[2 * i + 1]))
            presents += list(present)
            x = x + a
            h = s.n2[i](x)
            x = x + s.down[i](nn.functional.silu(s.gate[i](h)) * s.up[i](h))
        return (s.head(s.norm(x)), *presents)


# ---------- A diffusion UNet stage (the op structure of diffusers' UNet2DModel blocks) ----------
class ResBlock(nn.Module):
    """GroupNorm - SiLU - Conv, plus the time embedding projected to the channels, GroupNorm -
    SiLU - Conv, and the skip (a 1x1 Conv where the channels change) added."""

    def __init__(s, cin, cout, temb=512, groups=32):
        super().__init__()
        s.norm1, s.conv1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
        s.temb = nn.Linear(temb, cout)
        s.norm2, s.conv2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
        s.drop = nn.Dropout(0.1)
        s.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
        for gn in (s.norm1, s.norm2):
            with torch.no_grad():
                gn.weight.uniform_(0.5, 1.5); gn.bias.uniform_(-0.5, 0.5)

    def forward(s, x, temb):
        h = s.conv1(nn.functional.silu(s.norm1(x)))
        h = h + s.temb(nn.functional.silu(temb))[:, :, None, None]
        h = s.conv2(s.drop(nn.functional.silu(s.norm2(h))))
        return s.skip(x) + h


class SpatialAttention(nn.Module):
    """GroupNorm, then self-attention over the H*W positions (Linear Q, K, V over channels),
    the output projection and the residual."""

    def __init__(s, c, heads=4, groups=32):
        super().__init__()
        s.norm, s.heads = nn.GroupNorm(groups, c), heads
        s.q, s.k, s.v, s.out = (nn.Linear(c, c) for _ in range(4))

    def forward(s, x):
        b, c, hh, ww = x.shape
        h = s.norm(x).view(b, c, hh * ww).transpose(1, 2)
        def split(t):
            return t.view(b, hh * ww, s.heads, c // s.heads).transpose(1, 2)
        q, k, v = split(s.q(h)), split(s.k(h)), split(s.v(h))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c // s.heads), dim=-1)
        o = (p @ v).transpose(1, 2).reshape(b, hh * ww, c)
        return x + s.out(o).transpose(1, 2).reshape(b, c, hh, ww)


class UNetStage(nn.Module):
    """A down stage of a diffusion UNet: ResBlock (64 -> 128 channels), spatial attention,
    ResBlock (128 -> 128), at 32x32, with the timestep embedding input [1, 512]."""

    def __init__(s):
        super().__init__()
        s.res1, s.attn, s.res2 = ResBlock(64, 128), SpatialAttention(128), ResBlock(128, 128)

    def forward(s, x, temb):
        return s.res2(s.attn(s.res1(x, temb)), temb)


def decode_inputs(p, layers=4, kv_heads=2, dh=64):
    past = []
    names = ["input_ids"]
    for i in range(layers):
        past += [torch.randn(1, kv_heads, p, dh), torch.randn(1, kv_heads, p, dh)]
        names += ["past_key_%d" % i, "past_value_%d" % i]
    return (torch.randint(0, 2048, (1, 1)), *past), names


def img(n=1, c=3, hw=224):
    return (torch.randn(n, c, hw, hw),), ["input"]


def bert_inputs(b=1, t=128, vocab=30522):
    ids = torch.randint(0, vocab, (b, t))
    mask = torch.ones(b, t, dtype=torch.long); mask[:, t * 3 // 4:] = 0
    return (ids, mask, torch.zeros(b, t, dtype=torch.long)), ["input_ids", "attention_mask", "token_type_ids"]


# ---------- Audio: 1-D conv networks (channels-last NWC through the convs) ----------
class Wav2Vec2(nn.Module):
    """wav2vec 2.0's op structure, smaller: the conv feature extractor (7 Conv1d, the first
    with a per-channel GroupNorm, GELU after each; 320x downsampling of 16 kHz audio), the
    feature projection (LayerNorm, Linear), the grouped positional conv (kernel 128, 16 groups,
    one frame trimmed) added back, then post-norm transformer encoder layers."""

    def __init__(s, c=256, d=256, heads=4, ff=1024, layers=2):
        super().__init__()
        ks, st = (10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)
        s.convs = nn.ModuleList(nn.Conv1d(1 if i == 0 else c, c, k, t, bias=False)
                                for i, (k, t) in enumerate(zip(ks, st)))
        s.gn = nn.GroupNorm(c, c)
        s.ln, s.proj = nn.LayerNorm(c), nn.Linear(c, d)
        s.pos = nn.Conv1d(d, d, 128, padding=64, groups=16)
        s.enc_ln = nn.LayerNorm(d)
        s.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, heads, ff, 0.0, "gelu",
                                                            batch_first=True)
                                 for _ in range(layers))

    def forward(s, wav):
        x = wav
        for i, conv in enumerate(s.convs):
            x = conv(x)
            x = nn.functional.gelu(s.gn(x) if i == 0 else x)
        h = s.proj(s.ln(x.transpose(1, 2)))
        p = nn.functional.gelu(s.pos(h.transpose(1, 2))[:, :, :-1])
        h = s.enc_ln(h + p.transpose(1, 2))
        for layer in s.layers:
            h = layer(h)
        return h


class HiFiGAN(nn.Module):
    """A HiFi-GAN-style vocoder: a mel spectrogram [1, 80, T] to a waveform, through
    ConvTranspose1d upsampling (8x, 8x, 2x, 2x) each followed by a residual block of dilated
    Conv1d (dilations 1, 3, 5) with LeakyReLU, and tanh."""

    def __init__(s, mel=80, c=128):
        super().__init__()
        s.pre = nn.Conv1d(mel, c, 7, padding=3)
        s.ups, s.res = nn.ModuleList(), nn.ModuleList()
        for u in (8, 8, 2, 2):
            s.ups.append(nn.ConvTranspose1d(c, c // 2, 2 * u, u, padding=u // 2))
            c //= 2
            s.res.append(nn.ModuleList(nn.Conv1d(c, c, 3, padding=d, dilation=d) for d in (1, 3, 5)))
        s.post = nn.Conv1d(c, 1, 7, padding=3)

    def forward(s, m):
        x = s.pre(m)
        for up, res in zip(s.ups, s.res):
            x = up(nn.functional.leaky_relu(x, 0.1))
            for conv in res:
                x = x + conv(nn.functional.leaky_relu(x, 0.1))
        return torch.tanh(s.post(nn.functional.leaky_relu(x, 0.1)))


TV = torchvision.models
ZOO = {
    # name: (builder, inputs, opset, keep_bn)
    "resnet50": (lambda: TV.resnet50(), img, 13, True),
    "vgg16_bn": (lambda: TV.vgg16_bn(), img, 13, True),
    "mobilenet_v2": (lambda: TV.mobilenet_v2(), img, 13, True),
    "resnet18": (lambda: TV.resnet18(), img, 13, True),
    "bert_base": (lambda: Bert(), bert_inputs, 13, False),
    "bert_tiny": (lambda: Bert(layers=2, h=128, nh=2, inter=512), lambda: bert_inputs(1, 32), 13, False),
    "act_mlp": (lambda: ActMLP(), lambda: ((torch.randn(256, 1024),), ["x"]), 13, False),
    "mobilenet_v3_small": (lambda: TV.mobilenet_v3_small(), img, 14, True),
    "geglu_ffn_stack": (lambda: GatedFFNStack(), lambda: ((torch.randn(1, 128, 512),), ["x"]),
                        13, False),
    "swiglu_mlp_stack": (lambda: GatedFFNStack(swiglu=True),
                         lambda: ((torch.randn(1, 128, 512),), ["x"]), 13, False),
    "llama_prefill_128": (lambda: Llama(), lambda: ((torch.randint(0, 2048, (1, 128)),), ["input_ids"]),
                          14, False),
    "llama_prefill_512": (lambda: Llama(), lambda: ((torch.randint(0, 2048, (1, 512)),), ["input_ids"]),
                          14, False),
    "unet_stage": (lambda: UNetStage(), lambda: ((torch.randn(1, 64, 32, 32), torch.randn(1, 512)),
                                                 ["x", "temb"]), 14, False),
    "llama_decode_256": (lambda: LlamaDecode(), lambda: decode_inputs(256), 14, False),
    "llama_decode_1024": (lambda: LlamaDecode(), lambda: decode_inputs(1024), 14, False),
    "wav2vec2_small": (lambda: Wav2Vec2(), lambda: ((torch.randn(1, 1, 16000),), ["wav"]), 14,
                       False),
    "hifigan_small": (lambda: HiFiGAN(), lambda: ((torch.randn(1, 80, 64),), ["mel"]), 14, False),
    # Batch and sequence as symbolic dims, for benchmarks at other shapes (bench --shape).
    "bert_base_dyn": (lambda: Bert(), bert_inputs, 13, False),
    "bert_tiny_dyn": (lambda: Bert(layers=2, h=128, nh=2, inter=512), lambda: bert_inputs(1, 32),
                      13, False),
}
DYNAMIC = {m: {n: {0: "batch", 1: "sequence"} for n in ["input_ids", "attention_mask",
                                                         "token_type_ids"]}
           for m in ["bert_base_dyn", "bert_tiny_dyn"]}


def save_reference(m, args, names, outdir, name):
    """PyTorch's own outputs for the exported inputs: the oracle to compare against."""
    import numpy as np
    d = os.path.join(outdir, name + "_io"); os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        outs = m(*args)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    for n, a in zip(names, args):
        np.save(os.path.join(d, "in_" + n + ".npy"), a.numpy())
    for i, o in enumerate(outs):
        np.save(os.path.join(d, "out_%d.npy" % i), o.numpy())


def export(name, outdir):
    build, inputs, opset, keep_bn = ZOO[name]
    m = wake_dead_params(randomize_bn(build())).eval()
    args, names = inputs()
    save_reference(m, args, names, outdir, name)
    path = os.path.join(outdir, name + ".onnx")
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    # grad stays enabled: under no_grad, nn.MultiheadAttention takes a fast path torch can't export
    outs = None
    if name.startswith("llama_decode"):
        outs = ["logits"] + [n.replace("past", "present") for n in names[1:]]
    torch.onnx.export(m, args, path, input_names=names, output_names=outs, opset_version=opset,
                      training=mode, do_constant_folding=True, dynamic_axes=DYNAMIC.get(name))
    print(name, os.path.getsize(path) // (1 << 20), "MiB")


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n in sys.argv[2:] or ZOO:
        export(n, out)
