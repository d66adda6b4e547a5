#!/bin/sh
# ctest: tern serve as a process. Starts it on a free port with MODEL, runs
# client.py (Python's standard library) against it, then a stream that
# SIGTERM interrupts: the stream must end with a finish_reason and
# [DONE], and the server exit 0.
# usage: smoke.sh TERN_EXE MODEL [--chat] WORKDIR
set -eu
tern=$1
model=$2
chat=""
[ "$3" = "--chat" ] && { chat=--chat; shift; }
dir=$3
here=$(dirname "$0")
mkdir -p "$dir"
. "$here/lib.sh"
start_serve "$dir/serve.log" "$tern" serve -m "$model" -np 2
/usr/bin/python3 "$here/client.py" --port "$port" $chat
# A stream cut short by SIGTERM still ends properly. (No stream.txt of an
# earlier run: the wait below would find its text at once.)
rm -f "$dir/stream.txt"
/usr/bin/python3 - "$port" >"$dir/stream.txt" <<'EOF' &
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
c.request("POST", "/v1/completions", json.dumps({"prompt": "And", "max_tokens": 100000, "ignore_eos": True, "stream": True}),
          {"Content-Type": "application/json"})
for line in c.getresponse():
    print(line.decode().rstrip(), flush=True)
EOF
reader=$!
for _ in $(seq 200); do
  grep -q '"text"' "$dir/stream.txt" 2>/dev/null && break
  sleep 0.05
done
stop_serve
wait $reader
grep -q '"finish_reason":"length"' "$dir/stream.txt" || { echo "no finish_reason in the cut stream"; exit 1; }
tail -n 2 "$dir/stream.txt" | grep -q 'data: \[DONE\]' || { echo "the cut stream did not end with [DONE]"; exit 1; }
grep -q "stopped" "$log" || { echo "no stop in the log"; cat "$log"; exit 1; }
echo "smoke ok"
