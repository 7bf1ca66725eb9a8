# scripts/golden/special_values_optim.py: what PyTorch 1.13's optimizers and clip_grad_norm_ make of
# a gradient holding NaN and the infinities, for tests/optim/test_special_values.cpp: SGD (plain,
# with momentum and weight decay, Nesterov), Adam (plain; L2 weight decay with AMSGrad), AdamW
# (plain; AMSGrad), and SparseAdam and SGD on row-sparse gradients, each over two steps, the first
# with the special gradient and the second with a plain one, printing the parameter and the state
# after each; then clip_grad_norm_ on gradients holding NaN or an infinity, with the 2-norm and
# the inf-norm.
#
# Run by hand (the tests never need PyTorch); it prints the C++ tables to paste:
#     /usr/bin/python3 scripts/golden/special_values_optim.py
import torch

from special_values import literal, row

inf, nan = float("inf"), float("nan")
THETA0 = [1.0, -2.0, 0.5, 3.0, 0.0]
GRADS = [[nan, inf, -inf, 0.5, 0.0], [0.1, -0.2, 0.3, 0.4, 0.5]]

DENSE = [
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd_momentum_weight_decay", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("sgd_nesterov", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    ("adam", lambda p: torch.optim.Adam(p, lr=0.1)),
    ("adam_weight_decay_amsgrad", lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.01, amsgrad=True)),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=0.1)),
    ("adamw_amsgrad", lambda p: torch.optim.AdamW(p, lr=0.1, amsgrad=True)),
]
STATE = ["momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]


def flat(x):
    return row(x.detach().flatten().tolist())


def steps(opt, p, grads):
    out = []
    for g in grads:
        p.grad = g()
        opt.step()
        state = opt.state[p]
        fields = ", ".join('{"%s", %s}' % (k, flat(state[k])) for k in STATE if state.get(k) is not None)
        out.append("{%s, {%s}}" % (flat(p), fields))
    return ", ".join(out)


print("    // torch", torch.__version__)
print("    // theta0 =", row(THETA0), "then the gradients", row(GRADS[0]), "and", row(GRADS[1]))
for name, make in DENSE:
    p = torch.nn.Parameter(torch.tensor(THETA0))
    print('    {"%s", {%s}},' % (name, steps(make([p]), p, [lambda g=g: torch.tensor(g) for g in GRADS])))

# SparseAdam and SGD: a (3, 2) table; rows 0 and 2 receive the special values, then rows 1 and 2
# plain ones
SPARSE_THETA0 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
SPARSE_GRADS = [([0, 2], [[nan, 1.0], [inf, -inf]]), ([1, 2], [[0.5, 0.5], [0.1, 0.2]])]
print("    // sparse_adam: theta0 =", row(sum(SPARSE_THETA0, [])), "; rows", SPARSE_GRADS)
p = torch.nn.Parameter(torch.tensor(SPARSE_THETA0))
grads = [lambda r=r, v=v: torch.sparse_coo_tensor([r], torch.tensor(v), (3, 2)) for r, v in SPARSE_GRADS]
print('    {"sparse_adam", {%s}},' % steps(torch.optim.SparseAdam([p], lr=0.1), p, grads))
p = torch.nn.Parameter(torch.tensor(SPARSE_THETA0))
print('    {"sgd_sparse", {%s}},' % steps(torch.optim.SGD([p], lr=0.1), p, grads))

# clip_grad_norm_(max_norm 1) of two gradients a and b: the total it returns, then a and b
print("    // clip_grad_norm_: name, norm_type, a, b, then the total norm and a and b after clipping")
for name, norm_type, a, b in (("nan", 2.0, [nan, 1.0], [3.0, 4.0]), ("inf", 2.0, [inf, 1.0], [3.0, 4.0]),
                              ("neg_inf", 2.0, [-inf, 1.0], [3.0, 4.0]), ("nan_and_inf", 2.0, [nan, inf], [3.0, 4.0]),
                              ("nan_inf_norm", inf, [nan, 1.0], [3.0, 4.0]),
                              ("neg_inf_inf_norm", inf, [-inf, 1.0], [3.0, 4.0])):
    pa, pb = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    pa.grad, pb.grad = torch.tensor(a), torch.tensor(b)
    total = torch.nn.utils.clip_grad_norm_([pa, pb], 1.0, norm_type)
    print('    {"%s", %s, %s, %s, %s, %s, %s},' % (name, literal(norm_type), row(a), row(b), literal(total.item()),
                                                   flat(pa.grad), flat(pb.grad)))
