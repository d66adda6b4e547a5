#!/usr/bin/env bash
# tern serve against ik_llama.cpp's llama-server on the same weights and the
# same load (bench/serve_load.py), alternating for ROUNDS rounds, with `tern
# bench -npl` in the same run as the engine's own figure. ik's file is the
# IQ2_BN that bench/anchors.sh makes from the same checkpoint.
#
# usage: IK=ik_llama.cpp/build bench/serve_anchor.sh TERN_MODEL.gguf IK_MODEL.gguf [WORKDIR]
#   env: TERN (build/tern), NP (8: slots of both servers), CTX (per slot, 512),
#        T (2 threads), ROUNDS (2), CLIENTS (1,8), REQUESTS (4 per client),
#        WORDS (16,64,256: prompt lengths, cycled), MAX_TOKENS (64)
set -euo pipefail
tern_model=$1
ik_model=$2
work=${3:-serve-anchor-work}
: "${IK:?set IK to the build directory of ik_llama.cpp}"
tern=${TERN:-build/tern}
NP=${NP:-8} CTX=${CTX:-512} T=${T:-2} ROUNDS=${ROUNDS:-2} CLIENTS=${CLIENTS:-1,8} REQUESTS=${REQUESTS:-4}
WORDS=${WORDS:-16,64,256} MAX_TOKENS=${MAX_TOKENS:-64}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
# One port each: llama-server's sockets (SO_REUSEPORT) left in TIME_WAIT
# keep a server without that option off its port for a minute.
tern_port=18437 ik_port=18438

wait_ready() {  # the server at $port answers /health with 200
  for _ in $(seq 1200); do
    /usr/bin/python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" \
      "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "serve_anchor: no server on $port" >&2
  return 1
}

load() {  # label: runs the load on the server at $port
  /usr/bin/python3 "$here/serve_load.py" --url "http://127.0.0.1:$port" --clients "$CLIENTS" \
    --requests "$REQUESTS" --prompt-words "$WORDS" --max-tokens "$MAX_TOKENS" --label "$1" \
    --json "$work/$1-$round.json" | tail -n +2 || true
}

# Idle CPU of a server: its user+system ticks over 5 s with no request.
idle_cpu() {
  local pid=$1 a b
  a=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  sleep 5
  b=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo "$(( b - a )) ticks of $(getconf CLK_TCK)/s over 5 s"
}

# Another server on a port would take some of the connections (and the
# load's figures with them).
for port in $tern_port $ik_port; do
  if /usr/bin/python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$port" 2>/dev/null; then
    echo "serve_anchor: port $port is in use" >&2
    exit 1
  fi
done
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null || true' EXIT

printf '%-10s %3s %4s %4s %7s %8s %8s %9s %9s %9s %9s  (ms)\n' engine C req err "wall s" "gen tok" "tok/s" \
  "TTFT p50" "TTFT p99" "TPOT p50" "TPOT p99"
for round in $(seq "$ROUNDS"); do
  port=$tern_port
  "$tern" serve -m "$tern_model" --port "$port" -np "$NP" -c $((NP * CTX)) -t "$T" >"$work/tern-$round.log" 2>&1 &
  pid=$!
  wait_ready
  load tern
  echo "tern idle: $(idle_cpu $pid)"
  kill -TERM $pid
  wait $pid || true

  port=$ik_port
  "$IK/bin/llama-server" -m "$ik_model" --port "$port" -np "$NP" -c $((NP * CTX)) -t "$T" -cb \
    >"$work/ik-$round.log" 2>&1 &
  pid=$!
  wait_ready
  load ik
  echo "ik idle: $(idle_cpu $pid)"
  kill -TERM $pid
  wait $pid || true

  "$tern" bench -m "$tern_model" -p 128 -n "$MAX_TOKENS" -npl "1,$NP" -t "$T" -r 1 2>/dev/null |
    grep -E "tg|pp" | sed "s/^/bench $round: /"
done
