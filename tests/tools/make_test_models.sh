#!/bin/sh
# ctest fixture: makes the tiny checkpoints and their packs that the model and
# CLI tests share, once, before any of those tests run (they run as separate,
# parallel processes, so none of them may write shared files).
# usage: make_test_models.sh TERN_EXE OUT_DIR
set -eu
tern=$1
out=$2
here=$(dirname "$0")
rm -rf "$out"
mkdir -p "$out"
for mode in bitnet ternary; do
  /usr/bin/python3 "$here/make_tiny_checkpoint.py" "$out/$mode/hf" --mode "$mode" --seed 7
  "$tern" pack "$out/$mode/hf" -o "$out/$mode/tq2_0.gguf" --type tq2_0 >/dev/null
  "$tern" pack "$out/$mode/hf" -o "$out/$mode/tq1_0.gguf" --type tq1_0 >/dev/null
done
/usr/bin/python3 "$here/make_tiny_checkpoint.py" "$out/dense/hf" --mode dense --seed 5
