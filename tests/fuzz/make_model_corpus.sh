#!/bin/sh
# Seeds of the checkpoint and model fuzzers, from a tiny checkpoint (dim 64,
# one layer, the 512-piece test tokenizer, F16; its float twin packed with
# --fairy2i; a dim-256 one with a Q6_K head and embedding; Ternary Bonsai's
# layout as PQ2_0, Q2_0, PTQ1_0 and Q1_0): corpus/safetensors,
# corpus/hf_config, corpus/sentencepiece and corpus/model.
# usage: tests/fuzz/make_model_corpus.sh build/tern
set -eu
tern=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/../tools/make_tiny_checkpoint.py" "$tmp/ck" --hidden 64 --intermediate 96 --layers 1 \
  --heads 2 --kv-heads 1 --dtype f16 --seed 3 >/dev/null
/usr/bin/python3 "$here/../tools/make_tiny_checkpoint.py" "$tmp/dense" --hidden 64 --intermediate 96 --layers 1 \
  --heads 2 --kv-heads 1 --dtype f16 --mode dense --seed 3 >/dev/null
/usr/bin/python3 "$here/../tools/families/make_family_checkpoint.py" "$tmp/falcon" --family falcon3 --seed 3 >/dev/null
/usr/bin/python3 "$here/../tools/families/make_family_checkpoint.py" "$tmp/b2" --family bitnet-2b4t --seed 3 >/dev/null
c=$here/corpus
mkdir -p "$c/safetensors" "$c/hf_config" "$c/sentencepiece" "$c/model"
cp "$tmp/ck/model.safetensors" "$c/safetensors/tiny-f16.safetensors"
cp "$tmp/ck/config.json" "$c/hf_config/llama-bitnet.json"
cp "$tmp/falcon/config.json" "$c/hf_config/falcon3.json"
cp "$tmp/b2/config.json" "$c/hf_config/bitnet-2b4t.json"
cp "$tmp/ck/tokenizer.model" "$c/sentencepiece/tiny.model"
"$tern" pack "$tmp/ck" -o "$c/model/tiny-tq2_0.gguf" --type tq2_0 >/dev/null
"$tern" pack "$tmp/ck" -o "$c/model/tiny-tq1_0.gguf" --type tq1_0 >/dev/null
# Q6_K head and embedding (rows of 256: the smallest width Q6_K holds).
/usr/bin/python3 "$here/../tools/make_tiny_checkpoint.py" "$tmp/q6" --hidden 256 --intermediate 256 --layers 1 \
  --heads 2 --kv-heads 1 --dtype f16 --untied --seed 3 >/dev/null
"$tern" pack "$tmp/q6" -o "$c/model/tiny-q6_k-head.gguf" --output-type q6_k --token-embedding-type q6_k >/dev/null
# Fairy2i: FAIRY2I linears and head, tern.scale.<tensor> per stage.
"$tern" pack "$tmp/dense" -o "$c/model/tiny-fairy2i.gguf" --fairy2i >/dev/null
# Group-scaled Ternary Bonsai layouts: tern's PQ2_0 and Q2_0 packs, and
# PrismML's PTQ1_0 and Q1_0 (the loader converts them to PQ2_0, the group
# kernels' type), written apart from tern's writer.
/usr/bin/python3 "$here/../tools/families/make_family_checkpoint.py" "$tmp/bonsai" --family bonsai --seed 3 >/dev/null
"$tern" pack "$tmp/bonsai" -o "$c/model/bonsai-pq2_0.gguf" --type pq2_0 >/dev/null
"$tern" pack "$tmp/bonsai" -o "$c/model/bonsai-q2_0.gguf" --type q2_0 >/dev/null
cp "$c/model/bonsai-pq2_0.gguf" "$tmp/bonsai.gguf"
/usr/bin/python3 "$here/../tools/gguf_group/convert.py" "$tmp/bonsai.gguf" "$c/model/bonsai-ptq1_0.gguf" ptq1_0
/usr/bin/python3 "$here/../tools/gguf_group/convert.py" "$tmp/bonsai.gguf" "$tmp/binary.gguf" binarize
/usr/bin/python3 "$here/../tools/gguf_group/convert.py" "$tmp/binary.gguf" "$c/model/bonsai-q1_0.gguf" q1_0
# A safetensors file small enough for the fuzzer to mutate its header well.
/usr/bin/python3 - "$c/safetensors/two.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
                "__metadata__": {"format": "pt"}}).encode()
body = struct.pack("<4f", 1, -2, 0.5, 3) + bytes([0x80, 0x3f, 0, 0xc0, 0x49, 0x40])
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + body)
PY
