#!/usr/bin/python3
"""A client of tern serve written with Python's standard library only, as a
user's script would be: completions and chat, streamed (server-sent events)
and not, n, stop, logprobs, usage, errors. Exits non-zero on the first
mismatch, printing it.

    client.py --port PORT [--chat]   (--chat: the server's model has a chat template)
"""
import argparse
import http.client
import json
import sys
import time
import urllib.error
import urllib.request


def request(port, method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def stream(port, path, body):
    """The SSE events of a streamed request, as parsed JSON (or "[DONE]")."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    r = conn.getresponse()
    check(r.status == 200, "stream status %d" % r.status)
    check(r.getheader("Content-Type", "").startswith("text/event-stream"), "stream content type")
    events = []
    for raw in r:
        line = raw.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        events.append(data if data == "[DONE]" else json.loads(data))
    conn.close()
    return events


def check(ok, what):
    if not ok:
        print("FAIL:", what)
        sys.exit(1)


def text_of(events, chat):
    out = {}
    for e in events:
        if e == "[DONE]":
            continue
        for c in e.get("choices", []):
            piece = c.get("delta", {}).get("content", "") if chat else c.get("text", "")
            out[c["index"]] = out.get(c["index"], "") + (piece or "")
    return out


def completions(port):
    body = {"prompt": "In the beginning", "max_tokens": 16, "temperature": 0.7, "seed": 3}
    status, whole = request(port, "POST", "/v1/completions", body)
    check(status == 200, "completions status %d %s" % (status, whole))
    check(whole["object"] == "text_completion", "object")
    check(whole["choices"][0]["finish_reason"] in ("stop", "length"), "finish_reason")
    check(whole["usage"]["prompt_tokens"] > 0 and whole["usage"]["total_tokens"] ==
          whole["usage"]["prompt_tokens"] + whole["usage"]["completion_tokens"], "usage")
    events = stream(port, "/v1/completions", dict(body, stream_options={"include_usage": True}))
    check(events[-1] == "[DONE]", "stream ends with [DONE]")
    check(text_of(events, False)[0] == whole["choices"][0]["text"], "streamed text equals the whole response")
    check(events[-2]["usage"]["completion_tokens"] == whole["usage"]["completion_tokens"], "usage chunk")
    # n choices, stop, logprobs.
    status, r = request(port, "POST", "/v1/completions", dict(body, n=2, logprobs=2, max_tokens=6))
    check(status == 200 and len(r["choices"]) == 2, "n=2")
    lp = r["choices"][0]["logprobs"]
    check(len(lp["tokens"]) == len(lp["token_logprobs"]) and len(lp["top_logprobs"][0]) <= 2, "logprobs")
    full = whole["choices"][0]["text"]
    if len(full) > 8:
        stop = full[4:8]
        status, r = request(port, "POST", "/v1/completions", dict(body, stop=[stop]))
        check(r["choices"][0]["text"] == full[:full.find(stop)], "stop string")
        check(r["choices"][0]["finish_reason"] == "stop", "stop finish_reason")
    # Errors are OpenAI error objects with the right status.
    status, r = request(port, "POST", "/v1/completions", {"prompt": 5})
    check(status == 400 and r["error"]["param"] == "prompt", "bad prompt: %d %s" % (status, r))
    status, r = request(port, "GET", "/v1/nowhere")
    check(status == 404 and "message" in r["error"], "404")
    status, r = request(port, "GET", "/v1/models")
    check(status == 200 and r["data"][0]["object"] == "model", "models")
    status, r = request(port, "POST", "/tokenize", {"content": "hello world"})
    check(status == 200 and len(r["tokens"]) > 0, "tokenize")
    status, d = request(port, "POST", "/detokenize", {"tokens": r["tokens"]})
    check(status == 200 and "world" in d["content"], "detokenize")


def chat(port):
    body = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}],
            "max_tokens": 8, "temperature": 0}
    status, whole = request(port, "POST", "/v1/chat/completions", body)
    check(status == 200, "chat status %d %s" % (status, whole))
    check(whole["object"] == "chat.completion" and whole["choices"][0]["message"]["role"] == "assistant", "chat shape")
    events = stream(port, "/v1/chat/completions", body)
    check(events[0]["choices"][0]["delta"].get("role") == "assistant", "first delta has the role")
    check(text_of(events, True)[0] == whole["choices"][0]["message"]["content"], "streamed chat equals whole")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--chat", action="store_true")
    a = ap.parse_args()
    for _ in range(600):  # health answers 503 while the model loads
        try:
            if request(a.port, "GET", "/health")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.05)
    else:
        check(False, "the server never became healthy")
    completions(a.port)
    if a.chat:
        chat(a.port)
    print("ok")


if __name__ == "__main__":
    main()
