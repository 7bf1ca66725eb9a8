# scripts/golden/transformer_layers.py: golden values for the Transformer ops' tests
# (tests/ops/test_layer_norm.cpp, test_attention.cpp, test_kl_div.cpp, tests/transformer/test_label_smoothing.cpp).
#
# Run by hand with Debian's PyTorch (the tests never need it):
#     /usr/bin/python3 scripts/golden/transformer_layers.py
# and paste the printed numbers into the tests. The reference formulas are The Annotated
# Transformer's (harvardnlp/annotated-transformer: the_annotated_transformer.py): its LayerNorm,
# attention() inside MultiHeadedAttention (heads split by view + transpose), and LabelSmoothing
# (nn.KLDivLoss(reduction="sum") against a smoothed one-hot target). Every gradient is of
# sum(y * G) for a fixed G.
import math

import torch
import torch.nn.functional as F


def show(name, t):
    values = ", ".join(f"{v:.9g}f" for v in t.detach().reshape(-1).tolist())
    print(f"{name} ({', '.join(str(s) for s in t.shape)}): {{{values}}}")


print("torch", torch.__version__)

# ---- layer_norm ------------------------------------------------------------------------------
X = [[0.5, -1.25, 2.0, 0.0, 1.5], [-0.75, 0.25, 3.0, -2.0, 0.125]]
W = [1.0, 0.5, -1.5, 2.0, 0.25]
B = [0.1, -0.2, 0.3, 0.0, 0.5]
G = torch.tensor([[0.1, -0.2, 0.3, 0.4, -0.5], [0.6, 0.7, -0.8, 0.9, 1.0]])
for variant in ("pytorch", "annotated"):
    x, w, b = (torch.tensor(v, requires_grad=True) for v in (X, W, B))
    if variant == "pytorch":
        y = F.layer_norm(x, (5,), w, b, eps=1e-5)
    else:                                   # the tutorial's LayerNorm.forward, eps = 1e-6
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        y = w * (x - mean) / (std + 1e-6) + b
    (y * G).sum().backward()
    show(f"layer_norm {variant} y", y)
    show(f"layer_norm {variant} dx", x.grad)
    show(f"layer_norm {variant} dw", w.grad)
    show(f"layer_norm {variant} db", b.grad)


# ---- attention: B = 2, T = 3, h = 2, d_k = 2, src-style mask hiding the last key of batch 1 -----
def multi_head(q, k, v, h, keep):
    """softmax(Q K^T / sqrt(d_k), scores where keep is false set to -1e9) V, head by head."""
    n, tq, width = q.shape
    heads = lambda t: t.reshape(n, t.shape[1], h, t.shape[2] // h).permute(0, 2, 1, 3)   # (B, h, T, d)
    qh, kh, vh = heads(q), heads(k), heads(v)
    scores = qh @ kh.transpose(2, 3) / math.sqrt(width // h)
    if keep is not None:
        scores = scores.masked_fill(~keep.unsqueeze(1), -1e9)
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ vh).permute(0, 2, 1, 3).reshape(n, tq, -1)
    return out, weights


g = torch.Generator().manual_seed(0)
Q = torch.randn(2, 3, 4, generator=g)
K = torch.randn(2, 3, 4, generator=g)
V = torch.randn(2, 3, 4, generator=g)
GA = torch.randn(2, 3, 4, generator=g)
MASK = torch.tensor([[[1, 1, 1]], [[1, 1, 0]]], dtype=torch.bool)   # (B, 1, Tk)
show("attention q", Q)
show("attention k", K)
show("attention v", V)
show("attention G", GA)
for masked in (False, True):
    q, k, v = (t.clone().requires_grad_(True) for t in (Q, K, V))
    y, p = multi_head(q, k, v, 2, MASK if masked else None)
    (y * GA).sum().backward()
    tag = "masked" if masked else "unmasked"
    show(f"attention {tag} y", y)
    show(f"attention {tag} p_attn", p)
    show(f"attention {tag} dq", q.grad)
    show(f"attention {tag} dk", k.grad)
    show(f"attention {tag} dv", v.grad)

# ---- kl_div and LabelSmoothing ------------------------------------------------------------------
LOGITS = torch.tensor([[0.5, -1.25, 2.0, 0.0, 1.5],
                       [-0.75, 0.25, 3.0, -2.0, 0.125],
                       [1.0, 1.0, -0.5, 2.5, -1.5],
                       [0.0, 4.0, -3.0, 1.25, 0.75]])
TARGET_DIST = torch.tensor([[0.0, 0.1, 0.6, 0.1, 0.2],
                            [0.25, 0.25, 0.25, 0.25, 0.0],
                            [0.0, 0.0, 0.0, 0.0, 0.0],
                            [0.5, 0.0, 0.0, 0.0, 0.5]])
for reduction in ("sum", "mean", "batchmean", "none"):
    x = F.log_softmax(LOGITS, -1).detach().requires_grad_(True)
    loss = F.kl_div(x, TARGET_DIST, reduction=reduction)
    # "none" backpropagates sum(loss * WN) with WN = [[0.0, 0.1, ...], ...] (arange(20) / 10)
    (loss if reduction != "none" else (loss * torch.arange(20.0).view(4, 5) / 10).sum()).backward()
    show(f"kl_div {reduction} loss", loss)
    show(f"kl_div {reduction} dx", x.grad)
x = F.log_softmax(LOGITS, -1).detach().requires_grad_(True)
loss = F.kl_div(x, F.log_softmax(-LOGITS, -1), reduction="sum", log_target=True)
loss.backward()
show("kl_div log_target sum loss", loss)
show("kl_div log_target sum dx", x.grad)

# The tutorial's LabelSmoothing(size=5, padding_idx=0, smoothing=0.4) on targets [2, 1, 0, 3]
# (row 2 is padding) against log_softmax(LOGITS). (The tutorial's own example feeds log(0) = -inf,
# which makes the loss NaN in torch 1.13: 0 * -inf in the padding column.)
size, padding_idx, smoothing = 5, 0, 0.4
target = torch.tensor([2, 1, 0, 3])
x = F.log_softmax(LOGITS, -1).detach().requires_grad_(True)
true_dist = torch.full_like(x, smoothing / (size - 2))
true_dist[torch.arange(len(target)), target] = 1.0 - smoothing
true_dist[:, padding_idx] = 0.0
true_dist[target == padding_idx] = 0.0
loss = torch.nn.KLDivLoss(reduction="sum")(x, true_dist)
loss.backward()
show("label_smoothing true_dist", true_dist)
show("label_smoothing loss", loss)
show("label_smoothing dx", x.grad)
