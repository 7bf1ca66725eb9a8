#!/usr/bin/python3
"""bench/torch_peer.py: the W1-W5 workloads in idiomatic PyTorch (CPU, eager), the peer that
bench/compare runs beside tapegrad's bench programs. Each workload is described at the top of its
tapegrad program (bench/w1_training_step.cpp ... w5_matmul.cpp); this file is the same work
written the way a PyTorch user writes it, with the same sizes, warm-up and counted runs.

    /usr/bin/python3 bench/torch_peer.py --threads 1
    /usr/bin/python3 bench/torch_peer.py --threads 2 --only W1-S,W3

Prints one line per figure, in the shape tapegrad's programs print:

    W1-S threads=1 median_ms=1.234 min_ms=... max_ms=... n=20 warmup=5 loss=...

Run it with Debian's interpreter (/usr/bin/python3, python3-torch 1.13). The thread count must be
in the environment before torch (and the OpenBLAS it loads) starts, so --threads sets
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS first, then imports torch.
"""
import argparse
import math
import os
import statistics
import sys
import time

WORKLOADS = ["W1-S", "W1-M", "W1-L", "W2", "W3", "W4", "W5"]

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--threads", type=int, default=1, help="threads for torch, OpenMP and OpenBLAS (default 1)")
parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads (default: all)")
ARGS = parser.parse_args()
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(ARGS.threads)

import torch  # noqa: E402  (after the environment above)
from torch import nn  # noqa: E402

torch.set_num_threads(ARGS.threads)
WARMUP, RUNS = 5, 20


def report(name, seconds, unit="ms", scale=1e3, extra=""):
    """One line: median, min and max of the counted runs."""
    key = "us_per_op" if unit == "us" else "ms"
    print("%s threads=%d median_%s=%.4f min_%s=%.4f max_%s=%.4f n=%d%s" % (
        name, ARGS.threads, key, statistics.median(seconds) * scale, key, min(seconds) * scale, key,
        max(seconds) * scale, len(seconds), extra), flush=True)


def timed(step, warmup=WARMUP, runs=RUNS):
    """Runs step() warmup + runs times; returns the seconds of the counted runs."""
    seconds = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        step()
        if i >= warmup:
            seconds.append(time.perf_counter() - start)
    return seconds


# ---- W1: the toy model's training step, as in The Annotated Transformer ----------------------------
class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model, padding_idx=0)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)].requires_grad_(False))


W1_SIZES = {"S": (1000, 64, 16, 32, 16), "M": (10000, 512, 32, 128, 16), "L": (32000, 512, 64, 256, 64)}


def w1(size):
    V, D, B, T, C = W1_SIZES[size]
    torch.manual_seed(0)
    model = nn.Sequential(Embeddings(D, V), PositionalEncoding(D, 0.1, 5000), nn.Linear(D, C))
    model.train()
    criterion = nn.CrossEntropyLoss()                           # ignore_index -100, mean over the rest
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    ids = torch.randint(1, V, (B, T), generator=torch.Generator().manual_seed(1))
    ids[:, T - T // 4:] = 0                                     # the last quarter of every row: padding
    labels = torch.where(ids == 0, torch.full_like(ids, -100), ids % C)
    last = {}

    def step():
        optimizer.zero_grad()
        loss = criterion(model(ids).view(-1, C), labels.view(-1))
        loss.backward()
        optimizer.step()
        last["loss"] = loss.item()

    seconds = timed(step)
    report("W1-" + size, seconds, extra=" loss=%.4f" % last["loss"])


# ---- W2: per-op overhead: 200 tiny recorded ops and their backward ---------------------------------
def w2():
    x = torch.randn(16, requires_grad=True)

    def step():
        x.grad = None
        y = x
        for _ in range(100):
            y = y * 1.0001 + 0.0001
        y.sum().backward()

    report("W2", timed(step, warmup=50, runs=500), unit="us", scale=1e6 / 200)


# ---- W3: one Adam step over 10 million parameters ---------------------------------------------------
def w3():
    P = 10_000_000
    p = nn.Parameter(torch.randn(P))
    p.grad = torch.randn(P)
    optimizer = torch.optim.Adam([p], lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    seconds = timed(optimizer.step)
    report("W3", seconds, extra=" GBps=%.2f" % (28.0 * P / statistics.median(seconds) * 1e-9))


# ---- W4: embedding gather and scatter into a dense gradient ----------------------------------------
def w4():
    V, D, B, T = 32000, 512, 64, 256
    torch.manual_seed(0)
    emb = nn.Embedding(V, D, padding_idx=0)
    ids = torch.randint(0, V, (B, T))
    ids.view(-1)[torch.randperm(B * T)[: round(0.1 * B * T)]] = 0   # 10 % padding
    G = torch.randn(B, T, D)

    def step():
        emb.weight.grad = None
        emb(ids).backward(G)                                    # the gradient of sum(out * G)

    seconds = timed(step)
    kept = int((ids != 0).sum())
    moved = 4.0 * D * (2 * B * T + kept)                        # rows read, output written, gradient rows
    report("W4", seconds, extra=" GBps=%.2f" % (moved / statistics.median(seconds) * 1e-9))


# ---- W5: a 1024 x 1024 product, forward and backward ----------------------------------------------
def w5():
    n = 1024
    torch.manual_seed(0)
    A = torch.randn(n, n, requires_grad=True)
    Bm = torch.randn(n, n, requires_grad=True)
    G = torch.randn(n, n)

    def step():
        A.grad = None
        Bm.grad = None
        (A @ Bm).backward(G)

    seconds = timed(step)
    report("W5", seconds, extra=" GFLOPs=%.2f" % (6.0 * n ** 3 / statistics.median(seconds) * 1e-9))


def main():
    chosen = [w.strip().upper() for w in ARGS.only.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        sys.exit("torch_peer.py: unknown workload(s) %s; choose from %s" % (", ".join(unknown), ", ".join(WORKLOADS)))
    print("# torch %s, threads=%d, %s" % (torch.__version__, torch.get_num_threads(), sys.executable), flush=True)
    for w in chosen:
        if w.startswith("W1-"):
            w1(w[3:])
        else:
            {"W2": w2, "W3": w3, "W4": w4, "W5": w5}[w]()


if __name__ == "__main__":
    main()
