#!/usr/bin/python3
"""scripts/golden/gpt2_hf.py: small GPT-2 checkpoints in Hugging Face's folder layout, and the
PyTorch values tapegrad's GPT-2 loader is tested against.

Run by hand with Debian's PyTorch 1.13 (the tests never need it; the outputs are committed):

    /usr/bin/python3 scripts/golden/gpt2_hf.py [fixtures]      the test fixtures (the default)
    /usr/bin/python3 scripts/golden/gpt2_hf.py write-124m DIR  GPT-2 124M's shapes, random weights
    /usr/bin/python3 scripts/golden/gpt2_hf.py verify DIR [--text-ids FILE]
                                                               check a folder tapegrad exported

Provenance. The model is scripts/golden/gpt2_model.py, a restatement of transformers'
GPT2LMHeadModel in plain PyTorch: transformers and the safetensors package are not packaged in
Debian, so neither could be run here. The safetensors files are laid out as
scripts/golden/safetensors_fixture.py's `serialize` (which follows the reference writer) lays them
out: the goldens are written by that function, and the model files by gpt2_model's streaming
writer, which this script checks gives the same bytes. The weights are random: no pretrained
GPT-2 weights are involved anywhere.

fixtures writes, under tests/pretrained/fixtures/gpt2_tiny/:
  plain/config.json, plain/model.safetensors
        a tiny GPT-2 (vocab_size 50257, n_positions 32, n_embd 8, n_head 2, n_layer 2, gelu_new)
        in the layout of OpenAI's gpt2 repository: keys without "transformer.", each layer's
        mask buffers h.{i}.attn.bias (F32 (1, 1, 32, 32)) and h.{i}.attn.masked_bias (F32 ()),
        no lm_head.weight;
  prefixed/config.json, prefixed/model.safetensors
        the same weights with every key prefixed "transformer.", plus lm_head.weight stored as a
        tensor of its own (equal to transformer.wte.weight), no buffers;
  golden.safetensors (float32 unless noted), the model in eval mode (no dropout):
        idx, targets          I64 (2, 32): ids drawn uniformly from the vocabulary, and the next ids
        logits_head           (2, 32, 256): the first 256 logits of every position
        logsumexp             (2, 32): logsumexp over each full row of 50257 logits
        argmax                I64 (2, 32): the most likely id at each position
        loss                  (): mean cross-entropy of the logits against targets
        grad.<key>            the gradient of loss for every parameter, under its key in the
                              "prefixed" layout, Conv1D matrices as (in, out); the tied table once,
                              as grad.transformer.wte.weight (its gradient includes the head's part)
        greedy.prompt         I64 (1, 5), and greedy.out I64 (1, 25): the prompt and 20 ids chosen
                              greedily (argmax) with the key/value cache; the same without the cache
        greedy.min_gap        (): the smallest gap between the two largest logits over those 20
                              choices; the prompt is the first one drawn (generator seeds 0, 1, ...)
                              whose gap exceeds 1e-3, so float rounding cannot flip a choice.
  No tokenizer files: the tests copy GPT-2's vocab.json and merges.txt in when they run.

write-124m DIR writes GPT-2 124M's shapes (n_embd 768, n_head 12, n_layer 12, n_positions 1024)
with transformers' initialization drawn from a fixed seed, in the "plain" layout (about 548 MB,
like OpenAI's file), plus vocab.json and merges.txt copied from .cache/gpt2/ when they are there.
It is for benchmarks (bench/gpt2_torch.py), and is not committed.

verify DIR loads DIR/model.safetensors into the replica strictly, as
safetensors.torch.load_model(model, file, strict=True) does: every key of the file must be a key
of the model's state_dict() ("transformer."-prefixed, no buffers), and every state_dict() key must
be in the file, except a name tied to one that is (lm_head.weight, which is transformer.wte.weight).
A tied name that the file does hold must equal the tensor it is tied to (load_model itself would
call the second name unexpected; transformers' from_pretrained accepts it, and so does this).
The metadata must say {"format": "pt"}, which from_pretrained requires. It then prints
    gpt2_hf verify: DIR: strict load ok, N tensors, loss=L
(and with --text-ids FILE, the loss over those ids as gpt_eval counts it: windows of n_positions
that do not overlap, each predicting its next ids), with L the mean cross-entropy on the verify
batch: ids of shape (2, T + 1), T = min(16,
n_positions), drawn uniformly from the vocabulary by torch.randint with a torch.Generator seeded
1234; the inputs are the first T ids of each row, the targets the last T.
"""
import argparse
import os
import shutil
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import gpt2_model  # noqa: E402  (the replica of transformers' GPT2LMHeadModel)
from safetensors_fixture import serialize  # noqa: E402  (the reference byte layout)

FIXTURES = os.path.join(ROOT, "tests", "pretrained", "fixtures", "gpt2_tiny")
TINY_SEED = 20240501      # the tiny model's weights
BATCH_SEED = 7            # the golden batch of the tiny model
SEED_124M = 124           # the 124M model's weights
VERIFY_SEED = 1234        # the verify batch


# ---- helpers -------------------------------------------------------------------------------------

def golden_entry(t):
    """A tensor as serialize takes it: (dtype name, shape, little-endian row-major bytes)."""
    t = t.detach().contiguous()
    return gpt2_model.DTYPE_NAMES[t.dtype], tuple(t.shape), t.numpy().tobytes()


def write_golden(path, tensors):
    with open(path, "wb") as f:
        f.write(serialize({name: golden_entry(t) for name, t in tensors.items()}, {"format": "pt"}))


def mean_cross_entropy(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def verify_batch(config):
    """The batch verify scores: (inputs, targets), each (2, T), T = min(16, n_positions)."""
    T = min(16, config["n_positions"])
    ids = torch.randint(0, config["vocab_size"], (2, T + 1), generator=torch.Generator().manual_seed(VERIFY_SEED))
    return ids[:, :T], ids[:, 1:]


def size_of(path):
    return f"{os.path.getsize(path):,} bytes"


# ---- fixtures ------------------------------------------------------------------------------------

def tiny_model():
    """The tiny GPT-2, with weights large enough that its logits have real structure: every
    parameter N(0, 0.3), except the LayerNorm weights, 1 + N(0, 0.1)."""
    config = gpt2_model.config_dict(n_embd=8, n_head=2, n_layer=2, n_positions=32)
    model = gpt2_model.GPT2LMHeadModel(config, init=False)
    layer_norm_weights = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.LayerNorm)}
    generator = torch.Generator().manual_seed(TINY_SEED)
    with torch.no_grad():
        for _, p in model.named_parameters():   # a fixed order: the order of the modules
            if id(p) in layer_norm_weights:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            else:
                p.normal_(0.0, 0.3, generator=generator)
    return model.eval()


def check_cache(model, idx, split):
    """The logits of idx in one pass, and again as idx[:, :split] followed by the rest one id at a
    time through the cache, must agree: the cache is only a shortcut."""
    with torch.no_grad():
        full, _ = model(idx)
        pieces, past = [], None
        logits, past = model(idx[:, :split])
        pieces.append(logits)
        for t in range(split, idx.size(1)):
            logits, past = model(idx[:, t:t + 1], past=past)
            pieces.append(logits)
    diff = (torch.cat(pieces, dim=1) - full).abs().max().item()
    assert diff < 1e-5, f"cached and uncached logits differ by {diff}"
    return diff


def greedy_without_cache(model, prompt, new_tokens):
    """Greedy decoding the long way: every step runs the whole sequence so far. Returns the ids
    and the smallest gap between the two largest logits among the steps' choices."""
    ids, min_gap = prompt, float("inf")
    with torch.no_grad():
        for _ in range(new_tokens):
            last = model(ids)[0][:, -1, :]
            top2 = torch.topk(last, 2, dim=-1).values
            min_gap = min(min_gap, (top2[:, 0] - top2[:, 1]).min().item())
            ids = torch.cat([ids, last.argmax(dim=-1, keepdim=True)], dim=1)
    return ids, min_gap


def write_checked_folder(model, folder, layout):
    """write_folder, then two checks: the file is byte for byte what the reference serialize makes
    of the same tensors, and read_folder gives back a model with identical logits."""
    tensors = gpt2_model.write_folder(model, folder, layout)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        written = f.read()
    assert written == serialize({n: golden_entry(t) for n, t in tensors.items()}, {"format": "pt"}), \
        f"{folder}: the streaming writer and the reference serialize disagree"
    idx = torch.arange(64).view(2, 32) * 781 % model.config["vocab_size"]   # ids spread over the vocabulary
    with torch.no_grad():
        assert torch.equal(gpt2_model.read_folder(folder)(idx)[0], model(idx)[0]), f"{folder}: read back differs"


def fixtures():
    model = tiny_model()
    config = model.config
    os.makedirs(FIXTURES, exist_ok=True)
    for layout in ("plain", "prefixed"):
        write_checked_folder(model, os.path.join(FIXTURES, layout), layout)

    # The golden batch: each row 33 ids; inputs the first 32, targets the last 32.
    ids = torch.randint(0, config["vocab_size"], (2, 33), generator=torch.Generator().manual_seed(BATCH_SEED))
    idx, targets = ids[:, :32].contiguous(), ids[:, 1:].contiguous()
    diff = check_cache(model, idx, split=20)

    model.zero_grad(set_to_none=True)
    logits, _ = model(idx)
    loss = mean_cross_entropy(logits, targets)
    loss.backward()
    golden = {
        "idx": idx,
        "targets": targets,
        "logits_head": logits[..., :256],
        "logsumexp": torch.logsumexp(logits, dim=-1),
        "argmax": logits.argmax(dim=-1),
        "loss": loss.reshape(()),
    }
    for name, p in model.named_parameters():   # the tied table once, as transformer.wte.weight
        golden["grad." + name] = p.grad

    # Greedy decoding: the first prompt whose 20 choices are all clear by more than 1e-3.
    for seed in range(1000):
        prompt = torch.randint(0, config["vocab_size"], (1, 5), generator=torch.Generator().manual_seed(seed))
        slow, min_gap = greedy_without_cache(model, prompt, 20)
        if min_gap > 1e-3:
            break
    else:
        raise RuntimeError("no prompt among 1000 seeds decodes with clear choices")
    fast = model.generate(prompt, 20, greedy=True)
    assert torch.equal(fast, slow), "greedy decoding with and without the cache differ"
    golden.update({"greedy.prompt": prompt, "greedy.out": fast, "greedy.min_gap": torch.tensor(min_gap)})

    golden_path = os.path.join(FIXTURES, "golden.safetensors")
    write_golden(golden_path, golden)

    rel = lambda p: os.path.relpath(p, ROOT)  # noqa: E731
    print(f"gpt2_hf fixtures: torch {torch.__version__}; cached vs one-pass logits differ by {diff:.2e}")
    for layout in ("plain", "prefixed"):
        for name in ("config.json", "model.safetensors"):
            path = os.path.join(FIXTURES, layout, name)
            print(f"  wrote {rel(path)}: {size_of(path)}")
    print(f"  wrote {rel(golden_path)}: {size_of(golden_path)}, {len(golden)} tensors")
    print(f"  loss {loss.item():.6f}; greedy prompt (seed {seed}) {prompt.tolist()[0]} -> "
          f"{fast[0, 5:].tolist()}, min gap {min_gap:.4g}")


# ---- write-124m ----------------------------------------------------------------------------------

def write_124m(folder):
    start = time.perf_counter()
    config = gpt2_model.config_dict(n_embd=768, n_head=12, n_layer=12, n_positions=1024)
    model = gpt2_model.GPT2LMHeadModel(config, init=True, generator=torch.Generator().manual_seed(SEED_124M))
    built = time.perf_counter()
    gpt2_model.write_folder(model, folder, "plain")
    written = time.perf_counter()
    # GPT-2's tokenizer under the names of a Hugging Face folder: OpenAI's encoder.json is
    # vocab.json, and vocab.bpe is merges.txt.
    cache = os.path.join(ROOT, ".cache", "gpt2")
    copied = []
    for source, target in (("encoder.json", "vocab.json"), ("vocab.bpe", "merges.txt")):
        if os.path.exists(os.path.join(cache, source)):
            shutil.copyfile(os.path.join(cache, source), os.path.join(folder, target))
            copied.append(target)
        else:
            print(f"gpt2_hf write-124m: note: {os.path.join(cache, source)} not found, no {target} written")
    path = os.path.join(folder, "model.safetensors")
    print(f"gpt2_hf write-124m: {folder}: model.safetensors {size_of(path)}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; tokenizer {copied or 'none'}; "
          f"init {built - start:.1f} s, write {written - built:.1f} s")


# ---- verify --------------------------------------------------------------------------------------

def tied_groups(state):
    """The names of state_dict() that share one tensor's memory, as sets of two or more."""
    by_storage = {}
    for name, t in state.items():
        by_storage.setdefault(t.data_ptr(), set()).add(name)
    return [names for names in by_storage.values() if len(names) > 1]


def verify(folder, text_ids=None):
    config = gpt2_model.read_config(folder)
    model = gpt2_model.GPT2LMHeadModel(config, init=False)
    path = os.path.join(folder, "model.safetensors")
    header, metadata, data_start = gpt2_model.read_safetensors_header(path)
    state = model.state_dict()   # parameters only: the mask buffers are not persistent

    # The strict key check: unexpected = in the file, not in the model; missing = in the model,
    # not in the file, unless a name tied to it is in the file.
    tied_to = {name: group - {name} for group in tied_groups(state) for name in group}
    unexpected = sorted(set(header) - set(state))
    missing = sorted(name for name in state if name not in header and not (tied_to.get(name, set()) & set(header)))
    if missing or unexpected:
        sys.exit(f"gpt2_hf verify: {path}: strict load failed:"
                 + (f"\n    missing keys: {', '.join(missing)}" if missing else "")
                 + (f"\n    unexpected keys: {', '.join(unexpected)}" if unexpected else ""))
    if (metadata or {}).get("format") != "pt":
        sys.exit(f"gpt2_hf verify: {path}: metadata {metadata}, transformers needs {{\"format\": \"pt\"}}")

    # Read every tensor into its parameter; a second name of a tied tensor is read apart and must
    # be equal to what the first one put there.
    filled = set()
    with open(path, "rb") as f, torch.no_grad():
        for name in sorted(header):
            try:
                if tied_to.get(name, set()) & filled:
                    if not torch.equal(gpt2_model.read_float_tensor(f, header[name], data_start), state[name]):
                        sys.exit(f"gpt2_hf verify: {path}: {name} differs from {sorted(tied_to[name])}, "
                                 "which it is tied to")
                else:
                    gpt2_model.read_float_tensor(f, header[name], data_start, out=state[name])
            except ValueError as e:
                sys.exit(f"gpt2_hf verify: {path}: {name!r} {e}")
            filled.add(name)

    model.eval()
    idx, targets = verify_batch(config)
    with torch.no_grad():
        loss = mean_cross_entropy(model(idx)[0], targets).item()
    print(f"gpt2_hf verify: {folder}: strict load ok, {len(header)} tensors, loss={loss:.6f}")
    if text_ids:
        # The loss gpt_eval reports for the same tokens: windows of n_positions ids that do not
        # overlap, each predicting its next ids, the loss summed over every prediction.
        with open(text_ids) as f:
            ids = [int(t) for t in f.read().split()]
        window, nats, count = config["n_positions"], 0.0, 0
        with torch.no_grad():
            for at in range(0, len(ids) - 1, window):
                chunk = torch.tensor(ids[at:at + window + 1]).unsqueeze(0)
                logits = model(chunk[:, :-1])[0]
                nats += F.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[0, 1:],
                                        reduction="sum").item()
                count += chunk.size(1) - 1
        print(f"gpt2_hf verify: {text_ids}: {count} tokens predicted, loss={nats / count:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    sub.add_parser("fixtures", help="write tests/pretrained/fixtures/gpt2_tiny/ (the default)")
    p = sub.add_parser("write-124m", help="GPT-2 124M's shapes with random weights, in the plain layout")
    p.add_argument("dir")
    p = sub.add_parser("verify", help="strictly load a folder tapegrad exported and score the verify batch")
    p.add_argument("dir")
    p.add_argument("--text-ids", help="also the loss over these ids (whitespace-separated), as gpt_eval counts it")
    args = ap.parse_args()
    if args.command in (None, "fixtures"):
        fixtures()
    elif args.command == "write-124m":
        write_124m(args.dir)
    else:
        verify(args.dir, args.text_ids)


if __name__ == "__main__":
    main()
