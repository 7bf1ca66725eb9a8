# scripts/golden/gpt_layers.py: PyTorch goldens of the LLaMA-style pieces of the GPT, for
# tests/ops/test_silu.cpp, tests/ops/test_rms_norm.cpp, tests/ops/test_rotary.cpp and
# tests/nn/test_swiglu.cpp.
#
# PyTorch 1.13 (Debian's python3-torch) has F.silu but no RMSNorm, no SwiGLU and no rotary
# embedding, so each is written out below from its definition, in float32:
#   rms_norm   y = x * rsqrt(mean(x^2, last dim) + eps) * weight, LLaMA's RMSNorm; eps None means
#              torch.finfo(float32).eps, PyTorch 2.4's nn.RMSNorm default
#   swiglu     y = w2(silu(w1(x)) * w3(x)), LLaMA's FeedForward (no biases)
#   rope       the RoFormer paper's rotation of interleaved pairs (2p, 2p+1) by pos * theta_p,
#              theta_p = base^(-2p / head_dim), angles in float64 then stored float32, applied to
#              the q and k thirds of a packed qkv (B, T, 3C) per head, v unchanged
# Every gradient is d(sum(g * y))/d(input) for a random g, by autograd.
#
# Run by hand (the tests never need PyTorch); it prints C++ initialiser lists to paste:
#     /usr/bin/python3 scripts/golden/gpt_layers.py
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
print("// torch", torch.__version__)


def literal(v):  # a C++ float literal that rounds to v: "0.5f", "-90.0f", "1e-05f"
    text = "%.9g" % v
    return text + (".0f" if text.lstrip("-").isdigit() else "f")


def cpp(name, t):
    values = ", ".join(literal(v) for v in t.detach().reshape(-1).tolist())
    print("const std::vector<float> %s = {%s};  // %s" % (name, values, tuple(t.shape)))


# ---- silu -----------------------------------------------------------------------------------------
x = torch.cat([torch.tensor([-90.0, -20.0, -5.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 5.0, 20.0]), torch.randn(10) * 3])
g = torch.randn(20)
xr = x.clone().requires_grad_(True)
y = F.silu(xr)
(y * g).sum().backward()
print("// silu")
cpp("x", x), cpp("g", g), cpp("y", y), cpp("dx", xr.grad)


# ---- rms_norm -------------------------------------------------------------------------------------
def rms_norm(x, weight, eps):
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


for case, scale, eps in (("a", 1.0, None), ("b", 1e-3, 1e-5), ("c", 1e-3, None)):
    x = (torch.randn(2, 5) * scale).requires_grad_(True)
    w = (1.0 + 0.5 * torch.randn(5)).requires_grad_(True)
    g = torch.randn(2, 5)
    y = rms_norm(x, w, eps)
    (y * g).sum().backward()
    print("// rms_norm %s: x * %g, eps %s" % (case, scale, eps))
    cpp("x", x), cpp("w", w), cpp("g", g), cpp("y", y), cpp("dx", x.grad), cpp("dw", w.grad)

# ---- swiglu ---------------------------------------------------------------------------------------
x = torch.randn(2, 4, requires_grad=True)
w1 = (torch.randn(3, 4) * 0.5).requires_grad_(True)
w2 = (torch.randn(4, 3) * 0.5).requires_grad_(True)
w3 = (torch.randn(3, 4) * 0.5).requires_grad_(True)
g = torch.randn(2, 4)
y = F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)
(y * g).sum().backward()
print("// swiglu: in 4, hidden 3, out 4, no bias")
for name, t in (("x", x), ("w1", w1), ("w2", w2), ("w3", w3), ("g", g), ("y", y), ("dx", x.grad),
                ("dw1", w1.grad), ("dw2", w2.grad), ("dw3", w3.grad)):
    cpp(name, t)


# ---- rope -----------------------------------------------------------------------------------------
def rope_tables(head_dim, max_len, base):
    theta = torch.tensor([base ** (-2.0 * p / head_dim) for p in range(head_dim // 2)], dtype=torch.float64)
    angle = torch.arange(max_len, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(angle).float(), torch.sin(angle).float()


def rope(x, cos, sin, offset):  # x (B, T, n_head, head_dim)
    T = x.shape[1]
    c, s = cos[offset:offset + T][None, :, None, :], sin[offset:offset + T][None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


B, T, H, D, offset, max_len = 1, 2, 2, 4, 3, 6
C = H * D
cos, sin = rope_tables(D, max_len, 10000.0)
qkv = torch.randn(B, T, 3 * C, requires_grad=True)
g = torch.randn(B, T, 3 * C)
q, k, v = qkv.split(C, dim=2)
y = torch.cat([rope(q.view(B, T, H, D), cos, sin, offset).reshape(B, T, C),
               rope(k.view(B, T, H, D), cos, sin, offset).reshape(B, T, C), v], dim=2)
(y * g).sum().backward()
print("// rope: qkv (1, 2, 24), 2 heads of head_dim 4, offset 3, tables of 6 positions, base 10000")
cpp("cos", cos), cpp("sin", sin), cpp("qkv", qkv), cpp("g", g), cpp("y", y), cpp("dqkv", qkv.grad)


# ---- a tiny GPT with all three: RMSNorm, SwiGLU, RoPE ---------------------------------------------
# The GPT of tests/transformer/test_gpt_choices_parity.cpp, nanoGPT's structure with tapegrad's
# names for the new pieces (mlp.swiglu.w1 ...), written to
# tests/transformer/fixtures/gpt_choices_parity.safetensors: "param.<key>" every parameter (the
# tied table once), idx and targets (2, 7) I64 (one target 0, not scored), logits (2, 7, 11),
# loss (), "grad.<key>" the gradients. vocab 11, block 8, 2 layers, 2 heads, n_embd 12, eval mode.
import json  # noqa: E402
import os  # noqa: E402
import struct  # noqa: E402

import torch.nn as nn  # noqa: E402


def write_safetensors(path, tensors):  # a plain writer of the format, tensors sorted by name
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(C)), eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class SwiGLU(nn.Module):
    def __init__(self, C, hidden):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(C, hidden), nn.Linear(hidden, C), nn.Linear(C, hidden)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Attention(nn.Module):
    def __init__(self, C, H, block):
        super().__init__()
        self.c_attn, self.c_proj, self.H = nn.Linear(C, 3 * C), nn.Linear(C, C), H
        self.cos, self.sin = rope_tables(C // H, block, 10000.0)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.H, C // self.H
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = rope(q.view(B, T, H, D), self.cos, self.sin, 0).transpose(1, 2)
        k = rope(k.view(B, T, H, D), self.cos, self.sin, 0).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(torch.tril(torch.ones(T, T)).view(1, 1, T, T) == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, C, H, block):
        super().__init__()
        self.ln_1, self.attn = RMSNorm(C, 1e-5), Attention(C, H, block)
        self.ln_2, self.mlp = RMSNorm(C, 1e-5), nn.Module()
        self.mlp.swiglu = SwiGLU(C, 2 * (4 * C) // 3)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.swiglu(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, V, block, L, H, C):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C),
                                              h=nn.ModuleList([Block(C, H, block) for _ in range(L)]),
                                              ln_f=RMSNorm(C, 1e-5)))

    def forward(self, idx):
        x = self.transformer.wte(idx)
        for block in self.transformer.h:
            x = block(x)
        return self.transformer.ln_f(x) @ self.transformer.wte.weight.t()   # the tied head


model = TinyGPT(11, 8, 2, 2, 12)
with torch.no_grad():   # non-trivial norms and biases, so their gradients are tested too
    for name, p in model.named_parameters():
        if "ln_" in name or name.endswith("bias"):
            p.add_(0.1 * torch.randn_like(p))
idx = torch.tensor([[1, 4, 2, 9, 3, 10, 5], [7, 7, 5, 0, 8, 6, 2]])
targets = torch.tensor([[4, 2, 9, 3, 10, 5, 1], [7, 5, 0, 8, 6, 2, 3]])   # one <unk> (0) target: not scored
logits = model(idx)
loss = F.cross_entropy(logits.view(-1, 11), targets.view(-1), ignore_index=0)
loss.backward()
out = {"idx": idx, "targets": targets, "logits": logits, "loss": loss.reshape(())}
for name, p in model.named_parameters():
    out["param." + name], out["grad." + name] = p, p.grad
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "nn", "transformer",
                    "fixtures", "gpt_choices_parity.safetensors")
write_safetensors(path, out)
print("// wrote", os.path.normpath(path), os.path.getsize(path), "bytes,", len(out), "tensors")
