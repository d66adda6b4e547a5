#!/bin/sh
# Prints the whole King James Bible (Genesis 1:1 .. Revelation 22:21) as the
# Debian package bible-kjv formats it: 4,298,239 bytes of ASCII, identical on
# every run and independent of the terminal and locale. Used as a large
# tokenizer input (tests/data/tokenizers/goldens/*.json, case "kjv") without
# committing the text; the goldens record its length, FNV-1a 64 and SHA-256 so
# a test can tell a different text from wrong ids.
#   apt-get install bible-kjv
set -eu
if ! command -v bible >/dev/null 2>&1; then
  echo "kjv_text.sh: the 'bible' program is missing (apt-get install bible-kjv)" >&2
  exit 1
fi
exec bible -l1000 gen1:1-rev22:21
