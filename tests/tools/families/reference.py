#!/usr/bin/python3
"""Independent numpy reference forward of the published ternary families.

Reads a Hugging Face checkpoint directly (config.json; safetensors parsed here
by hand, including transformers' uint8 pack_weights layout and the packed
`weight_scale` tensors) and computes what each family's reference modeling
code computes, in float32 (ternary x int8 products exactly):

  BitNetForCausalLM (model_type bitnet, microsoft 2B-4T), AutoBitLinear:
      offline: W = unpack(U8) * weight_scale;  online: absmean per tensor
      x -> per-token int8 fake quant; relu(gate)^2 * up;
      attn_sub_norm before o_proj, ffn_sub_norm before down_proj
  LlamaForCausalLM + quantization_config bitnet (Falcon3, Llama3-8B-1.58), BitLinear:
      y = (xq @ T^T) / (s_x * weight_scale); silu; no sub-norms
  BitnetForCausalLM (1bitLLM): latent weights, weight_quant absmean per tensor,
      activation_quant int8 per token, silu, inner_attn_ln / ffn_layernorm
  LlamaForCausalLM without quantization_config (TriLM): plain float Llama
  Qwen3ForCausalLM (Ternary Bonsai's base): float Llama with q_norm / k_norm,
      an RMSNorm of each head over head_dim before RoPE; rope_scaling yarn as
      transformers' _compute_yarn_parameters (explicit factor, beta 32 / 1,
      truncated correction range, attention factor 0.1 ln(factor) + 1 on
      cos and sin)

All: pre-norm RMSNorm (config rms_norm_eps), rotate_half RoPE, causal GQA
softmax attention with 1/sqrt(head_dim).

--mutate llamacpp computes the model as llama.cpp's CPU backend (ggml) runs
the TQ2_0/TQ1_0 file tern packs from it (default f16 KV cache, no flash
attention), to tell llama.cpp's numbers apart from a misread file:
  every ternary linear is a TQ matmul: its input goes through
      quantize_row_q8_K (one scale per 256 values, not the family's per-token
      int8 or float activations) and the weight is T times the fp16 block
      scale d (the scale T multiplies, rounded to fp16);
  q, k, v (after RoPE) and the softmax probabilities are rounded to f16:
      the f16 KV cache, and F16 x F32 matmuls convert the F32 side to F16
      (vec_dot_type of F16 is F16);
  the head's input is rounded to the head's storage type (F16, or BF16 when
      F16 cannot hold the head exactly, as tern packs it).
A checkpoint whose ternary weights carry one scale per group (Ternary
Bonsai) runs as llama.cpp runs the Q2_0 file tern packs from it: every
linear, the head included, is ggml_vec_dot_q2_0_q8_0: the input through
quantize_row_q8_0 (x86: d = max|x| / 127 stored as fp16, codes
round-half-even of x * 127 / max per 32 values), per 32 values the exact
integer sum times that fp16 d, two of them added per 64-weight block and
times the block's fp16 scale, the blocks summed in float32.

usage:
  reference.py CKPT logits TOKENS_CSV OUT.bin            float32 logits [T][vocab]
  reference.py CKPT sample --seed S --n N --prompt CSV OUT.txt   (temperature 1)
  reference.py CKPT greedy --n N --prompt CSV OUT.txt
  --mutate WHAT (any command): a deliberately wrong variant, WHAT in
      silu-for-relu2, relu2-for-silu, float-activations, no-sub-norms, invert-scale,
      no-linear-norms, no-qk-norms, no-yarn, row-scales (each row's weights at the
      magnitude of its first nonzero one: group scales ignored);
      or llamacpp: the same model in llama.cpp's CPU arithmetic (below);
      or int16-activations: a float-activation model (TriLM) with each
      ternary linear's input rounded per token to 16 bits (24 where 16
      would pass 1e-4 relative error) as tern's default --float-act i16 does
  --fairy2i STAGES (any command): a LLaMA checkpoint run as Fairy2i-W2 runs it:
      every linear, lm_head included, replaced by its phase-quantized
      widely-linear form (tests/tools/fairy2i/quantize.py, tern's f32
      rules), activations float (docs/FAIRY2I.md)
Sequences are written as comma-separated ids, prompt included.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

MUTATIONS = ["silu-for-relu2", "relu2-for-silu", "float-activations", "no-sub-norms", "invert-scale",
             "no-linear-norms", "llamacpp", "int16-activations", "no-qk-norms", "no-yarn", "row-scales"]
F32 = np.float32
QK_K = 256  # ggml's super-block: q8_K, TQ1_0 and TQ2_0 blocks


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw, shape = data[b:e], t["shape"]
        dt = t["dtype"]
        if dt == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(F32)
        elif dt == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(F32)
        elif dt == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(F32)
        elif dt == "U8":
            a = np.frombuffer(raw, dtype=np.uint8).copy()
        else:
            raise SystemExit("%s: tensor %s has dtype %s" % (path, name, dt))
        out[name] = a.reshape(shape)
    return out


def shard_paths(d):
    """The checkpoint's safetensors files: the index's shards, or the one file."""
    idx = os.path.join(d, "model.safetensors.index.json")
    files = (sorted(set(json.load(open(idx))["weight_map"].values()))
             if os.path.exists(idx) else ["model.safetensors"])
    return [os.path.join(d, f) for f in files]


def read_checkpoint(d):
    w = {}
    for path in shard_paths(d):
        w.update(read_safetensors(path))
    return w


def checkpoint_dtypes(d):
    """{tensor name: safetensors dtype}, from the headers only."""
    out = {}
    for path in shard_paths(d):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            out.update({k: t["dtype"] for k, t in json.loads(f.read(n)).items() if k != "__metadata__"})
    return out


def unpack_weights(packed):
    # transformers.integrations.bitnet.unpack_weights: rows i*R .. (i+1)*R-1
    # are bit-field i (bits 2i, 2i+1) of the R packed rows; code - 1 = trit.
    R = packed.shape[0]
    out = np.empty((4 * R, packed.shape[1]), dtype=F32)
    for i in range(4):
        out[i * R:(i + 1) * R] = ((packed >> (2 * i)) & 3).astype(F32) - 1
    return out


def absmean_quant(w):
    """WeightQuant / weight_quant: s = 1 / clamp(mean|W|, 1e-5) per tensor
    (float32); returns (T, 1/s) with W ~ T / s."""
    mean = F32(np.mean(np.abs(w).astype(np.float64)))
    s = F32(1.0) / F32(max(mean, F32(1e-5)))
    t = np.clip(np.rint(w * s), -1, 1).astype(F32)
    return t, s


def act_quant_int(x):
    """Per-token absmax int8: s = 127 / clamp(max|x|, 1e-5); q = clamp(round(x s))
    with round half to even. Returns (q as float32, s [T,1])."""
    amax = np.maximum(np.max(np.abs(x), axis=-1, keepdims=True), F32(1e-5))
    s = (F32(127.0) / amax).astype(F32)
    q = np.clip(np.rint(x * s), -128, 127).astype(F32)
    return q, s


def act_quant_i16(x):
    """tern's --float-act i16 (quantize_act_digits): per token, x rounded to
    16 bits, s = 32512 / max(max|x|, 1e-30), round half to even; a token
    whose relative L2 error would pass 1e-4 is rounded to 24 bits
    (8290687 steps) instead."""
    amax = np.maximum(np.max(np.abs(x), axis=-1, keepdims=True), F32(1e-30))
    out = np.empty_like(x, dtype=F32)
    for i in range(x.shape[0]):
        for top in (32512, 8290687):
            s = (F32(top) / amax[i]).astype(F32)
            v = np.clip(np.rint(x[i] * s), -top, top)
            xq = v / s.astype(np.float64)
            x64 = x[i].astype(np.float64)
            den = np.sqrt(np.sum(x64 * x64))
            if top != 32512 or den == 0 or not np.sqrt(np.sum((x64 - xq) ** 2)) / den > 1e-4:
                break
        out[i] = xq.astype(F32)
    return out


def f16_round(x):
    return np.asarray(x, dtype=F32).astype(np.float16).astype(F32)


def bf16_round(x):
    # ggml_compute_fp32_to_bf16: round to nearest even (no NaNs here).
    u = np.asarray(x, dtype=F32).view(np.uint32)
    return ((u + np.uint32(0x7fff) + ((u >> 16) & 1)) & np.uint32(0xffff0000)).view(F32)


def q8_k(x):
    """ggml's quantize_row_q8_K_ref on each row, zero-padded to whole blocks:
    per block of 256, max = the value of largest magnitude (the first if
    tied), iscale = -127 / max, q = min(127, nearest_int(iscale * x)) (round
    half to even), d = 1 / iscale; an all-zero block has d = 0, q = 0.
    Returns (q [T][blocks][256] as float32, d [T][blocks])."""
    T, n = x.shape
    nb = -(-n // QK_K)
    b = np.zeros((T, nb * QK_K), dtype=F32)
    b[:, :n] = x
    b = b.reshape(T, nb, QK_K)
    mx = np.take_along_axis(b, np.abs(b).argmax(-1)[..., None], -1)[..., 0]
    zero = mx == 0
    iscale = (F32(-127.0) / np.where(zero, F32(1.0), mx)).astype(F32)
    q = np.minimum(F32(127.0), np.rint((b * iscale[..., None]).astype(F32))).astype(F32)
    q[zero] = 0
    d = np.where(zero, F32(0.0), (F32(1.0) / iscale).astype(F32)).astype(F32)
    return q, d


QK8_0 = 32  # ggml's q8_0 block: the activations of Q2_0 / Q1_0 matmuls
QK2_0 = 64  # mainline llama.cpp's Q2_0 block (type 42)


def q8_0(x):
    """x86 quantize_row_q8_0 on each row (whole blocks of 32): per block
    m = max|x|, d = fp16(m / 127), q = round-half-even(x * (127 / m)), an
    all-zero block d = 0, q = 0. Returns (q [T][blocks][32], d [T][blocks])."""
    T, n = x.shape
    assert n % QK8_0 == 0, "q8_0 needs whole blocks of 32"
    b = x.astype(F32).reshape(T, n // QK8_0, QK8_0)
    m = np.max(np.abs(b), axis=-1)
    zero = m == 0
    inv = np.where(zero, F32(0.0), F32(127.0) / np.where(zero, F32(1.0), m)).astype(F32)
    q = np.rint((b * inv[..., None]).astype(F32)).astype(F32)
    return q, f16_round((m / F32(127.0)).astype(F32))


def groups_of(w, g):
    """(codes in {-1, 0, 1}, scale per g columns [O][I/g]) when every group
    of g columns of w is one magnitude times ternary codes, else None."""
    O, I = w.shape
    if I % g:
        return None
    b = w.astype(F32).reshape(O, I // g, g)
    d = np.max(np.abs(b), axis=-1)
    t = np.sign(b)
    if not np.array_equal(t * d[..., None], b):
        return None
    return t.reshape(O, I), d


def rms_norm(x, w, eps):
    # LlamaRMSNorm: w * (x * rsqrt(mean(x^2) + eps)), in float32.
    var = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)
    return (w * (x / np.sqrt(var + eps)).astype(F32)).astype(F32)


def rope_inv_freq(d, theta, yarn=None):
    """inv_freq [d/2] and the cos/sin scale; yarn: the config's rope_scaling."""
    inv = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    if not yarn:
        return inv, 1.0
    factor = float(yarn["factor"])
    orig = yarn["original_max_position_embeddings"]
    fast, slow = yarn.get("beta_fast") or 32, yarn.get("beta_slow") or 1

    def corr(rot):
        return d * np.log(orig / (rot * 2 * np.pi)) / (2 * np.log(theta))
    low, high = max(np.floor(corr(fast)), 0), min(np.ceil(corr(slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrap = 1 - ramp
    inv = (inv / factor) * (1 - extrap) + inv * extrap
    return inv, (0.1 * np.log(factor) + 1.0) if factor > 1 else 1.0


def rope(x, pos, theta, yarn=None):
    # rotate_half: emb = cat(freqs, freqs); cos and sin times YaRN's attention factor
    d = x.shape[-1]
    inv, scale = rope_inv_freq(d, theta, yarn)
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    cos, sin = (np.cos(emb) * scale)[:, None, :], (np.sin(emb) * scale)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return (x * cos + rot * sin).astype(F32)


def fairy2i_linear(w, stages):
    """The real matrix Fairy2i-W2 computes with in place of w (float32)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fairy2i"))
    import quantize  # tests/tools/fairy2i/quantize.py
    return quantize.quantize_linear(w, stages=stages, mode="f32")[1]


class Model:
    def __init__(self, d, mutate=None, fairy2i=0):
        self.cfg = cfg = json.load(open(os.path.join(d, "config.json")))
        self.fairy2i = fairy2i
        self.W = read_checkpoint(d)
        self.path = d
        self.mutate = mutate
        arch = (cfg.get("architectures") or [cfg.get("model_type")])[0]
        qc = cfg.get("quantization_config") or {}
        self.D = cfg["hidden_size"]
        self.L = cfg["num_hidden_layers"]
        self.H = cfg["num_attention_heads"]
        self.KVH = cfg.get("num_key_value_heads") or self.H
        self.hd = cfg.get("head_dim") or self.D // self.H
        self.eps = cfg["rms_norm_eps"]
        self.theta = cfg.get("rope_theta", 10000.0)
        self.act = cfg.get("hidden_act", "silu")
        rs = cfg.get("rope_scaling")
        self.yarn = rs if rs and rs.get("rope_type", rs.get("type")) == "yarn" and mutate != "no-yarn" else None
        if rs and not self.yarn and mutate != "no-yarn":
            raise SystemExit("unsupported rope_scaling %r" % rs)
        self.qk_norms = arch == "Qwen3ForCausalLM" and mutate != "no-qk-norms"

        # Which linear each family's modeling code builds.
        if arch == "BitNetForCausalLM":
            # AutoBitLinear (the 2B-4T config names it), or BitLinear if not.
            lc = qc.get("linear_class", "bitlinear")
            self.kind = "auto" if lc == "autobitlinear" else "bitlinear"
            self.online = qc.get("quantization_mode", "offline") == "online"
            self.sub = ("self_attn.attn_sub_norm.weight", "mlp.ffn_sub_norm.weight")
        elif arch == "BitnetForCausalLM":
            self.kind, self.online = "1bitllm", True
            self.sub = ("self_attn.inner_attn_ln.weight", "mlp.ffn_layernorm.weight")
        elif arch == "Qwen3ForCausalLM":
            self.kind, self.online, self.sub = "float", False, None
        elif arch == "LlamaForCausalLM":
            if qc.get("quant_method") == "bitnet":
                lc = qc.get("linear_class", "bitlinear")
                self.kind = "auto" if lc == "autobitlinear" else "bitlinear"
                self.online = qc.get("quantization_mode", "offline") == "online"
            else:
                self.kind, self.online = "float", False
            self.sub = None
        else:
            raise SystemExit("unsupported architecture " + arch)
        # transformers' BitLinear / AutoBitLinear with use_rms_norm: an
        # LlamaRMSNorm(in_features, eps=quantization_config.rms_norm_eps,
        # default 1e-6) on the input, before the activation quantization.
        self.lin_norm_eps = (qc.get("rms_norm_eps", 1e-6)
                             if qc.get("use_rms_norm") and mutate != "no-linear-norms" else None)
        if mutate == "no-sub-norms":
            self.sub = None
        if mutate == "silu-for-relu2" and self.act == "relu2":
            self.act = "silu"
        if mutate == "relu2-for-silu" and self.act == "silu":
            self.act = "relu2"

        # lm_head: modules_to_not_convert, a plain float linear; tied to the
        # embedding when the config says so or the file has none.
        self.emb = self.W["model.embed_tokens.weight"].astype(F32)
        if cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in self.W:
            self.head = self.emb
        else:
            self.head = self.W["lm_head.weight"].astype(F32)
        if fairy2i:
            if self.kind != "float":
                raise SystemExit("--fairy2i needs a plain LLaMA checkpoint (no quantization_config)")
            self.head = fairy2i_linear(self.head, fairy2i)
        self._cache = {}

    # -- linears -------------------------------------------------------------

    def weight(self, name):
        """(T or W as float32, how the scale enters, scale)."""
        if name in self._cache:
            return self._cache[name]
        w = self.W[name]
        if self.fairy2i:
            r = (fairy2i_linear(w.astype(F32), self.fairy2i), None, None)
        elif self.kind == "float" and self.mutate == "row-scales":
            w = w.astype(F32)
            mag = np.abs(w)
            first = np.take_along_axis(mag, np.argmax(mag > 0, axis=1)[:, None], 1)
            r = (np.sign(w) * first, None, None)
        elif self.kind == "float":
            r = (w.astype(F32), None, None)
        elif w.dtype == np.uint8:
            t = unpack_weights(w)
            ws = F32(self.W[name + "_scale"].reshape(-1)[0])
            r = (t, "packed", ws)
        else:
            t, s = absmean_quant(w.astype(F32))  # online / latent: W ~ T / s
            r = (t, "absmean", s)
        self._cache[name] = r
        return r

    def tq_weight(self, name):
        """llama.cpp's view of a ternary linear as tern packs it: (T [O][I],
        fp16 block scale d [O]) with W = T * d."""
        key = name + " tq"
        if key in self._cache:
            return self._cache[key]
        w, how, sc = self.weight(name)
        if how is None:  # TriLM: each row is already s_row * {-1, 0, 1}
            t = np.sign(w).astype(F32)
            d = np.max(np.abs(w), axis=1)
        else:
            divide = how == "absmean" or self.kind == "bitlinear"  # W = T / s
            t = w
            d = np.full(w.shape[0], (F32(1.0) / sc) if divide else sc, dtype=F32)
        r = (t, f16_round(d))
        self._cache[key] = r
        return r

    def group_weight(self, name):
        """llama.cpp's view of a group-scaled ternary matrix as tern packs it
        in Q2_0: (codes [O][I], fp16 scale per 64 columns [O][I/64]), or
        None when the matrix has one magnitude per row or none at all."""
        key = name + " q2_0"
        if key not in self._cache:
            w = self.head if name == "head" else self.W[name]
            r = groups_of(w, QK2_0) if self.kind == "float" else None
            if r is not None:
                per_row = groups_of(w, w.shape[1]) is not None
                r = None if per_row else (r[0], f16_round(r[1]))
            self._cache[key] = r
        return self._cache[key]

    def group_linear(self, x, t, d):
        """ggml_vec_dot_q2_0_q8_0 for every row: per 32 inputs the exact
        integer sum times q8_0's d, pairs added per 64-block, times the
        block's d, blocks summed in float32."""
        q, dx = q8_0(x)                       # [T][I/32][32], [T][I/32]
        O, I = t.shape
        tb = t.reshape(O, I // QK8_0, QK8_0)
        sums = np.einsum("tbk,obk->tbo", q, tb).astype(F32)   # exact integers
        part = (dx[..., None] * sums).astype(F32)             # [T][I/32][O]
        blk = (part[:, 0::2] + part[:, 1::2]).astype(F32)     # [T][I/64][O]
        return np.sum((blk * d.T[None]).astype(F32), axis=1, dtype=F32)

    def tq_linear(self, x, name):
        """ggml_vec_dot_tq{1,2}_0_q8_K: per block, the exact integer sum of
        q8_K codes times trits, times (q8_K's d * the fp16 d) in float32,
        summed over blocks in float32."""
        t, d = self.tq_weight(name)
        q, dx = q8_k(x)
        nb = q.shape[1]
        tp = np.zeros((t.shape[0], nb * QK_K), dtype=F32)
        tp[:, :t.shape[1]] = t
        tp = tp.reshape(t.shape[0], nb, QK_K)
        sums = np.matmul(q.transpose(1, 0, 2), tp.transpose(1, 2, 0))  # [nb][T][O], exact
        scale = (dx.T[:, :, None] * d[None, None, :]).astype(F32)
        return np.sum((sums * scale).astype(F32), axis=0, dtype=F32)

    def linear(self, x, name):
        if self.lin_norm_eps is not None:
            x = rms_norm(x, self.W[name[:-len("weight")] + "rms_norm.weight"].astype(F32),
                         self.lin_norm_eps)
        if self.mutate == "llamacpp":
            g = self.group_weight(name)
            return self.group_linear(x, *g) if g else self.tq_linear(x, name)
        w, how, sc = self.weight(name)
        if how is None:
            if self.mutate == "int16-activations":
                x = act_quant_i16(x)
            return (x @ w.T).astype(F32)
        if self.mutate == "float-activations":
            y = (x.astype(F32) @ w.T).astype(F32)
            xs = F32(1.0)
        else:
            q, xs = act_quant_int(x)
            y = (q @ w.T).astype(F32)  # exact: integers below 2^24
        if how == "absmean":
            # weight_quant / WeightQuant: W = T / s; activation x = q / s_x
            return (y / xs / sc).astype(F32)
        divide = self.kind == "bitlinear"
        if self.mutate == "invert-scale":
            divide = not divide
        if divide:   # BitLinear: y / (s_x * weight_scale)
            return (y / (xs * sc)).astype(F32)
        return ((y / xs) * sc).astype(F32)  # AutoBitLinear offline: F.linear(q / s_x, T) * weight_scale

    def head_round(self, x):
        """x rounded to the type tern stores the head in: F32 stays F32, F16
        is F16, BF16 is F16 when that is exact, else BF16."""
        name = "lm_head.weight" if self.head is not self.emb else "model.embed_tokens.weight"
        dt = checkpoint_dtypes(self.path)[name]
        if dt == "F16" or (dt == "BF16" and np.array_equal(f16_round(self.head), self.head)):
            return f16_round(x)
        return bf16_round(x) if dt == "BF16" else x

    # -- forward -------------------------------------------------------------

    def logits(self, tokens, past=None):
        """Logits [T][vocab] of `tokens` at positions len(past) onwards;
        `past` (a list, one (K, V) per layer, as HF's past_key_values) is
        extended in place when given."""
        T = len(tokens)
        H, KVH, hd, eps = self.H, self.KVH, self.hd, self.eps
        x = self.emb[np.asarray(tokens)].copy()
        P = past[0][0].shape[0] if past else 0
        pos = np.arange(P, P + T)
        mask = np.concatenate([np.zeros((T, P), dtype=F32),
                               np.triu(np.full((T, T), -np.inf, dtype=F32), 1)], axis=1)
        for l in range(self.L):
            p = "model.layers.%d." % l
            a = rms_norm(x, self.W[p + "input_layernorm.weight"], eps)
            q = self.linear(a, p + "self_attn.q_proj.weight").reshape(T, H, hd)
            k = self.linear(a, p + "self_attn.k_proj.weight").reshape(T, KVH, hd)
            v = self.linear(a, p + "self_attn.v_proj.weight").reshape(T, KVH, hd)
            if self.qk_norms:  # Qwen3: each head over head_dim, before RoPE
                q = rms_norm(q, self.W[p + "self_attn.q_norm.weight"], eps)
                k = rms_norm(k, self.W[p + "self_attn.k_norm.weight"], eps)
            q, k = rope(q, pos, self.theta, self.yarn), rope(k, pos, self.theta, self.yarn)
            if self.mutate == "llamacpp":  # f16 KV cache; q meets it as F16
                q, k, v = f16_round(q), f16_round(k), f16_round(v)
            if past is not None:
                if len(past) <= l:
                    past.append((k, v))
                else:
                    k = np.concatenate([past[l][0], k])
                    v = np.concatenate([past[l][1], v])
                    past[l] = (k, v)
            k = np.repeat(k, H // KVH, axis=1)  # repeat_kv: kv head j serves q heads j*g..j*g+g-1
            v = np.repeat(v, H // KVH, axis=1)
            s = np.einsum("thd,shd->hts", q, k).astype(F32) / F32(np.sqrt(hd)) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            if self.mutate == "llamacpp":  # F16 V times F32 probabilities
                s = f16_round(s)
            o = np.einsum("hts,shd->thd", s, v).reshape(T, H * hd).astype(F32)
            if self.sub:
                o = rms_norm(o, self.W[p + self.sub[0]], eps)
            x = x + self.linear(o, p + "self_attn.o_proj.weight")
            m = rms_norm(x, self.W[p + "post_attention_layernorm.weight"], eps)
            g = self.linear(m, p + "mlp.gate_proj.weight")
            u = self.linear(m, p + "mlp.up_proj.weight")
            if self.act == "relu2":
                g = np.square(np.maximum(g, 0))
            else:
                with np.errstate(over="ignore"):
                    g = g / (F32(1.0) + np.exp(-g))
            f = (g * u).astype(F32)
            if self.sub:
                f = rms_norm(f, self.W[p + self.sub[1]], eps)
            x = x + self.linear(f, p + "mlp.down_proj.weight")
        x = rms_norm(x, self.W["model.norm.weight"], eps)
        if self.mutate == "llamacpp":  # the head's storage type is its vec_dot_type
            g = self.group_weight("head")
            if g:
                return self.group_linear(x, *g)
            x = self.head_round(x)
        return (x @ self.head.T).astype(F32)


def parse_ids(csv):
    return [int(t) for t in csv.split(",") if t.strip()]


def write_ids(path, ids):
    with open(path, "w") as f:
        f.write(",".join(str(i) for i in ids) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ckpt")
    ap.add_argument("command", choices=["logits", "sample", "greedy"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--prompt", default="1")
    ap.add_argument("--mutate", choices=MUTATIONS)
    ap.add_argument("--fairy2i", type=int, default=0, metavar="STAGES")
    a = ap.parse_intermixed_args()
    m = Model(a.ckpt, a.mutate, a.fairy2i)
    if a.command == "logits":
        if len(a.args) != 2:
            raise SystemExit("usage: reference.py CKPT logits TOKENS_CSV OUT.bin")
        m.logits(parse_ids(a.args[0])).astype("<f4").tofile(a.args[1])
        return 0
    if len(a.args) != 1:
        raise SystemExit("usage: reference.py CKPT %s [--seed S] --n N --prompt CSV OUT.txt" % a.command)
    ids = parse_ids(a.prompt)
    rng = np.random.default_rng(a.seed)
    past, fed = [], 0  # KV cache, as generate() keeps it
    for _ in range(a.n):
        z = m.logits(ids[fed:], past)[-1].astype(np.float64)
        fed = len(ids)
        if a.command == "greedy":
            ids.append(int(np.argmax(z)))
        else:
            p = np.exp(z - z.max())
            p /= p.sum()
            ids.append(int(min(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"),
                               len(p) - 1)))
    write_ids(a.args[0], ids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
