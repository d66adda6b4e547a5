"""Llama with BitNet b1.58 linears, numerically the forward the tern engine runs.

Layout and names follow HF LlamaForCausalLM (rotate_half RoPE, GQA via
repeat_kv, tied lm_head), so the exported state dict is a plain HF Llama.
"""
import math
from dataclasses import dataclass, asdict
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 768
    num_hidden_layers: int = 6
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 256
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def to_dict(self):
        return asdict(self)


def quant_weight(w):
    # Per-tensor absmean ternary.  Multiply by 1/s (not divide by s) because
    # that is what the engine does; torch.round is round-half-to-even.
    s = w.abs().mean().clamp(min=1e-5)
    return s * torch.clamp(torch.round(w * (1.0 / s)), -1, 1)


def quant_act(x):
    # Per-token absmax int8 over the last dim.
    sx = 127.0 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-5)
    return torch.clamp(torch.round(x * sx), -128, 127) / sx


class BitLinear(nn.Linear):
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out, bias=False)

    def forward(self, x):
        # Straight-through estimators: quantized forward, identity gradient.
        w = self.weight
        wq = w + (quant_weight(w) - w).detach()
        xq = x + (quant_act(x) - x).detach()
        return F.linear(xq, wq)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_cos_sin(cfg, n, device):
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32, device=device) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float32, device=device), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)          # HF layout: halves, not pairs
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h, d = cfg.hidden_size, cfg.head_dim
        self.q_proj = BitLinear(h, cfg.num_attention_heads * d)
        self.k_proj = BitLinear(h, cfg.num_key_value_heads * d)
        self.v_proj = BitLinear(h, cfg.num_key_value_heads * d)
        self.o_proj = BitLinear(cfg.num_attention_heads * d, h)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        c = self.cfg
        q = self.q_proj(x).view(B, T, c.num_attention_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = c.num_attention_heads // c.num_key_value_heads
        k = k.repeat_interleave(rep, dim=1)          # query head h uses kv head h // rep
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c.head_dim)) + mask
        y = att.softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, f = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = BitLinear(h, f)
        self.up_proj = BitLinear(h, f)
        self.down_proj = BitLinear(f, h)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class BitLlama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Body(cfg)       # "model." prefix = HF tensor names
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[1]
        cos, sin = rope_cos_sin(self.cfg, T, idx.device)
        mask = torch.full((T, T), float("-inf"), device=idx.device).triu(1)
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        x = self.model.norm(x)
        return F.linear(x, self.model.embed_tokens.weight)   # tied, float head

    def param_counts(self):
        tern = sum(p.numel() for n, p in self.named_parameters() if n.endswith("_proj.weight"))
        return tern, sum(p.numel() for p in self.parameters()) - tern
