#!/usr/bin/python3
"""Independent reference forward pass for the whole-model test.

Reads a Hugging Face Llama checkpoint directly (config.json + safetensors,
parsed here by hand) and computes logits with numpy, following the Hugging
Face conventions rather than tern's: the un-permuted q/k weights with
rotate_half RoPE, BitNet absmean weight ternarization and per-token int8
absmax activations when quantization_config.quant_method is "bitnet".
It shares no code with tern, so agreement checks the packer's row
permutation, the format, the kernels and the forward pass together.

usage: ref_forward.py CHECKPOINT_DIR TOKENS_CSV OUT.bin
writes float32 logits [n_tokens][vocab], little-endian.
"""
import json
import os
import struct
import sys

import numpy as np


# The safetensors reading is the family reference's (shards, F32/F16/BF16
# widened to float32 exactly).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "families"))
from reference import read_checkpoint as load_checkpoint  # noqa: E402


def ternarize(w):
    # BitNet b1.58: s = mean|W| per tensor; T = clamp(round(W / s), -1, 1).
    s = np.float32(max(np.mean(np.abs(w.astype(np.float64))), 1e-5))
    t = np.clip(np.rint(w * (np.float32(1.0) / s)), -1, 1)
    return (t * s).astype(np.float32)


def act_quant(x):
    # Per token (row) absmax int8, round half to even like torch.round.
    amax = np.maximum(np.max(np.abs(x), axis=-1, keepdims=True), np.float32(1e-5))
    s = (np.float32(127.0) / amax).astype(np.float32)
    q = np.clip(np.rint(x * s), -128, 127)
    return (q / s).astype(np.float32)


def rmsnorm(x, w, eps):
    ms = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)
    return (x / np.sqrt(ms + eps)).astype(np.float32) * w


def rope(x, pos, theta):
    # x: [T, heads, hd]; HF rotate_half on halves of the head.
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], axis=-1)
    return (x * cos + rot * sin).astype(np.float32)


def main():
    d, toks, out = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = json.load(open(os.path.join(d, "config.json")))
    W = load_checkpoint(d)
    bitnet = (cfg.get("quantization_config") or {}).get("quant_method") == "bitnet"
    D = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    H = cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", D // H)
    eps = cfg.get("rms_norm_eps", 1e-5)
    theta = cfg.get("rope_theta", 10000.0)
    tokens = np.array([int(t) for t in toks.split(",")])
    T = len(tokens)

    def linear(x, name):
        w = W[name]
        if bitnet:
            return act_quant(x) @ ternarize(w).T
        return x @ w.T

    emb = W["model.embed_tokens.weight"]
    x = emb[tokens].copy()
    pos = np.arange(T)
    mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), 1)
    for l in range(L):
        p = f"model.layers.{l}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(h, p + "self_attn.q_proj.weight").reshape(T, H, hd)
        k = linear(h, p + "self_attn.k_proj.weight").reshape(T, KVH, hd)
        v = linear(h, p + "self_attn.v_proj.weight").reshape(T, KVH, hd)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        rep = H // KVH
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        att = np.einsum("thd,shd->hts", q, k) / np.float32(np.sqrt(hd)) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", att, v).reshape(T, H * hd).astype(np.float32)
        x = x + linear(o, p + "self_attn.o_proj.weight")
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = linear(h, p + "mlp.gate_proj.weight")
        u = linear(h, p + "mlp.up_proj.weight")
        a = (g / (1.0 + np.exp(-g)) * u).astype(np.float32)
        x = x + linear(a, p + "mlp.down_proj.weight")
    x = rmsnorm(x, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight", emb)
    if cfg.get("tie_word_embeddings", False):
        head = emb
    logits = (x @ head.T).astype("<f4")
    logits.tofile(out)


if __name__ == "__main__":
    main()
