#!/usr/bin/python3
"""bench/gpt2_torch.py: GPT-2 124M in plain PyTorch, the peer for tapegrad's GPT-2 on four timed tasks.

    /usr/bin/python3 bench/gpt2_torch.py --model /tmp/gpt2-124m --task load
    /usr/bin/python3 bench/gpt2_torch.py --model /tmp/gpt2-124m --task sample --new-tokens 256
    /usr/bin/python3 bench/gpt2_torch.py --model /tmp/gpt2-124m --task score --windows 8 --window 1024
    /usr/bin/python3 bench/gpt2_torch.py --model /tmp/gpt2-124m --task finetune --steps 12

The model is scripts/golden/gpt2_model.py, a replica of Hugging Face's GPT2LMHeadModel written in
PyTorch 1.13 (Debian's python3-torch) with a key/value cache; this file only times it. The folder
is a Hugging Face one: config.json and model.safetensors.

The tasks, each ending in one line a driver can parse (key=value pairs after "gpt2_torch result:"):

  load      build the model from the folder; the seconds it takes and the process's peak resident
            memory, beside the size of the weights file.
                gpt2_torch result: task=load seconds=S peak_rss_mb=M file_mb=F
  sample    the prompt (--prompt-ids, or 64 seeded random ids) in one forward pass (the "prefill"),
            then --new-tokens tokens drawn one at a time with temperature and top-k, each new token
            fed alone through the model with the cache of the ones before. The two phases are timed
            apart: prompt tokens per second for the prefill, new tokens per second for the rest.
                gpt2_torch result: task=sample prompt_tokens=64 new_tokens=256 prompt_tokens_per_s=X
                                   tokens_per_s=Y peak_rss_mb=M
  score     --windows windows of --window ids, each one forward pass (batch 1); every position but the
            last predicts the next id, so a window of 1024 ids scores 1023 targets (the first id of a
            window is context only, as tapegrad's gpt_eval does). Prints the mean cross-entropy over
            all scored targets, and the median seconds per window.
                gpt2_torch result: task=score windows=8 window=1024 tokens=N loss=L tokens_per_s=T
                                   seconds=S peak_rss_mb=M
  finetune  --steps training steps on batches of random windows, in train mode with every dropout at
            0, with AdamW and nanoGPT's two parameter groups; the median step time after the first two.
            With --bf16, forward and backward run under torch.autocast("cpu", dtype=torch.bfloat16).
                gpt2_torch result: task=finetune batch=4 block=256 bf16=0 steps=12 step_ms_median=X tokens_per_s=Y
                                   loss_first=A loss_last=B flops_per_token=F peak_rss_mb=M

Token ids come from a text file of whitespace-separated ids (--prompt-ids, --token-ids) or, without
one, from a torch.Generator seeded with --seed: uniform over the vocabulary. Memory figures are in MiB
(ru_maxrss is in KiB on Linux), and are the peak of the whole process: torch itself included (about
230 MiB before any model), and whatever freed memory the C library's allocator keeps.
"""
import argparse
import ctypes
import json
import os
import resource
import statistics
import sys
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

# The model lives with the other PyTorch references, in scripts/golden.
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts", "golden"))
import gpt2_model  # noqa: E402


# ---- what the machine and the process report ------------------------------------------------------

def openblas_core():
    """The OpenBLAS kernel set torch runs on (e.g. "Haswell"), or "unknown".

    OpenBLAS picks its kernels for the CPU at load time (Debian builds it with DYNAMIC_ARCH); which
    ones it picked decides much of the speed. torch loads it privately, so we look for it among the
    files mapped into this process and ask it by name."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            if hasattr(lib, "openblas_get_corename"):
                lib.openblas_get_corename.restype = ctypes.c_char_p
                lib.openblas_get_config.restype = ctypes.c_char_p
                return f"{lib.openblas_get_corename().decode()} ({lib.openblas_get_config().decode()})"
    except OSError:
        pass
    return "unknown"


def peak_rss_mb():
    """The most memory this process has held resident so far, in MiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb():
    """The memory resident now, in MiB, from /proc/self/statm (pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ---- inputs ---------------------------------------------------------------------------------------

def read_config(folder):
    """The Hugging Face config.json of the folder: n_layer, n_head, n_embd, n_positions, vocab_size."""
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def read_ids(path):
    """A text file of whitespace-separated token ids, as a 1-D tensor of int64."""
    with open(path) as f:
        return torch.tensor([int(word) for word in f.read().split()], dtype=torch.long)


def random_ids(count, vocab_size, seed):
    """count ids uniform in [0, vocab_size), from a generator of their own seeded with seed."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (count,), generator=generator, dtype=torch.long)


def load_model(folder):
    """The model of the folder's config.json and model.safetensors, as gpt2_model builds it."""
    return gpt2_model.read_folder(folder)


# ---- the tasks ------------------------------------------------------------------------------------

def task_load(args, config):
    before = current_rss_mb()
    start = time.perf_counter()
    model = load_model(args.model)
    seconds = time.perf_counter() - start
    n_params = sum(p.numel() for p in model.parameters())   # the tied table counted once
    file_mb = os.path.getsize(os.path.join(args.model, "model.safetensors")) / 2**20
    print(f"load: {n_params} parameters; resident {before:.1f} MiB before (torch itself), "
          f"{current_rss_mb():.1f} MiB after", flush=True)
    print(f"gpt2_torch result: task=load seconds={seconds:.3f} peak_rss_mb={peak_rss_mb():.1f} "
          f"file_mb={file_mb:.1f}", flush=True)


def sample_next(logits, temperature, top_k, generator):
    """One id per row of logits (B, vocab): nanoGPT's sampling step, temperature then top-k."""
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)


def generate_timed(model, prompt, new_tokens, temperature, top_k, generator):
    """Samples new_tokens ids after prompt (1, T) with the key/value cache; returns the new ids and
    the seconds of the two phases.

    Prefill: the whole prompt in one forward pass, which gives the logits for the first new token
    and the cache of every prompt position. Generation: each new token is sampled from the last
    logits and then fed through the model alone, its positions continuing from the cache; the last
    token sampled needs no forward pass of its own. So new_tokens tokens cost one prefill, then
    new_tokens samplings and new_tokens - 1 one-token passes: what model.generate does too."""
    start = time.perf_counter()
    logits, past = model(prompt)
    prefilled = time.perf_counter()
    out = []
    for i in range(new_tokens):
        token = sample_next(logits[:, -1, :], temperature, top_k, generator)
        out.append(token)
        if i + 1 < new_tokens:
            logits, past = model(token, past=past)
    done = time.perf_counter()
    return torch.cat(out, dim=1), prefilled - start, done - prefilled


def task_sample(args, config):
    model = load_model(args.model)
    model.eval()
    if args.prompt_ids:
        prompt = read_ids(args.prompt_ids)
    else:
        prompt = random_ids(64, config["vocab_size"], args.seed)
    prompt = prompt.view(1, -1)
    n_positions = config.get("n_positions", config.get("n_ctx"))
    if prompt.size(1) + args.new_tokens > n_positions:
        sys.exit(f"gpt2_torch: {prompt.size(1)} prompt + {args.new_tokens} new tokens exceed the model's "
                 f"{n_positions} positions")
    top_k = args.top_k if args.top_k > 0 else None
    with torch.no_grad():
        # A short warm-up run first: the first passes pay for allocations and for OpenBLAS starting.
        generate_timed(model, prompt, 8, args.temperature, top_k, torch.Generator().manual_seed(args.seed))
        ids, prefill_s, generate_s = generate_timed(model, prompt, args.new_tokens, args.temperature, top_k,
                                                    torch.Generator().manual_seed(args.seed))
    print(f"sample: prefill {prefill_s * 1e3:.1f} ms, {args.new_tokens} new tokens in {generate_s:.2f} s; "
          f"first ids {ids[0, :8].tolist()}", flush=True)
    print(f"gpt2_torch result: task=sample prompt_tokens={prompt.size(1)} new_tokens={args.new_tokens} "
          f"prompt_tokens_per_s={prompt.size(1) / prefill_s:.1f} tokens_per_s={args.new_tokens / generate_s:.2f} "
          f"peak_rss_mb={peak_rss_mb():.1f}", flush=True)


def task_score(args, config):
    model = load_model(args.model)
    model.eval()
    W, count = args.window, args.windows
    if args.token_ids:
        # Consecutive, non-overlapping windows from the start of the file.
        ids = read_ids(args.token_ids)
        if len(ids) < count * W:
            sys.exit(f"gpt2_torch: {args.token_ids} holds {len(ids)} ids, {count} windows of {W} need {count * W}")
    else:
        ids = random_ids(count * W, config["vocab_size"], args.seed)
    windows = ids[: count * W].view(count, W)
    total_loss, targets, seconds = 0.0, 0, []
    with torch.no_grad():
        for window in windows:
            start = time.perf_counter()
            logits, _ = model(window.view(1, W))
            # Position t predicts id t + 1: the last position has nothing to predict.
            loss = F.cross_entropy(logits[0, :-1, :], window[1:], reduction="sum")
            seconds.append(time.perf_counter() - start)
            total_loss += loss.item()
            targets += W - 1
    median = statistics.median(seconds)
    print(f"score: seconds per window {', '.join(f'{s:.2f}' for s in seconds)}", flush=True)
    # tokens_per_s counts the positions the model runs (W per window), scored or not.
    print(f"gpt2_torch result: task=score windows={count} window={W} tokens={targets} loss={total_loss / targets:.4f} "
          f"tokens_per_s={W / median:.1f} seconds={median:.3f} peak_rss_mb={peak_rss_mb():.1f}", flush=True)


def optimizer_groups(model, weight_decay):
    """nanoGPT's configure_optimizers groups: weight decay on every parameter of two or more
    dimensions (the matrices and the embedding tables), none on the biases and LayerNorm weights.
    named_parameters lists a tied parameter once, so wte (also the lm_head) is there once, decayed."""
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def flops_per_token(model, config, block_size):
    """nanoGPT's estimate for one token of a training step: 6 N for the matrix products forward and
    backward, N the parameters without the position table, plus 12 L H Q T for attention (L layers,
    H heads of Q dimensions each, T the sequence length trained on)."""
    n = sum(p.numel() for p in model.parameters()) - model.transformer.wpe.weight.numel()
    L, H, C = config["n_layer"], config["n_head"], config["n_embd"]
    return 6 * n + 12 * L * H * (C // H) * block_size


def task_finetune(args, config):
    model = load_model(args.model)
    model.train()
    # Dropout off: its random masks would make the two sides' work differ.
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    B, T = args.batch_size, args.block_size
    if args.token_ids:
        data = read_ids(args.token_ids)
        if len(data) < T + 1:
            sys.exit(f"gpt2_torch: {args.token_ids} holds {len(data)} ids, a window of {T} needs {T + 1}")
    else:
        # A stream of random ids as long as the batches would take end to end.
        data = random_ids(args.steps * B * (T + 1), config["vocab_size"], args.seed)
    opt = torch.optim.AdamW(optimizer_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)
    step_seconds, losses = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        # nanoGPT's get_batch: B windows at random starts, each target the id after its input.
        ix = torch.randint(len(data) - T, (B,), generator=batch_gen)
        x = torch.stack([data[i:i + T] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + T] for i in ix])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits, _ = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        step_seconds.append(time.perf_counter() - start)
        print(f"step {step + 1}/{args.steps}: loss {losses[-1]:.4f}, {step_seconds[-1] * 1e3:.0f} ms", flush=True)
    # The first two steps pay for allocating the gradients and AdamW's moments: not counted.
    steady = step_seconds[2:] if len(step_seconds) > 2 else step_seconds
    median = statistics.median(steady)
    print(f"gpt2_torch result: task=finetune batch={B} block={T} bf16={int(args.bf16)} steps={args.steps} "
          f"step_ms_median={median * 1e3:.1f} tokens_per_s={B * T / median:.1f} loss_first={losses[0]:.4f} "
          f"loss_last={losses[-1]:.4f} flops_per_token={flops_per_token(model, config, T)} "
          f"peak_rss_mb={peak_rss_mb():.1f}", flush=True)


TASKS = {"load": task_load, "sample": task_sample, "score": task_score, "finetune": task_finetune}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a Hugging Face GPT-2 folder: config.json, model.safetensors")
    ap.add_argument("--task", required=True, choices=sorted(TASKS))
    ap.add_argument("--threads", type=int, default=1, help="threads for torch, OpenMP and OpenBLAS (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompt-ids", help="sample: the prompt, whitespace-separated ids (default: 64 random ids)")
    ap.add_argument("--token-ids", help="score, finetune: the text, whitespace-separated ids (default: random ids)")
    ap.add_argument("--top-k", type=int, default=200, help="sample: keep the k largest logits (0: all of them)")
    for name, default in [("new-tokens", 256), ("windows", 8), ("window", 1024),
                          ("batch-size", 4), ("block-size", 256), ("steps", 12)]:
        ap.add_argument("--" + name, type=int, default=default)
    for name, default in [("temperature", 1.0), ("lr", 3e-5), ("weight-decay", 0.1)]:
        ap.add_argument("--" + name, type=float, default=default)
    ap.add_argument("--bf16", action="store_true",
                    help="finetune: forward and backward under torch.autocast(\"cpu\", dtype=torch.bfloat16), "
                         "AdamW in float32, as gpt2_bench --bf16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    config = read_config(args.model)
    print(f"gpt2_torch: torch {torch.__version__} threads={torch.get_num_threads()} openblas={openblas_core()} "
          f"task={args.task} model={args.model} (n_layer={config['n_layer']} n_head={config['n_head']} "
          f"n_embd={config['n_embd']} vocab={config['vocab_size']})", flush=True)
    TASKS[args.task](args, config)


if __name__ == "__main__":
    main()
