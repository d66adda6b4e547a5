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
# BF16 source with an untied head that F16 cannot hold: exercises BF16 tensors.
/usr/bin/python3 "$here/make_tiny_checkpoint.py" "$out/bf16/hf" --mode ternary --dtype bf16 --untied --seed 9
"$tern" pack "$out/bf16/hf" -o "$out/bf16/tq2_0.gguf" >/dev/null
"$tern" pack "$out/bf16/hf" -o "$out/bf16/tq1_0.gguf" --type tq1_0 >/dev/null
/usr/bin/python3 "$here/make_tiny_checkpoint.py" "$out/dense/hf" --mode dense --seed 5
# A byte-level BPE tokenizer (Llama-3's tokenizer.json) with its chat
# template, one layer: the chat and tokenizer tests through the binary.
/usr/bin/python3 "$here/make_tiny_checkpoint.py" "$out/bpe/hf" --mode bitnet --dtype f16 --layers 1 --seed 11 \
  --tokenizer-dir "$here/../data/tokenizers/llama3"
"$tern" pack "$out/bpe/hf" -o "$out/bpe/tq2_0.gguf" >/dev/null
# One tiny checkpoint per published ternary family, in its own Hugging Face
# layout (tests/model/test_families.cpp checks each against
# tests/tools/families/reference.py).
for fam in bitnet-2b4t bitnet-2b4t-bf16 falcon3 llama3-1.58 1bitllm 1bitllm-3b trilm falcon-e qwen3 qwen3-tied; do
  /usr/bin/python3 "$here/families/make_family_checkpoint.py" "$out/family-$fam/hf" --family "$fam" --seed 3
  "$tern" pack "$out/family-$fam/hf" -o "$out/family-$fam/tq2_0.gguf" --type tq2_0 --verify >/dev/null
  "$tern" pack "$out/family-$fam/hf" -o "$out/family-$fam/tq1_0.gguf" --type tq1_0 --verify >/dev/null
done
# Ternary Bonsai's layout: one scale per 128 weights, packed to the group types.
/usr/bin/python3 "$here/families/make_family_checkpoint.py" "$out/family-bonsai/hf" --family bonsai --seed 3
"$tern" pack "$out/family-bonsai/hf" -o "$out/family-bonsai/pq2_0.gguf" --type pq2_0 --verify >/dev/null
"$tern" pack "$out/family-bonsai/hf" -o "$out/family-bonsai/q2_0.gguf" --type q2_0 --verify >/dev/null
# PrismML's PTQ1_0 and the binary Q1_0, written apart from tern's writer
# (tests/tools/gguf_group/convert.py): the same trits, the same model
# binarized (zeros made +1) as PQ2_0 and as Q1_0, and PQ2_0's blocks
# declared as type 42 (PrismML's April 2026 files).
convert="$here/gguf_group/convert.py"
/usr/bin/python3 "$convert" "$out/family-bonsai/pq2_0.gguf" "$out/family-bonsai/ptq1_0.gguf" ptq1_0
/usr/bin/python3 "$convert" "$out/family-bonsai/pq2_0.gguf" "$out/family-bonsai/binary-pq2_0.gguf" binarize
/usr/bin/python3 "$convert" "$out/family-bonsai/binary-pq2_0.gguf" "$out/family-bonsai/q1_0.gguf" q1_0
/usr/bin/python3 "$convert" "$out/family-bonsai/pq2_0.gguf" "$out/family-bonsai/q2_0-g128.gguf" q2_0-g128
# 2B-4T with an FFN of 384 (three 128-weight I2_S blocks, not whole TQ2_0
# blocks): bitnet.cpp's I2_S of it (tests/model/test_foreign_gguf.cpp).
/usr/bin/python3 "$here/families/make_family_checkpoint.py" "$out/family-bitnet-2b4t-i384/hf" --family bitnet-2b4t \
  --seed 3 --intermediate 384
"$tern" pack "$out/family-bitnet-2b4t-i384/hf" -o "$out/family-bitnet-2b4t-i384/tq2_0.gguf" --verify >/dev/null
# A Q6_K head, the type llama-quantize gives heads by default: llama.cpp's
# perplexity of it is a golden (tests/model/test_llamacpp_agreement.cpp).
"$tern" pack "$out/family-llama3-1.58/hf" -o "$out/family-llama3-1.58/q6_k-head.gguf" --output-type q6_k \
  --verify >/dev/null
# Fairy2i: a tiny LLaMA-2-layout BF16 checkpoint with the quantizer's edge
# cases planted, packed as W2 and with one stage (tests/model/test_fairy2i.cpp).
/usr/bin/python3 "$here/fairy2i/make_checkpoint.py" "$out/fairy2i/hf" --seed 5
"$tern" pack "$out/fairy2i/hf" -o "$out/fairy2i/w2.gguf" --fairy2i --verify >/dev/null
"$tern" pack "$out/fairy2i/hf" -o "$out/fairy2i/w1.gguf" --fairy2i --fairy2i-stages 1 --verify >/dev/null
