#!/usr/bin/env python3
"""Writes the small, valid GGUF v3 seed files in corpus/ for fuzz_gguf.

Independent of tern's writer on purpose (stdlib struct only), so the seeds
also cross-check the reader against a second encoder.
Usage: python3 tests/fuzz/make_corpus.py [outdir]
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
          BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
# ggml type id -> (block size, bytes per block)
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66)}


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        etype, items = v
        out = struct.pack("<IQ", etype, len(items))
        return out + b"".join(value(etype, x) for x in items)
    return struct.pack(SCALAR[vtype], v)


def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, type name, dims)]."""
    if alignment != 32:
        kvs = kvs + [("general.alignment", U32, alignment)]
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset, blobs = 0, []
    for name, tname, dims in tensors:
        tid, block, size = TYPES[tname]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // block * size
        out += gstr(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", tid, offset)
        blobs.append((offset, bytes((i * 37 + len(name)) & 0xFF for i in range(nbytes))))
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += bytes(-len(out) % alignment)
    data = bytearray(offset)
    for off, blob in blobs:
        data[off:off + len(blob)] = blob
    return out + bytes(data)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    os.makedirs(outdir, exist_ok=True)
    seeds = {
        "metadata_only.gguf": gguf(
            [("general.architecture", STRING, "bitnet"), ("u8", U8, 7), ("i8", I8, -7),
             ("u16", U16, 600), ("i16", I16, -600), ("u32", U32, 70000), ("i32", I32, -70000),
             ("f32", F32, 0.5), ("bool", BOOL, True), ("u64", U64, 1 << 40),
             ("i64", I64, -(1 << 40)), ("f64", F64, 2.5),
             ("tokens", ARRAY, (STRING, ["<s>", "</s>", "a"])),
             ("scores", ARRAY, (F32, [0.0, -1.0, 2.0])),
             ("types", ARRAY, (I32, [1, 2, 3])), ("bytes", ARRAY, (U8, [1, 2]))],
            []),
        "tensors.gguf": gguf(
            [("general.architecture", STRING, "bitnet"), ("bitnet.block_count", U32, 1)],
            [("token_embd.weight", "TQ2_0", [256, 2]), ("output_norm.weight", "F32", [5]),
             ("blk.0.attn_norm.weight", "F16", [3])]),
        "aligned64.gguf": gguf(
            [("general.name", STRING, "tiny")],
            [("w", "TQ1_0", [256, 1, 2]), ("b", "F32", [4])], alignment=64),
    }
    for name, blob in seeds.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
