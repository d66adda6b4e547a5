#!/usr/bin/python3
"""Checks a `tern pack --fairy2i` output against the numpy reference.

Reads the GGUF with its own minimal parser (not tern's), decodes every
FAIRY2I tensor's bit planes to codes (docs/FORMAT.md: per complex row and
64 complex columns, 64-bit planes U axis, U sign, W axis, W sign; code =
axis | sign << 1) and compares codes and the tern.scale.<tensor> values
with quantize.py's f32 rules applied to the checkpoint's weights: every code
and every scale bit must agree. Also checks the padding codes are 0 and
that the float tensors are stored losslessly.

    check_pack.py CKPT_DIR FILE.gguf STAGES
Prints one line per tensor; exits 1 at the first disagreement.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import gguf_lite  # noqa: E402
from quantize import quantize_linear  # noqa: E402

FAIRY2I = 29797


def read_gguf(path):
    """kv as {key: value} (arrays as lists), tensors as {name: (dims, type, data, offset)}."""
    kv, infos, data, base, _ = gguf_lite.read_gguf(path)
    kv = {k: (v[1] if t == 9 else v) for k, t, v in kv}
    return kv, {name: (dims, t, data, base + off) for name, dims, t, off in infos}


def read_safetensors(ckpt):
    out = {}
    for fn in sorted(os.listdir(ckpt)):
        if not fn.endswith(".safetensors"):
            continue
        raw = open(os.path.join(ckpt, fn), "rb").read()
        n = struct.unpack_from("<Q", raw, 0)[0]
        header = json.loads(raw[8:8 + n])
        for name, h in header.items():
            if name == "__metadata__":
                continue
            b, e = h["data_offsets"]
            buf = np.frombuffer(raw[8 + n + b:8 + n + e], dtype={"BF16": np.uint16, "F16": np.float16,
                                                                 "F32": np.float32}[h["dtype"]])
            if h["dtype"] == "BF16":
                buf = (buf.astype(np.uint32) << 16).view(np.float32)
            out[name] = buf.astype(np.float32).reshape(h["shape"])
    return out


def decode_codes(raw, n, cols, stages):
    """[stages][n][cols] U codes and W codes from FAIRY2I bytes."""
    planes = np.frombuffer(raw, dtype="<u8").reshape(stages, n, cols // 64, 4)
    bits = np.arange(64, dtype=np.uint64)

    def expand(p):  # [stages][n][nb] -> [stages][n][nb * 64] of 0/1
        return ((p[..., None] >> bits) & np.uint64(1)).reshape(stages, n, cols).astype(np.uint8)

    u = expand(planes[..., 0]) | (expand(planes[..., 1]) << 1)
    w = expand(planes[..., 2]) | (expand(planes[..., 3]) << 1)
    return u, w


def hf_name(gguf_name):
    if gguf_name == "output.weight":
        return "lm_head.weight"
    parts = gguf_name.split(".")
    sub = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
           "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
           "ffn_down": "mlp.down_proj"}[parts[2]]
    return "model.layers.%s.%s.weight" % (parts[1], sub)


def main():
    ckpt, path, stages = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kv, tensors = read_gguf(path)
    weights = read_safetensors(ckpt)
    if kv.get("general.architecture") != "fairy2i" or kv.get("tern.scale_rule") != "fairy2i-phase":
        raise SystemExit("%s: not a Fairy2i file" % path)
    n_phase = 0
    for name, (dims, t, data, off) in sorted(tensors.items()):
        if t != FAIRY2I:
            continue
        n_phase += 1
        A = weights[hf_name(name)]
        rows, cols_real = A.shape
        n, m = rows // 2, cols_real // 2
        pad = (m + 63) // 64 * 64
        if dims != [2 * pad, rows, stages]:
            raise SystemExit("%s: dims %s, expected %s" % (name, dims, [2 * pad, rows, stages]))
        raw = data[off:off + stages * n * pad // 2]
        u, w = decode_codes(raw, n, pad, stages)
        planes, _ = quantize_linear(A, stages, "f32")
        want_scales = []
        for st in range(stages):
            cu, su_re, su_im = planes["U"][st]
            cw, sw_re, sw_im = planes["W"][st]
            for which, got, want in (("U", u[st], cu), ("W", w[st], cw)):
                bad = np.argwhere(got[:, :m] != want)
                if len(bad):
                    r, c = bad[0]
                    raise SystemExit("%s stage %d %s row %d column %d: code %d, reference %d" %
                                     (name, st, which, r, c, got[r, c], want[r, c]))
                if got[:, m:].any():
                    raise SystemExit("%s stage %d %s: nonzero padding codes" % (name, st, which))
            want_scales += [su_re, su_im, sw_re, sw_im]
        got_scales = np.array(kv["tern.scale." + name], dtype=np.float32)
        want_scales = np.array(want_scales, dtype=np.float32)
        if got_scales.tobytes() != want_scales.tobytes():
            raise SystemExit("%s: scales %s, reference %s" % (name, got_scales.tolist(), want_scales.tolist()))
        print("%s: %d x %d, %d stages: codes and scales match" % (name, rows, cols_real, stages))
    if n_phase != 7 * kv["fairy2i.block_count"] + 1:
        raise SystemExit("%s: %d FAIRY2I tensors" % (path, n_phase))
    # Float tensors (embeddings, norms) are lossless copies.
    for name, (dims, t, data, off) in tensors.items():
        if t == FAIRY2I:
            continue
        src = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}.get(name)
        if src is None:
            layer, kind = name.split(".")[1], name.split(".")[2]
            src = "model.layers.%s.%s.weight" % (layer, {"attn_norm": "input_layernorm",
                                                         "ffn_norm": "post_attention_layernorm"}[kind])
        count = int(np.prod(dims))
        dtype = {0: np.float32, 1: np.float16, 30: np.uint16}[t]
        got = np.frombuffer(data, dtype=dtype, count=count, offset=off)
        got = (got.astype(np.uint32) << 16).view(np.float32) if t == 30 else got.astype(np.float32)
        if not np.array_equal(got, weights[src].reshape(-1)):
            raise SystemExit("%s differs from %s" % (name, src))
    print("all %d Fairy2i tensors and the float tensors match" % n_phase)


if __name__ == "__main__":
    main()
