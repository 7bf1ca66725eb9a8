#!/usr/bin/python3
"""Writes tests/io/fixtures/reference.safetensors, the small file tests/io/test_safetensors.cpp loads.

Honest note on provenance: the reference writer is the `safetensors` Python package (its Rust core,
huggingface/safetensors: safetensors/src/tensor.rs, `prepare` and `serialize`), and it is not packaged
in Debian, so it could not be run here. This script instead follows that writer's algorithm step by
step with only the standard library and NumPy:
  1. sort tensors by dtype DESCENDING in the reference's dtype order, then by name (bytewise);
  2. assign data offsets back to back from 0;
  3. header = compact JSON (serde_json style: no spaces, UTF-8 kept as is): "__metadata__" first,
     then each tensor as {"dtype", "shape", "data_offsets"} in data order;
  4. pad the header with spaces to a multiple of 8; prefix its length as a little-endian uint64;
  5. append each tensor's little-endian, row-major bytes.
Tied tensors follow `safetensors.torch.save_model`: the data is stored once, under the smallest
name, and the other name maps to it in "__metadata__". With two or more metadata entries the Rust
writer emits them in hash-map order (not fixed); this script sorts them, which is one of its
possible outputs and the order tapegrad's writer uses (docs/checkpoints.md). The files the Python
package writes for the tensors below differ from this one at most in that order.

Run by hand with Debian's Python: /usr/bin/python3 scripts/golden/safetensors_fixture.py
(numpy 1.24). The output is committed; tests never run this script.
"""
import json
import os
import struct
import sys

import numpy as np

DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
               "I32", "U32", "F32", "F64", "I64", "U64"]


def bfloat16_bits(values):
    """bfloat16 by truncation of float32 bits (exact for the values used here)."""
    bits = np.asarray(values, dtype="<f4").view("<u4") >> 16
    return bits.astype("<u2")


def serialize(tensors, metadata):
    """tensors: {name: (dtype_name, shape, bytes)}; metadata: {str: str} or None."""
    items = sorted(tensors.items(), key=lambda kv: (-DTYPE_ORDER.index(kv[1][0]), kv[0].encode()))
    header = {}
    if metadata:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata, key=str.encode)}
    offset = 0
    for name, (dtype, shape, data) in items:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(data for _, (_, _, data) in items)


def main():
    embed = np.array([[0.5, -1.0], [2.0, 3.25], [-0.0, 1e-3]], dtype="<f4")
    half = np.array([1.0, -2.0, 65504.0, 2.0 ** -24], dtype="<f2")
    bf = bfloat16_bits([1.0, -5.0, 3.140625])
    dbl = np.array([[1.5, -2.25], [1e300, np.nan]], dtype="<f8")
    step = np.array(7, dtype="<i8")
    mask = np.array([1, 0, 1], dtype="u1")
    empty = np.zeros((0, 3), dtype="<f4")
    tensors = {
        "embed.weight": ("F32", embed.shape, embed.tobytes()),
        "half": ("F16", half.shape, half.tobytes()),
        "bf": ("BF16", bf.shape, bf.tobytes()),
        "dbl": ("F64", dbl.shape, dbl.tobytes()),
        "state.0.step": ("I64", step.shape, step.tobytes()),
        "mask": ("U8", mask.shape, mask.tobytes()),
        "empty": ("F32", empty.shape, empty.tobytes()),
    }
    # save_model: "lm_head.weight" is tied to "embed.weight", the smaller name, which keeps the data.
    metadata = {"format": "pt", "lm_head.weight": "embed.weight"}
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "io", "fixtures",
                                                              "reference.safetensors")
    with open(out, "wb") as f:
        f.write(serialize(tensors, metadata))
    print(f"wrote {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
