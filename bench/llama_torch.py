#!/usr/bin/env python3
"""bench/llama_torch.py: the PyTorch peer of build/bench/llama_bench, the same tasks on the same
folder, with the plain-PyTorch Llama of scripts/golden/llama_hf.py (transformers' definitions) and
the LoRA of scripts/golden/lora_peft.py (PEFT's). Run by bench/llama_compare with Debian's PyTorch.

    llama_torch.py load DIR
    llama_torch.py sample DIR [--prompt 64] [--tokens 256] [--bf16]
    llama_torch.py train DIR [--batch-size 4] [--block-size 512] [--steps 3] [--lora-r 8] [--recompute]
                     [--bf16]

--recompute runs each decoder layer under torch.utils.checkpoint (use_reentrant=False), as
transformers' gradient_checkpointing_enable() does. --bf16 runs the forward (and with it the
backward) under torch.autocast("cpu", dtype=torch.bfloat16). Prints one "llama_torch result:" line with the
fields of llama_bench's.
"""
import argparse
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "golden"))
import llama_hf  # noqa: E402
import lora_peft  # noqa: E402


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    return 0.0


def recompute_layers(model):
    """LlamaModel.forward with each layer under torch.utils.checkpoint (training, no cache)."""
    inner = model.model

    def forward(input_ids, past=None):
        T = input_ids.shape[1]
        hidden = inner.embed_tokens(input_ids)
        position_ids = torch.arange(T).unsqueeze(0)
        allowed = torch.arange(T)[None, :] <= position_ids[0][:, None]
        mask = torch.zeros(T, T).masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]
        pe = inner.rotary_emb(hidden, position_ids)
        for layer in inner.layers:
            hidden = torch.utils.checkpoint.checkpoint(
                lambda h, layer=layer: layer(h, pe, mask, None)[0], hidden, use_reentrant=False)
        return inner.norm(hidden), None

    inner.forward = forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["load", "sample", "train"])
    ap.add_argument("dir")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--block-size", type=int, default=512)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lora-r", type=int, default=0)
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--bf16", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)

    t0 = time.perf_counter()
    model = lora_peft.read_llama_folder(a.dir)
    load_seconds = time.perf_counter() - t0
    V = model.config["vocab_size"]
    if a.task == "load":
        size = os.path.getsize(os.path.join(a.dir, "model.safetensors")) / 2**20
        n = sum(p.numel() for p in model.parameters())
        print(f"llama_torch result: task=load seconds={load_seconds:.3f} peak_rss_mb={peak_rss_mb():.1f} "
              f"file_mb={size:.1f} params={n}")
        return

    gen = torch.Generator().manual_seed(1)
    if a.task == "sample":
        idx = torch.randint(0, V, (1, a.prompt), generator=gen)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            model(idx)
            t0 = time.perf_counter()
            logits, past = model(idx)
            prompt_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            logits, past = model(idx)
            for _ in range(a.tokens):
                last = logits[:, -1, :]
                v, _ = torch.topk(last, min(200, V))
                last = last.masked_fill(last < v[:, [-1]], float("-inf"))
                nxt = torch.multinomial(F.softmax(last, dim=-1), 1, generator=gen)
                logits, past = model(nxt, past)
            total = time.perf_counter() - t0
        print(f"llama_torch result: task=sample prompt_tokens={a.prompt} new_tokens={a.tokens} "
              f"prompt_tokens_per_s={a.prompt / prompt_seconds:.1f} "
              f"tokens_per_s={a.tokens / (total - prompt_seconds):.1f} peak_rss_mb={peak_rss_mb():.1f}")
        return

    if a.lora_r > 0:
        lora_peft.get_peft_model(model, ["q_proj", "k_proj", "v_proj", "o_proj"], a.lora_r, 2 * a.lora_r)
    if a.recompute:
        recompute_layers(model)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    groups = [g for g in ({"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0})
              if g["params"]]
    opt = torch.optim.AdamW(groups, lr=1e-4)
    times, activations, loss_last = [], 0.0, 0.0
    for step in range(a.steps + 1):
        x = torch.randint(0, V, (a.batch_size, a.block_size), generator=gen)
        y = torch.randint(0, V, (a.batch_size, a.block_size), generator=gen)
        before = rss_mb()
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits, _ = model(x)
            loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        activations = rss_mb() - before
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= 1:
            times.append(time.perf_counter() - t0)
        loss_last = loss.item()
    median = statistics.median(times)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"llama_torch result: task=train batch={a.batch_size} block={a.block_size} lora_r={a.lora_r} "
          f"recompute={int(a.recompute)} bf16={int(a.bf16)} steps={a.steps} step_ms_median={median * 1e3:.1f} "
          f"tokens_per_s={a.batch_size * a.block_size / median:.1f} loss_last={loss_last:.4f} "
          f"peak_rss_mb={peak_rss_mb():.1f} activations_mb={activations:.1f} trained_params={trained}")


if __name__ == "__main__":
    main()
