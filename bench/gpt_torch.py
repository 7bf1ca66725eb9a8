#!/usr/bin/python3
"""bench/gpt_torch.py: the GPT of examples/gpt in PyTorch, the twin bench/gpt_compare runs beside it.

    /usr/bin/python3 bench/gpt_torch.py --threads 1 --steps 2000

Idiomatic PyTorch 1.13 (Debian's python3-torch) in nanoGPT's structure (karpathy/nanoGPT model.py
and train.py, written out here in our own words): the same model (pre-LayerNorm blocks with a fused
c_attn, causal attention written out, since 1.13 has no fused scaled_dot_product_attention; GELU
MLP; final LayerNorm; lm_head tied to wte; learned or sinusoidal positions), the same initialisation
rules (N(0, 0.02), c_proj weights N(0, 0.02 / sqrt(2 n_layer)), zero biases), AdamW with nanoGPT's
two groups (decay on the Linear weights only), the cosine schedule with linear warm-up, gradient
clipping, and the same data pipeline as examples/gpt/text_data.hpp: the same files, entries,
de-duplication, split and vocabulary, and the same fixed validation windows, drawn with the same
mt19937_64 generator (implemented below), so both sides validate on exactly the same text. Training
batches and initial weights come from torch's own generator, as nanoGPT's get_batch does: the two
sides agree in distribution, not digit for digit.

It prints the same progress and result lines as examples/gpt, which bench/gpt_compare parses:
    gpt result: steps=2000 val_loss=1.9321 train_loss=... step_ms_median=... tokens_per_s=...
"""
import argparse
import math
import os
import statistics
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

FORTUNES = "/usr/share/games/fortunes"
MASK64 = (1 << 64) - 1


# ---- tapegrad's Generator: std::mt19937_64 and randint, bit for bit --------------------------------

class Mt19937_64:
    N, M = 312, 156
    UPPER, LOWER, A = (MASK64 << 31) & MASK64, (1 << 31) - 1, 0xB5026F5AA96619E9

    def __init__(self, seed):
        self.x = [seed & MASK64]
        for i in range(1, self.N):
            prev = self.x[-1]
            self.x.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.i = self.N

    def _twist(self):
        x, n, m = self.x, self.N, self.M
        for i in range(n):
            y = (x[i] & self.UPPER) | (x[(i + 1) % n] & self.LOWER)
            x[i] = x[(i + m) % n] ^ (y >> 1) ^ (self.A if y & 1 else 0)
        self.i = 0

    def next_u64(self):
        if self.i >= self.N:
            self._twist()
        z = self.x[self.i]
        self.i += 1
        z ^= (z >> 29) & 0x5555555555555555
        z ^= (z << 17) & 0x71D67FFFEDA60000
        z ^= (z << 37) & 0xFFF7EEE000000000
        return (z ^ (z >> 43)) & MASK64

    def randint(self, low, high):
        """Uniform in [low, high), by rejection, as tapegrad's Generator::randint."""
        span = high - low
        limit = MASK64 - MASK64 % span
        while True:
            r = self.next_u64()
            if r < limit:
                return low + r % span


# ---- the data, as examples/gpt/text_data.hpp --------------------------------------------------------

def fortune_files(folder=FORTUNES):
    if not os.path.isdir(folder):
        return []
    names = [n for n in os.listdir(folder) if not n.startswith(".") and not n.endswith((".dat", ".u8"))]
    paths = [os.path.join(folder, n) for n in names]
    return sorted(p for p in paths if os.path.isfile(p) and not os.path.islink(p))


def is_blank(s):
    return all(c in " \t\n\r" for c in s)


def entries_of(text):
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    fortune_format = "%" in lines
    entries, current = [], ""
    for line in lines:
        if (line == "%") if fortune_format else is_blank(line):
            if not is_blank(current):
                entries.append(current)
            current = ""
        else:
            current += line + "\n"
    if not is_blank(current):
        entries.append(current)
    return entries


def read_entries(files):
    entries, seen = [], set()
    for path in files:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        for e in entries_of(text):
            if e not in seen:
                seen.add(e)
                entries.append(e)
    return entries


def split_entries(entries, val_fraction, seed):
    n = len(entries)
    n_val = min(max(int(math.floor(n * val_fraction + 0.5)), 1), n - 1)
    perm, gen = list(range(n)), Mt19937_64(seed)
    for i in range(n - 1, 0, -1):
        j = gen.randint(0, i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    val = set(perm[:n_val])
    return [e for i, e in enumerate(entries) if i not in val], [e for i, e in enumerate(entries) if i in val]


def join_entries(entries):
    return "".join(e + "%\n" for e in entries)


class Vocabulary:
    UNK = 0

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.ids = {c: i + 1 for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars) + 1

    def encode(self, text):
        return [self.ids.get(c, self.UNK) for c in text]


# ---- the model: nanoGPT's -------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout, self.resid_dropout = nn.Dropout(dropout), nn.Dropout(dropout)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, dropout, gelu):
        super().__init__()
        self.c_fc, self.gelu = nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate=gelu)
        self.c_proj, self.dropout = nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg.n_embd, cfg.n_head, cfg.block_size, cfg.dropout)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg.n_embd, cfg.dropout, cfg.gelu)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ScaledEmbedding(nn.Module):
    """The seeds' Embeddings: lut(ids) * sqrt(d_model)."""

    def __init__(self, vocab, d):
        super().__init__()
        self.lut, self.scale = nn.Embedding(vocab, d), math.sqrt(d)

    def forward(self, ids):
        return self.lut(ids) * self.scale


class SinusoidalPositions(nn.Module):
    """The seeds' PositionalEncoding: dropout(x + pe[:, :T]), the table computed in double."""

    def __init__(self, d, dropout, max_len):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
        pe = torch.zeros(max_len, d, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
        self.register_buffer("pe", pe.float().unsqueeze(0))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        if cfg.pos == "learned":
            parts = dict(wte=nn.Embedding(cfg.vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                         drop=nn.Dropout(cfg.dropout))
        else:
            parts = dict(wte=ScaledEmbedding(cfg.vocab_size, cfg.n_embd),
                         wpe=SinusoidalPositions(cfg.n_embd, cfg.dropout, cfg.block_size))
        parts.update(h=nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer)), ln_f=nn.LayerNorm(cfg.n_embd))
        self.transformer = nn.ModuleDict(parts)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        table = self.transformer.wte if cfg.pos == "learned" else self.transformer.wte.lut
        table.weight = self.lm_head.weight                      # tied
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self):
        n = sum(p.numel() for p in self.parameters())
        return n - (self.transformer.wpe.weight.numel() if self.cfg.pos == "learned" else 0)

    def flops_per_token(self):
        c = self.cfg
        return 6 * self.num_params() + 12 * c.n_layer * c.n_head * (c.n_embd // c.n_head) * c.block_size

    def forward(self, idx, targets=None):
        t = idx.size(1)
        assert t <= self.cfg.block_size, f"Cannot forward sequence of length {t}, block size is only {self.cfg.block_size}"
        if self.cfg.pos == "learned":
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        else:
            x = self.transformer.wpe(self.transformer.wte(idx))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        # <unk> (id 0) targets are not scored: only validation text can hold them
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=0)

    def optimizer_groups(self, weight_decay):
        """nanoGPT's groups as examples/gpt builds them: decay on the Linear weights, none elsewhere."""
        matrices = {id(m.weight) for m in self.modules() if isinstance(m, nn.Linear) and m is not self.lm_head}
        decay = [p for p in self.parameters() if id(p) in matrices]
        no_decay = [p for p in self.parameters() if id(p) not in matrices]
        return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def cosine_with_warmup(it, warmup, max_steps, min_lr_ratio):
    """nanoGPT's get_lr(it) / learning_rate."""
    if it < warmup:
        return (it + 1) / (warmup + 1)
    if it > max_steps:
        return min_lr_ratio
    decay_ratio = (it - warmup) / (max_steps - warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr_ratio + coeff * (1.0 - min_lr_ratio)


def fmt_duration(seconds):
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    s = int(seconds + 0.5)
    return f"{s // 60} min {s % 60:02d} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="*", default=None, help="UTF-8 text files (default: the fortunes)")
    for name, default in [("steps", 2000), ("batch-size", 12), ("block-size", 64), ("n-layer", 4), ("n-head", 4),
                          ("n-embd", 128), ("warmup", 100), ("eval-every", 250), ("eval-windows", 480),
                          ("threads", 1), ("seed", 0), ("split-seed", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    for name, default in [("lr", 1e-3), ("min-lr", 1e-4), ("beta1", 0.9), ("beta2", 0.99), ("weight-decay", 0.1),
                          ("clip", 1.0), ("dropout", 0.0), ("val-fraction", 0.1)]:
        ap.add_argument("--" + name, type=float, default=default)
    ap.add_argument("--pos", choices=["learned", "sinusoidal"], default="learned")
    ap.add_argument("--gelu", choices=["none", "tanh"], default="none")
    ap.add_argument("--bf16", action="store_true",
                    help="train under torch.autocast(\"cpu\", dtype=torch.bfloat16), as gpt --bf16 "
                         "(validation stays float32 on both sides)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    files = args.data if args.data else fortune_files()
    train_entries, val_entries = split_entries(read_entries(files), args.val_fraction, args.split_seed)
    train_text, val_text = join_entries(train_entries), join_entries(val_entries)
    vocab = Vocabulary(train_text)
    train_ids = torch.tensor(vocab.encode(train_text), dtype=torch.long)
    val_ids = vocab.encode(val_text)
    T, B = args.block_size, args.batch_size
    window_gen = Mt19937_64(args.split_seed + 1)
    val_starts = [window_gen.randint(0, len(val_ids) - T) for _ in range(args.eval_windows)]
    val_x = torch.tensor([val_ids[s:s + T] for s in val_starts], dtype=torch.long)
    val_y = torch.tensor([val_ids[s + 1:s + T + 1] for s in val_starts], dtype=torch.long)

    cfg = argparse.Namespace(vocab_size=len(vocab), block_size=T, n_layer=args.n_layer, n_head=args.n_head,
                             n_embd=args.n_embd, dropout=args.dropout, pos=args.pos, gelu=args.gelu)
    model = GPT(cfg)
    opt = torch.optim.AdamW(model.optimizer_groups(args.weight_decay), lr=args.lr, betas=(args.beta1, args.beta2))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda e: cosine_with_warmup(e, args.warmup, args.steps, args.min_lr / args.lr))
    print(f"torch {torch.__version__} gpt: {len(train_entries)} training and {len(val_entries)} validation entries, "
          f"{len(train_ids)} and {len(val_ids)} characters, vocab {len(vocab)}; n_layer={args.n_layer} "
          f"n_head={args.n_head} n_embd={args.n_embd} block_size={T} pos={args.pos}, {model.num_params()} parameters, "
          f"threads={torch.get_num_threads()}", flush=True)

    def evaluate():
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, len(val_starts), B):
                logits, _ = model(val_x[i:i + B])
                y = val_y[i:i + B].reshape(-1)
                total += F.cross_entropy(logits.view(-1, logits.size(-1)), y, ignore_index=0, reduction="sum").item()
                count += int((y != 0).sum())
        model.train()
        return total / count

    batch_gen = torch.Generator().manual_seed(args.seed + 1)
    step_seconds, start, val_loss, loss = [], time.perf_counter(), float("nan"), float("nan")
    for step in range(args.steps):
        t0 = time.perf_counter()
        ix = torch.randint(len(train_ids) - T, (B,), generator=batch_gen)
        x = torch.stack([train_ids[i:i + T] for i in ix])
        y = torch.stack([train_ids[i + 1:i + 1 + T] for i in ix])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            _, loss_t = model(x, y)
            loss_t.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        loss = loss_t.item()
        step_seconds.append(time.perf_counter() - t0)
        done = step + 1
        if done % args.eval_every == 0 or done == args.steps:
            val_loss = evaluate()
            print(f"step {done}: validation loss {val_loss:.4f}", flush=True)
        if done % max(1, args.steps // 10) == 0 or done == args.steps:
            elapsed = sum(step_seconds)
            print(f"step {done:{len(str(args.steps))}d}/{args.steps}  loss {loss:.4f}  "
                  f"{int(done * B * T / elapsed):7d} tokens/s  lr {sched.get_last_lr()[0]:.2e}  "
                  f"ETA {fmt_duration(elapsed / done * (args.steps - done))}", flush=True)
    steady = step_seconds[min(10, len(step_seconds) - 1):]
    median = statistics.median(steady)
    print(f"gpt result: steps={args.steps} val_loss={val_loss:.4f} train_loss={loss:.4f} "
          f"step_ms_median={median * 1e3:.3f} tokens_per_s={B * T / median:.1f} "
          f"flops_per_token={model.flops_per_token()} seconds={time.perf_counter() - start:.1f}", flush=True)


if __name__ == "__main__":
    main()
