# scripts/golden/attention_bias.py: PyTorch 1.13's causal attention with an additive bias on the
# scores, for tests/ops/test_causal_attention.cpp: nanoGPT's attention written out, with the bias
# added after the scale and before the causal mask, as F.scaled_dot_product_attention adds a float
# attn_mask (PyTorch 2.x):
#
#     att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)) + bias     # bias (nh, T, T)
#     att = att.masked_fill(tril(T, T) == 0, -inf).softmax(-1)
#     y = att @ v
#
# The inputs are formulas of the element index, so the test makes them without a table:
#     qkv[i] = sin(0.37 i + 0.1) * 2,  r[i] = cos(0.23 i)      (r: the gradient flowing into y)
# and the bias is ALiBi's, -slope_h * (i - j) with slope_h = 2^(-8 (h + 1) / nh), except one
# entry per head set to -inf (a masked key) and one to +0.75.
#
# Run by hand (the tests never need PyTorch); it prints the C++ tables to paste:
#     /usr/bin/python3 scripts/golden/attention_bias.py
import math

import torch

B, T, NH, HS = 2, 5, 2, 3
C = NH * HS


def inputs():
    n = B * T * 3 * C
    qkv = torch.tensor([math.sin(0.37 * i + 0.1) * 2 for i in range(n)], dtype=torch.float32)
    r = torch.tensor([math.cos(0.23 * i) for i in range(B * T * C)], dtype=torch.float32)
    bias = torch.zeros(NH, T, T)
    for h in range(NH):
        slope = 2.0 ** (-8.0 * (h + 1) / NH)
        for i in range(T):
            for j in range(T):
                bias[h, i, j] = -slope * (i - j)
        bias[h, 3, 1] = -math.inf  # a masked key: its weight is 0
        bias[h, 4, 2] = 0.75
    return qkv.reshape(B, T, 3 * C).requires_grad_(), r.reshape(B, T, C), bias


def attention(qkv, bias):
    q, k, v = qkv.split(C, dim=2)
    q, k, v = (t.view(B, T, NH, HS).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(HS)) + bias
    att = att.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")).softmax(-1)
    return (att @ v).transpose(1, 2).contiguous().view(B, T, C), att


def literal(v):
    s = f"{v:.9g}"
    return (s if "." in s or "e" in s else s + ".0") + "f"


def table(name, t):
    values = ", ".join(literal(v) for v in t.detach().reshape(-1).tolist())
    print(f"const std::vector<float> {name} = {{{values}}};")


qkv, r, bias = inputs()
y, att = attention(qkv, bias)
y.backward(r)
print(f"// torch {torch.__version__}: B {B}, T {T}, {NH} heads of {HS}")
table("kBiasY", y)
table("kBiasDqkv", qkv.grad)
table("kBiasWeights", att)
