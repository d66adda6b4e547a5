#!/usr/bin/python3
"""Write a tiny checkpoint of one published ternary model family, in that
family's Hugging Face on-disk layout, with random weights.

    make_family_checkpoint.py OUT_DIR --family NAME [--seed N] [--outliers N,LO,HI]

NAME            what it imitates                           linears on disk
bitnet-2b4t     microsoft/bitnet-b1.58-2B-4T (packed)      U8 [O/4, I] + BF16 weight_scale [1], W = T * scale
bitnet-2b4t-bf16 microsoft/bitnet-b1.58-2B-4T-bf16         BF16 latent [O, I] (absmean per tensor online)
falcon3         tiiuae/Falcon3-*-1.58bit                   U8 [O/4, I] + BF16 weight_scale [1], W = T / scale
llama3-1.58     HF1BitLLM/Llama3-8B-1.58-100B-tokens       U8 [O/4, I] + BF16 weight_scale [1], W = T / scale
1bitllm         1bitLLM/bitnet_b1_58-large                 FP16 latent [O, I] (absmean per tensor)
1bitllm-3b      1bitLLM/bitnet_b1_58-3B                    as 1bitllm, at widths that are not
                                                           a multiple of 256 (3200 / 8640 in
                                                           the real model; 200 / 540 here, with
                                                           its head_dim of 100)
trilm           SpectraSuite TriLM_*_Unpacked              FP16 [O, I], already s_row * {-1, 0, 1}
falcon-e        tiiuae/Falcon-E-* as transformers'          U8 [O/4, I] + BF16 weight_scale [1], W = T * scale,
                BitNetQuantConfig(use_rms_norm=True) saves it  and <linear>.rms_norm.weight [I] before each
                (the real config.json is UNCONFIRMED)      linear (eps quantization_config.rms_norm_eps)
qwen3           Qwen3-8B's layout (Ternary Bonsai's base):  BF16 [O, I], s_row * {-1, 0, 1}; q_norm/k_norm
                untied, head_dim 128 over 4 heads of a      [head_dim] per layer; rope_scaling yarn (factor 8
                256-wide model (q is 512 wide, as Qwen3-4B  over 64 trained positions: batches reach past
                has 4096 over 2560), 2 KV heads             it, and 11 of the 64 angles are on the ramp)
qwen3-tied      Qwen3-1.7B's: tied embeddings, head_dim     as qwen3, no rope_scaling
                hidden / heads, 1 KV head
bonsai          prism-ml/Ternary-Bonsai-*-unpacked as       F16 [O, I], s_g * {-1, 0, 1} with one scale s_g
                described (Qwen3, every weight ternary      per 128 weights of a row (some groups all zero);
                with fp16 scales per group of 128; its      the embedding too (tied); the rest as qwen3-tied
                real config.json is UNCONFIRMED)

Dimensions are tiny (hidden 256, intermediate 512, 2 layers, 4 heads; see
1bitllm-3b for the exception) and the
tokenizer is tests/data/tiny_tokenizer.model (512 pieces): tokenization is not
what the family tests check.

Magnitudes are chosen so the model is far from uniform and each family
feature matters: embeddings of std ~1, norm weights ~U(0.5, 1.5) with a few
outlier channels (so per-token int8 activation quantization is coarse, as in
real models), ternary scales that keep the residual stream moving, and an
output head that makes the next-token distribution peaked.

numpy only: safetensors is written by hand (u64 LE header length, JSON
header padded to 8, raw little-endian data).
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "..", "data", "tiny_tokenizer.model")
sys.path.insert(0, os.path.join(HERE, ".."))
from make_tiny_checkpoint import count_pieces, in_dtype, to_bf16_bits  # noqa: E402

HIDDEN, INTER, LAYERS, HEADS = 256, 512, 2, 4
HEAD_DIM = HIDDEN // HEADS

FAMILIES = ["bitnet-2b4t", "bitnet-2b4t-bf16", "falcon3", "llama3-1.58", "1bitllm", "1bitllm-3b",
            "trilm", "falcon-e", "qwen3", "qwen3-tied", "bonsai"]


# ---------------------------------------------------------------------------
# safetensors with a dtype per tensor

def round_to(a, dtype):
    """make_tiny_checkpoint.in_dtype, by safetensors dtype name."""
    if dtype not in ("F32", "F16", "BF16"):
        raise ValueError(dtype)
    return in_dtype(a, dtype.lower())


def encode(a, dtype):
    if dtype == "U8":
        assert a.dtype == np.uint8
        return np.ascontiguousarray(a).tobytes()
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(a.astype("<f2")).tobytes()
    if dtype == "BF16":
        return np.ascontiguousarray(to_bf16_bits(a).astype("<u2")).tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: list of (name, array, safetensors dtype); float arrays must
    already hold values representable in their dtype."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a, dtype in tensors:
        raw = encode(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------
# transformers.integrations.bitnet.pack_weights: uint8 [ceil(O/4), I]; output
# row i*R + p goes to packed row p, bits 2i..2i+1, as code trit + 1.

def pack_weights(trits):
    O, I = trits.shape
    assert O % 4 == 0
    R = O // 4
    q = (trits.astype(np.int32) + 1).astype(np.uint8)
    packed = np.zeros((R, I), dtype=np.uint8)
    for i in range(4):
        packed |= (q[i * R:(i + 1) * R] << (2 * i)).astype(np.uint8)
    return packed


# ---------------------------------------------------------------------------

class Spec:
    """What one family looks like on disk."""

    def __init__(self, family):
        self.family = family
        self.hidden, self.inter, self.heads = HIDDEN, INTER, HEADS
        self.kv_heads = HEADS
        self.sub_norms = None          # (attn name, ffn name) under model.layers.N.
        self.linear = None             # "packed" | "latent" | "rowternary"
        self.float_dtype = "BF16"
        self.tied = False
        self.vocab_pad = 0
        self.linear_norms = False      # use_rms_norm: an RMSNorm inside every linear
        self.head_dim = None           # config head_dim when it is not hidden / heads
        self.qk_norms = False          # Qwen3's per-head q_norm / k_norm
        self.group_embedding = False   # the embedding ternary per 128-group too (Bonsai)
        if family in ("bitnet-2b4t", "bitnet-2b4t-bf16"):
            self.kv_heads = 1          # 20 heads / 5 KV heads in the real model: 4 per group
            self.sub_norms = ("self_attn.attn_sub_norm.weight", "mlp.ffn_sub_norm.weight")
            self.linear = "packed" if family == "bitnet-2b4t" else "latent"
            self.tied = True
            self.act = "relu2"
            self.scale = "multiply"
        elif family in ("falcon3", "llama3-1.58"):
            self.kv_heads = 2
            self.linear = "packed"
            self.act = "silu"
            self.scale = "divide"
        elif family == "falcon-e":
            self.kv_heads = 2
            self.linear = "packed"
            self.act = "silu"
            self.scale = "multiply"    # autobitlinear
            self.linear_norms = True
        elif family in ("1bitllm", "1bitllm-3b"):
            if family == "1bitllm-3b":
                self.hidden, self.inter, self.heads = 200, 540, 2
                self.kv_heads = 2
            self.sub_norms = ("self_attn.inner_attn_ln.weight", "mlp.ffn_layernorm.weight")
            self.linear = "latent"
            self.float_dtype = "F16"
            self.act = "silu"
            self.vocab_pad = 2         # 32000 pieces + 2 in the real vocab_size 32002
        elif family == "trilm":
            self.linear = "rowternary"
            self.float_dtype = "F16"
            self.act = "silu"
        elif family in ("qwen3", "qwen3-tied", "bonsai"):
            self.linear = "groupternary" if family == "bonsai" else "rowternary"
            self.act = "silu"
            self.qk_norms = True
            if family == "qwen3":
                self.kv_heads, self.head_dim = 2, 128
            else:
                self.kv_heads, self.tied = 1, True
            if family == "bonsai":
                self.float_dtype = "F16"
                self.group_embedding = True
        else:
            raise SystemExit("unknown family " + family)


def config_for(spec, vocab):
    f = spec.family
    base = {
        "hidden_size": spec.hidden, "intermediate_size": spec.inter, "num_hidden_layers": LAYERS,
        "num_attention_heads": spec.heads, "num_key_value_heads": spec.kv_heads,
        "vocab_size": vocab, "bos_token_id": 1, "eos_token_id": 2,
        "initializer_range": 0.02, "use_cache": True,
    }
    if f in ("bitnet-2b4t", "bitnet-2b4t-bf16"):
        c = {
            "architectures": ["BitNetForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_bitnet.BitNetConfig",
                         "AutoModelForCausalLM": "modeling_bitnet.BitNetForCausalLM"},
            "model_type": "bitnet", "hidden_act": "relu2", "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
            "torch_dtype": "bfloat16", "attention_bias": False, "attention_dropout": 0.0,
            "quantization_config": {
                "quant_method": "bitnet", "linear_class": "autobitlinear",
                "quantization_mode": "offline" if f == "bitnet-2b4t" else "online"},
        }
    elif f == "falcon3":
        c = {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "head_dim": HEAD_DIM,  # Falcon3 states it (tern needs heads * head_dim == hidden)
            "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 1000042.0,
            "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
            "pretraining_tp": 1, "is_bitnet_config": True,
            "quantization_config": {"modules_to_not_convert": ["lm_head"], "quant_method": "bitnet"},
        }
    elif f == "llama3-1.58":
        c = {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
            "pretraining_tp": 1, "is_bitnet_config": True,
            "quantization_config": {"modules_to_not_convert": None, "quant_method": "bitnet"},
        }
    elif f in ("1bitllm", "1bitllm-3b"):
        c = {
            "architectures": ["BitnetForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float16",
            "attention_bias": False, "pad_token_id": vocab - 2, "pretraining_tp": 1,
            "input_bits": 8, "weight_bits": 1,
        }
    elif f == "falcon-e":
        c = {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
            "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
            "pretraining_tp": 1,
            "quantization_config": {
                "quant_method": "bitnet", "linear_class": "autobitlinear",
                "quantization_mode": "offline", "use_rms_norm": True, "rms_norm_eps": 1e-6,
                "modules_to_not_convert": None},
        }
    elif f in ("qwen3", "qwen3-tied", "bonsai"):
        c = {
            "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
            "head_dim": spec.head_dim or spec.hidden // spec.heads,
            "max_position_embeddings": 512 if f == "qwen3" else 40960, "max_window_layers": LAYERS,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None,
            "sliding_window": None, "use_sliding_window": False,
            "tie_word_embeddings": spec.tied, "torch_dtype": "float16" if f == "bonsai" else "bfloat16",
            "attention_bias": False, "attention_dropout": 0.0, "transformers_version": "4.51.0",
        }
        if f == "qwen3":  # as Qwen's model cards extend it (factor x the trained context)
            c["rope_scaling"] = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64}
    else:  # trilm
        c = {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float16",
            "attention_bias": False, "mlp_bias": False, "pretraining_tp": 1,
        }
    base.update(c)
    return base


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--seed", type=int, default=0)
    # Outlier channels of the int8-quantized norms (count, low, high gain):
    # a knob for tuning the fixture's sensitivity; the tests use the default.
    ap.add_argument("--outliers", default="3,6,12")
    # Another FFN width (bitnet.cpp's I2_S rows of whole 128-weight blocks
    # that are not whole 256-weight ones: --intermediate 384).
    ap.add_argument("--intermediate", type=int, default=0)
    a = ap.parse_args()
    n_out, out_lo, out_hi = a.outliers.split(",")
    n_out, out_lo, out_hi = int(n_out), float(out_lo), float(out_hi)
    spec = Spec(a.family)
    if a.intermediate:
        spec.inter = a.intermediate
    rng = np.random.default_rng(a.seed)
    fd = spec.float_dtype

    os.makedirs(a.out, exist_ok=True)
    with open(TOKENIZER, "rb") as f:
        vocab = count_pieces(f.read()) + spec.vocab_pad
    shutil.copyfile(TOKENIZER, os.path.join(a.out, "tokenizer.model"))

    def norm(n):
        # ~U(0.5, 1.5) with a few outlier channels: the int8 absmax of the
        # normed activations is set by them, so quantization is coarse.
        w = rng.uniform(0.5, 1.5, size=n)
        idx = rng.choice(n, size=n_out, replace=False)
        w[idx] = rng.uniform(out_lo, out_hi, size=n_out) * rng.choice([-1, 1], size=n_out)
        return round_to(w, fd)

    def group_ternary(rows, cols, scale, group=128):
        """Every 128 weights of a row s_g * {-1, 0, 1}, s_g fp16 and
        ~scale * U(0.5, 2); a few groups all zero (scale 0)."""
        s = round_to(scale * rng.uniform(0.5, 2.0, size=(rows, cols // group, 1)), fd)
        trits = rng.choice([-1, 0, 1], size=(rows, cols // group, group), p=[0.35, 0.3, 0.35])
        w = (trits * s).reshape(rows, cols).astype(np.float32)
        for _ in range(2):
            r, g = rng.integers(rows), rng.integers(cols // group)
            w[r, g * group:(g + 1) * group] = 0
        return w

    def linear(name, rows, cols, scale):
        """Tensors of one linear whose effective weight is ~scale * T."""
        if spec.linear_norms:
            in_norm = [(name[:-len("weight")] + "rms_norm.weight", norm(cols), fd)]
            return in_norm + linear_body(name, rows, cols, scale)
        return linear_body(name, rows, cols, scale)

    def linear_body(name, rows, cols, scale):
        if spec.linear == "packed":
            trits = rng.choice([-1, 0, 1], size=(rows, cols), p=[0.35, 0.3, 0.35]).astype(np.int8)
            s = np.float32(scale * rng.uniform(0.8, 1.25))
            ws = s if spec.scale == "multiply" else np.float32(1.0) / s
            ws = round_to(np.array([ws]), "BF16")
            return [(name, pack_weights(trits), "U8"), (name + "_scale", ws, "BF16")]
        if spec.linear == "latent":
            # absmean of N(0, sigma) is sigma * sqrt(2 / pi)
            sigma = scale / np.sqrt(2 / np.pi)
            return [(name, round_to(rng.normal(0.0, sigma, size=(rows, cols)), fd), fd)]
        if spec.linear == "groupternary":
            return [(name, group_ternary(rows, cols, scale), fd)]
        # rowternary: every row is s_r * {-1, 0, 1}, s_r fp16
        s = round_to(scale * rng.uniform(0.7, 1.4, size=(rows, 1)), fd)
        trits = rng.choice([-1, 0, 1], size=(rows, cols), p=[0.35, 0.3, 0.35]).astype(np.float32)
        w = trits * s
        w[rng.integers(rows)] = 0  # an all-zero row (scale 0)
        return [(name, w.astype(np.float32), fd)]

    # Per-linear scales: outputs of O(1) for q/k/v/gate/up from unit-RMS
    # inputs of width 256, block outputs comparable to the embedding.
    HIDDEN, INTER = spec.hidden, spec.inter  # noqa: N806 (the family's, not the defaults)
    hd = spec.head_dim or HIDDEN // spec.heads
    q_rows, kv = spec.heads * hd, spec.kv_heads * hd
    # A tied head reads the embedding: keep it small next to the block
    # outputs, or the residual makes every token predict itself.
    # A ternary embedding has no small values: smaller still, or the
    # sampled text is one token repeated (perplexity 1.6 at 0.25).
    emb_std = (0.15 if spec.group_embedding else 0.25) if spec.tied else 1.0
    emb = (group_ternary(vocab, HIDDEN, emb_std) if spec.group_embedding
           else round_to(rng.normal(0.0, emb_std, size=(vocab, HIDDEN)), fd))
    tensors = [("model.embed_tokens.weight", emb, fd)]
    qk = 0.12
    for l in range(LAYERS):
        p = "model.layers.%d." % l
        t = [(p + "input_layernorm.weight", norm(HIDDEN), fd)]
        t += linear(p + "self_attn.q_proj.weight", q_rows, HIDDEN, qk)
        t += linear(p + "self_attn.k_proj.weight", kv, HIDDEN, qk)
        t += linear(p + "self_attn.v_proj.weight", kv, HIDDEN, 0.08)
        if spec.qk_norms:
            # No outlier channels: they feed no int8 input, and gains of 12
            # on q and k would make every attention row one-hot.
            t += [(p + "self_attn.q_norm.weight", round_to(rng.uniform(0.5, 1.5, size=hd), fd), fd),
                  (p + "self_attn.k_norm.weight", round_to(rng.uniform(0.5, 1.5, size=hd), fd), fd)]
        if spec.sub_norms:
            t += [(p + spec.sub_norms[0], norm(HIDDEN), fd)]
        t += linear(p + "self_attn.o_proj.weight", HIDDEN, q_rows,
                    0.09 if spec.sub_norms else 0.12 * np.sqrt(HIDDEN / q_rows))
        t += [(p + "post_attention_layernorm.weight", norm(HIDDEN), fd)]
        t += linear(p + "mlp.gate_proj.weight", INTER, HIDDEN, 0.08)
        t += linear(p + "mlp.up_proj.weight", INTER, HIDDEN, 0.08)
        if spec.sub_norms:
            t += [(p + spec.sub_norms[1], norm(INTER), fd)]
        t += linear(p + "mlp.down_proj.weight", HIDDEN, INTER,
                    0.06 if spec.sub_norms else 0.12)
        tensors += t
    # Final norm: no outliers (it feeds the float head); logits of std ~4.
    final = rng.uniform(0.5, 1.5, size=HIDDEN)
    tensors.append(("model.norm.weight", round_to(final, fd), fd))
    if not spec.tied:
        tensors.append(("lm_head.weight",
                        round_to(rng.normal(0.0, 0.25, size=(vocab, HIDDEN)), fd), fd))

    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config_for(spec, vocab), f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
