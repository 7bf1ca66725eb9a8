# scripts/golden/clamp.py: PyTorch goldens of torch.clamp for tests/ops/test_clamp.cpp: the values
# and d(sum(g * y))/dx for a random x and g in [-0.5, 0.8], and what NaN, the infinities, a NaN
# bound and min > max give, with g = 1.
#
# Run by hand (the tests never need PyTorch); it prints C++ initialiser lists to paste:
#     /usr/bin/python3 scripts/golden/clamp.py
import torch

from cpp_floats import show  # (scripts/golden/cpp_floats.py)

torch.manual_seed(0)
print("// torch", torch.__version__)



x = (torch.randn(12) * 1.5).requires_grad_()
g = torch.randn(12)
y = torch.clamp(x, -0.5, 0.8)
y.backward(g)
show("kX", x.detach())
show("kG", g)
show("kY", y.detach())
show("kDx", x.grad)

inf, nan = float("inf"), float("nan")
special = [-inf, -2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0, inf, nan]
for lo, hi in [(-1.0, 1.0), (nan, 1.0), (-1.0, nan), (1.0, -1.0), (None, 1.0), (-1.0, None)]:
    x = torch.tensor(special, requires_grad=True)
    y = torch.clamp(x, lo, hi)
    y.backward(torch.ones(len(special)))
    print("// min", lo, "max", hi)
    show("y", y.detach())
    show("dx", x.grad)
