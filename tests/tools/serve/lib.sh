# Sourced by the serve test scripts: start_serve LOG TERN_EXE ARGS... starts
# `tern serve ARGS... --port 0` in the background, waits for the port it
# logs, and sets $pid and $port (the server is killed when the script exits).
start_serve() {
  log=$1
  shift
  # A log left by an earlier run would give its port: the background job
  # truncates the file only once it runs, which may be after the first look.
  rm -f "$log"
  "$@" --port 0 >"$log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  port=""
  for _ in $(seq 200); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "no port in the log:"; cat "$log"; exit 1; }
}

# stop_serve: SIGTERM, and the server must exit 0.
stop_serve() {
  kill -TERM $pid
  status=0
  wait $pid || status=$?
  trap - EXIT
  [ "$status" -eq 0 ] || { echo "serve exited $status"; cat "$log"; exit 1; }
}
