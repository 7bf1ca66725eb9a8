# scripts/golden/positional_encoding.py: the tutorials' float32 PositionalEncoding table, for the
# parity check in tests/nn/test_positional_encoding.cpp (tapegrad computes the table in double,
# so the two agree within atol(pos) = 1e-6 + 1.2e-7 * pos, about one float32 ulp of the angle),
# and the exact double values.
# Run by hand with Debian's PyTorch: /usr/bin/python3 scripts/golden/positional_encoding.py
import math
import struct

import torch


def tutorial_table(d_model, max_len):
    # The seed tutorials' / The Annotated Transformer's code, in float32.
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.unsqueeze(0)


def exact(pos, j, d_model):
    angle = pos * math.exp((j - j % 2) * -(math.log(10000.0) / d_model))
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


print("torch", torch.__version__)
for d, pos in [(4, 1), (4, 2), (5, 1)]:
    vals = [exact(pos, j, d) for j in range(d)]
    print(f"d={d} pos={pos}", ["%.7f" % v for v in vals], ["%08X" % bits(v) for v in vals])
pe = tutorial_table(512, 1000)
for pos in [1, 7, 96, 100, 517, 999]:
    cols = [0, 1, 9, 10, 255, 256, 510, 511]
    print(f"pos={pos}", ", ".join("%.9ef" % pe[0, pos, j].item() for j in cols))
worst = max(abs(pe[0, pos, j].item() - exact(pos, j, 512)) for pos in range(97) for j in range(512))
print("max |float32 table - exact| over pos < 97:", worst)
