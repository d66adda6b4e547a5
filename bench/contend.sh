#!/usr/bin/env bash
# Decode speed when the cores are shared (issue 11, item 3), tok/s of
# `tern generate -n N`: -t 2 alone; -t 2 beside a busy loop pinned to CPU 1;
# two -t 1 processes at once; -t 1 alone. The targets compare the second
# with the first (>= 0.4) and the sum of the third with the first (>= 0.9).
#
# usage: bench/contend.sh MODEL.gguf [N]   (TERN=path/to/tern, default build/tern)
set -euo pipefail
model=$1
n=${2:-64}
tern=${TERN:-build/tern}

speed() {
  "$tern" generate -m "$model" -p "hello" -n "$n" --seed 1 "$@" 2>&1 |
    sed -n 's/^generation: .*(\(.*\) tok\/s)$/\1/p'
}

echo "alone -t 2: $(speed -t 2)"
(while :; do :; done) &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT
taskset -p -c 1 "$busy" >/dev/null
echo "beside a busy loop -t 2: $(speed -t 2)"
kill "$busy"
trap - EXIT
echo "alone -t 2 again: $(speed -t 2)"
a=$(mktemp)
b=$(mktemp)
speed -t 1 >"$a" &
speed -t 1 >"$b"
wait
echo "two -t 1 at once: $(cat "$a") + $(cat "$b")"
rm -f "$a" "$b"
echo "alone -t 1: $(speed -t 1)"
