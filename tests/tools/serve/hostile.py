#!/usr/bin/python3
"""Hostile clients against a running tern serve, each beside a well-behaved
client that must be served throughout (Python's standard library only).

  hostile.py --port P --pid PID --timeout T --http-threads H [--chat] [--requests N]

The server must run with `--timeout T --threads-http H`. Checks, in order:
slowloris (2H connections trickling a byte every T/4 s, reconnecting when
cut), a stream dropped mid-way (its slot free at once, by /metrics), 1000
connections opened and dropped (half reset), bodies of 10 MB (with and
without Content-Length), a chat request of 10 000 messages (with --chat),
and N requests of every kind with the server's resident memory (PID's
VmRSS) flat across them. Prints one line per check and its figures; exits
non-zero at the first that fails.
"""
import argparse
import http.client
import json
import resource
import socket
import struct
import sys
import threading
import time

ARGS = None


def fail(what):
    print("FAIL:", what, flush=True)
    sys.exit(1)


def conn(timeout=30):
    return http.client.HTTPConnection("127.0.0.1", ARGS.port, timeout=timeout)


def request(method, path, body=None, timeout=30, c=None):
    own = c is None
    c = c or conn(timeout)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body if isinstance(body, (bytes, str)) or body is None else json.dumps(body), headers)
    r = c.getresponse()
    data = r.read()
    if own:
        c.close()
    return r.status, data


def good_completion(max_tokens=4, c=None):
    status, data = request("POST", "/v1/completions", {"prompt": "And", "max_tokens": max_tokens, "seed": 1}, c=c)
    if status != 200:
        fail(f"a well-behaved request got {status}: {data[:200]!r}")
    return json.loads(data)


def metric(name):
    _, data = request("GET", "/metrics")
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail(f"/metrics has no {name}")


def rss_kib():
    with open(f"/proc/{ARGS.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS")


def slowloris():
    stop = threading.Event()
    lifetimes = []
    lock = threading.Lock()
    trickle = ARGS.timeout / 4

    def attacker():
        while not stop.is_set():
            s = socket.create_connection(("127.0.0.1", ARGS.port))
            t0 = time.monotonic()
            head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            try:
                for i in range(10 ** 6):
                    if stop.wait(trickle):
                        break
                    s.sendall(head[i % len(head):i % len(head) + 1] if i < len(head) else b"X")
            except OSError:
                with lock:
                    lifetimes.append(time.monotonic() - t0)
            s.close()

    attackers = [threading.Thread(target=attacker, daemon=True) for _ in range(2 * ARGS.http_threads)]
    for t in attackers:
        t.start()
    time.sleep(0.5)
    worst = 0.0
    served = 0
    t_end = time.monotonic() + 3 * ARGS.timeout
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        good_completion()
        worst = max(worst, time.monotonic() - t0)
        served += 1
    stop.set()
    for t in attackers:
        t.join()
    bound = 1.2 * ARGS.timeout + 2
    if not lifetimes:
        fail("slowloris: no trickling connection was ever cut")
    if max(lifetimes) > bound + ARGS.timeout:
        fail(f"slowloris: a trickling connection lived {max(lifetimes):.1f} s (deadline {ARGS.timeout} s)")
    if worst > bound:
        fail(f"slowloris: a well-behaved request waited {worst:.1f} s")
    print(f"ok slowloris: {len(attackers)} trickling connections on {ARGS.http_threads} HTTP threads, "
          f"{len(lifetimes)} cut after {min(lifetimes):.1f}-{max(lifetimes):.1f} s; {served} good requests, "
          f"the slowest {worst:.2f} s", flush=True)


def dropped_stream():
    c = conn()
    c.request("POST", "/v1/completions",
              json.dumps({"prompt": "And", "max_tokens": 100000, "ignore_eos": True, "stream": True}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    got = 0
    while got < 3:
        line = r.fp.readline()
        if line.startswith(b"data: "):
            got += 1
    if metric("tern_slots_busy") < 1:
        fail("dropped stream: no busy slot while streaming")
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.monotonic()
    while metric("tern_slots_busy") > 0:
        if time.monotonic() - t0 > 5:
            fail("dropped stream: its slot was still busy 5 s after the client left")
        time.sleep(0.01)
    print(f"ok dropped stream: slot free {1000 * (time.monotonic() - t0):.0f} ms after the client left", flush=True)
    good_completion()


def thousand_connections():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    socks = []
    for i in range(1000):
        s = socket.create_connection(("127.0.0.1", ARGS.port))
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
        if i % 3 == 0:
            s.sendall(b"GET /v1/mod")  # half a request line
        socks.append(s)
    for s in socks:
        s.close()
    t0 = time.monotonic()
    good_completion()
    print(f"ok 1000 connections opened and dropped: the next request served in "
          f"{time.monotonic() - t0:.2f} s", flush=True)


def big_bodies():
    body = b'{"prompt": "' + b"a" * (10 << 20) + b'"}'
    for chunked in (False, True):
        s = socket.create_connection(("127.0.0.1", ARGS.port), timeout=30)
        head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % len(body)
        status = None
        try:
            s.sendall(head)
            if chunked:
                for i in range(0, len(body), 1 << 16):
                    part = body[i:i + (1 << 16)]
                    s.sendall(b"%x\r\n%s\r\n" % (len(part), part))
                s.sendall(b"0\r\n\r\n")
            else:
                s.sendall(body)
            status = s.recv(64).split(b" ")[1]
        except OSError:
            status = b"reset"  # the server stopped reading past --max-body: acceptable
        s.close()
        if status not in (b"413", b"reset"):
            fail(f"10 MB body ({'chunked' if chunked else 'Content-Length'}): answered {status!r}, not 413")
        good_completion()
    print("ok 10 MB bodies (Content-Length and chunked): 413, and served after", flush=True)


def many_messages():
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(10000)]
    status, data = request("POST", "/v1/chat/completions", {"messages": msgs, "max_tokens": 1})
    err = json.loads(data).get("error", {})
    if status != 400 or err.get("code") != "context_length_exceeded":
        fail(f"10 000 messages: {status} {data[:200]!r}")
    status, data = request("POST", "/v1/chat/completions", {"messages": msgs + [{"role": "user", "content": "x"}]})
    if status != 400:
        fail(f"10 001 messages: {status} {data[:200]!r}")
    good_completion()
    print(f"ok 10 000 messages: 400 context_length_exceeded; 10 001: 400 ({json.loads(data)['error']['param']})",
          flush=True)


def memory_flat():
    kinds = [
        lambda c: good_completion(2, c),
        lambda c: request("POST", "/v1/completions", {"prompt": "And", "max_tokens": 2, "stream": True}, c=c),
        lambda c: request("POST", "/v1/completions", b"{not json", c=c),
        lambda c: request("POST", "/v1/completions", {"prompt": 7}, c=c),
        lambda c: request("POST", "/tokenize", {"content": "In the beginning"}, c=c),
        lambda c: request("GET", "/nowhere", c=c),
    ]

    def run(n, offset):
        c = conn()
        for i in range(n):
            try:
                kinds[(i + offset) % len(kinds)](c)
            except (OSError, http.client.HTTPException):
                c.close()  # the server closed a keep-alive connection: open another
                c = conn()
        c.close()

    def runs(n):
        ts = [threading.Thread(target=run, args=(n // 2, k), daemon=True) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    runs(ARGS.requests // 10)  # warm: allocator pools and caches at their working size
    before = rss_kib()
    t0 = time.monotonic()
    runs(ARGS.requests)
    after = rss_kib()
    growth = after - before
    # Flat: no more than --rss-growth-kib over the run (4 MiB: a leak of a
    # few hundred bytes a request would show as several MiB).
    if ARGS.rss_growth_kib >= 0 and growth > ARGS.rss_growth_kib:
        fail(f"memory over {ARGS.requests} requests: {before} -> {after} KiB")
    print(f"ok memory over {ARGS.requests} requests ({time.monotonic() - t0:.1f} s): VmRSS {before} -> {after} KiB",
          flush=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("--http-threads", type=int, required=True)
    ap.add_argument("--chat", action="store_true")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--rss-growth-kib", type=int, default=4096,
                    help="-1: report only (under ASan, whose quarantine holds freed memory)")
    ARGS = ap.parse_args()
    slowloris()
    dropped_stream()
    thousand_connections()
    big_bodies()
    if ARGS.chat:
        many_messages()
    memory_flat()
    status, _ = request("GET", "/health")
    if status != 200:
        fail(f"/health {status} at the end")
    print("hostile ok")


if __name__ == "__main__":
    main()
