#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets: tests/fuzz/corpus/{safetensors,npy}/.

One valid file of each shape the readers accept, and one file for each way they refuse (each
of the safetensors reader's checks, named by its number in src/io/safetensors_reader.cpp: the
zip hint, duplicate keys, unknown dtypes, tapegrad's CRC-32C checksums of tensors and of
metadata entries; bad .npy headers). libFuzzer
mutates these; scripts/fuzz.sh copies them to a scratch folder first, so the committed corpus
stays small. Standard library only. Run: /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def st(header, data=b"", pad=True):
    """A safetensors file from a header (a dict, or text taken as is) and its data."""
    text = header if isinstance(header, (bytes, str)) else json.dumps(header, separators=(",", ":"))
    text = text.encode("utf-8") if isinstance(text, str) else text
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def crc32c(data):
    """CRC-32C (Castagnoli, reflected 0x82F63B78), bit by bit; as 8 lowercase hex digits."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return "%08x" % (c ^ 0xFFFFFFFF)


assert crc32c(b"123456789") == "e3069283"


def safetensors_seeds():
    six = f32(0, 1, 2, 3, 4, 5)
    with open(os.path.join(HERE, "..", "io", "fixtures", "reference.safetensors"), "rb") as f:
        reference = f.read()
    return {
        # accepted
        "golden_attn.0": st({"attn.0": entry("F32", [1, 2, 3], 0, 24)}, six, pad=False),
        "golden_attn0": st({"attn0": entry("F32", [1, 1, 2, 3], 0, 24)}, six),
        "golden_empty": st({}),
        "golden_metadata": st({"__metadata__": {"framework": "pt"}}),
        "reference_fixture": reference,
        "tied": st({"__metadata__": {"b": "a", "tapegrad.version": "0.1.0"},
                    "step": entry("I64", [], 0, 8), "a": entry("F32", [2], 8, 16)},
                   struct.pack("<q", 7) + f32(1, 2)),
        "odd_but_valid": st('{ "z":{"data_offsets":[12,12],"shape":[0,3],"dtype":"F32"},\n'
                            '"s":{"dtype":"BF16","shape":[],"data_offsets":[8,10]},'
                            '"v":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8],"x":{}},'
                            '"u":{"dtype":"U8","shape":[2],"data_offsets":[10,12]}}   ',
                            b"\x00\x3c\x00\xc0\xff\x7b\x01\x00\x80\x3f\x01\x02"),
        "unicode_names": st({"emb\u00e9\n\"q\"": entry("F64", [1], 0, 8)}, struct.pack("<d", 0.1)),
        # as tapegrad writes them, a checksum per tensor (and an alias named like a checksum)
        "checksummed": st({"__metadata__": {"tapegrad.crc32c.a": crc32c(f32(1, 2)),
                                            "tapegrad.crc32c.step": crc32c(struct.pack("<q", 7)),
                                            crc32c(f32(1, 2)): "a"},
                           "step": entry("I64", [], 0, 8), "a": entry("F32", [2], 8, 16)},
                          struct.pack("<q", 7) + f32(1, 2)),
        # every metadata entry with its checksum too (the alias entry "b" and the version included)
        "metadata_checksummed": st({"__metadata__": {
            "b": "a", "note": "h\u00e9", "tapegrad.version": "0.1.0",
            "tapegrad.crc32c.a": crc32c(f32(1)),
            "tapegrad.metadata_crc32c.b": crc32c("a"),
            "tapegrad.metadata_crc32c.note": crc32c("h\u00e9"),
            "tapegrad.metadata_crc32c.tapegrad.version": crc32c("0.1.0")},
            "a": entry("F32", [1], 0, 4)}, f32(1)),
        # refused, in check order
        "1_too_small": b"\x02\x00\x00",
        "2_too_large": struct.pack("<Q", 100_000_001) + b"{}",
        "3_bad_length": struct.pack("<Q", 100) + b"{}",
        "4_bad_utf8": st(b'{"\xed\xa0\x80":1}'),
        "5_not_json": st('{"w":}'),
        "5_not_object": st("[1,2]"),
        "5_bom": st(b"\xef\xbb\xbf{}"),
        "5_too_deep": st('{"w":{"shape":[[[1]]]}}'),
        "5_entry_not_object": st('{"w":3}'),
        "5_unknown_dtype": st({"w": entry("C64", [1], 0, 8)}, b"\x00" * 8),
        "5_negative_shape": st('{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', b"\x00" * 4),
        "5_float_shape": st('{"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}}', b"\x00" * 4),
        "5_offsets": st('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}', b"\x00" * 4),
        "5_metadata_number": st('{"__metadata__":{"epoch":3}}'),
        "5_checksum_no_tensor": st({"__metadata__": {"tapegrad.crc32c.b": crc32c(f32(1))},
                                    "a": entry("F32", [1], 0, 4)}, f32(1)),
        "5_checksum_alias": st({"__metadata__": {"b": "a", "tapegrad.crc32c.b": crc32c(f32(1))},
                                "a": entry("F32", [1], 0, 4)}, f32(1)),
        "5_checksum_uppercase": st({"__metadata__": {"tapegrad.crc32c.a": crc32c(f32(1)).upper()},
                                    "a": entry("F32", [1], 0, 4)}, f32(1)),
        "5_checksum_short": st({"__metadata__": {"tapegrad.crc32c.a": crc32c(f32(1))[1:]},
                                "a": entry("F32", [1], 0, 4)}, f32(1)),
        "5_metadata_checksum_no_entry": st({"__metadata__": {"note": "x", "tapegrad.metadata_crc32c.note": crc32c("x"),
                                                             "tapegrad.metadata_crc32c.gone": crc32c("x")}}),
        "5_metadata_checksum_of_checksum": st({"__metadata__": {
            "tapegrad.crc32c.a": crc32c(f32(1)),
            "tapegrad.metadata_crc32c.tapegrad.crc32c.a": crc32c(crc32c(f32(1)))},
            "a": entry("F32", [1], 0, 4)}, f32(1)),
        "5_metadata_checksum_uppercase": st({"__metadata__": {"note": "x",
                                                              "tapegrad.metadata_crc32c.note": crc32c("x").upper()}}),
        "6b_metadata_edited": st({"__metadata__": {"progress.step": "25",
                                                   "tapegrad.metadata_crc32c.progress.step": crc32c("20")}}),
        "6b_metadata_added": st({"__metadata__": {"note": "x", "tapegrad.metadata_crc32c.note": crc32c("x"),
                                                  "gpt.n_head": "4"}}),
        "6b_alias_redirected": st({"__metadata__": {"c": "b", "tapegrad.metadata_crc32c.c": crc32c("a")},
                                   "a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 4, 8)}, f32(1, 2)),
        # a checksum for b but none for a: a's entry removed (check 6c)
        "6c_checksummed_partly": st({"__metadata__": {"tapegrad.crc32c.b": crc32c(f32(3))},
                                     "a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 4, 8)}, f32(1, 3)),
        "6_duplicate_name": st('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                               '"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\x00" * 4),
        "6_duplicate_field": st('{"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}}', b"\x00" * 4),
        "7_gap": st({"a": entry("F32", [6], 0, 24), "b": entry("F32", [1], 28, 32)}, b"\x00" * 32),
        "7_overlap": st({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 0, 4)}, b"\x00" * 8),
        "7_backwards": st({"a": entry("F32", [1], 0, 4), "b": entry("U8", [0], 4, 2)}, b"\x00" * 4),
        "8_overflow": st({"w": entry("F32", [2 ** 62, 8], 0, 0)}),
        "8_strides_overflow": st({"w": entry("F32", [0, 2 ** 62, 2], 0, 0)}),   # 0 bytes, strides overflow
        "9_invalid_info": st({"w": entry("F32", [2, 3], 0, 20)}, b"\x00" * 20),
        "10_incomplete": st({"w": entry("F32", [2], 0, 8)}, b"\x00" * 9),
        "11_checksum_mismatch": st({"__metadata__": {"tapegrad.crc32c.a": crc32c(f32(1, 2))},
                                    "a": entry("F32", [2], 0, 8)}, f32(1, 2.5)),
        "11_checksum_second_tensor": st({"__metadata__": {"tapegrad.crc32c.a": crc32c(f32(1)),
                                                          "tapegrad.crc32c.b": crc32c(f32(2))},
                                         "a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 4, 8)}, f32(1, 3)),
        "zip": b"PK\x03\x04\x14\x00\x00\x00" + b"z" * 40,
    }


def npy(dict_text, data, major=1):
    width = 2 if major == 1 else 4
    header = dict_text.encode("latin1")
    total = 8 + width + len(header) + 1
    header += b" " * ((64 - total % 64) % 64) + b"\n"
    return b"\x93NUMPY" + bytes([major, 0]) + len(header).to_bytes(width, "little") + header + data


def npy_seeds():
    ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    six = f32(0, 1, 2, 3, 4, 5)
    return {
        "f4": npy(ok, six),
        "f8": npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", struct.pack("<2d", 0.1, 1e300)),
        "fortran": npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six),
        "scalar": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f32(1)),
        "rank25": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ("1, " * 25), f32(3)),
        "v2": npy(ok, six, major=2),
        "bad_magic": b"\x93NUMPZ\x01\x00" + b"\x00" * 8,
        "bad_version": npy(ok, six)[:6] + b"\x04\x00" + npy(ok, six)[8:],
        "header_too_long": b"\x93NUMPY\x01\x00\xff\x00{}",
        "missing_key": npy("{'descr': '<f4', 'shape': (2, 3), }", six),
        "int_dtype": npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", b"\x00" * 8),
        "short_data": npy(ok, six[:-4]),
        "overflow": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", b""),
        # 0 bytes, but xtensor's strides would overflow (found by fuzzing)
        "strides_overflow": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, 1099511627776), }", b""),
    }


def main():
    for name, seeds in (("safetensors", safetensors_seeds()), ("npy", npy_seeds())):
        folder = os.path.join(HERE, "corpus", name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for seed, data in seeds.items():
            with open(os.path.join(folder, seed), "wb") as f:
                f.write(data)
        print(f"{folder}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
