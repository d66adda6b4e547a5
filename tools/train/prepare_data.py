#!/usr/bin/env python3
"""Turn `bible -l1000 gen1:1-rev22:21` into plain text, one verse per line.

`bible` prints a blank line, a chapter header ("Genesis 1"), a blank line and
then one verse per line as "  <n> <text>".  We keep only the verse text: the
headers and verse numbers are trivially predictable and would flatter the
perplexity.  The identical transformation produces the Revelation eval text.

Split:
  revelation.txt  Revelation 1:1 .. 22:21, HELD OUT (never trained on, never
                  used for any choice).
  val.txt         last 2% of the Genesis..Jude verses (validation loss only).
  train.txt       the rest of Genesis..Jude (tokenizer and model training).
"""
import argparse, os, re, subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="tools/train/build")
ap.add_argument("--revelation", default="models/revelation.txt")
ap.add_argument("--val-frac", type=float, default=0.02)
a = ap.parse_args()

raw = subprocess.run(["bible", "-l1000", "gen1:1-rev22:21"], check=True,
                     capture_output=True, text=True).stdout
verse = re.compile(r"^  \d+ (.*)$")
header = re.compile(r"^(.+) (\d+)$")
book, verses = None, []          # verses: (book, text)
for line in raw.split("\n"):
    if not line.strip():
        continue
    m = verse.match(line)
    if m:
        verses.append((book, m.group(1).rstrip()))
        continue
    m = header.match(line)
    if not m:
        raise SystemExit(f"unexpected line: {line!r}")
    book = m.group(1)

first_rev = next(i for i, (b, _) in enumerate(verses) if b == "Revelation")
assert all(b == "Revelation" for b, _ in verses[first_rev:])
rest = [t for _, t in verses[:first_rev]]
rev = [t for _, t in verses[first_rev:]]
n_val = int(len(rest) * a.val_frac)
train, val = rest[:-n_val], rest[-n_val:]

os.makedirs(a.build, exist_ok=True)
os.makedirs(os.path.dirname(a.revelation), exist_ok=True)
for path, lines in [(os.path.join(a.build, "train.txt"), train),
                    (os.path.join(a.build, "val.txt"), val),
                    (a.revelation, rev)]:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(lines)} verses, {sum(len(l) + 1 for l in lines)} bytes")
