# scripts/golden/nn_module.py: the PyTorch texts that tests/nn/test_module.cpp and
# test_state_dict.cpp reproduce (load_state_dict's error, IncompatibleKeys, module printing).
# Run by hand with Debian's PyTorch: /usr/bin/python3 scripts/golden/nn_module.py
# (checked with torch 1.13.1; tapegrad prints shapes as (1, 7, 2) instead of torch.Size([1, 7, 2]),
# and ModuleList compresses runs of identical children as PyTorch 2.x does: "(0-1): 2 x ...").
import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, rows):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(rows, 2))
        self.register_buffer("table", torch.zeros(1, rows, 2))
        self.register_buffer("cache", torch.zeros(1), persistent=False)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.ModuleList([Layer(3), Layer(2)])
        self.head = Layer(4)


m = Model()
print(list(m.state_dict().keys()))
sd = m.state_dict()
del sd["src_embed.0.weight"]
del sd["head.weight"]
sd["head.bias"] = torch.zeros(1)
sd["stray"] = torch.zeros(1)
sd["src_embed.1.table"] = torch.zeros(1, 7, 2)
try:
    m.load_state_dict(sd)
except RuntimeError as e:
    print(repr(str(e)))
sd = m.state_dict()
sd["head.cache"] = torch.zeros(1)
print(m.load_state_dict(sd, strict=False))
print(m.load_state_dict(m.state_dict()))
print(m)
print(nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True))
print(nn.Embedding(10, 3, sparse=True), nn.Dropout(0.1), nn.Linear(16, 11), nn.CrossEntropyLoss())
