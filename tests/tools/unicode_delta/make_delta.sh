#!/bin/sh
# Regenerates src/tokenizer/unicode_delta.inc: the code points Hugging Face's
# `tokenizers` (Rust, a newer Unicode) puts in \p{L}, \p{N}, \p{P} that this
# machine's PCRE2 (Debian 12: 10.42, Unicode 14) does not. tern adds them to
# every such class in a tokenizer's regexes, so both engines split text
# alike even on recently assigned characters.
# usage: make_delta.sh ORACLE_DIR   (a directory with `npm install tokenizers@0.23.2`)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
g++ -O2 "$here/pcre2_classes.cpp" -o "$tmp/pcre2_classes" -lpcre2-8
"$tmp/pcre2_classes" "$tmp"
NODE_PATH="$1/node_modules" node "$here/hf_classes.js" "$tmp" >/dev/null
/usr/bin/python3 "$here/diff_classes.py" "$tmp" > "$here/../../../src/tokenizer/unicode_delta.inc"
rm -rf "$tmp"
