#!/usr/bin/env bash
# How fast the ternary loop reads its weights against the output head, in
# one decode run: `perf record` of `tern bench -p 0 -n N`, each stream's
# share of the samples over its bytes per token, and their ratio. Both
# streams run in the same seconds, so the ratio holds still on a guest whose
# tok/s and read roof drift 10-20% between runs; it is how the two-stream
# decode loops were measured (git show d2934d8:docs/PERFORMANCE.md, "as two streams"). 1.00 means
# the ternary loop reads a byte as fast as the head does.
#
# The head's bytes are the file's (tern info); the ternary loop's are what
# `tern bench` counts for one token in the kernel set's own layout (a set
# that repacks reads 64 bytes per 256 weights, not TQ2_0's 66), less the
# head: that leaves the norms and one position of the KV cache in, under
# 1% of the ternary bytes at real shapes.
#
# usage: bench/streams.sh MODEL.gguf [THREADS] [KERNEL] [N]
#        (TERN=path/to/tern, default build/tern; needs linux-perf)
set -euo pipefail
model=$1
threads=${2:-1}
kernel=${3:-}
n=${4:-64}
tern=${TERN:-build/tern}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The head: output.weight, else the tied embeddings.
"$tern" info "$model" >"$work/info"
read -r head_bytes head_type < <(awk '
  $1 == "output.weight" { ob = $NF; ot = $2 }
  $1 == "token_embd.weight" { eb = $NF; et = $2 }
  END { if (ob) print ob, ot; else print eb, et }' "$work/info")
case $head_type in
  # The row loop's symbol, or its run() where GCC leaves that out of line.
  F16) head_sym='DenseRows(<\(tern::gguf::TensorType\)1, 2>::run|, 2, \(tern::gguf::TensorType\)1>)' ;;
  BF16) head_sym='DenseRows(<\(tern::gguf::TensorType\)30, 2>::run|, 2, \(tern::gguf::TensorType\)30>)' ;;
  F32) echo "streams.sh: $model: an F32 head shares its kernel with attention; not measured" >&2; exit 1 ;;
  Q8_0) head_sym='DenseQ8Rows(<2>::run|, 2>)' ;;
  Q6_K) head_sym='DenseQ6Rows(<2>::run|, 2>)' ;;
  *) echo "streams.sh: $model: head type $head_type not known here" >&2; exit 1 ;;
esac

args=(bench -m "$model" -p 0 -t "$threads" --no-roof)
[[ -n $kernel ]] && args+=(--kernel "$kernel")
# bytes_per_token, the 14th CSV field, of a one-token run.
per_token=$("$tern" "${args[@]}" -n 1 -r 1 -o csv 2>/dev/null | awk -F'"?,"?' 'NR == 2 { print $14 }')
tern_bytes=$((per_token - head_bytes))
args+=(-n "$n" -r 3)
perf record -q -o "$work/perf.data" "$tern" "${args[@]}" >"$work/bench" 2>/dev/null
perf report -i "$work/perf.data" --no-children --stdio 2>/dev/null | grep -v '^#' >"$work/report"

share() { grep -E "$1" "$work/report" | awk '{ s += $1 } END { printf "%.2f", s + 0 }'; }
tern_share=$(share 'decode_groups|gemm_i8|rows_i8|code_segment|tile_rows|rows_dot|gemv_rows|pair_sums')
head_share=$(share "$head_sym")
tps=$(awk -F'|' '/tg[0-9]/ { gsub(/ /, "", $8); print $8 }' "$work/bench")
awk -v ts="$tern_share" -v hs="$head_share" -v tb="$tern_bytes" -v hb="$head_bytes" -v tps="$tps" \
    -v ht="$head_type" 'BEGIN {
  printf "tg: %s tok/s\n", tps
  printf "ternary loop: %5.2f%% of samples, %7.1f MB per token\n", ts, tb / 1e6
  printf "head (%s):   %5.2f%% of samples, %7.1f MB per token\n", ht, hs, hb / 1e6
  if (ts > 0 && hs > 0) printf "time per byte, ternary loop over head: %.3f\n", (ts / tb) / (hs / hb)
  else print "a stream has no samples: unknown kernel symbols?"
}'
