#!/usr/bin/env python3
"""Loss curve PNG from train_log.csv (matplotlib, Agg backend)."""
import argparse, csv, json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

ap = argparse.ArgumentParser()
ap.add_argument("--log", default="tools/train/build/train_log.csv")
ap.add_argument("--meta", default="tools/train/build/train_meta.json")
ap.add_argument("--out", default="models/kjv-bitnet-6m/loss.png")
a = ap.parse_args()

meta = json.load(open(a.meta))
rows = list(csv.DictReader(open(a.log)))
tr = [(int(r["step"]), float(r["train_loss"])) for r in rows if r["train_loss"]]
va = [(int(r["step"]), float(r["val_loss"])) for r in rows if r["val_loss"]]
plt.figure(figsize=(7, 4))
plt.plot(*zip(*tr), lw=1, label=f"train (mean of {meta['log_every']} steps)")
plt.plot(*zip(*va), "o-", ms=3, label="val (last 2% of Genesis-Jude)")
plt.axvline(meta["best_val_step"], color="gray", ls=":", label=f"exported (step {meta['best_val_step']})")
plt.xlabel(f"step ({meta['batch']} x {meta['ctx']} tokens)")
plt.ylabel("cross-entropy (nats/token)")
plt.title("kjv-bitnet-6m: BitNet b1.58 (ternary) QAT on the KJV, Genesis-Jude")
plt.grid(alpha=.3); plt.legend(); plt.tight_layout()
plt.savefig(a.out, dpi=110)
print("wrote", a.out)
