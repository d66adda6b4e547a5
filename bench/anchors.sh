#!/usr/bin/env bash
# tern against ik_llama.cpp on the same weights, in one run (issue 11's
# anchors). ik has no TQ1_0/TQ2_0, so the Hugging Face checkpoint that
# `tern pack` made tern's file from is written as F16 in ik's `bitnet`
# layout (bench/hf_to_ik_gguf.py) and quantized by ik's own llama-quantize
# to IQ2_BN and IQ2_BN_R4, the token embeddings (= ik's head) kept in the
# type of tern's head. Then `tern bench` and ik's `llama-bench` (-fa 0 and 1)
# alternate for ROUNDS rounds with the same -p/-n/-t/-r, and each line
# prints tok/s and tern's ratio to it.
#
# With VLUT (a vlut.cpp build directory) and VLUT_MODELS (its files of the
# same checkpoint, made by its own converter and llama-quantize: see
# docs/studies/2026-11-27-vlut-anchor.md), vlut's `llama-bench` runs in the same
# rounds (-fa 0 and 1, OMP_WAIT_POLICY=passive as well as its default).
#
# usage: IK=ik_llama.cpp/build bench/anchors.sh HF_DIR TERN_MODEL.gguf [WORKDIR]
#   env: TERN (build/tern), P (128), N (64), T (1,2), R (3), ROUNDS (2),
#        IK_GGUF_PY (IK/../gguf-py), HEAD_TYPE (ik's token embeddings, which
#        are its head; by default the type of tern's head as `tern info`
#        lists it, so a file packed with `--output-type q6_k` meets ik's
#        Q6_K head and both sides read the same head bytes),
#        VLUT, VLUT_MODELS (space-separated paths)
# Build ik as its README says, natively: cmake -DGGML_NATIVE=ON, targets
# llama-bench and llama-quantize. Nothing here goes into tern's build.
set -euo pipefail
hf=$1
tern_model=$2
work=${3:-anchors-work}
: "${IK:?set IK to the build directory of ik_llama.cpp}"
tern=${TERN:-build/tern}
P=${P:-128} N=${N:-64} T=${T:-1,2} R=${R:-3} ROUNDS=${ROUNDS:-2}
# tern's head: output.weight, or the token embeddings it is tied to.
if [[ -z ${HEAD_TYPE:-} ]]; then
  HEAD_TYPE=$("$tern" info "$tern_model" | awk '$1 == "output.weight" { o = $2 } $1 == "token_embd.weight" { e = $2 }
                                               END { print tolower(o != "" ? o : e) }')
  [[ -n $HEAD_TYPE ]] || { echo "anchors.sh: $tern_model: no output.weight or token_embd.weight in 'tern info'" >&2; exit 1; }
fi
gguf_py=${IK_GGUF_PY:-$IK/../gguf-py}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"

f16=$work/ik-f16.gguf
[[ -s $f16 ]] || /usr/bin/python3 "$here/hf_to_ik_gguf.py" "$hf" "$f16" --gguf-py "$gguf_py"
# ik's files are named by head type, so a work directory serves both heads.
for q in iq2_bn iq2_bn_r4; do
  out=$work/ik-$q-$HEAD_TYPE.gguf
  [[ -s $out ]] || "$IK/bin/llama-quantize" --token-embedding-type "$HEAD_TYPE" "$f16" "$out.tmp" "$q" >"$work/quantize-$q-$HEAD_TYPE.log" 2>&1
  [[ -s $out ]] || mv "$out.tmp" "$out"
done

# One CSV line per (threads, test) -> "threads test t/s", from either tool's
# CSV (both name the columns n_threads, n_prompt, n_gen, avg_ts; ik's has
# quoted fields with commas, hence a real CSV reader).
pick() {
  /usr/bin/python3 -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    t = "pp" + r["n_prompt"] if int(r["n_prompt"]) > 0 else "tg" + r["n_gen"]
    print(r["n_threads"], t, "%.2f" % float(r["avg_ts"]))'
}

results=$work/results.txt
: >"$results"
for round in $(seq "$ROUNDS"); do
  "$tern" bench -m "$tern_model" -p "$P" -n "$N" -t "$T" -r "$R" -o csv 2>/dev/null | pick |
    sed "s/^/$round tern /" >>"$results"
  for q in iq2_bn iq2_bn_r4; do
    for fa in 0 1; do
      "$IK/bin/llama-bench" -m "$work/ik-$q-$HEAD_TYPE.gguf" -p "$P" -n "$N" -t "$T" -r "$R" -fa "$fa" -o csv 2>/dev/null |
        pick | sed "s/^/$round ik-$q-fa$fa /" >>"$results"
    done
  done
  for v in ${VLUT_MODELS:-}; do
    name=$(basename "$v" .gguf)
    name=vlut-${name#vlut-}
    for fa in 0 1; do
      "$VLUT/bin/llama-bench" -m "$v" -p "$P" -n "$N" -t "$T" -r "$R" -fa "$fa" -o csv 2>/dev/null |
        pick | sed "s/^/$round $name-fa$fa /" >>"$results"
      # Its OpenMP barriers spin; passive waits help it on a shared machine.
      OMP_WAIT_POLICY=passive "$VLUT/bin/llama-bench" -m "$v" -p "$P" -n "$N" -t "$T" -r "$R" -fa "$fa" -o csv \
        2>/dev/null | pick | sed "s/^/$round $name-fa$fa-passive /" >>"$results"
    done
  done
done

# round engine threads test t/s -> per (threads, test): each engine's t/s by
# round, and tern over the fastest other configuration of the same round.
awk '{ v[$2 " " $3 " " $4, $1] = $5; k[$3 " " $4] = 1; e[$2] = 1; r[$1] = 1 }
     END {
       for (kt in k) {
         printf "threads %s\n", kt
         for (en in e) {
           line = sprintf("  %-26s", en)
           for (i = 1; i in r; ++i) line = line sprintf(" %9.2f", v[en " " kt, i])
           print line
         }
         line = sprintf("  %-26s", "tern / best other")
         for (i = 1; i in r; ++i) {
           best = 0
           for (en in e) if (en != "tern" && v[en " " kt, i] > best) best = v[en " " kt, i]
           line = line sprintf(" %9.2f", best > 0 ? v["tern " kt, i] / best : 0)
         }
         print line
       }
     }' "$results"
