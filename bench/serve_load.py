#!/usr/bin/python3
"""Load on an OpenAI-compatible server: C concurrent streaming clients, M
requests each, prompts of mixed lengths; errors, time to first token, time
per output token and aggregate tokens/s. Works against tern serve and
llama-server alike (both take `ignore_eos`, so every request generates
--max-tokens tokens and the engines do the same work).

  bench/serve_load.py --url http://127.0.0.1:8080 --clients 1,8 --requests 4 \
      --prompt-words 16,64,256 --max-tokens 64

Each --clients value is a separate load, in order, after --warmup requests;
the table has one row per load, so ratios between rows come from one run.
Standard library only (Python 3.9+).
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse

WORDS = ("the of and to in that was he for it with as his on be at by had not are but from or have an they which "
         "one you were her all she there would their we him been has when who will more no if out so said what up "
         "its about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much your "
         "way well down should because each just those people how too little state good very make world still own "
         "see men work long get here between both life being under never day same another know while last might us "
         "great old year off come since against go came right used take three").split()


def prompt_text(words, rng, tag):
    # A distinct first word per request, so no two prompts share a long prefix.
    return f"Request {tag}: " + " ".join(rng.choice(WORDS) for _ in range(words))


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Result:
    def __init__(self):
        self.ok = False
        self.error = ""
        self.ttft = None  # seconds from sending to the first generated text
        self.tpot = None  # seconds per output token after the first
        self.tokens = 0
        self.start = self.end = 0.0


def one_request(args, host, port, prompt, seed):
    r = Result()
    body = {"max_tokens": args.max_tokens, "stream": True, "seed": seed, "temperature": args.temperature,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    if args.model:
        body["model"] = args.model
    if args.chat:
        body["messages"] = [{"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = prompt
        path = "/v1/completions"
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    r.start = time.monotonic()
    chunks = 0
    last = None
    try:
        c = http.client.HTTPConnection(host, port, timeout=args.timeout)
        c.request("POST", path, json.dumps(body), headers)
        resp = c.getresponse()
        if resp.status != 200:
            r.error = f"HTTP {resp.status}: {resp.read(300)!r}"
            return r
        done = False
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                done = True
                break
            j = json.loads(data)
            if j.get("usage"):
                r.tokens = j["usage"].get("completion_tokens", r.tokens)
            for ch in j.get("choices") or []:
                # A chunk per token, its text possibly empty (a token with no
                # text of its own); a chat stream's opening role-only chunk
                # and the finish chunk are not tokens.
                delta = ch.get("delta") or {}
                if ch.get("finish_reason") is not None:
                    continue
                content = ch.get("text") if "text" in ch else delta.get("content")
                if content is None or (content == "" and "role" in delta):
                    continue
                now = time.monotonic()
                if r.ttft is None:
                    r.ttft = now - r.start
                last = now
                chunks += 1
        c.close()
        if not done:
            r.error = "the stream ended without [DONE]"
            return r
    except (OSError, http.client.HTTPException, ValueError) as e:
        r.error = f"{type(e).__name__}: {e}"
        return r
    r.end = time.monotonic()
    if r.tokens == 0:
        r.tokens = chunks  # a server without include_usage: one chunk a token
    if r.ttft is None:
        r.error = "no token streamed"
        return r
    if r.tokens > 1:
        r.tpot = (last - r.start - r.ttft) / (r.tokens - 1)
    r.ok = True
    return r


def run_load(args, host, port, clients, lengths):
    results = []
    lock = threading.Lock()

    def client(ci):
        rng = random.Random(args.seed * 1000003 + ci)
        for k in range(args.requests):
            words = lengths[(ci + k) % len(lengths)]
            res = one_request(args, host, port, prompt_text(words, rng, f"{clients}.{ci}.{k}"),
                              args.seed + ci * args.requests + k)
            with lock:
                results.append(res)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ok = [r for r in results if r.ok]
    errors = [r.error for r in results if not r.ok]
    ttft = [r.ttft for r in ok]
    tpot = [r.tpot for r in ok if r.tpot is not None]
    tokens = sum(r.tokens for r in ok)
    return {
        "clients": clients, "requests": len(results), "errors": len(errors), "first_errors": errors[:3],
        "wall_s": wall, "generated_tokens": tokens, "tokens_per_s": tokens / wall if wall > 0 else 0.0,
        "ttft_p50_ms": 1000 * percentile(ttft, 50), "ttft_p99_ms": 1000 * percentile(ttft, 99),
        "tpot_p50_ms": 1000 * percentile(tpot, 50), "tpot_p99_ms": 1000 * percentile(tpot, 99),
        "tpot_mean_ms": 1000 * statistics.fmean(tpot) if tpot else float("nan"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--clients", default="1,8", help="comma-separated loads, each C concurrent clients")
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--prompt-words", default="16,64,256", help="prompt lengths in words, cycled")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chat", action="store_true", help="/v1/chat/completions instead of /v1/completions")
    ap.add_argument("--model", default="", help="the request's model field")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--warmup", type=int, default=1, help="requests before the loads")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--label", default="", help="a name for the rows (the engine)")
    ap.add_argument("--json", default="", help="also write the rows to this file")
    args = ap.parse_args()
    u = urllib.parse.urlparse(args.url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    lengths = [int(x) for x in args.prompt_words.split(",")]
    for i in range(args.warmup):
        r = one_request(args, host, port, prompt_text(lengths[0], random.Random(i), f"warmup{i}"), i)
        if not r.ok:
            sys.exit(f"serve_load: the warmup request failed: {r.error}")
    rows = []
    print(f"{'engine':<10} {'C':>3} {'req':>4} {'err':>4} {'wall s':>7} {'gen tok':>8} {'tok/s':>8} "
          f"{'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'TPOT p99':>9}  (ms)")
    for c in [int(x) for x in args.clients.split(",")]:
        row = run_load(args, host, port, c, lengths)
        row["engine"] = args.label
        rows.append(row)
        print(f"{args.label:<10} {c:>3} {row['requests']:>4} {row['errors']:>4} {row['wall_s']:>7.2f} "
              f"{row['generated_tokens']:>8} {row['tokens_per_s']:>8.2f} {row['ttft_p50_ms']:>9.1f} "
              f"{row['ttft_p99_ms']:>9.1f} {row['tpot_p50_ms']:>9.1f} {row['tpot_p99_ms']:>9.1f}", flush=True)
        for e in row["first_errors"]:
            print("  error:", e, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(1 if any(r["errors"] for r in rows) else 0)


if __name__ == "__main__":
    main()
