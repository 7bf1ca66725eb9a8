# scripts/golden/relu_squared.py: PyTorch goldens of squared ReLU, F.relu(x).square(), for
# tests/ops/test_relu_squared.cpp: the values and d(sum(g * y))/dx for a random x and g, and the
# special values (infinities, NaN, signed zeros) with g = 1.
#
# Run by hand (the tests never need PyTorch); it prints C++ initialiser lists to paste:
#     /usr/bin/python3 scripts/golden/relu_squared.py
import torch
import torch.nn.functional as F

from cpp_floats import show  # (scripts/golden/cpp_floats.py)

torch.manual_seed(0)
print("// torch", torch.__version__)



x = (torch.randn(12) * 2).requires_grad_()
g = torch.randn(12)
y = F.relu(x).square()
y.backward(g)
show("kX", x.detach())
show("kG", g)
show("kY", y.detach())
show("kDx", x.grad)

inf, nan = float("inf"), float("nan")
x = torch.tensor([-inf, -2.0, -0.0, 0.0, 0.5, 3.0, inf, nan], requires_grad=True)
y = F.relu(x).square()
y.backward(torch.ones(8))
show("special x", x.detach())
show("special y", y.detach())
show("special dx", x.grad)
