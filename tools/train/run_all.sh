#!/bin/sh
# Rebuild everything from scratch: data -> tokenizer -> train -> export -> eval.
# Usage (from the repo root): tools/train/run_all.sh [SEED]   (default 1234)
# Needs Debian's python3 (torch 1.13, numpy, sentencepiece, matplotlib),
# `bible` (bible-kjv) and `spm_train`.  ~1 h on one CPU thread (training is single-threaded on purpose; see train.py).
set -e
cd "$(dirname "$0")/../.."
SEED=${1:-1234}
PY=/usr/bin/python3
$PY tools/train/prepare_data.py
sh tools/train/train_tokenizer.sh
nice -n 10 $PY tools/train/train.py --seed "$SEED" --steps 1105 --decay-start 884
$PY tools/train/plot_loss.py
$PY tools/train/export.py
nice -n 10 $PY tools/train/eval.py | tee models/kjv-bitnet-6m/eval.txt
nice -n 10 $PY tools/train/ref_numpy.py
