#!/usr/bin/python3
"""Golden values for tests/ops/test_embedding.cpp, from PyTorch (Debian's python3-torch 1.13).

Run by hand:  /usr/bin/python3 scripts/golden/embedding.py
and paste the printed numbers into the test, naming this script and the torch version.
Inputs are small closed-form tensors so the test can rebuild them without PyTorch.
"""
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=9)


def fmt(t):
    return "{" + ", ".join(fmt(r) for r in t) + "}" if t.dim() > 0 else "%.9gf" % t.item()


def weight(rows, cols):
    # w[k, j] = 0.1 * (k * cols + j) - 0.7
    return (torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols) * 0.1 - 0.7)


def upstream(shape):
    # G[i] = 0.25 * i - 2 over the flattened output
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) * 0.25 - 2.0).reshape(shape)


print("torch", torch.__version__)

ids = torch.tensor([[1, 2, 1], [0, 1, 3]])
for freq in (False, True):
    w = weight(5, 3).requires_grad_()
    y = F.embedding(ids, w, padding_idx=0, scale_grad_by_freq=freq)
    (y * upstream(y.shape)).sum().backward()
    print("ids [[1,2,1],[0,1,3]] pad 0 scale_grad_by_freq=%s  loss = sum(y * G): dW =" % freq)
    print(fmt(w.grad))

w = weight(5, 3).requires_grad_()
y = F.embedding(ids, w, padding_idx=0, sparse=True)
(y * upstream(y.shape)).sum().backward()
g = w.grad
print("sparse: indices", g._indices().tolist(), "values", fmt(g._values()))

w = torch.randn(5, 3).requires_grad_()
F.embedding(torch.tensor([0, 2, 2]), w, padding_idx=0).sum().backward()
print("ids [0,2,2] pad 0 loss = sum(y): dW =", fmt(w.grad))

# max_norm: rows of (6, 4), ids [5, 1, 1, 3]; rows 0, 2, 4 are not referenced.
for p in (2.0, 1.0, 3.0, float("inf"), float("-inf"), 0.0):
    w = weight(6, 4) * 3.0
    with torch.no_grad():
        F.embedding(torch.tensor([5, 1, 1, 3]), w, max_norm=1.5, norm_type=p)
    print("max_norm 1.5 norm_type %s on 3 * weight(6, 4), ids [5, 1, 1, 3]:" % p)
    print(fmt(w))

w = torch.tensor([[3.0, 4.0]])
with torch.no_grad():
    F.embedding(torch.tensor([0]), w, max_norm=1.0)
print("[3, 4] max_norm 1:", fmt(w), "norm", w.norm().item())
