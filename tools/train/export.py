#!/usr/bin/env python3
"""Export a training checkpoint as a plain HF Llama directory (BF16 latent weights).

The lm_head is tied, so only model.embed_tokens.weight is written.  The
ternary quantization is applied at load time by whoever runs the model (the
tern packer, or eval.py), from exactly these BF16 values.
"""
import argparse, json, os, shutil, sys
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config
import safetensors_io

ap = argparse.ArgumentParser()
ap.add_argument("--ckpt", default="tools/train/build/ckpt_best.pt")
ap.add_argument("--build", default="tools/train/build")
ap.add_argument("--out", default="models/kjv-bitnet-6m")
a = ap.parse_args()

cfg = Config()
sd = torch.load(a.ckpt, map_location="cpu")
os.makedirs(a.out, exist_ok=True)
tensors = {k: v.to(torch.bfloat16) for k, v in sd.items()}
safetensors_io.save(os.path.join(a.out, "model.safetensors"), tensors, {"format": "pt"})

config = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": cfg.hidden_size,
    "intermediate_size": cfg.intermediate_size,
    "num_hidden_layers": cfg.num_hidden_layers,
    "num_attention_heads": cfg.num_attention_heads,
    "num_key_value_heads": cfg.num_key_value_heads,
    "head_dim": cfg.head_dim,
    "vocab_size": cfg.vocab_size,
    "max_position_embeddings": cfg.max_position_embeddings,
    "rms_norm_eps": cfg.rms_norm_eps,
    "rope_theta": cfg.rope_theta,
    "rope_scaling": None,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "bitnet"},
}
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
# The training log and metadata ship with the weights so the card's figures
# can be checked against them.
for name in ("train_log.csv", "train_meta.json"):
    src = os.path.join(a.build, name)
    if os.path.exists(src):
        shutil.copy(src, os.path.join(a.out, name))
print(f"exported {len(tensors)} tensors from {a.ckpt} to {a.out}")
