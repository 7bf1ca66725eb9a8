#!/usr/bin/python3
"""bench/copy_task_torch.py: the copy task of examples/copy_task.cpp in PyTorch, for the speed ratio.

    /usr/bin/python3 bench/copy_task_torch.py --threads 1 --d-model 128 --d-ff 512

The same model as tapegrad's nn::make_model (The Annotated Transformer's architecture: pre-norm
residual sub-layers with the tutorial's LayerNorm, unbiased std and eps on the std; 4 linears per
attention; Embeddings * sqrt(d_model) + sinusoidal encoding; log_softmax head; Xavier init), the
same data recipe, loss (label smoothing through KL divergence, summed, / tokens), optimiser (Adam,
betas (0.9, 0.98), eps 1e-9) and Noam schedule, and the same printout. Random streams differ from
tapegrad's, so the losses agree in trend, not digit for digit. Debian's python3-torch (1.13).
Written for this comparison; it does not import the tutorial.
"""
import argparse
import math
import os
import time

# The thread count must be in the environment before torch starts: the OpenBLAS it loads sizes its
# own thread pool then, and torch.set_num_threads does not reach it (Debian's torch calls OpenBLAS
# for its matrix products). Without this, "--threads 1" would still multiply on every core.
_threads = argparse.ArgumentParser(add_help=False)
_threads.add_argument("--threads", type=int, default=1)
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = str(_threads.parse_known_args()[0].threads)

import torch  # noqa: E402  (after the environment above)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class TutorialLayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.a_2 * centred / (x.std(-1, keepdim=True) + self.eps) + self.b_2


class Attention(nn.Module):
    def __init__(self, h, d_model, p):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.linears = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout = nn.Dropout(p)

    def forward(self, query, key, value, keep):
        n = query.size(0)
        q, k, v = (lin(t).view(n, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, t in zip(self.linears, (query, key, value)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        scores = scores.masked_fill(~keep.unsqueeze(1), -1e9)
        weights = self.dropout(scores.softmax(dim=-1))
        x = (weights @ v).transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k)
        return self.linears[3](x)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, p):
        super().__init__()
        self.w_1, self.w_2, self.dropout = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.Dropout(p)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class Residual(nn.Module):
    def __init__(self, size, p):
        super().__init__()
        self.norm, self.dropout = TutorialLayerNorm(size), nn.Dropout(p)

    def forward(self, x, fn):
        return x + self.dropout(fn(self.norm(x)))


class EncLayer(nn.Module):
    def __init__(self, d, h, d_ff, p):
        super().__init__()
        self.self_attn, self.feed_forward = Attention(h, d, p), FeedForward(d, d_ff, p)
        self.sublayer = nn.ModuleList(Residual(d, p) for _ in range(2))

    def forward(self, x, keep):
        x = self.sublayer[0](x, lambda n: self.self_attn(n, n, n, keep))
        return self.sublayer[1](x, self.feed_forward)


class DecLayer(nn.Module):
    def __init__(self, d, h, d_ff, p):
        super().__init__()
        self.self_attn, self.src_attn = Attention(h, d, p), Attention(h, d, p)
        self.feed_forward = FeedForward(d, d_ff, p)
        self.sublayer = nn.ModuleList(Residual(d, p) for _ in range(3))

    def forward(self, x, memory, src_keep, tgt_keep):
        x = self.sublayer[0](x, lambda n: self.self_attn(n, n, n, tgt_keep))
        x = self.sublayer[1](x, lambda n: self.src_attn(n, memory, memory, src_keep))
        return self.sublayer[2](x, self.feed_forward)


class Embed(nn.Module):
    def __init__(self, d, vocab, p, max_len=5000):
        super().__init__()
        self.lut, self.d, self.dropout = nn.Embedding(vocab, d), d, nn.Dropout(p)
        pos = torch.arange(max_len).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d, 2) * -(math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, ids):
        return self.dropout(self.lut(ids) * math.sqrt(self.d) + self.pe[:, : ids.size(1)])


class Model(nn.Module):
    def __init__(self, vocab, N, d, d_ff, h, p):
        super().__init__()
        self.enc = nn.ModuleList(EncLayer(d, h, d_ff, p) for _ in range(N))
        self.dec = nn.ModuleList(DecLayer(d, h, d_ff, p) for _ in range(N))
        self.enc_norm, self.dec_norm = TutorialLayerNorm(d), TutorialLayerNorm(d)
        self.src_embed, self.tgt_embed = Embed(d, vocab, p), Embed(d, vocab, p)
        self.proj = nn.Linear(d, vocab)
        for w in self.parameters():
            if w.dim() > 1:
                nn.init.xavier_uniform_(w)

    def forward(self, src, tgt, src_keep, tgt_keep):
        x = self.src_embed(src)
        for layer in self.enc:
            x = layer(x, src_keep)
        memory = self.enc_norm(x)
        y = self.tgt_embed(tgt)
        for layer in self.dec:
            y = layer(y, memory, src_keep, tgt_keep)
        return F.log_softmax(self.proj(self.dec_norm(y)), dim=-1)


def smoothed_kl(logp, target, padding_idx, smoothing):
    """Label smoothing through KL divergence, summed (the tutorial's criterion)."""
    dist = torch.full_like(logp, smoothing / (logp.size(1) - 2))
    dist[torch.arange(len(target)), target] = 1.0 - smoothing
    dist[:, padding_idx] = 0.0
    dist[target == padding_idx] = 0.0
    return F.kl_div(logp, dist, reduction="sum")


def batch(args):
    data = torch.randint(1, args.vocab, (args.batch_size, args.seq_len))
    data[:, 0] = 1
    tgt, tgt_y = data[:, :-1], data[:, 1:]
    src_keep = (data != 0).unsqueeze(-2)
    causal = torch.tril(torch.ones(1, tgt.size(1), tgt.size(1), dtype=torch.bool))
    tgt_keep = (tgt != 0).unsqueeze(-2) & causal
    return data, tgt, tgt_y, src_keep, tgt_keep, int((tgt_y != 0).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("epochs", 20), ("batches", 20), ("eval-batches", 5), ("batch-size", 80), ("layers", 2),
                          ("d-model", 128), ("d-ff", 512), ("heads", 8), ("warmup", 400), ("threads", 1),
                          ("seed", 0), ("vocab", 11), ("seq-len", 10)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--base-lr", type=float, default=0.5)
    ap.add_argument("--smoothing", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    model = Model(args.vocab, args.layers, args.d_model, args.d_ff, args.heads, args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.base_lr, betas=(0.9, 0.98), eps=1e-9)
    noam = lambda step: args.d_model ** -0.5 * min(max(step, 1) ** -0.5, max(step, 1) * args.warmup ** -1.5)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, noam)
    print(f"torch {torch.__version__} copy task: d_model={args.d_model} d_ff={args.d_ff} N={args.layers} "
          f"threads={torch.get_num_threads()}")
    for epoch in range(args.epochs):
        model.train()
        total = tokens = 0.0
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(args.batches):
            src, tgt, tgt_y, src_keep, tgt_keep, n = batch(args)
            logp = model(src, tgt, src_keep, tgt_keep)
            loss = smoothed_kl(logp.reshape(-1, args.vocab), tgt_y.reshape(-1), 0, args.smoothing) / n
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            total += loss.item() * n
            tokens += n
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        model.eval()
        eval_total = eval_tokens = 0.0
        with torch.no_grad():
            for _ in range(args.eval_batches):
                src, tgt, tgt_y, src_keep, tgt_keep, n = batch(args)
                logp = model(src, tgt, src_keep, tgt_keep)
                eval_total += smoothed_kl(logp.reshape(-1, args.vocab), tgt_y.reshape(-1), 0, args.smoothing).item()
                eval_tokens += n
        print(f"epoch {epoch + 1:3d} | train loss {total / tokens:.4f} | eval loss "
              f"{eval_total / max(eval_tokens, 1):.4f} | tokens/s {tokens / seconds:.1f} | cpu s {cpu_seconds:.2f} | "
              f"lr {sched.get_last_lr()[0]:.2e}", flush=True)


if __name__ == "__main__":
    main()
