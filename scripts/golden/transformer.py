# scripts/golden/transformer.py: the PyTorch parity fixture for tests/transformer/test_transformer_parity.cpp.
#
# Run by hand with Debian's PyTorch (the tests never need it):
#     /usr/bin/python3 scripts/golden/transformer.py
# It builds a small EncoderDecoder with The Annotated Transformer's architecture and state-dict
# keys (V = 11, N = 1, d_model = 16, d_ff = 32, h = 2; written here in our own words, the
# tutorial is not imported), initialises it from a fixed seed, and runs one forward and backward
# in eval mode (no dropout) on a fixed batch with a padded source row:
#     out  = model.decode(model.encode(src, src_mask), src_mask, tgt, tgt_mask)      (2, 4, 16)
#     logp = generator(out)                                                           (2, 4, 11)
#     loss = LabelSmoothing(11, padding_idx 0, smoothing 0.1)(logp, tgt_y) / ntokens
# and writes tests/transformer/fixtures/transformer_parity.safetensors (a plain writer of the format,
# tensors sorted by name): "param.<key>" every parameter, "grad.<key>" its gradient, the inputs
# "src", "tgt", "tgt_y" (I64) and the outputs "out", "logp", "loss". The positional-encoding
# buffers are left out (640 KB each, and recomputed by the model).
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

V, N, D, D_FF, H = 11, 1, 16, 32, 2
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "nn", "fixtures",
                   "transformer_parity.safetensors")


class LayerNorm(nn.Module):                    # unbiased std, eps added to the std; a_2, b_2
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.a_2, self.b_2, self.eps = nn.Parameter(torch.ones(n)), nn.Parameter(torch.zeros(n)), eps

    def forward(self, x):
        return self.a_2 * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.b_2


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d):
        super().__init__()
        self.h, self.d_k = h, d // h
        self.linears = nn.ModuleList(nn.Linear(d, d) for _ in range(4))
        self.dropout = nn.Dropout(0.1)

    def forward(self, q, k, v, keep):
        n = q.size(0)
        q, k, v = (lin(t).view(n, -1, self.h, self.d_k).transpose(1, 2) for lin, t in zip(self.linears, (q, k, v)))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).masked_fill(~keep.unsqueeze(1), -1e9)
        x = self.dropout(scores.softmax(-1)) @ v
        return self.linears[3](x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k))


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.w_1, self.w_2, self.dropout = nn.Linear(d, d_ff), nn.Linear(d_ff, d), nn.Dropout(0.1)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class SublayerConnection(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm, self.dropout = LayerNorm(d), nn.Dropout(0.1)

    def forward(self, x, fn):
        return x + self.dropout(fn(self.norm(x)))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.feed_forward = MultiHeadedAttention(H, D), PositionwiseFeedForward(D, D_FF)
        self.sublayer = nn.ModuleList(SublayerConnection(D) for _ in range(2))

    def forward(self, x, keep):
        x = self.sublayer[0](x, lambda n: self.self_attn(n, n, n, keep))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.src_attn = MultiHeadedAttention(H, D), MultiHeadedAttention(H, D)
        self.feed_forward = PositionwiseFeedForward(D, D_FF)
        self.sublayer = nn.ModuleList(SublayerConnection(D) for _ in range(3))

    def forward(self, x, m, src_keep, tgt_keep):
        x = self.sublayer[0](x, lambda n: self.self_attn(n, n, n, tgt_keep))
        x = self.sublayer[1](x, lambda n: self.src_attn(n, m, m, src_keep))
        return self.sublayer[2](x, self.feed_forward)


class Stack(nn.Module):                        # Encoder / Decoder: layers.0 .. and a final norm
    def __init__(self, make):
        super().__init__()
        self.layers, self.norm = nn.ModuleList(make() for _ in range(N)), LayerNorm(D)

    def forward(self, x, *args):
        for layer in self.layers:
            x = layer(x, *args)
        return self.norm(x)


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.lut = nn.Embedding(V, D)

    def forward(self, ids):
        return self.lut(ids) * math.sqrt(D)


class PositionalEncoding(nn.Module):
    def __init__(self, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(0.1)
        pos, freq = torch.arange(max_len).unsqueeze(1), torch.exp(torch.arange(0, D, 2) * -(math.log(10000.0) / D))
        pe = torch.zeros(max_len, D)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, V)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class EncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.decoder = Stack(EncoderLayer), Stack(DecoderLayer)
        self.src_embed = nn.Sequential(Embeddings(), PositionalEncoding())
        self.tgt_embed = nn.Sequential(Embeddings(), PositionalEncoding())
        self.generator = Generator()


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


torch.manual_seed(0)
model = EncoderDecoder()
for p in model.parameters():
    if p.dim() > 1:
        nn.init.xavier_uniform_(p)
with torch.no_grad():                          # non-trivial norms, so their gradients are tested too
    for name, p in model.named_parameters():
        if name.endswith("a_2") or name.endswith("b_2"):
            p.add_(0.1 * torch.randn_like(p))
model.eval()

src = torch.tensor([[1, 4, 2, 9, 3], [1, 7, 5, 0, 0]])
data = torch.tensor([[1, 4, 2, 9, 3], [1, 7, 5, 10, 0]])
tgt, tgt_y = data[:, :-1], data[:, 1:]
src_keep = (src != 0).unsqueeze(-2)
tgt_keep = (tgt != 0).unsqueeze(-2) & torch.tril(torch.ones(1, 4, 4, dtype=torch.bool))

memory = model.encoder(model.src_embed(src), src_keep)
out = model.decoder(model.tgt_embed(tgt), memory, src_keep, tgt_keep)
logp = model.generator(out)
flat, target = logp.reshape(-1, V), tgt_y.reshape(-1)
dist = torch.full_like(flat, 0.1 / (V - 2))
dist[torch.arange(len(target)), target] = 0.9
dist[:, 0] = 0.0
dist[target == 0] = 0.0
ntokens = int((tgt_y != 0).sum())
loss = F.kl_div(flat, dist, reduction="sum") / ntokens
loss.backward()

tensors = {"src": src, "tgt": tgt, "tgt_y": tgt_y, "out": out, "logp": logp, "loss": loss.reshape(())}
for name, p in model.named_parameters():
    tensors["param." + name] = p
    tensors["grad." + name] = p.grad
write_safetensors(OUT, tensors)
print("torch", torch.__version__, "wrote", os.path.normpath(OUT), os.path.getsize(OUT), "bytes; loss",
      loss.item(), "ntokens", ntokens, "parameters", sum(1 for _ in model.parameters()))
