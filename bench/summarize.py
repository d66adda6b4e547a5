#!/usr/bin/python3
"""Markdown tables from tern_bench_kernels --benchmark_format=json output.

usage: summarize.py [--best MODE CACHE | --means CACHE] [results.json]
       (stdin if no file or "-")

Prints the read roof per thread count, then one row per GEMV benchmark:
GB/s of weight bytes read, G weights/s, and % of the roof: for cold runs
the plain read paired with each call (pct_roof), else the roof/read
benchmark at the same thread count in the same run. Rows are grouped so the kernel sets
sit next to each other for each format, shape, mode, threads and cache state.
With --benchmark_repetitions the median aggregate is used.

--best MODE CACHE: per shape and thread count, the fastest kernel of each
format in that activation mode (int8 or float) and cache state (warm or
cold), and the TQ1_0/TQ2_0 ratio of their weights per second.
--means CACHE: per kernel, format and mode, the mean over the shapes.
"""
import json
import re
import sys

GEMV = re.compile(
    r"^gemv/(?P<kernel>[^/]+)/(?P<format>[^/]+)/(?P<mode>[^/]+)/(?P<shape>\d+x\d+)"
    r"/threads:(?P<threads>\d+)/(?P<cache>warm|cold)(/.*)?$")
ROOF = re.compile(r"^roof/read/threads:(?P<threads>\d+)(/.*)?$")


def load(path):
    if path in (None, "-"):
        return json.load(sys.stdin)
    with open(path) as f:
        return json.load(f)


def pick_runs(benchmarks):
    """One result per run_name: the median aggregate if there is one, else the
    mean of its iteration rows; errors are kept as such."""
    by_name, order = {}, []
    for b in benchmarks:
        name = b.get("run_name", b["name"])
        if name not in by_name:
            by_name[name] = {"iter": [], "median": None, "error": None}
            order.append(name)
        slot = by_name[name]
        if b.get("error_occurred"):
            slot["error"] = b.get("error_message", "error")
        elif b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                slot["median"] = b
        else:
            slot["iter"].append(b)
    out = []
    for name in order:
        slot = by_name[name]
        if slot["error"] is not None:
            out.append((name, None, slot["error"]))
        elif slot["median"] is not None:
            out.append((name, slot["median"], None))
        elif slot["iter"]:
            rows = slot["iter"]
            mean = dict(rows[0])
            for key in ("GB/s", "Gw/s", "pct_roof", "roof_GB/s"):
                vals = [r[key] for r in rows if key in r]
                if vals:
                    mean[key] = sum(vals) / len(vals)
            out.append((name, mean, None))
    return out


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def pct_of(roof, g, b):
    """% of the roof: the read paired with each cold call when the run has
    it, else the roof/read benchmark of the same thread count."""
    if b and b.get("pct_roof") is not None:
        return b["pct_roof"]
    r = roof.get(int(g["threads"]), (None, None))[0]
    gbs = b.get("GB/s") if b else None
    return 100.0 * gbs / r["GB/s"] if r and r.get("GB/s") and gbs is not None else None


def best_table(roof, gemv, mode, cache):
    best = {}
    for g, b, err in gemv:
        if err is not None or g["mode"] != mode or g["cache"] != cache:
            continue
        key = (g["shape"], int(g["threads"]), g["format"])
        if key not in best or b["Gw/s"] > best[key][1]["Gw/s"]:
            best[key] = (g, b)
    print(f"| shape | thr | best TQ2_0 | Gw/s | % roof | best TQ1_0 | Gw/s | % roof | TQ1/TQ2 |")
    print("|---|---:|---|---:|---:|---|---:|---:|---:|")
    seen = []
    for g, _, _ in gemv:
        k = (g["shape"], int(g["threads"]))
        if k not in seen:
            seen.append(k)
    for shape, t in seen:
        two, one = best.get((shape, t, "TQ2_0")), best.get((shape, t, "TQ1_0"))
        if not two or not one:
            continue
        ratio = one[1]["Gw/s"] / two[1]["Gw/s"]
        print(f"| {shape} | {t} | {two[0]['kernel']} | {fmt(two[1]['Gw/s'], 1)} | "
              f"{fmt(pct_of(roof, two[0], two[1]), 0)} | {one[0]['kernel']} | "
              f"{fmt(one[1]['Gw/s'], 1)} | {fmt(pct_of(roof, one[0], one[1]), 0)} | {ratio:.2f} |")


def means_table(roof, gemv, cache):
    acc = {}
    for g, b, err in gemv:
        if err is not None or g["cache"] != cache:
            continue
        key = (g["kernel"], g["format"], g["mode"])
        slot = acc.setdefault(key, {})
        slot.setdefault(int(g["threads"]), []).append((b["Gw/s"], pct_of(roof, g, b)))
    print("| kernel | format | mode | 1 thread Gw/s | % roof | 2 threads Gw/s | % roof |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (kernel, form, mode) in sorted(acc, key=lambda k: (k[2], k[1], k[0])):
        cells = []
        for t in (1, 2):
            vals = acc[(kernel, form, mode)].get(t, [])
            if not vals:
                cells += ["-", "-"]
                continue
            cells.append(fmt(sum(v for v, _ in vals) / len(vals), 1))
            pcts = [p for _, p in vals if p is not None]
            cells.append(fmt(sum(pcts) / len(pcts), 0) if pcts else "-")
        print(f"| {kernel} | {form} | {mode} | " + " | ".join(cells) + " |")


def main(argv):
    args = argv[1:]
    view = None
    if args and args[0] == "--best":
        view, args = ("best", args[1], args[2]), args[3:]
    elif args and args[0] == "--means":
        view, args = ("means", args[1]), args[2:]
    data = load(args[0] if args else None)
    ctx = data.get("context", {})
    runs = pick_runs(data.get("benchmarks", []))

    roof, gemv = {}, []
    for name, b, err in runs:
        m = ROOF.match(name)
        if m:
            roof[int(m["threads"])] = (b, err)
            continue
        m = GEMV.match(name)
        if m:
            gemv.append((m.groupdict(), b, err))

    if view is not None:
        if view[0] == "best":
            best_table(roof, gemv, view[1], view[2])
        else:
            means_table(roof, gemv, view[1])
        return 0

    print(f"Run {ctx.get('date', '?')} on {ctx.get('tern_cpu', ctx.get('host_name', '?'))}, "
          f"{ctx.get('num_cpus', '?')} CPUs; L3 {ctx.get('tern_l3_bytes', '?')}; "
          f"cold working set > {ctx.get('tern_cold_bytes', '?')} bytes; "
          f"load average {ctx.get('load_avg', '?')}.")
    print(f"Kernel sets: {ctx.get('tern_kernel_sets', '?')} "
          f"(not available here: {ctx.get('tern_kernel_sets_unavailable', '?')}).")
    print()
    print("| roof | threads | GB/s |")
    print("|---|---:|---:|")
    for t in sorted(roof):
        b, err = roof[t]
        label = b.get("label", "") if b else ""
        print(f"| read ({label}) | {t} | {err or fmt(b.get('GB/s'))} |")
    print()

    def first_seen(key):
        seen = []
        for g, _, _ in gemv:
            if g[key] not in seen:
                seen.append(g[key])
        return {v: i for i, v in enumerate(seen)}

    rank = {k: first_seen(k) for k in ("format", "shape", "mode", "cache", "kernel")}
    gemv.sort(key=lambda r: (rank["format"][r[0]["format"]], rank["shape"][r[0]["shape"]],
                             rank["mode"][r[0]["mode"]], int(r[0]["threads"]),
                             rank["cache"][r[0]["cache"]], rank["kernel"][r[0]["kernel"]]))
    print("| kernel | format | mode | shape (MxK) | threads | cache | GB/s | G weights/s | % of roof |")
    print("|---|---|---|---|---:|---|---:|---:|---:|")
    for g, b, err in gemv:
        head = (f"| {g['kernel']} | {g['format']} | {g['mode']} | {g['shape']} | {g['threads']} "
                f"| {g['cache']} ")
        if err is not None:
            print(head + f"| error: {err} | | |")
            continue
        gbs, gws = b.get("GB/s"), b.get("Gw/s")
        print(head + f"| {fmt(gbs)} | {fmt(gws)} | {fmt(pct_of(roof, g, b), 0)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
