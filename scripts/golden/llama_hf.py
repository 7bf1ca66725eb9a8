#!/usr/bin/python3
"""scripts/golden/llama_hf.py: small Llama checkpoints in Hugging Face's folder layout, and the
PyTorch values tapegrad's Llama loader is tested against.

Run by hand with Debian's PyTorch 1.13 (the tests never need it; the outputs are committed):

    /usr/bin/python3 scripts/golden/llama_hf.py [fixtures]       the test fixtures (the default)
    /usr/bin/python3 scripts/golden/llama_hf.py write DIR [--preset tiny|smollm2-135m]
                          [--dtype F32|BF16|F16] [--shards N] [--seed S]
                                                                 a folder to practise on

Provenance. The model below restates transformers' LlamaForCausalLM
(src/transformers/models/llama/modeling_llama.py: LlamaRMSNorm, LlamaRotaryEmbedding with
rope_init_functions' "default", "linear" and "llama3" rules from modeling_rope_utils.py,
rotate_half, apply_rotary_pos_emb, LlamaMLP, repeat_kv, eager_attention_forward, LlamaAttention,
LlamaDecoderLayer, LlamaModel, LlamaForCausalLM; the fields of configuration_llama.py) in plain
PyTorch 1.13: transformers and the safetensors package are not packaged in Debian, so neither could
be run here. It is written from reading that source, not copied, and keeps what a checkpoint
needs: the module names (so state_dict() has the keys of Hugging Face's files), the float32
arithmetic of the rotary tables and of the norm, the additive causal mask of the most negative
float, and a key/value cache (transformers' DynamicCache: keys after the rotation, before
repeat_kv). The safetensors files are laid out as scripts/golden/safetensors_fixture.py's
`serialize` lays them out (the reference writer's order). The weights are random: no pretrained
weights are involved anywhere.

fixtures writes, under tests/pretrained/fixtures/llama_tiny/ (vocab_size 100, hidden_size 32,
intermediate_size 64, 2 layers, 4 query heads and 2 key/value heads of 8 columns,
max_position_embeddings 64, rms_norm_eps 1e-5):
  tied/config.json, tied/model.safetensors
        tie_word_embeddings true (no lm_head.weight in the file), rope_theta 10000, F32;
  untied/config.json, untied/model.safetensors
        tie_word_embeddings false, rope_theta 500000, F32;
  untied_bf16_sharded/config.json, model.safetensors.index.json, model-0000{1,2}-of-00002.safetensors
        the untied weights rounded to BF16 (round to nearest even), in two shards;
  tied_f16/config.json, tied_f16/model.safetensors
        the tied weights rounded to F16;
  golden.safetensors (float32 unless noted), every model in eval mode:
        idx, targets            I64 (2, 20): ids drawn uniformly (inputs, and the next ids)
        <v>.logits              (2, 20, 100) for v in tied and untied, and the first row's (1, 20,
                                100) for untied_bf16_sharded, tied_f16 and the tied weights under
                                two rope_scaling configs: tied_linear
                                ({"rope_type": "linear", "factor": 2.0}) and tied_llama3
                                ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
                                whose four frequencies fall one kept, one blended, two divided)
        <v>.loss                () for tied and untied: mean cross-entropy of logits vs targets
        <v>.grad.<key>          the gradient of that loss (train mode, no dropout) for
                                layers.0's k_proj and v_proj, layers.1's o_proj,
                                layers.0.input_layernorm, model.norm, and the token table (tied:
                                it carries the head's part too) or lm_head.weight (untied)
        <v>.greedy.prompt       I64 (1, 5), <v>.greedy.out I64 (1, 25): 20 ids chosen greedily with
                                the cache (and checked against decoding without it); the prompt is
                                the first one drawn (seeds 0, 1, ...) whose choices all lead the
                                runner-up by more than 1e-3 (<v>.greedy.min_gap), so that float
                                rounding cannot flip one.

write DIR writes config.json and model.safetensors (or N shards and the index) for a preset with
transformers' initialisation (every Linear and the token table from N(0, 0.02), norms 1) drawn from
--seed: "tiny" is the fixtures' tied model's shape, "smollm2-135m" SmolLM2-135M's (hidden 576,
30 layers, 9 heads, 3 key/value heads, intermediate 1536, vocabulary 49152, tied, rope_theta
100000; about 540 MB in F32) for benchmarks.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from safetensors_fixture import DTYPE_ORDER, serialize  # noqa: E402  (the reference byte layout)

FIXTURES = os.path.join(ROOT, "tests", "pretrained", "fixtures", "llama_tiny")
TINY_SEED = 20240607   # the tiny models' weights
BATCH_SEED = 11        # the golden batch


# ---- configuration -------------------------------------------------------------------------------

def config_dict(vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
                num_key_value_heads, max_position_embeddings, rope_theta, tie_word_embeddings,
                rms_norm_eps=1e-5, rope_scaling=None, bos_token_id=1, eos_token_id=2):
    """The config.json of a Llama of these sizes, with the fields transformers writes for one."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "head_dim": hidden_size // num_attention_heads,
        "hidden_act": "silu",
        "hidden_size": hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": intermediate_size,
        "max_position_embeddings": max_position_embeddings,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": num_attention_heads,
        "num_hidden_layers": num_hidden_layers,
        "num_key_value_heads": num_key_value_heads,
        "pretraining_tp": 1,
        "rms_norm_eps": rms_norm_eps,
        "rope_scaling": rope_scaling,
        "rope_theta": rope_theta,
        "tie_word_embeddings": tie_word_embeddings,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": vocab_size,
    }


PRESETS = {
    "tiny": dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                 rope_theta=10000.0, tie_word_embeddings=True),
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         max_position_embeddings=8192, rope_theta=100000.0,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0),
}


# ---- the rotary frequencies (modeling_rope_utils.py) ---------------------------------------------

def rope_inv_freq(config):
    """_compute_default_rope_parameters, then the rope_scaling's rule, in float32 as transformers."""
    dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    base = config.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    scaling = config.get("rope_scaling")
    if not scaling:
        return inv_freq
    rope_type = scaling.get("rope_type", scaling.get("type"))
    if rope_type == "default":
        return inv_freq
    if rope_type == "linear":   # _compute_linear_scaling_rope_parameters
        return inv_freq / scaling["factor"]
    if rope_type == "llama3":   # _compute_llama3_parameters
        factor = scaling["factor"]
        low_freq_factor, high_freq_factor = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_context_len = scaling["original_max_position_embeddings"]
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    raise ValueError(f"rope_scaling type {rope_type!r} is not in this replica")


# ---- the model (modeling_llama.py) ---------------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.register_buffer("inv_freq", rope_inv_freq(config), persistent=False)
        self.attention_scaling = 1.0   # default, linear and llama3 alike

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        C, Fw, bias = config["hidden_size"], config["intermediate_size"], config.get("mlp_bias", False)
        self.gate_proj = nn.Linear(C, Fw, bias=bias)
        self.up_proj = nn.Linear(C, Fw, bias=bias)
        self.down_proj = nn.Linear(Fw, C, bias=bias)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        C, H = config["hidden_size"], config["num_attention_heads"]
        K = config.get("num_key_value_heads") or H
        self.head_dim = config.get("head_dim") or C // H
        self.num_key_value_groups = H // K
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.get("attention_dropout", 0.0)
        bias = config.get("attention_bias", False)
        self.q_proj = nn.Linear(C, H * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(C, K * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(C, K * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(H * self.head_dim, C, bias=bias)

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        """past: this layer's (keys, values) so far, each (B, K, L, d), after the rotation; returns
        the output and the new (keys, values)."""
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past is not None:   # DynamicCache.update: append along the positions
            key_states = torch.cat([past[0], key_states], dim=-2)
            value_states = torch.cat([past[1], value_states], dim=-2)
        present = (key_states, value_states)
        # eager_attention_forward
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), present


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config["hidden_size"], config["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(config["hidden_size"], config["rms_norm_eps"])

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, position_embeddings, attention_mask, past)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states, present


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(config["hidden_size"], config["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids, past=None):
        """past: one (keys, values) per layer for the positions before input_ids, or None."""
        past_length = 0 if past is None else past[0][0].shape[-2]
        T = input_ids.shape[1]
        hidden_states = self.embed_tokens(input_ids)
        position_ids = torch.arange(past_length, past_length + T).unsqueeze(0)
        # The causal mask as transformers builds it: 0 where query i may read key j <= its own
        # position, the most negative float elsewhere, added to the scores.
        allowed = torch.arange(past_length + T)[None, :] <= position_ids[0][:, None]
        mask = torch.zeros(T, past_length + T)
        mask = mask.masked_fill(~allowed, torch.finfo(torch.float32).min)[None, None]
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            hidden_states, present = layer(hidden_states, position_embeddings, mask,
                                           None if past is None else past[i])
            presents.append(present)
        return self.norm(hidden_states), presents


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = dict(config)
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config["hidden_size"], config["vocab_size"], bias=False)
        if config.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.embed_tokens.weight

    @torch.no_grad()
    def init_weights_(self, generator):
        """transformers' _init_weights: Linear and Embedding weights N(0, initializer_range),
        biases 0, RMSNorm weights 1; in the order of the modules."""
        std = self.config.get("initializer_range", 0.02)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                module.weight.normal_(0.0, std, generator=generator)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.normal_(0.0, std, generator=generator)
            elif isinstance(module, LlamaRMSNorm):
                module.weight.fill_(1.0)
        return self

    def forward(self, input_ids, past=None):
        hidden_states, presents = self.model(input_ids, past)
        return self.lm_head(hidden_states), presents

    @torch.no_grad()
    def greedy(self, prompt, new_tokens, use_cache=True):
        """prompt followed by new_tokens ids, each the argmax of the last logits; the smallest gap
        between the two largest logits among the choices."""
        ids, past, min_gap = prompt, None, float("inf")
        logits, past = self(prompt)
        for step in range(new_tokens):
            last = logits[:, -1, :]
            top2 = torch.topk(last, 2, dim=-1).values
            min_gap = min(min_gap, (top2[:, 0] - top2[:, 1]).min().item())
            next_id = last.argmax(dim=-1, keepdim=True)
            ids = torch.cat([ids, next_id], dim=1)
            if use_cache:
                logits, past = self(next_id, past)
            else:
                logits, _ = self(ids)
        return ids, min_gap


# ---- safetensors and folders ---------------------------------------------------------------------

NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64"}
DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:   # numpy has no bfloat16: its 16 bits as they are
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def safetensors_bytes(tensors, metadata):
    return serialize({n: (NAMES[t.dtype], tuple(t.shape), tensor_bytes(t)) for n, t in tensors.items()},
                     metadata)


def checkpoint_tensors(model, dtype):
    """The keys save_pretrained writes: the state dict without a tied lm_head.weight, in `dtype`
    (rounded to nearest even, as torch's .to() rounds)."""
    state = model.state_dict()
    if model.config.get("tie_word_embeddings", False):
        del state["lm_head.weight"]
    return {name: t.to(dtype) for name, t in state.items()}


def write_folder(model, folder, dtype=torch.float32, shards=1):
    """config.json and model.safetensors, or `shards` files and model.safetensors.index.json."""
    os.makedirs(folder, exist_ok=True)
    config = dict(model.config)
    config["torch_dtype"] = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    tensors = checkpoint_tensors(model, dtype)
    if shards == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(tensors, {"format": "pt"}))
        return
    names = list(tensors)   # the state dict's order, cut into `shards` runs
    per = math.ceil(len(names) / shards)
    weight_map, total = {}, 0
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        with open(os.path.join(folder, file), "wb") as f:
            f.write(safetensors_bytes(part, {"format": "pt"}))
        for n, t in part.items():
            weight_map[n] = file
            total += t.numel() * t.element_size()
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
        f.write("\n")


def with_weights_rounded(model, dtype):
    """A copy of the model whose float32 weights are the dtype's values (what loading a file of
    that dtype gives, widened back to float32)."""
    copy = LlamaForCausalLM(model.config)
    copy.load_state_dict({n: t.to(dtype).to(torch.float32) for n, t in model.state_dict().items()})
    return copy.eval()


# ---- fixtures ------------------------------------------------------------------------------------

def tiny_model(tied, rope_theta, generator):
    """The tiny model, weights large enough that its logits have structure: every matrix N(0, 0.3)
    (the token table N(0, 1)), the norms 1 + N(0, 0.1)."""
    config = config_dict(**dict(PRESETS["tiny"], rope_theta=rope_theta, tie_word_embeddings=tied))
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():   # the tied table once
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            elif name == "model.embed_tokens.weight":
                p.normal_(0.0, 1.0, generator=generator)
            else:
                p.normal_(0.0, 0.3, generator=generator)
    return model.eval()


def check_cache(model, idx, split):
    """One pass, and idx[:, :split] then one id at a time through the cache, agree."""
    with torch.no_grad():
        full, _ = model(idx)
        pieces = []
        logits, past = model(idx[:, :split])
        pieces.append(logits)
        for t in range(split, idx.shape[1]):
            logits, past = model(idx[:, t:t + 1], past)
            pieces.append(logits)
    diff = (torch.cat(pieces, dim=1) - full).abs().max().item()
    assert diff < 1e-5, f"cached and uncached logits differ by {diff}"
    return diff


GRAD_KEYS = ["model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight",
             "model.layers.1.self_attn.o_proj.weight", "model.layers.0.input_layernorm.weight",
             "model.norm.weight"]


def fixtures():
    generator = torch.Generator().manual_seed(TINY_SEED)
    models = {"tied": tiny_model(True, 10000.0, generator), "untied": tiny_model(False, 500000.0, generator)}
    write_folder(models["tied"], os.path.join(FIXTURES, "tied"))
    write_folder(models["untied"], os.path.join(FIXTURES, "untied"))
    write_folder(models["untied"], os.path.join(FIXTURES, "untied_bf16_sharded"), torch.bfloat16, shards=2)
    write_folder(models["tied"], os.path.join(FIXTURES, "tied_f16"), torch.float16)

    ids = torch.randint(0, 100, (2, 21), generator=torch.Generator().manual_seed(BATCH_SEED))
    idx, targets = ids[:, :20].contiguous(), ids[:, 1:].contiguous()
    golden = {"idx": idx, "targets": targets}
    evaluated = dict(models)
    evaluated["untied_bf16_sharded"] = with_weights_rounded(models["untied"], torch.bfloat16)
    evaluated["tied_f16"] = with_weights_rounded(models["tied"], torch.float16)
    for name, scaling in (("tied_linear", {"rope_type": "linear", "factor": 2.0}),
                          ("tied_llama3", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 4.0, "original_max_position_embeddings": 1024})):
        scaled = LlamaForCausalLM(dict(models["tied"].config, rope_scaling=scaling))
        scaled.load_state_dict(models["tied"].state_dict())
        evaluated[name] = scaled.eval()
    with torch.no_grad():
        for name, model in evaluated.items():   # the variants' first row only: smaller files
            golden[name + ".logits"] = model(idx if name in models else idx[:1])[0]
    diffs = []
    for name in ("tied", "untied"):
        model = models[name]
        diffs.append(check_cache(model, idx, split=12))
        model.train()   # no dropout in a Llama: train mode changes nothing but is what fine-tuning runs
        model.zero_grad(set_to_none=True)
        logits, _ = model(idx)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        model.eval()
        golden[name + ".loss"] = loss.detach().reshape(())
        params = dict(model.named_parameters())
        table = "model.embed_tokens.weight" if name == "tied" else "lm_head.weight"
        for key in GRAD_KEYS + [table]:
            golden[f"{name}.grad.{key}"] = params[key].grad
        for seed in range(1000):
            prompt = torch.randint(0, 100, (1, 5), generator=torch.Generator().manual_seed(seed))
            out, min_gap = model.greedy(prompt, 20, use_cache=True)
            if min_gap > 1e-3:
                break
        else:
            raise RuntimeError("no prompt among 1000 seeds decodes with clear choices")
        slow, _ = model.greedy(prompt, 20, use_cache=False)
        assert torch.equal(out, slow), "greedy decoding with and without the cache differ"
        golden.update({f"{name}.greedy.prompt": prompt, f"{name}.greedy.out": out,
                       f"{name}.greedy.min_gap": torch.tensor(min_gap)})
    golden_path = os.path.join(FIXTURES, "golden.safetensors")
    with open(golden_path, "wb") as f:
        f.write(safetensors_bytes({n: t.detach() for n, t in golden.items()}, {"format": "pt"}))

    print(f"llama_hf fixtures: torch {torch.__version__}; cached vs one-pass logits differ by "
          f"{max(diffs):.2e}")
    total = 0
    for dirpath, _, files in sorted(os.walk(FIXTURES)):
        for file in sorted(files):
            path = os.path.join(dirpath, file)
            total += os.path.getsize(path)
            print(f"  {os.path.relpath(path, ROOT)}: {os.path.getsize(path):,} bytes")
    print(f"  {total:,} bytes in all; losses tied {golden['tied.loss'].item():.6f}, "
          f"untied {golden['untied.loss'].item():.6f}")


# ---- write ---------------------------------------------------------------------------------------

def write(folder, preset, dtype, shards, seed):
    config = config_dict(**PRESETS[preset])
    model = LlamaForCausalLM(config).init_weights_(torch.Generator().manual_seed(seed))
    write_folder(model, folder, DTYPES[dtype], shards)
    print(f"llama_hf write: {folder}: {preset}, {sum(p.numel() for p in model.parameters()):,} "
          f"parameters, {dtype}, {shards} file(s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    sub.add_parser("fixtures", help="write tests/pretrained/fixtures/llama_tiny/ (the default)")
    p = sub.add_parser("write", help="a Llama folder with transformers' initialisation")
    p.add_argument("dir")
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="F32")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.command in (None, "fixtures"):
        fixtures()
    else:
        write(args.dir, args.preset, args.dtype, args.shards, args.seed)


if __name__ == "__main__":
    main()
