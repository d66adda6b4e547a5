#!/usr/bin/python3
"""Write a checkpoint of one published ternary family at the real model's
shape, with random weights, for measuring pack time, peak memory and
resident memory at run time (docs/PERFORMANCE.md). Not used by the tests:
the files are gigabytes.

    make_full_size.py OUT_DIR --family NAME [--seed N] [--layers N]

The on-disk layout (tensor names, dtypes, packing, config keys) is the one
make_family_checkpoint.py writes for the family; only the dimensions are the
real model's, as its config.json gives them. The tokenizer is still the tiny
one; the vocabulary is padded to the real size, as tern pads it.

Tensors are generated and written a few MiB at a time (the header is
computed from the shapes first), so memory stays small. Trits are
random bytes with code 3 folded to 1: fast, and the distribution does not
matter for speed or memory.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_family_checkpoint as fam  # noqa: E402

# hidden, intermediate, layers, heads, kv heads, head_dim, vocab: the
# published config.json of the largest model of each family.
REAL = {
    "bitnet-2b4t": (2560, 6912, 30, 20, 5, 128, 128256),        # microsoft/bitnet-b1.58-2B-4T
    "bitnet-2b4t-bf16": (2560, 6912, 30, 20, 5, 128, 128256),
    "falcon3": (3072, 23040, 40, 12, 4, 256, 131072),          # tiiuae/Falcon3-10B-Instruct-1.58bit
    "llama3-1.58": (4096, 14336, 32, 32, 8, 128, 128256),       # HF1BitLLM/Llama3-8B-1.58-100B-tokens
    "1bitllm": (1536, 4096, 24, 16, 16, 96, 32002),             # 1bitLLM/bitnet_b1_58-large
    "1bitllm-3b": (3200, 8640, 26, 32, 32, 100, 32002),         # 1bitLLM/bitnet_b1_58-3B
    "trilm": (3072, 9216, 30, 24, 24, 128, 50688),              # SpectraSuite/TriLM_3.9B_Unpacked
    # Ternary Bonsai 8B and 1.7B (Qwen3-8B's and Qwen3-1.7B's shapes; 1.7B tied)
    "bonsai": (4096, 12288, 36, 32, 8, 128, 151936),
    "bonsai-1.7b": (2048, 6144, 28, 16, 8, 128, 151936),
    # the same shapes ternary per row (TQ2_0 can hold them): the reference format
    "qwen3": (4096, 12288, 36, 32, 8, 128, 151936),
    "qwen3-1.7b": (2048, 6144, 28, 16, 8, 128, 151936),
    # meta-llama/Llama-2-7b-hf, whose BF16 layout Fairy2i-W2 ships (pack --fairy2i)
    "llama2-7b": (4096, 11008, 32, 32, 32, 128, 32000),
}

DTYPE_BYTES = {"U8": 1, "F16": 2, "BF16": 2, "F32": 4}


def random_packed(rng, rows, cols):
    """uint8 [rows/4, cols]: four 2-bit codes per byte, none of them 3."""
    b = rng.integers(0, 256, size=(rows // 4, cols), dtype=np.uint8)
    both = b & (b >> 1) & np.uint8(0x55)      # low bit of every code 3
    return b ^ (both << 1)                   # code 3 -> 1 (trit 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", required=True, choices=sorted(REAL))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, help="fewer layers than the real model (quick runs)")
    a = ap.parse_args()
    D, F, L, H, KVH, HD, V = REAL[a.family]
    L = a.layers or L
    # LLaMA-2 is TriLM's layout (a plain LlamaForCausalLM) with BF16 latent weights.
    small = a.family.endswith("-1.7b")
    spec = fam.Spec("trilm" if a.family == "llama2-7b" else a.family.replace("-1.7b", "-tied" if a.family.startswith("qwen3") else ""))
    if a.family.startswith(("bonsai", "qwen3")):
        spec.tied = small
    if a.family == "llama2-7b":
        spec.linear, spec.float_dtype = "latent", "BF16"
    spec.hidden, spec.inter, spec.heads, spec.kv_heads = D, F, H, KVH
    fd = spec.float_dtype
    rng = np.random.default_rng(a.seed)

    os.makedirs(a.out, exist_ok=True)
    shutil.copyfile(fam.TOKENIZER, os.path.join(a.out, "tokenizer.model"))
    cfg = fam.config_for(spec, V)
    cfg.update({"num_hidden_layers": L, "head_dim": HD})
    if a.family.startswith(("bonsai", "qwen3")):  # the tiny fixture's YaRN is not the real model's
        cfg.update({"rope_scaling": None, "max_position_embeddings": 40960, "max_window_layers": L})
    if spec.vocab_pad:
        cfg["pad_token_id"] = V - 2

    # (name, shape, dtype, make) with make(n) -> the next n rows (elements
    # of a 1-D tensor); called in order, a few MiB at a time.
    plan = []

    def floats(name, shape, make):
        plan.append((name, shape, fd, lambda n: fam.round_to(make(n), fd)))

    def norm(name, n):
        floats(name, (n,), lambda k: rng.uniform(0.5, 1.5, size=k))

    def normal(name, rows, cols, std):
        floats(name, (rows, cols),
               lambda n: rng.standard_normal((n, cols), dtype=np.float32) * np.float32(std))

    def linear(name, rows, cols, scale):
        if spec.linear == "packed":
            plan.append((name, (rows // 4, cols), "U8", lambda n: random_packed(rng, 4 * n, cols)))
            ws = scale if spec.scale == "multiply" else 1.0 / scale
            plan.append((name + "_scale", (1,), "BF16", lambda n: fam.round_to(np.array([ws]), "BF16")))
        elif spec.linear == "latent":
            normal(name, rows, cols, scale)
        elif spec.linear == "groupternary":  # s_g * trits per 128 weights
            def make(n):
                s = fam.round_to(scale * rng.uniform(0.5, 2.0, size=(n, cols // 128, 1)), fd).astype(np.float32)
                codes = random_packed(rng, 4 * ((n + 3) // 4), cols)
                t = np.concatenate([((codes >> (2 * i)) & 3).astype(np.int8) - 1 for i in range(4)])[:n]
                return (t.reshape(n, cols // 128, 128).astype(np.float32) * s).reshape(n, cols)
            floats(name, (rows, cols), make)
        else:  # rowternary: s_r * trits, codes 0..2 from random bytes
            def make(n):
                s = fam.round_to(scale * rng.uniform(0.7, 1.4, size=(n, 1)), fd).astype(np.float32)
                codes = random_packed(rng, 4 * ((n + 3) // 4), cols)
                t = np.concatenate([((codes >> (2 * i)) & 3).astype(np.int8) - 1 for i in range(4)])
                return t[:n].astype(np.float32) * s
            floats(name, (rows, cols), make)

    kv = KVH * HD
    if spec.group_embedding:
        spec.linear, keep = "groupternary", spec.linear
        linear("model.embed_tokens.weight", V, D, 0.25)
        spec.linear = keep
    else:
        normal("model.embed_tokens.weight", V, D, 0.25)
    for l in range(L):
        p = "model.layers.%d." % l
        norm(p + "input_layernorm.weight", D)
        linear(p + "self_attn.q_proj.weight", H * HD, D, 0.05)
        linear(p + "self_attn.k_proj.weight", kv, D, 0.05)
        linear(p + "self_attn.v_proj.weight", kv, D, 0.05)
        if spec.qk_norms:
            norm(p + "self_attn.q_norm.weight", HD)
            norm(p + "self_attn.k_norm.weight", HD)
        if spec.sub_norms:
            norm(p + spec.sub_norms[0], H * HD)
        linear(p + "self_attn.o_proj.weight", D, H * HD, 0.05)
        norm(p + "post_attention_layernorm.weight", D)
        linear(p + "mlp.gate_proj.weight", F, D, 0.05)
        linear(p + "mlp.up_proj.weight", F, D, 0.05)
        if spec.sub_norms:
            norm(p + spec.sub_norms[1], F)
        linear(p + "mlp.down_proj.weight", D, F, 0.05)
    norm("model.norm.weight", D)
    if not spec.tied and spec.group_embedding:  # Bonsai 8B: its untied head is group-ternary too
        spec.linear, keep = "groupternary", spec.linear
        linear("lm_head.weight", V, D, 0.05)
        spec.linear = keep
    elif not spec.tied:
        normal("lm_head.weight", V, D, 0.05)

    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, dtype, _ in plan:
        n = DTYPE_BYTES[dtype] * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, dtype, make in plan:
            rows = shape[0]
            step = rows if len(shape) == 1 else max(1, (1 << 22) // shape[1])
            for r0 in range(0, rows, step):
                n = min(step, rows - r0)
                arr = make(n)
                assert tuple(arr.shape) == (n,) + tuple(shape[1:]), (name, arr.shape, shape)
                f.write(fam.encode(arr, dtype))
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f, indent=2)
    print("wrote %s: %s, %d layers, %.2f GB" % (a.out, a.family, L, offset / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
