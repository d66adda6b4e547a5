#!/usr/bin/env python3
"""Evaluate the EXPORTED checkpoint (BF16 weights re-read from disk).

Revelation perplexity follows llama-perplexity exactly: tokenize the whole
file with BOS prepended, cut into n_ctx chunks, force BOS at position 0 of
each chunk, score only the second half of each chunk.
"""
import argparse, json, math, os, sys
import sentencepiece as spm
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, BitLlama
import safetensors_io

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="models/kjv-bitnet-6m")
ap.add_argument("--text", default="models/revelation.txt")
ap.add_argument("--train-text", default="tools/train/build/train.txt")
ap.add_argument("--val-text", default="tools/train/build/val.txt")
ap.add_argument("--n-ctx", type=int, default=256)
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--threads", type=int, default=2)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.use_deterministic_algorithms(True)

cfg_json = json.load(open(os.path.join(a.model, "config.json")))
cfg = Config(**{k: cfg_json[k] for k in Config.__dataclass_fields__})
model = BitLlama(cfg)
model.load_state_dict(safetensors_io.load(os.path.join(a.model, "model.safetensors")), strict=True)
model.eval()
sp = spm.SentencePieceProcessor(model_file=os.path.join(a.model, "tokenizer.model"))
BOS = sp.bos_id()
n_ctx = a.n_ctx

# --- llama-perplexity protocol ---------------------------------------------
text = open(a.text, encoding="utf-8").read()
tokens = [BOS] + sp.encode(text)
n_chunk = len(tokens) // n_ctx
first = n_ctx // 2
print(f"{a.text}: {len(text)} bytes, {len(tokens)} tokens, {n_chunk} chunks of {n_ctx}")
nlls, targets = [], []
with torch.no_grad():
    for c0 in range(0, n_chunk, a.batch):
        chunks = [tokens[c * n_ctx:(c + 1) * n_ctx] for c in range(c0, min(n_chunk, c0 + a.batch))]
        x = torch.tensor(chunks)
        x[:, 0] = BOS
        logp = F.log_softmax(model(x).float(), dim=-1)
        for r, orig in enumerate(chunks):
            for i in range(first, n_ctx - 1):
                nlls.append(-logp[r, i, orig[i + 1]].item())
                targets.append(orig[i + 1])
            mean = sum(nlls) / len(nlls)
            print(f"[{c0 + r + 1}]{math.exp(mean):.4f}", end=",", flush=True)
print()
count = len(nlls)
mean = sum(nlls) / count
nll2 = sum(v * v for v in nlls) / count
ppl = math.exp(mean)
err = math.sqrt(max(nll2 - mean * mean, 0.0) / (count - 1)) * ppl
print(f"Final estimate: PPL = {ppl:.4f} +/- {err:.5f}")

# --- unigram baseline: same tokenizer, counts from the training text --------
counts = torch.ones(cfg.vocab_size, dtype=torch.float64)      # add-one
counts += torch.bincount(torch.tensor(sp.encode(open(a.train_text, encoding="utf-8").read())),
                         minlength=cfg.vocab_size).double()
logp_uni = (counts / counts.sum()).log()
uni_scored = math.exp(-logp_uni[torch.tensor(targets)].mean().item())
uni_all = math.exp(-logp_uni[torch.tensor(tokens[1:])].mean().item())
print(f"Unigram PPL (same scored tokens) = {uni_scored:.4f}; over all Revelation tokens = {uni_all:.4f}")

# --- validation loss of the exported weights (training distribution) -------
val_loss = None
if os.path.exists(a.val_text):
    vt = [BOS] + sp.encode(open(a.val_text, encoding="utf-8").read())
    tot = n = 0
    with torch.no_grad():
        for s in range(0, len(vt) - n_ctx - 1, n_ctx):
            w = torch.tensor(vt[s:s + n_ctx + 1])
            xx = w[:-1].clone(); xx[0] = BOS
            tot += F.cross_entropy(model(xx[None])[0], w[1:], reduction="sum").item()
            n += n_ctx
    val_loss = tot / n
    print(f"val loss of exported BF16 weights: {val_loss:.4f}")

# --- samples ----------------------------------------------------------------
SAMPLE = dict(temperature=0.8, top_k=40, max_new_tokens=64)
prompts = ["In the beginning", "And Jesus said", "The LORD is my shepherd", "Blessed are", "And it came to pass"]
samples = []
with torch.no_grad():
    for i, prompt in enumerate(prompts):
        seed = 1000 + i
        g = torch.Generator().manual_seed(seed)
        ids = [BOS] + sp.encode(prompt)
        for _ in range(SAMPLE["max_new_tokens"]):
            logits = model(torch.tensor([ids[-n_ctx:]]))[0, -1] / SAMPLE["temperature"]
            v, ix = logits.topk(SAMPLE["top_k"])
            ids.append(ix[torch.multinomial(v.softmax(-1), 1, generator=g)].item())
        out = sp.decode(ids[1:])
        samples.append(dict(prompt=prompt, seed=seed, text=out))
        print(f"--- seed {seed} | {prompt!r}\n{out}")

# --- a small reference vector for checking other implementations ----------
ref_text = "In the beginning God created the heaven and the earth."
ref_ids = [BOS] + sp.encode(ref_text)
with torch.no_grad():
    ref_logits = model(torch.tensor([ref_ids]))[0]
top = ref_logits[-1].topk(5)
reference = dict(text=ref_text, ids=ref_ids, argmax=ref_logits.argmax(-1).tolist(),
                 last_top5=[[i, round(v, 4)] for i, v in zip(top.indices.tolist(), top.values.tolist())],
                 last_logits_first8=[round(v, 4) for v in ref_logits[-1, :8].tolist()])
print("reference:", json.dumps(reference))

res = dict(text=a.text, n_ctx=n_ctx, tokens=len(tokens), n_chunk=n_chunk, scored_tokens=count,
           ppl=ppl, ppl_err=err, unigram_ppl_scored=uni_scored, unigram_ppl_all=uni_all,
           val_loss_exported=val_loss, sampling=SAMPLE, samples=samples,
           reference=reference)
with open(os.path.join(a.model, "eval.json"), "w") as f:
    json.dump(res, f, indent=2)
    f.write("\n")
