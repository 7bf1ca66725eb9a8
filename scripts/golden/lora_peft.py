#!/usr/bin/python3
"""scripts/golden/lora_peft.py: LoRA adapters in PEFT's folder layout on the tiny Llama and GPT-2
fixtures, and the PyTorch values tapegrad's adapters are tested against.

Run by hand with Debian's PyTorch 1.13 (the tests never need it; the outputs are committed):

    /usr/bin/python3 scripts/golden/lora_peft.py [fixtures]      the test fixtures (the default)
    /usr/bin/python3 scripts/golden/lora_peft.py write DIR --base BASE [--r R] [--lora-alpha A]
                     [--targets q_proj,v_proj] [--seed S]       an adapter to practise on
    /usr/bin/python3 scripts/golden/lora_peft.py verify ADAPTER --base BASE
                                                                 check an adapter tapegrad wrote

Provenance. LoraLinear below restates PEFT's lora.Linear (peft/tuners/lora/layer.py: LoraLayer.
update_layer, reset_lora_parameters, Linear.forward, get_delta_weight, merge), the choice of the
layers it wraps (peft/tuners/tuners_utils.py: check_target_module_exists, a name of target_modules
being the module's path or its end after a dot, a string being re.fullmatch'ed, "all-linear" every
Linear or Conv1D but the output layer), the freezing of the rest (_mark_only_adapters_as_trainable,
bias "none") and the saved file (peft/utils/save_and_load.py: get_peft_model_state_dict, keys
"base_model.model.<path>.lora_A.weight" without the adapter's name; peft/config.py:
save_pretrained, adapter_config.json by json.dumps(indent=2, sort_keys=True)), in plain PyTorch
1.13: PEFT, transformers and the safetensors package are not packaged in Debian, so none could be
run here. It is written from reading that source, not copied. The base models are
scripts/golden/llama_hf.py's and scripts/golden/gpt2_model.py's replicas, read from the committed
fixtures; the safetensors files are laid out as scripts/golden/safetensors_fixture.py's
`serialize` lays them out. Every weight is random.

PEFT's lora.Linear, for one adapter of rank r on a base layer W (out, in) (a Conv1D stores W as
(in, out), fan_in_fan_out):
    lora_A = nn.Linear(in, r, bias=False), kaiming_uniform_(a=sqrt(5));  lora_B = nn.Linear(r,
    out, bias=False), zeros;  lora_dropout = nn.Dropout(p), or nn.Identity() when p = 0;
    scaling = lora_alpha / r  (lora_alpha / sqrt(r) with use_rslora)
    forward(x) = base_layer(x) + lora_B(lora_A(lora_dropout(x))) * scaling
    merge: W += transpose(B @ A, fan_in_fan_out) * scaling

fixtures writes, under tests/pretrained/fixtures/lora_tiny/ (bases in ../llama_tiny and
../gpt2_tiny):
  llama/adapter_config.json, llama/adapter_model.safetensors
        on llama_tiny/tied: target_modules ["q_proj", "v_proj"], r 4, lora_alpha 8,
        lora_dropout 0.05, A drawn as PEFT draws it, B from N(0, 0.5) (a trained adapter's B is
        not zero; a new one's would change nothing), F32; the config holds every field PEFT 0.15
        writes;
  llama_f16/, llama_bf16/   the same adapter with its matrices rounded to F16 and to BF16;
  llama_all_linear/         on llama_tiny/untied: target_modules "all-linear" (every Linear but
        lm_head), r 2, lora_alpha 4, use_rslora true (scaling 4 / sqrt 2), F32;
  gpt2/adapter_config.json, gpt2/adapter_model.safetensors
        on gpt2_tiny/plain (Conv1D layers, fan_in_fan_out true): target_modules ["c_attn",
        "c_proj"] (c_proj: the attention's and the MLP's), r 4, lora_alpha 8, lora_dropout 0.1;
  golden.safetensors (float32 unless noted), every model in eval mode (no dropout):
        llama.idx, llama.targets   I64 (2, 20): ids and the next ids
        llama.logits               (2, 20, 100) of the tied Llama with the adapter
        llama.loss                 () mean cross-entropy of llama.logits against llama.targets
        llama.grad.<key>           the gradient of that loss for every matrix of the adapter, under
                                   its key in adapter_model.safetensors (the only parameters that
                                   require grad; eval mode: dropout's masks are random streams that
                                   no two frameworks share)
        llama.merged.<param>       the weight after merging, for every adapted Linear
        llama_all_linear.logits    (2, 20, 100) of the untied Llama with its adapter
        gpt2.idx, gpt2.targets     I64 (2, 32)
        gpt2.logits_head           (2, 32, 256): the first 256 logits of every position
        gpt2.logsumexp             (2, 32): logsumexp over each row of 50257 logits
        gpt2.loss, gpt2.grad.<key> as the Llama's
        gpt2.merged.<param>        the Conv1D weight after merging, (in, out) as GPT-2 stores it

write DIR --base BASE writes a new adapter for the Llama or GPT-2 folder BASE as PEFT's
get_peft_model would make it (B zero: it changes nothing until trained), for trying
load_lora_adapter and gpt_eval --adapter. verify ADAPTER --base BASE loads an adapter folder (one
tapegrad wrote) as PEFT's PeftModel.from_pretrained would, strictly (every key of the file a
parameter of the wrapped model, every adapter parameter in the file) and prints
    lora_peft verify: ADAPTER: strict load ok, N matrices, loss=L (without the adapter L0)
with L the mean cross-entropy on the verify batch of gpt2_hf.py verify (2 rows, T = min(16,
context), torch.randint seeded 1234).
"""
import argparse
import json
import math
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import gpt2_model  # noqa: E402  (transformers' GPT2LMHeadModel, replicated; the safetensors reader)
import llama_hf  # noqa: E402  (transformers' LlamaForCausalLM, replicated; its file writer)

FIXTURE_ROOT = os.path.join(ROOT, "tests", "pretrained", "fixtures")
FIXTURES = os.path.join(FIXTURE_ROOT, "lora_tiny")
LORA_SEED = 20240901   # the adapters' A (PEFT draws them from torch's global generator) and B
BATCH_SEED = 5         # the golden batches
VERIFY_SEED = 1234     # the verify batch (gpt2_hf.py's)


# ---- PEFT's lora.Linear --------------------------------------------------------------------------

class LoraLinear(nn.Module):
    """One adapter on a base layer: nn.Linear, or GPT-2's Conv1D (fan_in_fan_out). PEFT keeps its
    matrices in ModuleDicts keyed by the adapter's name ("default"); its saved keys leave the name
    out, and so does this replica's state_dict()."""

    def __init__(self, base_layer, r, lora_alpha, lora_dropout=0.0, use_rslora=False):
        super().__init__()
        self.base_layer = base_layer
        self.fan_in_fan_out = isinstance(base_layer, gpt2_model.Conv1D)
        if self.fan_in_fan_out:   # Conv1D's weight is (in, out)
            in_features, out_features = base_layer.weight.shape
        else:
            in_features, out_features = base_layer.in_features, base_layer.out_features
        self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else nn.Identity()
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.scaling = lora_alpha / math.sqrt(r) if use_rslora else lora_alpha / r
        # reset_lora_parameters with init_lora_weights=True
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling

    def get_delta_weight(self):
        delta = self.lora_B.weight @ self.lora_A.weight
        return (delta.T if self.fan_in_fan_out else delta) * self.scaling

    @torch.no_grad()
    def merge_(self):
        self.base_layer.weight.data += self.get_delta_weight()


def is_target(key, target_modules):
    """check_target_module_exists: a list names a module by its path or the end of it after a dot;
    a string is a regular expression for the whole path."""
    if isinstance(target_modules, str):
        return re.fullmatch(target_modules, key) is not None
    return key in target_modules or any(key.endswith("." + t) for t in target_modules)


def get_peft_model(model, target_modules, r, lora_alpha, lora_dropout=0.0, use_rslora=False):
    """The base model with its target layers wrapped, everything but the adapters frozen. Returns
    the paths adapted, in the order of named_modules()."""
    linear_types = (nn.Linear, gpt2_model.Conv1D)
    if isinstance(target_modules, str) and target_modules.lower() == "all-linear":
        # _maybe_include_all_linear_layers: every linear layer but the output embedding.
        names = [n for n, m in model.named_modules() if isinstance(m, linear_types) and n != "lm_head"]
        target_modules = names
    paths = [n for n, m in model.named_modules() if n and is_target(n, target_modules)]
    if not paths:
        raise ValueError(f"target_modules {target_modules} matches no module")
    for path in paths:
        parent_path, _, child = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        base = getattr(parent, child)
        if not isinstance(base, linear_types):
            raise ValueError(f"{path} is a {type(base).__name__}, not a Linear or Conv1D")
        setattr(parent, child, LoraLinear(base, r, lora_alpha, lora_dropout, use_rslora))
    for name, p in model.named_parameters():   # _mark_only_adapters_as_trainable, bias "none"
        p.requires_grad_("lora_" in name)
    return paths


def adapter_state_dict(model):
    """get_peft_model_state_dict: the adapters' matrices under PeftModel's keys."""
    return {"base_model.model." + n: p for n, p in model.named_parameters() if "lora_" in n}


def adapter_config(r, lora_alpha, lora_dropout, target_modules, fan_in_fan_out, base, use_rslora=False):
    """adapter_config.json as PEFT 0.15's LoraConfig.save_pretrained writes it: every field of
    the dataclass (sets as lists), the variants off."""
    return {
        "alpha_pattern": {},
        "auto_mapping": None,
        "base_model_name_or_path": base,
        "bias": "none",
        "corda_config": None,
        "eva_config": None,
        "exclude_modules": None,
        "fan_in_fan_out": fan_in_fan_out,
        "inference_mode": True,
        "init_lora_weights": True,
        "layer_replication": None,
        "layers_pattern": None,
        "layers_to_transform": None,
        "loftq_config": {},
        "lora_alpha": lora_alpha,
        "lora_bias": False,
        "lora_dropout": lora_dropout,
        "megatron_config": None,
        "megatron_core": "megatron.core",
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": r,
        "rank_pattern": {},
        "revision": None,
        "target_modules": target_modules,
        "task_type": "CAUSAL_LM",
        "trainable_token_indices": None,
        "use_dora": False,
        "use_rslora": use_rslora,
    }


def write_adapter(folder, config, tensors, dtype=torch.float32):
    """adapter_config.json (no final newline, as json.dumps leaves it) and
    adapter_model.safetensors with metadata {"format": "pt"}, the matrices in `dtype`."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True))
    with open(os.path.join(folder, "adapter_model.safetensors"), "wb") as f:
        f.write(llama_hf.safetensors_bytes({n: t.detach().to(dtype) for n, t in tensors.items()},
                                           {"format": "pt"}))


# ---- the base models -----------------------------------------------------------------------------

def read_llama_folder(folder):
    """A Llama folder (config.json, one model.safetensors) as llama_hf's replica, in eval mode."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    model = llama_hf.LlamaForCausalLM(config)
    path = os.path.join(folder, "model.safetensors")
    header, _, data_start = gpt2_model.read_safetensors_header(path)
    params = dict(model.named_parameters())   # a tied lm_head.weight is listed once, as the table
    with open(path, "rb") as f, torch.no_grad():
        for key, entry in header.items():
            gpt2_model.read_float_tensor(f, entry, data_start, out=params[key])
    missing = set(params) - set(header)
    if missing:
        raise ValueError(f"{path}: missing {sorted(missing)}")
    return model.eval()


def read_base(folder):
    with open(os.path.join(folder, "config.json")) as f:
        model_type = json.load(f).get("model_type")
    if model_type == "llama":
        return read_llama_folder(folder)
    if model_type == "gpt2":
        return gpt2_model.read_folder(folder)
    raise ValueError(f"{folder}: model_type {model_type!r}, expected \"llama\" or \"gpt2\"")


def randomise_b(model, generator, std=0.5):
    """A trained adapter's B: drawn, so that the adapter changes the logits."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("lora_B.weight"):
                p.normal_(0.0, std, generator=generator)


def loss_and_grads(model, idx, targets):
    model.zero_grad(set_to_none=True)
    logits, _ = model(idx)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    loss.backward()
    for name, p in model.named_parameters():
        assert (p.grad is not None) == ("lora_" in name), f"{name}: the gradient reaches the base"
    return logits, loss


# ---- fixtures ------------------------------------------------------------------------------------

def fixtures():
    golden = {}
    generator = torch.Generator().manual_seed(LORA_SEED)
    torch.manual_seed(LORA_SEED)   # PEFT's kaiming_uniform_ draws from the global generator

    # The tied Llama, q_proj and v_proj.
    llama = read_llama_folder(os.path.join(FIXTURE_ROOT, "llama_tiny", "tied"))
    paths = get_peft_model(llama, ["q_proj", "v_proj"], r=4, lora_alpha=8, lora_dropout=0.05)
    randomise_b(llama, generator)
    llama.eval()
    config = adapter_config(4, 8, 0.05, ["v_proj", "q_proj"], False, "llama_tiny/tied")
    tensors = adapter_state_dict(llama)
    write_adapter(os.path.join(FIXTURES, "llama"), config, tensors)
    write_adapter(os.path.join(FIXTURES, "llama_f16"), config, tensors, torch.float16)
    write_adapter(os.path.join(FIXTURES, "llama_bf16"), config, tensors, torch.bfloat16)
    ids = torch.randint(0, 100, (2, 21), generator=torch.Generator().manual_seed(BATCH_SEED))
    idx, targets = ids[:, :20].contiguous(), ids[:, 1:].contiguous()
    logits, loss = loss_and_grads(llama, idx, targets)
    golden.update({"llama.idx": idx, "llama.targets": targets, "llama.logits": logits,
                   "llama.loss": loss.reshape(())})
    for key, p in adapter_state_dict(llama).items():
        golden["llama.grad." + key] = p.grad
    with torch.no_grad():
        for path in paths:
            layer = llama.get_submodule(path)
            layer.merge_()
            golden[f"llama.merged.{path}.weight"] = layer.base_layer.weight.clone()
    print(f"  llama: {len(paths)} layers adapted ({', '.join(paths)}), loss {loss.item():.6f}")

    # The untied Llama, every Linear but lm_head, rsLoRA.
    untied = read_llama_folder(os.path.join(FIXTURE_ROOT, "llama_tiny", "untied"))
    paths = get_peft_model(untied, "all-linear", r=2, lora_alpha=4, use_rslora=True)
    assert "lm_head" not in paths and len(paths) == 14, paths
    randomise_b(untied, generator)
    untied.eval()
    config = adapter_config(2, 4, 0.0, "all-linear", False, "llama_tiny/untied", use_rslora=True)
    write_adapter(os.path.join(FIXTURES, "llama_all_linear"), config, adapter_state_dict(untied))
    with torch.no_grad():
        golden["llama_all_linear.logits"] = untied(idx)[0]

    # GPT-2's Conv1D layers: c_attn and both c_proj.
    gpt2 = gpt2_model.read_folder(os.path.join(FIXTURE_ROOT, "gpt2_tiny", "plain"))
    paths = get_peft_model(gpt2, ["c_attn", "c_proj"], r=4, lora_alpha=8, lora_dropout=0.1)
    assert len(paths) == 6, paths
    randomise_b(gpt2, generator)
    gpt2.eval()
    config = adapter_config(4, 8, 0.1, ["c_proj", "c_attn"], True, "gpt2_tiny/plain")
    write_adapter(os.path.join(FIXTURES, "gpt2"), config, adapter_state_dict(gpt2))
    ids = torch.randint(0, 50257, (2, 33), generator=torch.Generator().manual_seed(BATCH_SEED))
    idx, targets = ids[:, :32].contiguous(), ids[:, 1:].contiguous()
    logits, loss = loss_and_grads(gpt2, idx, targets)
    golden.update({"gpt2.idx": idx, "gpt2.targets": targets, "gpt2.logits_head": logits[..., :256],
                   "gpt2.logsumexp": torch.logsumexp(logits, dim=-1), "gpt2.loss": loss.reshape(())})
    for key, p in adapter_state_dict(gpt2).items():
        golden["gpt2.grad." + key] = p.grad
    with torch.no_grad():
        for path in paths:
            layer = gpt2.get_submodule(path)
            layer.merge_()
            golden[f"gpt2.merged.{path}.weight"] = layer.base_layer.weight.clone()
    print(f"  gpt2: {len(paths)} layers adapted, loss {loss.item():.6f}")

    golden_path = os.path.join(FIXTURES, "golden.safetensors")
    with open(golden_path, "wb") as f:
        f.write(llama_hf.safetensors_bytes({n: t.detach().contiguous() for n, t in golden.items()},
                                           {"format": "pt"}))
    print(f"lora_peft fixtures: torch {torch.__version__}")
    total = 0
    for dirpath, _, files in sorted(os.walk(FIXTURES)):
        for file in sorted(files):
            path = os.path.join(dirpath, file)
            total += os.path.getsize(path)
            print(f"  {os.path.relpath(path, ROOT)}: {os.path.getsize(path):,} bytes")
    print(f"  {total:,} bytes in all")


# ---- write and verify ----------------------------------------------------------------------------

def write(folder, base, r, lora_alpha, targets, seed):
    model = read_base(base)
    torch.manual_seed(seed)
    paths = get_peft_model(model, targets, r=r, lora_alpha=lora_alpha)
    fan_in_fan_out = model.config.get("model_type") == "gpt2"
    config = adapter_config(r, lora_alpha, 0.0, targets, fan_in_fan_out, os.path.abspath(base))
    write_adapter(folder, config, adapter_state_dict(model))
    print(f"lora_peft write: {folder}: {len(paths)} layers of {base}, r {r}, lora_alpha {lora_alpha}")


def verify(adapter, base):
    """PeftModel.from_pretrained(base, adapter) with a strict load of the matrices."""
    with open(os.path.join(adapter, "adapter_config.json")) as f:
        config = json.load(f)
    assert config["peft_type"] == "LORA" and config["bias"] == "none", config
    model = read_base(base)
    context = model.config.get("n_positions") or model.config["max_position_embeddings"]
    T = min(16, context)
    ids = torch.randint(0, model.config["vocab_size"], (2, T + 1),
                        generator=torch.Generator().manual_seed(VERIFY_SEED))
    with torch.no_grad():
        logits, _ = model(ids[:, :T])
        plain = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1)).item()
    get_peft_model(model, config["target_modules"], config["r"], config["lora_alpha"],
                   config["lora_dropout"], config.get("use_rslora", False))
    model.eval()
    wanted = adapter_state_dict(model)
    path = os.path.join(adapter, "adapter_model.safetensors")
    header, metadata, data_start = gpt2_model.read_safetensors_header(path)
    assert (metadata or {}).get("format") == "pt", f"{path}: metadata {metadata}, expected format pt"
    names = set(header)
    if names != set(wanted):
        raise ValueError(f"{path}: keys differ: extra {sorted(names - set(wanted))}, "
                         f"missing {sorted(set(wanted) - names)}")
    with open(path, "rb") as f, torch.no_grad():
        for key in names:
            gpt2_model.read_float_tensor(f, header[key], data_start, out=wanted[key])
    with torch.no_grad():
        logits, _ = model(ids[:, :T])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1)).item()
    print(f"lora_peft verify: {adapter}: strict load ok, {len(names)} matrices, loss={loss:.6f} "
          f"(without the adapter {plain:.6f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    sub.add_parser("fixtures", help="write tests/pretrained/fixtures/lora_tiny/ (the default)")
    w = sub.add_parser("write", help="a new adapter for a Llama or GPT-2 folder")
    w.add_argument("dir")
    w.add_argument("--base", required=True)
    w.add_argument("--r", type=int, default=8)
    w.add_argument("--lora-alpha", type=int, default=16)
    w.add_argument("--targets", default="q_proj,v_proj")
    w.add_argument("--seed", type=int, default=0)
    v = sub.add_parser("verify", help="load an adapter folder as PEFT would, strictly")
    v.add_argument("adapter")
    v.add_argument("--base", required=True)
    args = ap.parse_args()
    if args.command in (None, "fixtures"):
        fixtures()
    elif args.command == "write":
        write(args.dir, args.base, args.r, args.lora_alpha, args.targets.split(","), args.seed)
    else:
        verify(args.adapter, args.base)


if __name__ == "__main__":
    main()
