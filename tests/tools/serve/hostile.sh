#!/bin/sh
# ctest: hostile clients against tern serve as a process (hostile.py), on
# a 2 s request deadline and 8 HTTP threads, then SIGTERM: exit 0.
# usage: hostile.sh TERN_EXE CHAT_MODEL WORKDIR [REQUESTS [RSS_GROWTH_KIB]]
set -eu
tern=$1 model=$2 dir=$3 requests=${4:-10000} growth=${5:-4096}
here=$(dirname "$0")
mkdir -p "$dir"
. "$here/lib.sh"
start_serve "$dir/serve.log" "$tern" serve -m "$model" -np 2 --timeout 2 --threads-http 8
/usr/bin/python3 "$here/hostile.py" --port "$port" --pid "$pid" --timeout 2 --http-threads 8 \
  --requests "$requests" --rss-growth-kib "$growth" --chat
stop_serve
