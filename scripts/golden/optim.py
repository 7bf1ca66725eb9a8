#!/usr/bin/python3
"""Golden values for tests/optim (optimizers, schedules, clip_grad_norm_), printed as C++ arrays
to paste.

Run by hand with Debian's PyTorch (1.13.1): /usr/bin/python3 scripts/golden/optim.py
Tests never need PyTorch.

Parity fixtures: one float32 parameter (2, 3) and five random gradients, stepped by each optimizer
configuration below with PyTorch's single-tensor (foreach=False) code; the parameter after every step
is printed. PyTorch 1.13 computes Adam's m as m*b1 + (1-b1)*g where 2.x (and tapegrad) use lerp;
the two differ by about one ulp per step, well inside the tests' 1e-6 relative tolerance.
SparseAdam: a (5, 3) parameter and row-sparse gradients with a repeated id and untouched rows.
Also checks the worked values the tests quote (float64) and prints the Noam and clip_grad_norm_
vectors.
"""
import math

import torch

torch.manual_seed(2024)
STEPS = 5


def fmt(t):
    return ", ".join("%.9g" % v for v in t.flatten().tolist())


theta0 = torch.randn(2, 3)
grads = [torch.randn(2, 3) for _ in range(STEPS)]
print("// torch %s, scripts/golden/optim.py" % torch.__version__)
print("const float kTheta0[6] = {%s};" % fmt(theta0))
print("const float kGrads[%d][6] = {" % STEPS)
for g in grads:
    print("    {%s}," % fmt(g))
print("};")

CONFIGS = [
    ("adam_default", torch.optim.Adam, dict(lr=0.05)),
    ("adam_l2_amsgrad", torch.optim.Adam, dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("adam_maximize", torch.optim.Adam, dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, maximize=True)),
    ("adam_small_beta1", torch.optim.Adam, dict(lr=0.05, betas=(0.3, 0.9))),
    ("adamw", torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1)),
    ("adamw_amsgrad_maximize", torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("sgd_plain", torch.optim.SGD, dict(lr=0.1)),
    ("sgd_momentum_dampening_wd", torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov_wd", torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd_momentum_maximize", torch.optim.SGD, dict(lr=0.1, momentum=0.5, maximize=True)),
]

for name, cls, kw in CONFIGS:
    p = torch.nn.Parameter(theta0.clone())
    opt = cls([p], foreach=False, **kw)
    print("// %s(%s)" % (cls.__name__, ", ".join("%s=%s" % kv for kv in kw.items())))
    print("const float k_%s[%d][6] = {" % (name, STEPS))
    for g in grads:
        p.grad = g.clone()
        opt.step()
        print("    {%s}," % fmt(p.detach()))
    print("};")

# SparseAdam: rows 1 and 3 (3 twice) at step 1, an empty gradient at step 2, rows 0 and 3 at step 3.
sparse_theta0 = torch.randn(5, 3)
sparse_steps = [([1, 3, 3], torch.randn(3, 3)), ([], torch.zeros(0, 3)), ([3, 0], torch.randn(2, 3))]
print("const float kSparseTheta0[15] = {%s};" % fmt(sparse_theta0))
p = torch.nn.Parameter(sparse_theta0.clone())
opt = torch.optim.SparseAdam([p], lr=0.05)
for k, (ids, vals) in enumerate(sparse_steps):
    print("// step %d: ids {%s}" % (k + 1, ", ".join(map(str, ids))))
    if ids:
        print("const float kSparseValues%d[%d] = {%s};" % (k + 1, vals.numel(), fmt(vals)))
    p.grad = torch.sparse_coo_tensor(torch.tensor([ids], dtype=torch.int64).reshape(1, -1), vals, (5, 3))
    if len(ids) == 0:
        # 1.13 fails on an empty sparse gradient; 2.x (and tapegrad) advance the step count and
        # stop. Emulate 2.x: theta, m and v unchanged, step + 1.
        opt.state[p]["step"] += 1
    else:
        opt.step()
    print("const float kSparseAfter%d[15] = {%s};" % (k + 1, fmt(p.detach())))
print("// SparseAdam step counts after three steps: %s" % [opt.state[p]["step"]])

# The worked values the tests quote, in float64.
def run(cls, steps, **kw):
    p = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    opt = cls([p], foreach=False, **kw) if cls is not torch.optim.SparseAdam else cls([p], **kw)
    out = []
    for _ in range(steps):
        p.grad = torch.full((1,), 0.5, dtype=torch.float64)
        opt.step()
        out.append(p.item())
    return out

print("// worked values (float64):")
print("//  SGD momentum 0.9  ", run(torch.optim.SGD, 3, lr=0.1, momentum=0.9))
print("//  SGD nesterov      ", run(torch.optim.SGD, 2, lr=0.1, momentum=0.9, nesterov=True))
print("//  Adam              ", run(torch.optim.Adam, 2))
print("//  Adam L2 wd 0.01   ", run(torch.optim.Adam, 2, weight_decay=0.01))
print("//  AdamW wd 0.01     ", run(torch.optim.AdamW, 2, weight_decay=0.01))
ps = torch.nn.Parameter(torch.ones(1, 1, dtype=torch.float64))
so = torch.optim.SparseAdam([ps])
vals = []
for _ in range(2):
    ps.grad = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.full((1, 1), 0.5, dtype=torch.float64), (1, 1))
    so.step()
    vals.append(ps.item())
print("//  SparseAdam        ", vals)


def noam(step, d, factor, warmup):
    if step == 0:
        step = 1
    return factor * (d ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


print("// noam(d=512, warmup=4000, factor=1):",
      ["%r" % noam(s, 512, 1, 4000) for s in (0, 1, 100, 4000, 16000)])
print("// copy task lr = 0.5 * noam(s, 512, 1, 400): s=400 %r, s=800 %r" %
      (0.5 * noam(400, 512, 1, 400), 0.5 * noam(800, 512, 1, 400)))
a = torch.nn.Parameter(torch.zeros(2))
b = torch.nn.Parameter(torch.zeros(1))
a.grad = torch.tensor([3.0, 4.0])
b.grad = torch.tensor([12.0])
total = torch.nn.utils.clip_grad_norm_([a, b], 1.0)
print("// clip_grad_norm_([3, 4], [12]; max_norm 1): total %r, a.grad %s, b.grad %s"
      % (total.item(), fmt(a.grad), fmt(b.grad)))
total_inf = torch.nn.utils.clip_grad_norm_([a, b], 1.0, norm_type=math.inf)
print("// then with norm_type inf: total %.9g, a.grad %s, b.grad %s" % (total_inf.item(), fmt(a.grad), fmt(b.grad)))
