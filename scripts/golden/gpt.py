# scripts/golden/gpt.py: the PyTorch goldens of the GPT pieces, for
# tests/transformer/test_gpt_op_parity.cpp (GELU and the causal attention),
# tests/optim/test_adamw_groups.cpp and tests/transformer/test_gpt_parity.cpp.
#
# Run by hand with Debian's PyTorch (the tests never need it):
#     /usr/bin/python3 scripts/golden/gpt.py
# It writes tests/transformer/fixtures/gpt_parity.safetensors (a plain writer of the format, tensors sorted by
# name), float32 unless noted:
#   gelu.x, gelu.g                       inputs and an upstream gradient (33,)
#   gelu.{none,tanh}.y, .dx              F.gelu(x, approximate=...) and d(sum(g * y))/dx
#   attn.{a,b}.qkv, .r                   qkv (B, T, 3C) and a weighting r (B, T, C); a: B 2, T 5,
#                                        n_head 2, C 6; b: B 1, T 1, n_head 3, C 9 (a single position)
#   attn.{a,b}.y, .dqkv                  nanoGPT's attention written out (split, view, transpose,
#                                        (q k^T) * (1/sqrt(hs)), causal mask, softmax, @ v, transpose
#                                        back) and d(sum(r * y))/dqkv
#   adamw.w0, adamw.b0, adamw.gw, adamw.gb   a (3, 4) matrix and a (4,) bias and their gradients for
#                                        4 steps (4, 3, 4) and (4, 4); AdamW(lr 1e-2, betas (0.9, 0.99),
#                                        eps 1e-8) with groups [w: weight_decay 0.1] and [b: 0], under
#                                        LambdaLR(cosine_with_warmup(e, 1, 3, 0.1))
#   adamw.w, adamw.b, adamw.lr           the parameters after each step (4, 3, 4), (4, 4), the lr used (4,) F64
#   cosine.factor                        get_lr(it) / learning_rate for it = 0 .. 12, warm-up 3, lr_decay_iters
#                                        10, min_lr 0.1 * learning_rate (F64), computed by nanoGPT's formula
#   gpt.{learned,sinusoidal}.*           a tiny GPT of bench/gpt_torch.py (vocab 11, block 8, 2 layers,
#                                        2 heads, n_embd 12; "sinusoidal" also with the tanh GELU) in eval
#                                        mode: "param.<key>" every parameter (the tied table once, under
#                                        transformer.wte...), idx and targets (2, 7) I64 (one target 0,
#                                        not scored), logits (2, 7, 11), loss (), "grad.<key>" gradients.
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpt_torch  # noqa: E402  (the twin's model: the fixture checks both sides compute the same function)

OUT = os.path.join(ROOT, "tests", "nn", "transformer", "fixtures", "gpt_parity.safetensors")


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dtype = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


torch.manual_seed(0)
out = {}

# ---- gelu --------------------------------------------------------------------------------------
x = torch.cat([torch.tensor([-8.0, -5.0, -3.0, -2.0, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0]),
               torch.randn(18) * 2])
g = torch.randn(33)
out["gelu.x"], out["gelu.g"] = x, g
for form in ("none", "tanh"):
    xr = x.clone().requires_grad_(True)
    y = F.gelu(xr, approximate=form)
    (y * g).sum().backward()
    out[f"gelu.{form}.y"], out[f"gelu.{form}.dx"] = y, xr.grad


# ---- causal attention ----------------------------------------------------------------------------
def attention(qkv, n_head):
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = qkv.split(C, dim=2)
    q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(torch.tril(torch.ones(T, T)).view(1, 1, T, T) == 0, float("-inf"))
    y = F.softmax(att, dim=-1) @ v
    return y.transpose(1, 2).contiguous().view(B, T, C)


for case, (B, T, H, C) in {"a": (2, 5, 2, 6), "b": (1, 1, 3, 9)}.items():
    qkv = torch.randn(B, T, 3 * C, requires_grad=True)
    r = torch.randn(B, T, C)
    y = attention(qkv, H)
    (y * r).sum().backward()
    out[f"attn.{case}.qkv"], out[f"attn.{case}.r"], out[f"attn.{case}.y"], out[f"attn.{case}.dqkv"] = qkv, r, y, qkv.grad

# ---- AdamW with two groups under the cosine schedule ----------------------------------------------
w = torch.randn(3, 4, requires_grad=True)
b = torch.randn(4, requires_grad=True)
out["adamw.w0"], out["adamw.b0"] = w.detach().clone(), b.detach().clone()
opt = torch.optim.AdamW([{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}], lr=1e-2,
                        betas=(0.9, 0.99), eps=1e-8)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: gpt_torch.cosine_with_warmup(e, 1, 3, 0.1))
gws, gbs, ws, bs, lrs = [], [], [], [], []
for step in range(4):
    gw, gb = torch.randn(3, 4), torch.randn(4)
    w.grad, b.grad = gw.clone(), gb.clone()
    lrs.append(opt.param_groups[0]["lr"])
    opt.step()
    sched.step()
    gws.append(gw), gbs.append(gb), ws.append(w.detach().clone()), bs.append(b.detach().clone())
out.update({"adamw.gw": torch.stack(gws), "adamw.gb": torch.stack(gbs), "adamw.w": torch.stack(ws),
            "adamw.b": torch.stack(bs), "adamw.lr": torch.tensor(lrs, dtype=torch.float64)})


# ---- the cosine schedule, by nanoGPT's get_lr -----------------------------------------------------
def get_lr(it, learning_rate=3e-4, warmup_iters=3, lr_decay_iters=10, min_lr=3e-5):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


out["cosine.factor"] = torch.tensor([get_lr(it) / 3e-4 for it in range(13)], dtype=torch.float64)

# ---- a tiny GPT -----------------------------------------------------------------------------------
idx = torch.tensor([[1, 4, 2, 9, 3, 10, 5], [7, 7, 5, 0, 8, 6, 2]])
targets = torch.tensor([[4, 2, 9, 3, 10, 5, 1], [7, 5, 0, 8, 6, 2, 3]])   # one <unk> (0) target: not scored
for pos, gelu in (("learned", "none"), ("sinusoidal", "tanh")):
    cfg = type("Config", (), dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=12,
                                   dropout=0.0, pos=pos, gelu=gelu))
    model = gpt_torch.GPT(cfg)
    with torch.no_grad():   # non-trivial LayerNorms and biases, so their gradients are tested too
        for name, p in model.named_parameters():
            if "ln_" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    model.eval()
    logits, loss = model(idx, targets)
    loss.backward()
    prefix = f"gpt.{pos}."
    out.update({prefix + "idx": idx, prefix + "targets": targets, prefix + "logits": logits,
                prefix + "loss": loss.reshape(())})
    for name, p in model.named_parameters():   # the tied table once, under its first name
        out[prefix + "param." + name] = p
        out[prefix + "grad." + name] = p.grad

write_safetensors(OUT, out)
print("torch", torch.__version__, "wrote", os.path.normpath(OUT), os.path.getsize(OUT), "bytes,", len(out), "tensors")
