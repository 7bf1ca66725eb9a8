"""scripts/golden/gpt2_model.py: GPT-2 as Hugging Face transformers defines it, in plain PyTorch.

transformers is not packaged in Debian, so this file restates its GPT2LMHeadModel (transformers'
src/transformers/models/gpt2/modeling_gpt2.py, with Conv1D from pytorch_utils.py, NewGELUActivation
from activations.py and the fields of configuration_gpt2.py) in PyTorch 1.13 only. It is written
from reading that source, not copied, and keeps exactly what a GPT-2 checkpoint needs:

  * the module names, so that state_dict() has the keys of Hugging Face's files
    ("transformer.wte.weight", "transformer.h.0.attn.c_attn.weight", ..., "lm_head.weight");
  * the Conv1D layers: a weight of shape (in, out), the transpose of nn.Linear's, and y = x W + b;
  * the attention: 1/sqrt(head size) scaling, a causal mask kept in a boolean buffer named `bias`,
    masked scores set to the most negative float32, softmax, dropout, and a key/value cache;
  * pre-norm blocks, "gelu_new" (the tanh GELU, written out as transformers writes it), the final
    LayerNorm, and a language-model head tied to the token table.

It leaves out what GPT-2's checkpoints never use: padding masks, head masks, cross-attention,
layer-index scaling and the mixed-precision reordering.

Besides the model: config_dict (a GPT-2 config.json as transformers writes it), read_folder and
write_folder (a Hugging Face folder: config.json and model.safetensors, read and written with a
small safetensors reader and writer of this file). scripts/golden/gpt2_hf.py builds the test
fixtures with it, and bench/gpt2_torch.py times it. Import it; it has no command line.
"""
import json
import math
import os
import re
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# The safetensors byte layout (how tensors are ordered, how the header is written) is the one of
# scripts/golden/safetensors_fixture.py, which follows the reference writer: reuse its dtype order.
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import safetensors_fixture  # noqa: E402


# ---- configuration -------------------------------------------------------------------------------

def config_dict(n_embd, n_head, n_layer, n_positions, vocab_size=50257, activation="gelu_new"):
    """The config.json of a GPT-2 of these sizes, with every field transformers writes for GPT-2.

    The fixed values are GPT-2's own (the openai-community/gpt2 config.json and GPT2Config's
    defaults). "n_ctx" is a field of the original files that transformers no longer reads; it is
    kept equal to n_positions, as GPT-2's files have it. "task_specific_params" is left out."""
    return {
        "activation_function": activation,
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": n_positions,
        "n_embd": n_embd,
        "n_head": n_head,
        "n_inner": None,
        "n_layer": n_layer,
        "n_positions": n_positions,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "use_cache": True,
        "vocab_size": vocab_size,
    }


def check_supported(config):
    """Refuses a config.json asking for a GPT-2 variant this replica does not compute."""
    wanted = {"scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
              "reorder_and_upcast_attn": False, "add_cross_attention": False, "tie_word_embeddings": True}
    for field, value in wanted.items():
        if config.get(field, value) != value:
            raise ValueError(f"config.json: {field} {config[field]!r} is not supported (only {value!r})")
    if config.get("activation_function", "gelu_new") not in ACTIVATIONS:
        raise ValueError(f"config.json: activation_function {config['activation_function']!r}, "
                         f"expected one of {sorted(ACTIVATIONS)}")
    if config["n_embd"] % config["n_head"] != 0:
        raise ValueError(f"config.json: n_head {config['n_head']} does not divide n_embd {config['n_embd']}")


# ---- the layers ----------------------------------------------------------------------------------

class NewGELU(nn.Module):
    """transformers' "gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's GELU.

    It is F.gelu(x, approximate="tanh") up to float rounding; written out as transformers writes
    it, so that the rounding is the same too."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GELU(nn.Module):
    """transformers' "gelu": the exact GELU, x Phi(x), with the error function."""

    def forward(self, x):
        return F.gelu(x)


class TanhGELU(nn.Module):
    """transformers' "gelu_pytorch_tanh": PyTorch's own tanh approximation (same function as gelu_new)."""

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


ACTIVATIONS = {"gelu_new": NewGELU, "gelu": GELU, "gelu_pytorch_tanh": TanhGELU}


class Conv1D(nn.Module):
    """A linear layer as GPT-2's original TensorFlow code stored it: y = x @ weight + bias, where
    weight has shape (nx, nf) = (in, out). nn.Linear holds the transpose, (out, in).

    The parameters are made empty here; the model initializes them (see GPT2LMHeadModel.init_gpt2_)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        out_shape = x.shape[:-1] + (self.nf,)
        # addmm(b, X, W) = b + X W, on the rows of x flattened to a matrix (B * T, nx).
        y = torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight)
        return y.view(out_shape)


class GPT2Attention(nn.Module):
    """Causal self-attention with a key/value cache."""

    def __init__(self, config):
        super().__init__()
        C, P = config["n_embd"], config["n_positions"]
        self.n_head = config["n_head"]
        self.head_dim = C // self.n_head
        # The causal mask: entry (i, j) is True when position i may look at position j <= i.
        # Not persistent, so it is not part of state_dict() (transformers' files of today do not
        # hold it; OpenAI's converted files do, as float, and a reader skips it).
        self.register_buffer("bias", torch.tril(torch.ones(P, P, dtype=torch.bool)).view(1, 1, P, P),
                             persistent=False)
        self.c_attn = Conv1D(3 * C, C)   # queries, keys and values in one product
        self.c_proj = Conv1D(C, C)
        self.attn_dropout = nn.Dropout(config["attn_pdrop"])
        self.resid_dropout = nn.Dropout(config["resid_pdrop"])

    def split_heads(self, x):
        """(B, T, C) -> (B, H, T, C / H): one slice of the channels per head."""
        B, T, C = x.shape
        return x.view(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        """(B, H, T, C / H) -> (B, T, C): the heads' outputs side by side again."""
        B, H, T, D = x.shape
        return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * D)

    def forward(self, x, layer_past=None):
        """x (B, T, C), the new positions; layer_past, the (keys, values) of the positions before
        them, each (B, H, T_past, C / H), or None. Returns the output (B, T, C) and the (keys,
        values) of all positions so far, the cache for the next call."""
        C = x.size(-1)
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        if layer_past is not None:
            past_k, past_v = layer_past
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        present = (k, v)

        # Scores (B, H, T_q, T_k), scaled by 1/sqrt(head size) (a 0-dim tensor, as transformers has it).
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / torch.full([], self.head_dim ** 0.5, dtype=scores.dtype)
        # The T_q new positions are the last ones of the T_k: their rows of the mask are the last
        # T_q rows of its first T_k columns.
        t_q, t_k = q.size(-2), k.size(-2)
        causal = self.bias[:, :, t_k - t_q:t_k, :t_k]
        # Masked scores become the most negative float (not -inf, as in transformers): after the
        # softmax their weight is exactly 0.
        masked = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype)
        scores = torch.where(causal, scores, masked)
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        y = self.merge_heads(torch.matmul(weights, v))
        return self.resid_dropout(self.c_proj(y)), present


class GPT2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        C = config["n_embd"]
        inner = config.get("n_inner") or 4 * C   # null in GPT-2's config: four times the width
        self.c_fc = Conv1D(inner, C)
        self.c_proj = Conv1D(C, inner)
        self.act = ACTIVATIONS[config.get("activation_function", "gelu_new")]()
        self.dropout = nn.Dropout(config["resid_pdrop"])

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    """Pre-norm: each sub-layer reads a normalized copy of the stream and adds its output to it."""

    def __init__(self, config):
        super().__init__()
        C, eps = config["n_embd"], config["layer_norm_epsilon"]
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = GPT2MLP(config)

    def forward(self, x, layer_past=None):
        a, present = self.attn(self.ln_1(x), layer_past)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPT2Model(nn.Module):
    """The stack without the head: transformers' GPT2Model, which GPT2LMHeadModel names `transformer`."""

    def __init__(self, config):
        super().__init__()
        V, P, C = config["vocab_size"], config["n_positions"], config["n_embd"]
        # _weight: tables made empty, not drawn at random (the model initializes them, or a file fills them).
        self.wte = nn.Embedding(V, C, _weight=torch.empty(V, C))   # token embeddings, also the head
        self.wpe = nn.Embedding(P, C, _weight=torch.empty(P, C))   # learned position embeddings
        self.drop = nn.Dropout(config["embd_pdrop"])
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config["n_layer"])])
        self.ln_f = nn.LayerNorm(C, eps=config["layer_norm_epsilon"])

    def forward(self, idx, past=None):
        """idx (B, T) token ids; past, one (keys, values) per layer for the positions before, or
        None. Returns the final hidden states (B, T, C) and the new cache."""
        past_length = 0 if past is None else past[0][0].size(-2)
        T = idx.size(1)
        if past_length + T > self.wpe.num_embeddings:
            raise ValueError(f"{past_length + T} positions, the model has {self.wpe.num_embeddings}")
        # The new positions continue after the cached ones.
        positions = torch.arange(past_length, past_length + T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(positions))
        presents = []
        for i, block in enumerate(self.h):
            x, present = block(x, None if past is None else past[i])
            presents.append(present)
        return self.ln_f(x), presents


class GPT2LMHeadModel(nn.Module):
    """GPT-2 with its language-model head: logits = ln_f(x) @ wte^T.

    GPT2LMHeadModel(config) takes the dict of a config.json (see config_dict). With init=True it
    draws GPT-2's initial weights (init_gpt2_, from `generator` if given); read_folder builds it
    with init=False and fills it from a file."""

    def __init__(self, config, init=True, generator=None):
        super().__init__()
        check_supported(config)
        self.config = dict(config)
        self.transformer = GPT2Model(config)
        # The head is tied: its weight IS the token table (one Parameter under two names). It is
        # made on the "meta" device, which allocates nothing, and its weight replaced at once.
        self.lm_head = nn.Linear(config["n_embd"], config["vocab_size"], bias=False, device="meta")
        self.lm_head.weight = self.transformer.wte.weight
        if init:
            self.init_gpt2_(generator)

    @torch.no_grad()
    def init_gpt2_(self, generator=None):
        """transformers' GPT-2 initialization (_init_weights): matrices and embedding tables
        N(0, initializer_range), biases 0, LayerNorm weight 1 and bias 0; the two projections that
        end a residual branch (attn.c_proj and mlp.c_proj weights) N(0, initializer_range /
        sqrt(2 n_layer)), as the GPT-2 paper scales them by depth."""
        std = self.config.get("initializer_range", 0.02)
        for module_name, module in self.named_modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.normal_(0.0, std, generator=generator)
            elif isinstance(module, Conv1D):
                scaled = module_name.endswith("c_proj")
                module.weight.normal_(0.0, std / math.sqrt(2 * self.config["n_layer"]) if scaled else std,
                                      generator=generator)
                module.bias.zero_()
        return self

    def forward(self, idx, past=None):
        """Returns logits (B, T, vocab_size) and the cache `present`: a list with one (keys,
        values) per layer, each (B, n_head, past length + T, head size). Pass it back as `past`
        with the next ids to go on from where this call stopped."""
        x, present = self.transformer(idx, past)
        return self.lm_head(x), present

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, greedy=False, generator=None):
        """idx (B, T) followed by max_new_tokens ids, chosen one at a time: the most likely one
        (greedy), or drawn from softmax(logits / temperature), keeping only the top_k largest
        logits when top_k is given. The prompt goes through the model once; after it, each new id
        goes through alone, with the cache of the ones before it."""
        if idx.size(1) + max_new_tokens > self.config["n_positions"]:
            raise ValueError(f"{idx.size(1)} + {max_new_tokens} ids exceed n_positions {self.config['n_positions']}")
        logits, past = self(idx)
        out = [idx]
        for step in range(max_new_tokens):
            last = logits[:, -1, :]
            if greedy:
                next_id = last.argmax(dim=-1, keepdim=True)
            else:
                last = last / temperature
                if top_k is not None:
                    kth = torch.topk(last, min(top_k, last.size(-1))).values[:, [-1]]
                    last = last.masked_fill(last < kth, float("-inf"))
                next_id = torch.multinomial(F.softmax(last, dim=-1), num_samples=1, generator=generator)
            out.append(next_id)
            if step + 1 < max_new_tokens:   # the last id needs no pass of its own
                logits, past = self(next_id, past=past)
        return torch.cat(out, dim=1)


# ---- safetensors, read and written ---------------------------------------------------------------

DTYPE_NAMES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.int64: "I64",
               torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} to a safetensors file, laid out as safetensors_fixture.serialize lays
    it out (the reference writer's order: dtype descending, then name), but streamed: the header
    first, then each tensor's bytes straight from its memory, so that a 500 MB model is never
    copied whole. Several names may hold the same tensor; each gets its own copy in the file."""
    if sys.byteorder != "little":
        raise RuntimeError("safetensors data is little-endian; this writer copies memory as it is")
    order = safetensors_fixture.DTYPE_ORDER
    names = sorted(tensors, key=lambda n: (-order.index(DTYPE_NAMES[tensors[n].dtype]), n.encode()))
    header = {}
    if metadata:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata, key=str.encode)}
    offset = 0
    for name in names:
        t = tensors[name]
        size = t.numel() * t.element_size()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)   # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in names:
            # A flat byte view of the tensor's memory (no copy when it is contiguous already).
            f.write(tensors[name].detach().contiguous().numpy().reshape(-1).view(np.uint8))


def read_safetensors_header(path):
    """The header of a safetensors file: ({name: {"dtype", "shape", "data_offsets"}}, metadata or
    None, the file offset where the data starts)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length > 100 * 2**20:
            raise ValueError(f"{path}: a header of {length} bytes is not plausible")
        header = json.loads(f.read(length))
    metadata = header.pop("__metadata__", None)
    return header, metadata, 8 + length


FLOAT_SIZES = {"F32": 4, "F16": 2, "BF16": 2}


def read_float_tensor(f, entry, data_start, out=None):
    """One tensor of an open safetensors file as float32: F32 as it is, F16 and BF16 widened
    (exactly: every half and bfloat16 value is a float32). With `out` (a float32 tensor of the
    same shape) the values are read into it, F32 without any intermediate copy."""
    dtype, shape = entry["dtype"], tuple(entry["shape"])
    if dtype not in FLOAT_SIZES:
        raise ValueError(f"holds {dtype}, expected floating-point weights (F32, F16 or BF16)")
    begin, end = entry["data_offsets"]
    count = math.prod(shape)
    if end - begin != count * FLOAT_SIZES[dtype]:
        raise ValueError(f"data_offsets {entry['data_offsets']} do not fit {dtype} {list(shape)}")
    if out is not None and tuple(out.shape) != shape:
        raise ValueError(f"is {list(shape)}, expected {list(out.shape)}")
    f.seek(data_start + begin)
    if dtype == "F32":
        target = out if out is not None else torch.empty(shape)
        buffer = target.detach().numpy().reshape(-1).view(np.uint8)   # the tensor's own memory
        if f.readinto(buffer) != end - begin:
            raise ValueError("the file ends inside this tensor")
        return target
    raw = f.read(end - begin)
    if len(raw) != end - begin:
        raise ValueError("the file ends inside this tensor")
    if dtype == "F16":
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    else:   # BF16: the top 16 bits of a float32
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    t = torch.from_numpy(values.reshape(shape))
    if out is None:
        return t
    out.detach().copy_(t)
    return out


# The causal-mask buffers of OpenAI's converted files: not weights, skipped when reading.
MASK_BUFFER = re.compile(r"(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)")


def read_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def read_folder(folder):
    """The GPT2LMHeadModel of a Hugging Face folder (config.json, model.safetensors), in eval mode.

    Keys may carry the "transformer." prefix (transformers' save_pretrained) or not (OpenAI's gpt2
    repository); the attn.bias and attn.masked_bias buffers are skipped; an "lm_head.weight", if
    present, must equal the token table, which it is tied to. Each tensor is read straight into
    its parameter."""
    config = read_config(folder)
    model = GPT2LMHeadModel(config, init=False)
    path = os.path.join(folder, "model.safetensors")
    header, _, data_start = read_safetensors_header(path)
    params = dict(model.named_parameters())   # "transformer.*"; the tied head is listed once, as wte
    loaded, head_entry = set(), None
    with open(path, "rb") as f, torch.no_grad():
        for key, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):   # file order
            if MASK_BUFFER.fullmatch(key):
                continue
            if key == "lm_head.weight":
                head_entry = entry
                continue
            name = key if key.startswith("transformer.") else "transformer." + key
            if name not in params:
                raise ValueError(f"{path}: unexpected key {key!r}")
            if name in loaded:
                raise ValueError(f"{path}: {name!r} is given twice (with and without the prefix)")
            try:
                read_float_tensor(f, entry, data_start, out=params[name])
            except ValueError as e:
                raise ValueError(f"{path}: {key!r} {e}") from None
            loaded.add(name)
        missing = sorted(set(params) - loaded)
        if missing:
            raise ValueError(f"{path}: missing keys {missing}")
        if head_entry is not None:
            head = read_float_tensor(f, head_entry, data_start)
            if not torch.equal(head, model.transformer.wte.weight):
                raise ValueError(f"{path}: lm_head.weight differs from the token table it is tied to")
    return model.eval()


def write_folder(model, folder, layout):
    """Writes the model to folder/model.safetensors and folder/config.json, in one of two layouts:

      "plain"     OpenAI's gpt2 repository: keys without the prefix ("wte.weight",
                  "h.0.ln_1.weight", ...), with each layer's mask buffers, "h.{i}.attn.bias"
                  (F32 (1, 1, P, P), 1.0 on and below the diagonal, 0.0 above) and
                  "h.{i}.attn.masked_bias" (F32, shape (), -10000.0), and no lm_head.weight;
      "prefixed"  every key prefixed "transformer.", plus "lm_head.weight" stored as a tensor of
                  its own (equal to the token table), and no buffers.

    Both with the metadata {"format": "pt"} that transformers' from_pretrained asks for, and
    config.json as transformers writes it (indent 2, sorted keys, a final newline). Returns the
    {name: tensor} it wrote."""
    params = dict(model.named_parameters())
    if layout == "plain":
        tensors = {name[len("transformer."):]: p for name, p in params.items()}
        P = model.config["n_positions"]
        mask = torch.tril(torch.ones(P, P)).view(1, 1, P, P)   # one tensor, written once per layer
        masked_bias = torch.tensor(-1e4)
        for i in range(model.config["n_layer"]):
            tensors[f"h.{i}.attn.bias"] = mask
            tensors[f"h.{i}.attn.masked_bias"] = masked_bias
    elif layout == "prefixed":
        tensors = dict(params)
        tensors["lm_head.weight"] = model.lm_head.weight
    else:
        raise ValueError(f"layout {layout!r}: expected \"plain\" or \"prefixed\"")
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(model.config, f, indent=2, sort_keys=True)
        f.write("\n")
    return tensors
