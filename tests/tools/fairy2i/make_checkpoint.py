#!/usr/bin/python3
"""Write a tiny LLaMA-2-layout BF16 checkpoint for the Fairy2i tests.

Fairy2i-W2 ships ordinary LLaMA-2 master weights (docs/FAIRY2I.md); this
writes the same layout at a tiny size, with the entries the quantizer's
edge rules are about planted in every linear:

  - complex dimensions that are not multiples of 16 or 64 (hidden 2 x 40,
    intermediate 2 x 54, vocab 512 -> lm_head n = 256, m = 40);
  - in U and in W (not only in A, which the split mixes): exact zeros,
    (-0, -0), ties |re| == |im| in all four quadrants, and entries on the
    real and imaginary axes.

The planted values are built in U and W and turned into A by the inverse
of the split (A11 = Re U + Re W, A22 = Re U - Re W, A21 = Im U + Im W,
A12 = Im W - Im U). All values are multiples of 2^-10 below 2, so A is
exact in bf16 and the split gives U and W back exactly in f32 and in bf16.

    make_checkpoint.py OUT_DIR [--seed N] [--layers N]
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from make_tiny_checkpoint import TOKENIZER, count_pieces, write_safetensors  # noqa: E402

HIDDEN, INTER, HEADS = 80, 108, 4  # head_dim 20: even, RoPE pairs whole

# Nonzero (re, im) pairs planted at flat positions 4..15 of U and of W.
EDGES = [(0.25, 0.25), (-0.25, 0.25), (-0.25, -0.25), (0.25, -0.25), (0.5, 0.0), (-0.5, 0.0),
         (0.0, 0.5), (0.0, -0.5), (0.5, -0.0), (-0.5, -0.0), (-0.0, 0.5), (-0.0, -0.5)]
# Signed zeros (re, im) planted in U at positions 0..3 and in W at 16..19.
# They are set in A's quadrants directly: U and W share a position, and a
# signed zero survives the split only if the other matrix gets +0 there
# (U_re = -0 needs A11 = A22 = -0, which makes W_re = +0).
ZEROS = [(0.0, 0.0), (-0.0, -0.0), (-0.0, 0.0), (0.0, -0.0)]


def grid(rng, shape, scale):
    """Random values on the 2^-10 grid, |v| < 2 (exact in bf16 and their sums)."""
    v = np.clip(np.round(rng.standard_normal(shape) * scale * 1024), -1023, 1023)
    return (v / 1024).astype(np.float32)


def fairy_linear(rng, rows, cols):
    """A (rows x cols) whose U and W start with the EDGES entries."""
    n, m = rows // 2, cols // 2
    parts = [grid(rng, (n, m), 0.05) for _ in range(4)]  # U_re, U_im, W_re, W_im
    for which in (0, 2):  # U, then W
        flat_re, flat_im = parts[which].reshape(-1), parts[which + 1].reshape(-1)
        for k, (re, im) in enumerate(EDGES):
            flat_re[4 + k], flat_im[4 + k] = re, im
    u_re, u_im, w_re, w_im = parts
    a11, a22 = u_re + w_re, u_re - w_re
    a21, a12 = u_im + w_im, w_im - u_im
    neg = lambda z: np.float32(-0.0) if np.signbit(z) else np.float32(0.0)  # noqa: E731
    for k, (re, im) in enumerate(ZEROS):
        i, j = divmod(k, m)  # U: A11 = A22 = re, A21 = im, A12 = +0
        a11[i, j], a22[i, j], a21[i, j], a12[i, j] = neg(re), neg(re), neg(im), np.float32(0.0)
        i, j = divmod(16 + k, m)  # W: A11 = re, A22 = +0, A12 = A21 = im
        a11[i, j], a22[i, j], a12[i, j], a21[i, j] = neg(re), np.float32(0.0), neg(im), neg(im)
    return np.block([[a11, a12], [a21, a22]]).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    vocab = count_pieces(open(TOKENIZER, "rb").read())
    t = {"model.embed_tokens.weight": grid(rng, (vocab, HIDDEN), 0.5)}
    for l in range(a.layers):
        p = "model.layers.%d." % l
        for name, rows, cols in [("self_attn.q_proj", HIDDEN, HIDDEN), ("self_attn.k_proj", HIDDEN, HIDDEN),
                                 ("self_attn.v_proj", HIDDEN, HIDDEN), ("self_attn.o_proj", HIDDEN, HIDDEN),
                                 ("mlp.gate_proj", INTER, HIDDEN), ("mlp.up_proj", INTER, HIDDEN),
                                 ("mlp.down_proj", HIDDEN, INTER)]:
            t[p + name + ".weight"] = fairy_linear(rng, rows, cols)
        t[p + "input_layernorm.weight"] = (1 + grid(rng, (HIDDEN,), 0.1)).astype(np.float32)
        t[p + "post_attention_layernorm.weight"] = (1 + grid(rng, (HIDDEN,), 0.1)).astype(np.float32)
    t["model.norm.weight"] = (1 + grid(rng, (HIDDEN,), 0.1)).astype(np.float32)
    t["lm_head.weight"] = fairy_linear(rng, vocab, HIDDEN)
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), list(t.items()), "bf16")
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
           "intermediate_size": INTER, "num_hidden_layers": a.layers, "num_attention_heads": HEADS,
           "num_key_value_heads": HEADS, "vocab_size": vocab, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": False,
           "hidden_act": "silu", "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(TOKENIZER, os.path.join(a.out, "tokenizer.model"))


if __name__ == "__main__":
    main()
