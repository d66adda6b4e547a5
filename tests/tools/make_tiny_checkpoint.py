#!/usr/bin/python3
"""Write a tiny Hugging Face Llama checkpoint for the packer tests.

numpy only: the safetensors format is written by hand (u64 LE header length,
JSON header, raw little-endian data).

    make_tiny_checkpoint.py OUT_DIR [--seed N] [--mode bitnet|ternary|dense]
        [--dtype f32|bf16|f16] [--tied|--untied] [--shards N] [--vocab-pad K]
        [--tokenizer-dir DIR]

--mode bitnet   latent random weights, quantization_config.quant_method "bitnet"
--mode ternary  weights already ternary per row: {-s_r, 0, +s_r}, row 1 of every
                o_proj all zero
--mode dense    random non-ternary weights, no quantization_config
--vocab-pad K   config vocab_size = tokenizer pieces + K (embedding rows too)
--tokenizer-dir DIR  a Hugging Face tokenizer (tokenizer.json, tokenizer_config.json,
                generation_config.json if present) instead of tiny_tokenizer.model;
                vocab = its ids

Dimensions: hidden 256, intermediate 512, 2 layers, 4 heads, 2 KV heads
(TQ formats need rows that are multiples of 256), vocab = the tokenizer's;
--hidden/--intermediate/--layers/--heads/--kv-heads override them.

In bf16 mode the embedding is made fp16-exact (no magnitudes below 2^-14) and
an untied lm_head is made not fp16-exact, so both narrowing outcomes are
exercised.

tests/data/tiny_tokenizer.model (512 pieces) was made with:
    bible -f gen1:1-gen3:24 | sed 's/^[^ ]* //' > corpus.txt
    spm_train --input=corpus.txt --model_prefix=tiny_tokenizer --model_type=bpe \
      --vocab_size=512 --byte_fallback=true --normalization_rule_name=identity \
      --remove_extra_whitespaces=false --character_coverage=1.0 --unk_id=0 \
      --bos_id=1 --eos_id=2 --pad_id=-1 --user_defined_symbols='<sep>' \
      --num_threads=1 --minloglevel=1
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "data", "tiny_tokenizer.model")

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = 256, 512, 2, 4, 2
HEAD_DIM = HIDDEN // HEADS


def count_pieces(model_bytes):
    """Count ModelProto field 1 (pieces) entries by walking the wire format."""
    def varint(buf, i):
        v, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v, i
            shift += 7

    i, n = 0, 0
    while i < len(model_bytes):
        key, i = varint(model_bytes, i)
        wt = key & 7
        if wt == 0:
            _, i = varint(model_bytes, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            ln, i = varint(model_bytes, i)
            i += ln
            if key >> 3 == 1:
                n += 1
        else:
            raise ValueError("bad wire type")
    return n


def to_bf16_bits(a):
    """float32 -> bf16 bit patterns, round to nearest even."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def in_dtype(a, dtype):
    """Round float32 values to what `dtype` can hold (returned as float32)."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "f32":
        return a
    if dtype == "f16":
        return a.astype(np.float16).astype(np.float32)
    return from_bf16_bits(to_bf16_bits(a))


def encode(a, dtype):
    if dtype == "f32":
        return "F32", np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "f16":
        return "F16", np.ascontiguousarray(a.astype("<f2")).tobytes()
    return "BF16", np.ascontiguousarray(to_bf16_bits(a).astype("<u2")).tobytes()


def write_safetensors(path, tensors, dtype):
    """tensors: list of (name, float32 array already representable in dtype)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors:
        st_dtype, raw = encode(a, dtype)
        header[name] = {"dtype": st_dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # data aligned to 8, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def linear(rng, rows, cols, mode, dtype, zero_row=None):
    if mode == "ternary":
        scales = in_dtype(rng.uniform(0.01, 0.1, size=(rows, 1)), dtype)
        trits = rng.integers(-1, 2, size=(rows, cols)).astype(np.float32)
        w = trits * scales
        if zero_row is not None:
            w[zero_row] = 0
        return w.astype(np.float32)
    return in_dtype(rng.normal(0.0, 0.05, size=(rows, cols)), dtype)


def main():
    global HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, HEAD_DIM
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=["bitnet", "ternary", "dense"], default="bitnet")
    ap.add_argument("--dtype", choices=["f32", "bf16", "f16"], default="f32")
    tie = ap.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied", action="store_true", default=True)
    tie.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--vocab-pad", type=int, default=0)
    ap.add_argument("--tokenizer-dir")
    # Larger shapes are for benchmarks (e.g. bitnet_b1_58-large: --hidden 1536
    # --intermediate 4096 --layers 24 --heads 16 --kv-heads 16); the tests
    # use the defaults.
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--intermediate", type=int, default=INTER)
    ap.add_argument("--layers", type=int, default=LAYERS)
    ap.add_argument("--heads", type=int, default=HEADS)
    ap.add_argument("--kv-heads", type=int, default=KV_HEADS)
    a = ap.parse_args()
    HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = a.hidden, a.intermediate, a.layers, a.heads, a.kv_heads
    HEAD_DIM = HIDDEN // HEADS

    os.makedirs(a.out, exist_ok=True)
    if a.tokenizer_dir:
        with open(os.path.join(a.tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        ids = list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])]
        vocab = max(ids) + 1 + a.vocab_pad
        for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            src = os.path.join(a.tokenizer_dir, name)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(a.out, name))
    else:
        with open(TOKENIZER, "rb") as f:
            tok = f.read()
        vocab = count_pieces(tok) + a.vocab_pad
        shutil.copyfile(TOKENIZER, os.path.join(a.out, "tokenizer.model"))
    rng = np.random.default_rng(a.seed)

    emb = rng.normal(0.0, 0.02, size=(vocab, HIDDEN)).astype(np.float32)
    if a.dtype == "bf16":
        emb = np.where(np.abs(emb) < 2.0 ** -14, np.float32(0.001), emb)
    tensors = [("model.embed_tokens.weight", in_dtype(emb, a.dtype))]
    for l in range(LAYERS):
        p = "model.layers.%d." % l
        norm = lambda: in_dtype(1.0 + 0.1 * rng.normal(size=HIDDEN), a.dtype)
        tensors += [
            (p + "input_layernorm.weight", norm()),
            (p + "self_attn.q_proj.weight", linear(rng, HEADS * HEAD_DIM, HIDDEN, a.mode, a.dtype)),
            (p + "self_attn.k_proj.weight", linear(rng, KV_HEADS * HEAD_DIM, HIDDEN, a.mode, a.dtype)),
            (p + "self_attn.v_proj.weight", linear(rng, KV_HEADS * HEAD_DIM, HIDDEN, a.mode, a.dtype)),
            (p + "self_attn.o_proj.weight",
             linear(rng, HIDDEN, HEADS * HEAD_DIM, a.mode, a.dtype, zero_row=1)),
            (p + "post_attention_layernorm.weight", norm()),
            (p + "mlp.gate_proj.weight", linear(rng, INTER, HIDDEN, a.mode, a.dtype)),
            (p + "mlp.up_proj.weight", linear(rng, INTER, HIDDEN, a.mode, a.dtype)),
            (p + "mlp.down_proj.weight", linear(rng, HIDDEN, INTER, a.mode, a.dtype)),
        ]
    tensors.append(("model.norm.weight", in_dtype(1.0 + 0.1 * rng.normal(size=HIDDEN), a.dtype)))
    if not a.tied:
        head = rng.normal(0.0, 0.02, size=(vocab, HIDDEN)).astype(np.float32)
        head[0, 0] = 1e-30  # bf16 holds it, fp16 does not
        tensors.append(("lm_head.weight", in_dtype(head, a.dtype)))

    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": HIDDEN, "intermediate_size": INTER, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "vocab_size": vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 128, "tie_word_embeddings": a.tied,
        "hidden_act": "silu",
        "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[a.dtype],
    }
    if not a.tokenizer_dir:
        config.update({"bos_token_id": 1, "eos_token_id": 2})
    if a.mode == "bitnet":
        config["quantization_config"] = {"quant_method": "bitnet"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    if a.shards <= 1:
        write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, a.dtype)
        return 0
    per = -(-len(tensors) // a.shards)
    weight_map = {}
    for s in range(a.shards):
        name = "model-%05d-of-%05d.safetensors" % (s + 1, a.shards)
        part = tensors[s * per:(s + 1) * per]
        write_safetensors(os.path.join(a.out, name), part, a.dtype)
        weight_map.update({n: name for n, _ in part})
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
