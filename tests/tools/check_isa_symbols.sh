#!/bin/sh
# Fails if a translation unit compiled with its own ISA flags (CMakeLists.txt's
# tern_isa_kernel) defines a weak or unique symbol: an inline function or
# template instance it emits may be the copy the linker keeps for the whole
# binary, and then code built with, say, -mavx512f runs on a CPU without it.
# Weak objects (type V: typeinfo, the personality reference) hold no code.
#   check_isa_symbols.sh NM SOURCES OBJECT...
# SOURCES: the ISA files, comma-separated (kernels/x86/avx2.cpp,...).
set -eu
nm=$1
sources=$2
shift 2
checked=0
bad=0
for obj in "$@"; do
  for src in $(echo "$sources" | tr ',' ' '); do
    case "$obj" in
      */"$src".o | */"$src".obj) ;;
      *) continue ;;
    esac
    checked=$((checked + 1))
    found=$("$nm" -C --defined-only "$obj" | awk '$2 == "W" || $2 == "u"' || true)
    if [ -n "$found" ]; then
      echo "$src defines shared code compiled with its ISA flags:"
      echo "$found"
      bad=1
    fi
  done
done
want=$(echo "$sources" | tr ',' '\n' | grep -c .)
if [ "$checked" -ne "$want" ]; then
  echo "checked $checked object files of $want ISA sources ($sources): object names not as expected"
  exit 1
fi
if [ "$bad" -ne 0 ]; then exit 1; fi
echo "$checked ISA translation units define no weak code"
