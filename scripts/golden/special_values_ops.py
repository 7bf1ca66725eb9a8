# scripts/golden/special_values_ops.py: PyTorch 1.13's values and gradients of the ops that are not
# elementwise-unary, on inputs holding NaN and the infinities, for
# tests/ops/test_special_values_ops.cpp: the binary ops (same shape and broadcast), masked_fill, the
# reductions over a leading dim and over all, rms_norm, the rotation of rotary embeddings, matmul
# and linear, scaled_dot_product_attention (also with dropout p = 1) and causal_self_attention,
# cross_entropy, kl_div, embedding (with padding_idx, dense and sparse, scaled, with max_norm) and
# dropout with p = 0 and p = 1.
#
# Each case prints as {"name", inputs {shape, values}, the incoming gradient, y, one gradient per
# input ({} when the input does not require grad)}. What is not a float tensor (targets, ids, masks,
# options) is fixed by the case's name, here and in the test. PyTorch 1.13 has no RMSNorm, rotary
# embedding or scaled_dot_product_attention: they are written out, as scripts/golden/gpt_layers.py
# and the Annotated Transformer write them.
#
# Run by hand (the tests never need PyTorch); it prints the C++ table to paste:
#     /usr/bin/python3 scripts/golden/special_values_ops.py
import math

import torch
import torch.nn.functional as F

from special_values import X, literal, row

inf, nan = float("inf"), float("nan")
# The incoming gradient of a case, unless it gives its own: these values over and over.
SEED = [0.5, -1.0, 2.0, 0.25]
ROWS = [[1.0, 2.0, 3.0, 4.0], [1.0, inf, 3.0, 4.0], [1.0, -inf, 3.0, 4.0], [1.0, nan, 3.0, 4.0],
        [inf, inf, 3.0, 4.0], [-inf, -inf, -inf, -inf]]
COLUMNS = [list(c) for c in zip(*ROWS)]  # (4, 6): each column one of ROWS
print("    // torch", torch.__version__)


def t(values):
    return torch.tensor(values, dtype=torch.float32)


def case(name, f, inputs, needs_grad=None, seed=None):
    inputs = [t(v) for v in inputs]
    needs_grad = needs_grad or [True] * len(inputs)
    for x, rg in zip(inputs, needs_grad):
        x.requires_grad_(rg)
    shape = lambda x: "{" + ", ".join(str(s) for s in x.shape) + "}"
    flat = lambda x: row(x.detach().flatten().tolist())
    ins = ", ".join("{%s, %s}" % (shape(x), flat(x)) for x in inputs)  # before f: max_norm writes
    y = f(*inputs)
    if seed is None:
        seed = [SEED[i % len(SEED)] for i in range(y.numel())]
    y.backward(t(seed).reshape(y.shape))
    dense = lambda g: g.to_dense() if g.is_sparse else g  # a sparse embedding's, as a table
    grads = ", ".join(flat(dense(x.grad)) if rg else "{}" for x, rg in zip(inputs, needs_grad))
    print('    {"%s", {%s}, %s, %s, {%s}},' % (name, ins, row(seed), flat(y), grads))


# ---- the binary ops: every pair of special values, then two broadcasts ---------------------------
n = len(X)
A = [[X[i]] * n for i in range(n)]        # a[i, j] = X[i]
B = [list(X) for _ in range(n)]           # b[i, j] = X[j]
BINARY = [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div)]
for name, f in BINARY:
    case(name, f, [A, B], seed=[1.0] * (n * n))
# a (2, 8) of plain numbers with b (8,) = X, stretched over a's rows; a (8, 1) = X with b (3,)
for name, f in BINARY:
    case(name + "_broadcast_b", f, [[[1.5] * n, [-2.0] * n], X])
    case(name + "_broadcast_a", f, [[[v] for v in X], [2.0, -0.5, 0.0]])

# ---- masked_fill: NaN under the mask and outside it, a NaN and an infinite fill value -----------
FILL_MASK = [[i % 2 == 0 for i in range(n)], [i % 2 == 1 for i in range(n)]]
for name, value, seed in (("masked_fill", 0.5, None), ("masked_fill_nan", nan, None),
                          ("masked_fill_inf_nan_grad", -inf, [nan] * (2 * n))):
    case(name, lambda x, v=value: x.masked_fill(torch.tensor(FILL_MASK), v), [[X, X]], seed=seed)

# the mask (8,) stretched over both rows
case("masked_fill_broadcast", lambda x: x.masked_fill(torch.tensor(FILL_MASK[0]), 0.5), [[X, X]])

# ---- reductions over dim 0 of (4, 6), each column one of the rows of test_special_values.cpp ----
case("sum_dim0", lambda x: x.sum(0), [COLUMNS])
case("mean_dim0", lambda x: x.mean(0), [COLUMNS])
case("max_dim0", lambda x: x.max(0).values, [COLUMNS])
case("sum_dims01", lambda x: x.sum([0, 1]), [[COLUMNS[:2], COLUMNS[2:]]])  # (2, 2, 6) -> (6,)
case("sum_all", lambda x: x.sum(), [X])  # -inf + inf: NaN
case("mean_all_inf", lambda x: x.mean(), [[1.0, inf, 2.0, inf]])
case("max_all", lambda x: x.max(), [[-inf, 3.0, inf, inf, 0.5]])  # ties share the gradient
case("max_all_nan", lambda x: x.max(), [X])

# ---- softmax and log_softmax over dim 0 of (4, 6), each column one of the special rows -----------
case("softmax_dim0", lambda x: torch.softmax(x, 0), [COLUMNS])
case("log_softmax_dim0", lambda x: torch.log_softmax(x, 0), [COLUMNS])

# ---- layer norm with special values in its weight and bias too -----------------------------------
case("layer_norm_nan_weight", lambda x, w, b: F.layer_norm(x, [4], w, b),
     [ROWS, [1.0, nan, inf, 0.5], [0.0, 1.0, -inf, nan]])

# ---- rms_norm, written out as PyTorch 2.4's F.rms_norm computes it; eps unset -------------------
EPS = torch.finfo(torch.float32).eps
case("rms_norm", lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w,
     [ROWS, [1.0, 2.0, -1.0, 0.5]])
case("rms_norm_nan_weight", lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w,
     [ROWS[:1], [1.0, nan, inf, 0.5]])


# ---- rotary: x (1, 3, 4), one head of 4, tables of 3 positions (base 10000), offset 0 ------------
def rope_tables(head_dim, max_len, base):  # gpt_layers.py's
    theta = torch.tensor([base ** (-2.0 * p / head_dim) for p in range(head_dim // 2)], dtype=torch.float64)
    angle = torch.arange(max_len, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(angle).float(), torch.sin(angle).float()


def rope(x):  # x (1, T, 4): interleaved pairs (2p, 2p + 1) turned by m theta_p
    c, s = rope_tables(4, 3, 10000.0)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


# position 0 turns by 0: sin 0 = 0 meets the infinity there (inf * 0 is NaN, as in PyTorch's)
case("rotary", rope, [[[[inf, 1.0, 2.0, 3.0], [nan, 1.0, -inf, 0.5], [1.0, 2.0, 3.0, 4.0]]]],
     seed=[0.5, -1.0, 2.0, 0.25, 1.0, 1.0, 1.0, 1.0, nan, 1.0, 1.0, 1.0])

# the packed (1, 3, 12) input of the causal attention, C = 4, one head: q and k turn, v passes
def rope_qkv(qkv):
    q, k, v = qkv.split(4, dim=2)
    return torch.cat([rope(q), rope(k), v], dim=2)


case("rotary_qkv", rope_qkv, [[[[inf, 1.0, 2.0, 3.0, nan, 1.0, -inf, 0.5, 1.0, inf, nan, 4.0],
                                [1.0, -inf, 0.5, 2.0, 1.0, 2.0, inf, 4.0, -inf, 0.0, 1.0, 2.0],
                                [1.0, 2.0, 3.0, 4.0, 0.0, nan, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]])

# ---- matmul and linear: inf * 0 in a product; a NaN gradient --------------------------------------
MA = [[inf, 1.0, 2.0], [nan, 0.0, -1.0]]
MB = [[0.0, 1.0], [1.0, 2.0], [3.0, -inf]]
case("matmul", torch.matmul, [MA, MB])
case("matmul_nan_grad", torch.matmul, [[[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], MB],
     seed=[0.5, nan, 0.0, 1.0])
case("matmul_batched", torch.matmul, [[MA, [[1.0, 2.0, 3.0], [0.0, -inf, 1.0]]], [MB, MB]])
case("matmul_folded", torch.matmul, [[MA, [[1.0, 2.0, 3.0], [0.0, -inf, 1.0]]], MB])  # (2, 2, 3) @ (3, 2)
case("linear", F.linear, [MA, [[0.0, 1.0, 3.0], [1.0, 2.0, -inf]], [0.5, inf]])
case("linear_3d", F.linear, [[MA, [[1.0, 2.0, 3.0], [0.0, -inf, 1.0]]], [[0.0, 1.0, 3.0], [1.0, 2.0, nan]], [0.5, -1.0]])
case("linear_nan_bias", F.linear, [[[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], [[0.0, 1.0, 3.0], [1.0, 2.0, 0.5]], [nan, 1.0]],
     seed=[0.5, -1.0, inf, 0.0])


# ---- attention: q (1, 2, 2), k and v (1, 3, 2), one head; each case puts one special value in -------
# The Annotated Transformer's attention(); the mask lets query 0 see keys 0 and 1 only.
def attention(q, k, v, mask=None, p_drop=0.0):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    return torch.matmul(F.dropout(scores.softmax(dim=-1), p_drop, True), v)


ATTN_MASK = torch.tensor([[[True, True, False], [True, True, True]]])
Q = [[[0.5, -1.0], [1.0, 2.0]]]
K = [[[1.0, 0.0], [0.0, 1.0], [-1.0, 1.0]]]
V = [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]


def with_value(base, at, value):
    out = [[list(r) for r in b] for b in base]
    out[0][at[0]][at[1]] = value
    return out


ATTN_CASES = [("q_inf", (with_value(Q, (0, 0), inf), K, V)),
              ("k_nan", (Q, with_value(K, (2, 1), nan), V)),
              ("v_nan", (Q, K, with_value(V, (2, 0), nan))),
              ("k_neg_inf", (Q, with_value(K, (1, 0), -inf), V))]
for name, (q, k, v) in ATTN_CASES:
    case("sdpa_" + name, attention, [q, k, v])
    case("sdpa_" + name + "_masked", lambda q, k, v: attention(q, k, v, ATTN_MASK), [q, k, v])
# dropout with p = 1 on the weights: every weight times 0, so a NaN weight or value still gives NaN
for name, (q, k, v) in ATTN_CASES[0:3:2]:
    case("sdpa_" + name + "_dropout_p1", lambda q, k, v: attention(q, k, v, p_drop=1.0), [q, k, v])


# ---- causal_self_attention: qkv (1, 3, 6), C = 2, one head -----------------------------------------
# Query i reads keys and values 0 .. i only, as tapegrad's kernels do (docs/semantics.md, causal
# self-attention): a special value at position j reaches positions j and later alone. nanoGPT's
# written-out form, att.masked_fill(tril == 0, -inf).softmax(-1) @ v, also multiplies the masked
# (zero) weights by the later values, and its backward the masked (zero) gradients by the later
# keys and the earlier queries, so 0 * NaN and 0 * inf bring a special value to the positions
# before it too; this form leaves those products out, and is the same maths everywhere else.
def causal(qkv):
    q, k, v = qkv.split(2, dim=2)
    rows = []
    for i in range(qkv.shape[1]):
        att = (q[:, i:i + 1] @ k[:, :i + 1].transpose(-2, -1)) * (1.0 / math.sqrt(2))
        rows.append(att.softmax(-1) @ v[:, :i + 1])
    return torch.cat(rows, dim=1)


QKV = [[[0.5, -1.0, 1.0, 0.0, 1.0, 2.0], [1.0, 2.0, 0.0, 1.0, 3.0, 4.0], [-1.0, 0.5, -1.0, 1.0, 5.0, 6.0]]]
for name, at, value in (("q0_inf", (0, 0), inf), ("k2_nan", (2, 3), nan), ("v2_nan", (2, 4), nan),
                        ("k1_neg_inf", (1, 2), -inf)):
    case("causal_" + name, causal, [with_value(QKV, at, value)])

# ---- cross_entropy on the rows: targets fixed by the case's name --------------------------------
TARGETS = {"a": [0, 1, 1, 0, 2, 3], "b": [3, 0, 0, 1, 0, 0], "ignore": [0, -100, 2, -100, -100, 1]}
for name, target, reduction in (("cross_entropy_mean_a", "a", "mean"), ("cross_entropy_sum_a", "a", "sum"),
                                ("cross_entropy_none_a", "a", "none"), ("cross_entropy_mean_b", "b", "mean"),
                                ("cross_entropy_mean_ignore", "ignore", "mean"),
                                ("cross_entropy_none_ignore", "ignore", "none")):
    case(name, lambda x, tg=TARGETS[target], r=reduction: F.cross_entropy(x, torch.tensor(tg), reduction=r),
         [ROWS])
# every target ignored: the mean is 0 / 0
case("cross_entropy_all_ignored", lambda x: F.cross_entropy(x, torch.tensor([-100, -100])), [ROWS[:2]])

# ---- kl_div: log-probabilities holding -inf and NaN, targets holding 0 ----------------------------
KL_INPUT = [[-inf, -1.0, nan, 0.0], [-0.5, -inf, -2.0, inf]]
KL_TARGET = [[0.0, 0.5, 0.5, 0.0], [0.25, 0.0, 0.75, 0.0]]
KL_LOG_TARGET = [[-inf, -0.5, -0.5, -inf], [-1.5, -inf, 0.0, nan]]
for reduction in ("none", "sum", "batchmean", "mean"):
    case("kl_div_" + reduction, lambda x, tg, r=reduction: F.kl_div(x, tg, reduction=r),
         [KL_INPUT, KL_TARGET], needs_grad=[True, False])
case("kl_div_none_log_target", lambda x, tg: F.kl_div(x, tg, reduction="none", log_target=True),
     [KL_INPUT, KL_LOG_TARGET], needs_grad=[True, False])
case("kl_div_none_nan_target", lambda x, tg: F.kl_div(x, tg, reduction="none"),
     [[[-1.0, -2.0, -inf, 0.5]], [[nan, inf, inf, -inf]]], needs_grad=[True, False])

# ---- embedding: ids [[1, 0, 2], [3, 1, 0]]; row 1 holds NaN, row 2 the infinities ------------------
IDS = torch.tensor([[1, 0, 2], [3, 1, 0]])
TABLE = [[0.5, -1.0, 2.0], [nan, 1.0, 2.0], [inf, -inf, 0.0], [1.0, 2.0, 3.0]]
# NaN arrives at position (0, 1) (id 0, the padding row) and (1, 0) (id 3)
EMB_SEED = [0.5, -1.0, 2.0, nan, nan, nan, 1.0, 1.0, 1.0, nan, 0.25, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
case("embedding", lambda w: F.embedding(IDS, w), [TABLE], seed=EMB_SEED)
case("embedding_padding_idx", lambda w: F.embedding(IDS, w, padding_idx=0), [TABLE], seed=EMB_SEED)
case("embedding_padding_idx_sparse", lambda w: F.embedding(IDS, w, padding_idx=0, sparse=True), [TABLE],
     seed=EMB_SEED)
case("embedding_scaled", lambda w: F.embedding(IDS, w, padding_idx=0) * 2.0, [TABLE], seed=EMB_SEED)
# max_norm 1 renormalises the rows looked up, in place, before the lookup: row 1's norm is NaN (not
# above 1: left alone), row 2's is inf (scaled by 1 / inf = 0: inf * 0 is NaN)
case("embedding_max_norm", lambda w: F.embedding(IDS, w, max_norm=1.0), [TABLE], seed=EMB_SEED)
case("embedding_scaled_by_0", lambda w: F.embedding(IDS, w) * 0.0, [TABLE], seed=EMB_SEED)

# the tutorials' fused input, dropout(embedding(ids) * 2 + positions): the positions' table holds
# special values too (it is a buffer: no gradient); p = 0 and p = 1 (every value times 0)
POSITIONS = [[0.0, nan, 1.0], [inf, 0.5, -1.0], [1.0, 1.0, -inf]]
for p in (0.0, 1.0):
    case("embedding_add_rows_dropout_p%d" % p,
         lambda w, r, p=p: F.dropout(F.embedding(IDS, w, padding_idx=0) * 2.0 + r, p, True),
         [TABLE, POSITIONS], needs_grad=[True, False], seed=EMB_SEED)

# ---- dropout with p = 1 (x * 0: NaN and the infinities give NaN) and p = 0 (the identity) ----------
DROP_SEED = [1.0, nan, 1.0, -inf, 1.0, 1.0, nan, 1.0]
case("dropout_p1", lambda x: F.dropout(x, 1.0, True), [X], seed=DROP_SEED)
case("dropout_p0", lambda x: F.dropout(x, 0.0, True), [X], seed=DROP_SEED)

