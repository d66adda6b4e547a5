#!/bin/sh
# .ci/run: tern serve with an API key, checked by the official openai npm
# client (tests/tools/serve/openai; `npm ci` there first).
# usage: openai.sh TERN_EXE MODEL WORKDIR
set -eu
tern=$1
model=$2
dir=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
. "$here/lib.sh"
start_serve "$dir/serve.log" "$tern" serve -m "$model" -np 2 --api-key ci-key
for _ in $(seq 600); do
  /usr/bin/python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)" \
    "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.05
done
node "$here/openai/check.mjs" "$port" ci-key
stop_serve
