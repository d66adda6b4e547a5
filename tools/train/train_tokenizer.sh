#!/bin/sh
# SentencePiece BPE on the training split only (Revelation and val excluded).
# BPE rather than unigram: llama.cpp's SPM tokenizer reproduces BPE by merging
# by piece score.  Identity normalization + no whitespace squeezing so the
# text round-trips byte for byte; byte_fallback covers "\n" and anything unseen.
# Each input line is one verse (< 600 bytes), so the defaults for
# max_sentence_length suffice; input_sentence_size=0 uses every line.
set -e
BUILD=${1:-tools/train/build}
OUT=${2:-models/kjv-bitnet-6m}
mkdir -p "$OUT"
spm_train --input="$BUILD/train.txt" --model_prefix="$BUILD/tokenizer" \
  --model_type=bpe --vocab_size=4096 --byte_fallback=true \
  --normalization_rule_name=identity --remove_extra_whitespaces=false \
  --character_coverage=1.0 --split_digits=true --add_dummy_prefix=true \
  --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 \
  --input_sentence_size=0 --shuffle_input_sentence=false \
  --num_threads=1 --minloglevel=1
cp "$BUILD/tokenizer.model" "$OUT/tokenizer.model"
