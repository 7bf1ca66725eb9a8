# scripts/golden/autograd.py: what PyTorch does with the programs of tests/autograd/test_engine.cpp,
# the classic learner mistakes with the graph (a second backward, state carried across steps,
# an evaluation loop without no_grad, two graphs, another thread, printing a gradient).
# Run by hand with Debian's PyTorch: /usr/bin/python3 scripts/golden/autograd.py
# (checked with torch 1.13.1). Each block prints the outcome the C++ test pins: the gradient, or
# the exception's type and text.
import threading

import torch


def outcome(name, fn):
    try:
        print(name, "->", fn())
    except Exception as e:  # noqa: BLE001 - we print what PyTorch raises
        print(name, "->", type(e).__name__ + ":", str(e))


def second_backward():
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * w
    h.sum().backward()
    (h * 3).sum().backward()
    return w.grad.tolist()


def state_across_steps(retain):
    w = torch.tensor([2.0], requires_grad=True)
    s = w * 1
    s.sum().backward(retain_graph=retain)
    w.grad = None
    (s * w).sum().backward()
    return w.grad.tolist()


def eval_loop_without_no_grad():
    # 20,000 forwards of Linear(256, 256) whose outputs are dropped: the graph of each dies with
    # its output, so the process does not grow (max RSS before and after, in MiB).
    import resource
    lin = torch.nn.Linear(256, 256)
    x = torch.randn(4, 256)
    lin(x).sum().backward()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(20000):
        y = lin(x)  # noqa: F841 - dropped at the next iteration
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return "max RSS grew by %.1f MiB" % ((after - before) / 1024)


def two_graphs():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    la = (w * w).sum()
    lb = (w * 3).sum()
    la.backward()
    lb.backward()
    return w.grad.tolist()


def other_thread():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    result = {}

    def run():
        loss.backward()
        result["grad"] = w.grad.tolist()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return result["grad"]


def retain_then_twice():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad.tolist()


outcome("second backward through h", second_backward)
outcome("state across steps", lambda: state_across_steps(False))
outcome("state across steps, retain_graph", lambda: state_across_steps(True))
outcome("eval loop without no_grad", eval_loop_without_no_grad)
outcome("two independent graphs", two_graphs)
outcome("backward on another thread", other_thread)
outcome("retain_graph then a second backward", retain_then_twice)
w = torch.tensor([1.0, 2.0], requires_grad=True)
(w * w).sum().backward()
print("print(w.grad) ->", w.grad)
outcome("non-scalar loss", lambda: (w * 2).backward())
outcome("loss without grad", lambda: torch.tensor([1.0]).sum().backward())
