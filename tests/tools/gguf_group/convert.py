#!/usr/bin/python3
"""Rewrites a PQ2_0 GGUF file's group-scaled tensors as another group type,
with a GGUF reader and writer of its own (not tern's), so tern's loader is
tested on files it did not write. The block layouts follow PrismML's
llama.cpp fork (ggml-quants.c, quantize_row_ptq1_0_ref / quantize_row_q1_0_ref)
and docs/FORMAT.md.

    convert.py IN.gguf OUT.gguf ptq1_0     # lossless: PQ2_0 codes 0..2 as base-3 trits
    convert.py IN.gguf OUT.gguf binarize   # PQ2_0 with every 0 made +1: a binary model, still PQ2_0
    convert.py IN.gguf OUT.gguf q1_0       # a binary PQ2_0 file as Q1_0 (refuses zeros)
    convert.py IN.gguf OUT.gguf q2_0-g128  # PQ2_0's bytes under type 42, as PrismML's April 2026 files

Every other tensor and key is copied as it is; general.file_type becomes
the output type's (PTQ1_0 143, Q1_0 40, Q2_0 41).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gguf_lite import read_gguf, write_gguf  # noqa: E402

PQ2_0, PTQ1_0, Q1_0, Q2_0 = 142, 143, 41, 42
BLOCK = {PQ2_0: 34, PTQ1_0: 28, Q1_0: 18}  # bytes per 128 weights
# ggml's block sizes and bytes of the types the test files hold.
TYPE_SIZE = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 142: (128, 34), 143: (128, 28), 41: (128, 18)}
FILE_TYPE = {"ptq1_0": 143, "q1_0": 40, "binarize": None, "q2_0-g128": 41}



def read_tensors(path):
    kv, infos, data, base, align = read_gguf(path)
    tensors = []
    for name, dims, t, off in infos:
        bs, ts = TYPE_SIZE[t]
        n = int(np.prod(dims))
        tensors.append([name, dims, t, data[base + off:base + off + n // bs * ts]])
    return kv, tensors, align


def pq2_codes(raw):
    """[blocks] fp16 scales (as uint16) and [blocks][128] codes 0..3."""
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = b[:, :2].copy().view(np.uint16)[:, 0]
    qs = b[:, 2:]
    codes = np.stack([(qs >> (2 * k)) & 3 for k in range(4)], axis=2).reshape(-1, 128)  # weight j: qs[j/4] bits 2(j%4)
    return d, codes


def pq2_bytes(d, codes):
    qs = np.zeros((len(d), 32), dtype=np.uint8)
    c = codes.reshape(-1, 32, 4).astype(np.uint8)
    for k in range(4):
        qs |= c[:, :, k] << (2 * k)
    return np.concatenate([d.astype("<u2").view(np.uint8).reshape(-1, 2), qs], axis=1).tobytes()


def ptq1_0_bytes(d, codes):
    """PrismML's encoding: 5 trits per byte over 16 then 8 positions (the
    first the most significant digit), 4 per qh byte, ceil(v * 256 / 243)."""
    if (codes > 2).any():
        raise SystemExit("a PQ2_0 code 3 (+2d) has no PTQ1_0 trit")
    c = codes.astype(np.uint32)
    out = np.zeros((len(d), 28), dtype=np.uint8)
    for m in range(16):
        v = sum(c[:, m + 16 * n] * 3 ** (4 - n) for n in range(5))
        out[:, m] = (v * 256 + 242) // 243
    for m in range(8):
        v = sum(c[:, 80 + m + 8 * n] * 3 ** (4 - n) for n in range(5))
        out[:, 16 + m] = (v * 256 + 242) // 243
    for h in range(2):
        v = sum(c[:, 120 + h + 2 * m] * 3 ** (3 - m) for m in range(4)) * 3
        out[:, 24 + h] = (v * 256 + 242) // 243
    out[:, 26:28] = d.astype("<u2").view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def q1_0_bytes(d, codes):
    if ((codes != 0) & (codes != 2)).any():
        raise SystemExit("Q1_0 holds only -d and +d; binarize the file first")
    bits = (codes == 2).astype(np.uint8).reshape(-1, 16, 8)
    qs = np.zeros((len(d), 16), dtype=np.uint8)
    for k in range(8):
        qs |= bits[:, :, k] << k  # weight j: bit j % 8 of qs[j / 8], set is +d
    return np.concatenate([d.astype("<u2").view(np.uint8).reshape(-1, 2), qs], axis=1).tobytes()


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in FILE_TYPE:
        raise SystemExit(__doc__)
    src, dst, mode = sys.argv[1:]
    kv, tensors, align = read_tensors(src)
    if not any(t[2] == PQ2_0 for t in tensors):
        raise SystemExit(f"{src}: no PQ2_0 tensor")
    for t in tensors:
        if t[2] != PQ2_0:
            continue
        d, codes = pq2_codes(t[3])
        if mode == "q2_0-g128":
            t[2] = Q2_0  # the same 34-byte blocks: the tensor's size tells the layouts apart
            continue
        if mode == "binarize":
            t[3] = pq2_bytes(d, np.where(codes == 1, 2, codes))
        elif mode == "ptq1_0":
            t[2], t[3] = PTQ1_0, ptq1_0_bytes(d, codes)
        else:
            t[2], t[3] = Q1_0, q1_0_bytes(d, codes)
    if FILE_TYPE[mode] is not None:
        kv = [(k, t, FILE_TYPE[mode] if k == "general.file_type" else v) for k, t, v in kv]
    write_gguf(dst, kv, tensors, align)


if __name__ == "__main__":
    main()
