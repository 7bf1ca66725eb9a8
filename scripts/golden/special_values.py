# scripts/golden/special_values.py: PyTorch 1.13's values and gradients of the elementwise ops on
# the special floats (-inf, negative, -0, +0, positive, +inf, NaN), for
# tests/ops/test_special_values.cpp: NaN and the infinities must come out of each op and its
# backward as they come out of PyTorch's.
#
# Run by hand (the tests never need PyTorch); it prints the C++ table to paste:
#     /usr/bin/python3 scripts/golden/special_values.py
import torch

inf, nan = float("inf"), float("nan")
X = [-inf, -2.0, -0.0, 0.0, 0.5, 3.0, inf, nan]
# the gradient flowing in: 1 everywhere, then NaN everywhere (a NaN arriving from above)
GRADS = {"one": [1.0] * len(X), "nan": [nan] * len(X)}

OPS = [
    ("neg", lambda x: -x),
    ("add_scalar", lambda x: x + 1.5),
    ("mul_scalar", lambda x: x * 2.0),
    ("div_scalar", lambda x: x / 4.0),
    ("rdiv_scalar", lambda x: 2.0 / x),
    ("exp", torch.exp),
    ("log", torch.log),
    ("sqrt", torch.sqrt),
    ("pow_3", lambda x: x.pow(3.0)),
    ("pow_half", lambda x: x.pow(0.5)),
    ("tanh", torch.tanh),
    ("relu", torch.relu),
    ("sigmoid", torch.sigmoid),
]


def literal(v):  # a C++ float expression that is v
    if v != v:
        return "kNaN"
    if v in (inf, -inf):
        return ("-" if v < 0 else "") + "kInf"
    if v == 0:
        return "-0.0f" if str(v).startswith("-") else "0.0f"
    text = "%.9g" % v
    return text + (".0f" if text.lstrip("-").isdigit() else "f")


def row(values):
    return "{" + ", ".join(literal(v) for v in values) + "}"


print("// torch", torch.__version__)
print("// x =", row(X))
for name, f in OPS:
    for gname, g in GRADS.items():
        x = torch.tensor(X, requires_grad=True)
        y = f(x)
        y.backward(torch.tensor(g))
        print('{"%s", "%s", %s, %s},' % (name, gname, row(y.detach().tolist()), row(x.grad.tolist())))
