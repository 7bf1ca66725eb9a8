# scripts/golden/loss.py: golden values for tests/ops/test_loss.cpp and tests/ops/test_softmax.cpp.
#
# Run by hand with Debian's PyTorch (the tests never need it):
#     /usr/bin/python3 scripts/golden/loss.py
# and paste the printed numbers into the tests. A fixed 4x5 logits matrix, targets with one
# ignore_index (-100): cross_entropy loss and dlogits for each reduction ("none" backpropagates
# sum(loss * w) for a fixed w), then log_softmax and softmax along dim 1 and dim 0 with the gradient
# of sum(y * G) for a fixed G.
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=8)

LOGITS = [[0.5, -1.25, 2.0, 0.0, 1.5],
          [-0.75, 0.25, 3.0, -2.0, 0.125],
          [1.0, 1.0, -0.5, 2.5, -1.5],
          [0.0, 4.0, -3.0, 1.25, 0.75]]
TARGET = [2, -100, 4, 1]
W = [1.0, 2.0, -0.5, 3.0]
G = [[0.1, -0.2, 0.3, 0.4, -0.5],
     [0.6, 0.7, -0.8, 0.9, 1.0],
     [-1.1, 1.2, 1.3, -1.4, 1.5],
     [1.6, -1.7, 1.8, 1.9, -2.0]]


def show(name, t):
    values = ", ".join(f"{v:.9g}f" for v in t.detach().reshape(-1).tolist())
    print(f"{name} ({', '.join(str(s) for s in t.shape)}): {{{values}}}")


print("torch", torch.__version__)
target = torch.tensor(TARGET)
for reduction in ("mean", "sum", "none"):
    x = torch.tensor(LOGITS, requires_grad=True)
    loss = F.cross_entropy(x, target, ignore_index=-100, reduction=reduction)
    (loss * torch.tensor(W) if reduction == "none" else loss).sum().backward()
    show(f"cross_entropy {reduction} loss", loss)
    show(f"cross_entropy {reduction} dlogits", x.grad)

for fn in ("log_softmax", "softmax"):
    for dim in (1, 0):
        x = torch.tensor(LOGITS, requires_grad=True)
        y = getattr(F, fn)(x, dim=dim)
        (y * torch.tensor(G)).sum().backward()
        show(f"{fn} dim {dim} y", y)
        show(f"{fn} dim {dim} dx", x.grad)
