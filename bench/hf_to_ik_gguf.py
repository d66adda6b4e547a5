#!/usr/bin/python3
"""Writes a BitNet b1.58 Hugging Face checkpoint as the F16 GGUF that
ik_llama.cpp loads, so its llama-quantize can make IQ2_BN / IQ2_BN_R4 files
of the same weights for the anchor runs of bench/anchors.sh:
- BitnetForCausalLM (1bitLLM's bitnet_b1_58-large and 3B) -> ik's `bitnet`
  architecture (SwiGLU, sub-norms, a `.scale` tensor per linear);
- BitNetForCausalLM (microsoft's 2B-4T, its BF16 master weights) -> ik's
  `bitnet-25` (squared ReLU, sub-norms, tied embeddings).

The linears are ternarized by absmean per tensor, sign(round(w / mean|w|)),
as ik's convert_hf_to_gguf.py and `tern pack` both do, so the engines
multiply the same trits (stored here in F16, the per-tensor scale beside
them for `bitnet`). ik's `bitnet` ties the head to the token embeddings; a
separate lm_head (the S shape's) is left out, which keeps the bytes a token
reads the same (one vocab x dim matrix either way). The tokenizer is read
from tokenizer.model (SentencePiece); the synthetic checkpoints of
tests/tools/families carry one, padded to the vocabulary.

Usage: bench/hf_to_ik_gguf.py HF_DIR OUT.gguf --gguf-py IK_CHECKOUT/gguf-py
Needs numpy and sentencepiece (Debian: python3-numpy, python3-sentencepiece).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


# HF architecture -> ik architecture, sub-norm names, per-tensor scale tensors.
ARCHS = {
    "BitnetForCausalLM": ("bitnet", ("self_attn.inner_attn_ln", "mlp.ffn_layernorm"), True),
    "BitNetForCausalLM": ("bitnet-25", ("self_attn.attn_sub_norm", "mlp.ffn_sub_norm"), False),
}


def read_safetensors(path):
    """name -> (dtype, shape, memmap of the raw bytes)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    base = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], t["shape"], raw[base + b:base + e])
    return out


def to_f32(dtype, shape, data):
    if dtype == "F32":
        return np.frombuffer(data, dtype=np.float32).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(data, dtype=np.float16).astype(np.float32).reshape(shape)
    if dtype == "BF16":
        u = np.frombuffer(data, dtype=np.uint16).astype(np.uint32) << 16
        return u.view(np.float32).reshape(shape)
    raise SystemExit(f"unsupported dtype {dtype}")


def ternarize(w):
    """ik's weight_quant: trits in F16 and the per-tensor scale."""
    s = 1.0 / max(float(np.abs(w).mean()), 1e-5)
    t = np.clip(np.round(w * s), -1, 1)
    scale = np.float32(1.0 / s) if np.any(t) else np.float32(0.0)
    return t.astype(np.float16), np.array([scale], dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--gguf-py", required=True, help="gguf-py directory of an ik_llama.cpp checkout")
    a = ap.parse_args()
    sys.path.insert(0, a.gguf_py)
    import gguf  # ik's copy: it knows the `bitnet` architecture's keys
    import sentencepiece as spm

    cfg = json.load(open(os.path.join(a.hf_dir, "config.json")))
    hf_arch = cfg.get("architectures", [""])[0]
    if hf_arch not in ARCHS:
        raise SystemExit(f"{a.hf_dir}: {hf_arch!r} is not one of {sorted(ARCHS)}")
    arch, sub_norms, scales = ARCHS[hf_arch]
    dim, n_layer = cfg["hidden_size"], cfg["num_hidden_layers"]
    n_head = cfg["num_attention_heads"]
    vocab = cfg["vocab_size"]

    w = gguf.GGUFWriter(a.out + ".tmp", arch)
    w.add_name(os.path.basename(os.path.normpath(a.hf_dir)))
    w.add_context_length(cfg.get("max_position_embeddings", 2048))
    w.add_embedding_length(dim)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_head_count_kv(cfg.get("num_key_value_heads", n_head))
    w.add_layer_norm_rms_eps(cfg.get("rms_norm_eps", 1e-5))
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_rope_dimension_count(cfg.get("head_dim", dim // n_head))
    if arch == "bitnet":  # as ik's converter writes it
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(1.0)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.hf_dir, "tokenizer.model"))
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i).encode())
        scores.append(sp.get_score(i))
        types.append(gguf.TokenType.CONTROL if sp.is_control(i) else
                     gguf.TokenType.UNKNOWN if sp.is_unknown(i) else
                     gguf.TokenType.BYTE if sp.is_byte(i) else gguf.TokenType.NORMAL)
    for i in range(len(tokens), vocab):  # padding rows of the embedding, as ik's converter names them
        tokens.append(f"[PAD{i}]".encode())
        scores.append(-1000.0)
        types.append(gguf.TokenType.USER_DEFINED)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(cfg.get("bos_token_id", 1))
    w.add_eos_token_id(cfg.get("eos_token_id", 2))

    st = read_safetensors(os.path.join(a.hf_dir, "model.safetensors"))
    names = {"model.embed_tokens.weight": "token_embd", "model.norm.weight": "output_norm"}
    per_layer = {"input_layernorm": "attn_norm", sub_norms[0]: "attn_sub_norm",
                 "post_attention_layernorm": "ffn_norm", sub_norms[1]: "ffn_sub_norm",
                 "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down"}
    for l in range(n_layer):
        for hf, g in per_layer.items():
            names[f"model.layers.{l}.{hf}.weight"] = f"blk.{l}.{g}"
    missing = [n for n in names if n not in st]
    if missing:
        raise SystemExit(f"{a.hf_dir}: missing tensors, e.g. {missing[0]}")
    for hf, g in names.items():
        x = to_f32(*st[hf])
        if x.ndim == 1:
            w.add_tensor(g + ".weight", x.astype(np.float32))
        elif g == "token_embd":
            w.add_tensor(g + ".weight", x.astype(np.float16))
        else:
            t, scale = ternarize(x)
            w.add_tensor(g + ".weight", t)
            if scales:
                w.add_tensor(g + ".scale", scale)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
