#!/usr/bin/env python3
"""Train the BitNet b1.58 Llama on the KJV training split (Revelation never seen).

Deterministic for a given --seed, --steps, --decay-start and thread count: one
seeded generator picks every batch, and torch runs in deterministic mode.

LR schedule is warmup-stable-decay (WSD): linear warmup, constant, then linear
decay to zero over the last --decay-frac of the run.  WSD lets a wall-clock
budget pick the length: with --time-budget the stable phase ends when the
projected decay would just fit, and the chosen --steps/--decay-start are
written to train_meta.json, so rerunning with those two flags (no budget)
reproduces the run exactly.  The machine is shared with nice-0 C++ builds,
which is why the length cannot be fixed in advance.
"""
import argparse, csv, json, math, os, platform, sys, time
import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, BitLlama

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, default=1234)
ap.add_argument("--steps", type=int, default=100000, help="total steps (upper bound with --time-budget)")
ap.add_argument("--decay-start", type=int, default=None)
ap.add_argument("--decay-frac", type=float, default=0.2)
ap.add_argument("--time-budget", type=float, default=0, help="seconds; 0 = run exactly --steps")
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--ctx", type=int, default=256)
ap.add_argument("--lr", type=float, default=2e-3)
ap.add_argument("--warmup", type=int, default=100)
ap.add_argument("--wd", type=float, default=0.05)
ap.add_argument("--clip", type=float, default=1.0)
ap.add_argument("--log-every", type=int, default=10)
ap.add_argument("--eval-every", type=int, default=100)
# One thread on purpose: with a build on the other core, 2 OpenMP threads ran
# 4x slower than 1 (26 vs 6.6 s/step) because each op waits for the slow thread.
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--build", default="tools/train/build")
ap.add_argument("--tokenizer", default="models/kjv-bitnet-6m/tokenizer.model")
a = ap.parse_args()

torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
np.random.seed(a.seed)
torch.use_deterministic_algorithms(True)

sp = spm.SentencePieceProcessor(model_file=a.tokenizer)
BOS = sp.bos_id()


def load_tokens(name):
    # Same as the eval protocol: the whole file encoded as one string.
    with open(os.path.join(a.build, name), encoding="utf-8") as f:
        return torch.tensor([BOS] + sp.encode(f.read()), dtype=torch.long)


train_tok, val_tok = load_tokens("train.txt"), load_tokens("val.txt")
print(f"train tokens {len(train_tok)}, val tokens {len(val_tok)}", flush=True)


def windows(tok, starts):
    # ctx+1 tokens per row; position 0 of the input is forced to BOS exactly
    # like llama-perplexity does to each chunk, so training matches eval.
    w = torch.stack([tok[s:s + a.ctx + 1] for s in starts.tolist()])
    x, y = w[:, :-1].clone(), w[:, 1:]
    x[:, 0] = BOS
    return x, y


val_starts = torch.arange(0, len(val_tok) - a.ctx - 1, a.ctx)
cfg = Config(max_position_embeddings=a.ctx)
model = BitLlama(cfg)
tern, flt = model.param_counts()
print(f"params: ternary {tern}, float {flt}", flush=True)

decay = [p for n, p in model.named_parameters() if n.endswith("_proj.weight")]
no_decay = [p for n, p in model.named_parameters() if not n.endswith("_proj.weight")]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd},
                         {"params": no_decay, "weight_decay": 0.0}],
                        lr=a.lr, betas=(0.9, 0.95), eps=1e-8)


if a.decay_start is None:
    a.decay_start = a.steps - int(a.steps * a.decay_frac)


def lr_at(step):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if step < a.decay_start:
        return a.lr
    return a.lr * (a.steps - step) / max(1, a.steps - a.decay_start)


@torch.no_grad()
def val_loss():
    model.eval()
    tot, n = 0.0, 0
    for i in range(0, len(val_starts), 16):
        x, y = windows(val_tok, val_starts[i:i + 16])
        tot += F.cross_entropy(model(x).reshape(-1, cfg.vocab_size), y.reshape(-1), reduction="sum").item()
        n += y.numel()
    model.train()
    return tot / n


gen = torch.Generator().manual_seed(a.seed)
os.makedirs(a.build, exist_ok=True)
log_path = os.path.join(a.build, "train_log.csv")
logf = open(log_path, "w", newline="")
log = csv.writer(logf)
log.writerow(["step", "tokens", "lr", "train_loss", "val_loss", "elapsed_s"])
best = (float("inf"), -1)
t0, run_loss, run_n = time.time(), 0.0, 0
t_recent = (t0, 0)
for step in range(a.steps + 1):
    if step % a.eval_every == 0 or step == a.steps:
        vl = val_loss()
        if vl < best[0]:
            best = (vl, step)
            torch.save(model.state_dict(), os.path.join(a.build, "ckpt_best.pt"))
        log.writerow([step, step * a.batch * a.ctx, "", "", f"{vl:.5f}", f"{time.time() - t0:.1f}"])
        logf.flush()
        print(f"step {step} val_loss {vl:.4f} (best {best[0]:.4f} @ {best[1]}) {time.time() - t0:.0f}s", flush=True)
    if step == a.steps:
        break
    if a.time_budget and step >= a.warmup and a.decay_start > step:
        # Conservative rate: the slower of the whole-run and recent averages.
        rate = max((time.time() - t0) / step, (time.time() - t_recent[0]) / max(1, step - t_recent[1]))
        n_decay = math.ceil(step * a.decay_frac / (1 - a.decay_frac))
        if time.time() - t0 + n_decay * rate * 1.05 >= a.time_budget or step + n_decay >= a.steps:
            a.decay_start, a.steps = step, min(a.steps, step + n_decay)
            print(f"decay starts at step {step}, total steps {a.steps} "
                  f"(reproduce: --steps {a.steps} --decay-start {a.decay_start})", flush=True)
        if step % 50 == 0:
            t_recent = (time.time(), step)
    for g in opt.param_groups:
        g["lr"] = lr_at(step)
    x, y = windows(train_tok, torch.randint(0, len(train_tok) - a.ctx - 1, (a.batch,), generator=gen))
    loss = F.cross_entropy(model(x).reshape(-1, cfg.vocab_size), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
    opt.step()
    run_loss, run_n = run_loss + loss.item(), run_n + 1
    if (step + 1) % a.log_every == 0:
        log.writerow([step + 1, (step + 1) * a.batch * a.ctx, f"{lr_at(step):.6g}", f"{run_loss / run_n:.5f}", "", f"{time.time() - t0:.1f}"])
        logf.flush()
        print(f"step {step + 1} loss {run_loss / run_n:.4f} lr {lr_at(step):.2e} {time.time() - t0:.0f}s", flush=True)
        run_loss, run_n = 0.0, 0
logf.close()
wall = time.time() - t0
torch.save(model.state_dict(), os.path.join(a.build, "ckpt_last.pt"))

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
meta = dict(vars(a), config=cfg.to_dict(), params_ternary=tern, params_float=flt,
            train_tokens_available=len(train_tok), val_tokens=len(val_tok),
            tokens_seen=a.steps * a.batch * a.ctx, wall_seconds=round(wall, 1),
            best_val_loss=best[0], best_val_step=best[1], final_val_loss=vl,
            machine=f"{cpu}, {a.threads} threads", torch=torch.__version__)
json.dump(meta, open(os.path.join(a.build, "train_meta.json"), "w"), indent=2)
print(json.dumps(meta, indent=2), flush=True)

