#!/usr/bin/env python3
"""Independent NumPy forward in the integer form an engine uses, as a check.

Each BitLinear is computed as int8 activations x ternary weights accumulated
in integers, then scaled by s_w / s_x, with llama.cpp-style NEOX RoPE written
out by hand.  Compares logits with model.py on the exported checkpoint.
"""
import json, os, sys
import numpy as np
import sentencepiece as spm
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io
from model import Config, BitLlama

d = sys.argv[1] if len(sys.argv) > 1 else "models/kjv-bitnet-6m"
c = json.load(open(os.path.join(d, "config.json")))
W = {k: v.numpy() for k, v in safetensors_io.load(os.path.join(d, "model.safetensors")).items()}
sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
ids = [1] + sp.encode("In the beginning God created the heaven and the earth.")
H, nh, nkv, eps = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], np.float32(c["rms_norm_eps"])
hd = H // nh


def bitlinear(x, w):
    s = np.float32(max(np.abs(w).mean(dtype=np.float64), 1e-5))
    t = np.clip(np.rint(w * (np.float32(1) / s)), -1, 1).astype(np.int32)   # rint: half-to-even
    sx = np.float32(127) / np.maximum(np.abs(x).max(-1, keepdims=True), np.float32(1e-5))
    q = np.clip(np.rint(x * sx), -128, 127).astype(np.int32)
    return (q @ t.T).astype(np.float32) * s / sx


def rms(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


T = len(ids)
pos = np.arange(T, dtype=np.float32)[:, None]
theta = pos * (np.float32(c["rope_theta"]) ** (-np.arange(0, hd, 2, dtype=np.float32) / hd))
cos, sin = np.cos(theta), np.sin(theta)                 # (T, hd/2)


def rope(x):                                            # x: (T, heads, hd); pairs (i, i + hd/2)
    a, b = x[..., :hd // 2], x[..., hd // 2:]
    cs, sn = cos[:, None], sin[:, None]
    return np.concatenate([a * cs - b * sn, a * sn + b * cs], -1)


x = W["model.embed_tokens.weight"][ids]
for L in range(c["num_hidden_layers"]):
    p = f"model.layers.{L}."
    h = rms(x, W[p + "input_layernorm.weight"])
    q = rope(bitlinear(h, W[p + "self_attn.q_proj.weight"]).reshape(T, nh, hd))
    k = rope(bitlinear(h, W[p + "self_attn.k_proj.weight"]).reshape(T, nkv, hd))
    v = bitlinear(h, W[p + "self_attn.v_proj.weight"]).reshape(T, nkv, hd)
    out = np.zeros((T, nh, hd), np.float32)
    for hh in range(nh):
        kv = hh // (nh // nkv)
        att = q[:, hh] @ k[:, kv].T / np.sqrt(np.float32(hd))
        att = np.where(np.tril(np.ones((T, T), bool)), att, -np.inf)
        att = np.exp(att - att.max(-1, keepdims=True))
        out[:, hh] = (att / att.sum(-1, keepdims=True)) @ v[:, kv]
    x = x + bitlinear(out.reshape(T, H), W[p + "self_attn.o_proj.weight"])
    h = rms(x, W[p + "post_attention_layernorm.weight"])
    g, u = bitlinear(h, W[p + "mlp.gate_proj.weight"]), bitlinear(h, W[p + "mlp.up_proj.weight"])
    x = x + bitlinear(g / (1 + np.exp(-g)) * u, W[p + "mlp.down_proj.weight"])
logits = rms(x, W["model.norm.weight"]) @ W["model.embed_tokens.weight"].T

cfg = Config(**{k: c[k] for k in Config.__dataclass_fields__})
m = BitLlama(cfg)
m.load_state_dict(safetensors_io.load(os.path.join(d, "model.safetensors")))
with torch.no_grad():
    ref = m(torch.tensor([ids]))[0].numpy()
diff = np.abs(ref - logits).max()
same = (ref.argmax(-1) == logits.argmax(-1)).mean()
print(f"max |logit diff| numpy-int vs torch: {diff:.2e}; argmax agreement {same:.3f}")
# Not bit-exact by design: a last-ulp difference (summation order in the norms,
# softmax, matmuls) can push x * sx across a .5 boundary, flipping one int8
# level, and such flips compound over 6 layers.  On the shipped model this
# gives ~0.1 on logits of magnitude ~15, with identical argmax.
sys.exit(0 if diff < 0.25 and same == 1.0 else 1)
