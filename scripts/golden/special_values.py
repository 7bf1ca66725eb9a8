# scripts/golden/special_values.py: PyTorch 1.13's values and gradients of the elementwise ops on
# the special floats (-inf, negative, -0, +0, positive, +inf, NaN), for
# tests/ops/test_special_values.cpp: NaN and the infinities must come out of each op and its
# backward as they come out of PyTorch's.
#
# Run by hand (the tests never need PyTorch); it prints the C++ table to paste:
#     /usr/bin/python3 scripts/golden/special_values.py
# The other ops' and the optimizers' tables: special_values_ops.py, special_values_optim.py.
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
    ("gelu", torch.nn.functional.gelu),
    ("gelu_tanh", lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    ("silu", torch.nn.functional.silu),
    ("relu_squared", lambda x: torch.relu(x).square()),
]

# Row ops on (6, 4) rows holding one special value each (or none), with a fixed incoming gradient.
ROWS = [[1.0, 2.0, 3.0, 4.0], [1.0, inf, 3.0, 4.0], [1.0, -inf, 3.0, 4.0], [1.0, nan, 3.0, 4.0],
        [inf, inf, 3.0, 4.0], [-inf, -inf, -inf, -inf]]
ROW_GRAD = [0.5, -1.0, 2.0, 0.25]
ROW_OPS = [
    ("softmax", lambda x: torch.softmax(x, -1)),
    ("log_softmax", lambda x: torch.log_softmax(x, -1)),
    ("layer_norm", lambda x: torch.nn.functional.layer_norm(x, [4])),
    ("sum_rows", lambda x: x.sum(-1)),
    ("mean_rows", lambda x: x.mean(-1)),
    ("max_rows", lambda x: x.max(-1).values),
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


def main():
    print("// torch", torch.__version__)
    print("// x =", row(X))
    for name, f in OPS:
        for gname, g in GRADS.items():
            x = torch.tensor(X, requires_grad=True)
            y = f(x)
            y.backward(torch.tensor(g))
            print('{"%s", "%s", %s, %s},' % (name, gname, row(y.detach().tolist()), row(x.grad.tolist())))

    print("// rows =", [row(r) for r in ROWS])
    print("// the incoming gradient: each output row (or value) times", row(ROW_GRAD))
    for name, f in ROW_OPS:
        x = torch.tensor(ROWS, requires_grad=True)
        y = f(x)
        g = torch.tensor(ROW_GRAD).expand(6, 4) if y.dim() == 2 else torch.tensor(ROW_GRAD[:1] * 6)
        y.backward(g)
        print('{"%s", %s, %s},' % (name, row(y.detach().flatten().tolist()), row(x.grad.flatten().tolist())))


if __name__ == "__main__":  # special_values_ops.py and _optim.py import literal and row
    main()
