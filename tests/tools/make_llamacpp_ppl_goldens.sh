#!/bin/sh
# Regenerates tests/data/llamacpp_ppl_goldens.json: llama.cpp's perplexity of
# the text each family test samples (reference.py sample --seed 1 --n 63
# --prompt 1, all 63 tokens after the BOS scored, one sequence, no BOS added)
# on both of tern's packs (tq2_0.gguf, tq1_0.gguf) of every family llama.cpp
# loads (arch llama: falcon3, llama3-1.58, trilm), and on llama3-1.58 packed
# with a Q6_K head (q6_k-head.gguf); and Ternary Bonsai's fixture in the two
# group-scaled types mainline llama.cpp has: q2_0.gguf (type 42, 64-weight
# groups, as tern packs --type q2_0) and q1_0.gguf (type 41, the binarized
# fixture). llama.cpp runs as its users
# run it: tests/tools/llamacpp_perplexity.mjs, CPU, default f16 KV cache.
# tests/model/test_llamacpp_agreement.cpp checks tern and reference.py
# --mutate llamacpp against the file in CI, without node or network.
#
# Needs node and node-llama-cpp (prebuilt llama.cpp binaries), installed once
# with network access, outside the repository:
#   mkdir -p /tmp/oracle && cd /tmp/oracle && npm install node-llama-cpp@3.22.1
# usage, from that directory (node finds node-llama-cpp there):
#   sh /path/to/tern/tests/tools/make_llamacpp_ppl_goldens.sh TEST_MODELS [OUT.json]
# TEST_MODELS is the make_test_models fixture (build/test_models; make it with
# `ctest -R make_test_models` in the build directory). OUT.json defaults to
# tests/data/llamacpp_ppl_goldens.json. Rerun it whenever the family
# fixtures change (the test says so when the sampled ids no longer match).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
models=$1
out=${2:-$here/../data/llamacpp_ppl_goldens.json}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for fam in falcon3 llama3-1.58 trilm bonsai; do
  /usr/bin/python3 "$here/families/reference.py" "$models/family-$fam/hf" \
    sample --seed 1 --n 63 --prompt 1 "$tmp/$fam.ids"
  files="tq2_0 tq1_0"
  [ "$fam" = llama3-1.58 ] && files="$files q6_k-head"
  [ "$fam" = bonsai ] && files="q2_0 q1_0"
  for file in $files; do
    node "$here/llamacpp_perplexity.mjs" "$models/family-$fam/$file.gguf" "$tmp/$fam.ids" \
      --first 1 --kv f16 >"$tmp/$fam.$file.json"
  done
done
# The llama.cpp commit node-llama-cpp bundles, when its source bundle is there.
commit=$(git bundle list-heads "$(npm root 2>/dev/null)/node-llama-cpp/llama/gitRelease.bundle" \
  2>/dev/null | awk 'NR == 1 { print $1 }') || true
/usr/bin/python3 - "$tmp" "$out" "${commit:-}" <<'EOF'
import json, sys
tmp, out, commit = sys.argv[1:]
entries, version = [], None
files = {"falcon3": ["tq2_0", "tq1_0"], "llama3-1.58": ["tq2_0", "tq1_0", "q6_k-head"],
         "trilm": ["tq2_0", "tq1_0"], "bonsai": ["q2_0", "q1_0"]}
for fam in files:
    ids = [int(t) for t in open("%s/%s.ids" % (tmp, fam)).read().split(",")]
    for file in files[fam]:
        r = json.load(open("%s/%s.%s.json" % (tmp, fam, file)))
        assert r["n_scored"] == len(ids) - 1 and r["kv"] == "f16", r
        v = "%s, node-llama-cpp %s" % (r["llama_cpp"], r["node_llama_cpp"])
        if commit:
            v += ", commit " + commit
        assert version in (None, v)
        version = v
        entries.append({"family": fam, "file": file + ".gguf", "ids": ids, "ppl": r["ppl"]})
with open(out, "w") as f:
    f.write('{"llama_cpp": %s,\n "tokens": "reference.py sample --seed 1 --n 63 --prompt 1",\n'
            ' "kv_cache": "f16",\n "entries": [\n' % json.dumps(version))
    f.write(",\n".join("  " + json.dumps(e) for e in entries))
    f.write("\n ]}\n")
EOF
echo "wrote $out"
