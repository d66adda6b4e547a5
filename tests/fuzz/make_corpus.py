#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets, one folder per target:

  gguf/            small valid GGUF v3 files (metadata, tensors, alignment)
  gguf_tokenizer/  GGUF files holding only tokenizer keys: "gpt2" vocabularies
                   (tokens + merges + pre) and "llama" ones (tokens + scores +
                   types), tern.tokenizer.hf_pipeline and spm_model variants
  tokenizer_json/  small but realistic tokenizer.json files: byte-level BPE with
                   the Llama-3 split regex, SentencePiece-style BPE with
                   byte_fallback and a Prepend/Replace normalizer, added tokens
                   with lstrip/rstrip/single_word/special, Metaspace, every
                   Split behavior
  encode/          texts for a real tokenizer: scripts, emoji, whitespace,
                   digits, contractions, special-token text, invalid UTF-8
  chat_template/   the chat templates of tests/data/chat plus small templates
                   that use the filters, tests and methods tern implements

Independent of tern's code on purpose (stdlib only: its own GGUF encoder and
BPE trainer), so the seeds also cross-check tern's readers against a second
implementation. Deterministic: running it again gives the same bytes.
Usage: python3 tests/fuzz/make_corpus.py [outdir]   (default tests/fuzz/corpus)
"""
import collections
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------- GGUF

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
          BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
# ggml type id -> (block size, bytes per block)
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66)}


def gstr(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        etype, items = v
        out = struct.pack("<IQ", etype, len(items))
        return out + b"".join(value(etype, x) for x in items)
    return struct.pack(SCALAR[vtype], v)


def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, type name, dims)]."""
    if alignment != 32:
        kvs = kvs + [("general.alignment", U32, alignment)]
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset, blobs = 0, []
    for name, tname, dims in tensors:
        tid, block, size = TYPES[tname]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // block * size
        out += gstr(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", tid, offset)
        blobs.append((offset, bytes((i * 37 + len(name)) & 0xFF for i in range(nbytes))))
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += bytes(-len(out) % alignment)
    data = bytearray(offset)
    for off, blob in blobs:
        data[off:off + len(blob)] = blob
    return out + bytes(data)


def gguf_seeds():
    return {
        "metadata_only.gguf": gguf(
            [("general.architecture", STRING, "bitnet"), ("u8", U8, 7), ("i8", I8, -7),
             ("u16", U16, 600), ("i16", I16, -600), ("u32", U32, 70000), ("i32", I32, -70000),
             ("f32", F32, 0.5), ("bool", BOOL, True), ("u64", U64, 1 << 40),
             ("i64", I64, -(1 << 40)), ("f64", F64, 2.5),
             ("tokens", ARRAY, (STRING, ["<s>", "</s>", "a"])),
             ("scores", ARRAY, (F32, [0.0, -1.0, 2.0])),
             ("types", ARRAY, (I32, [1, 2, 3])), ("bytes", ARRAY, (U8, [1, 2]))],
            []),
        "tensors.gguf": gguf(
            [("general.architecture", STRING, "bitnet"), ("bitnet.block_count", U32, 1)],
            [("token_embd.weight", "TQ2_0", [256, 2]), ("output_norm.weight", "F32", [5]),
             ("blk.0.attn_norm.weight", "F16", [3])]),
        "aligned64.gguf": gguf(
            [("general.name", STRING, "tiny")],
            [("w", "TQ1_0", [256, 1, 2]), ("b", "F32", [4])], alignment=64),
    }

# ------------------------------------------------------------ BPE training

SAMPLE = (
    "In the beginning was the word, and the word was with the tokenizer. "
    "The quick brown fox jumps over the lazy dog; the dog didn't mind. "
    "It's 2024 and we'll test 12345 numbers, 3.14159 and 42! "
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe. "
    "Hello hello HELLO, there there. Then they thought the theory through.\n"
    "def main():\n    return 0\n"
)

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
# Python's re has no \p{L}: an ASCII-ish stand-in, good enough to pick merges.
WORD_RE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+")
SPACE = "\u2581"  # SentencePiece's "▁"


def bytes_to_unicode():
    """GPT-2's byte -> printable character map."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train(words, n_merges):
    """words: {tuple of symbols: count}. Returns the merges, most frequent first."""
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        merged = collections.Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    return merges


def byte_level_vocab(n_merges):
    """256 byte characters + merges learned from SAMPLE: (vocab list, merges)."""
    b2u = bytes_to_unicode()
    words = collections.Counter()
    for w in WORD_RE.findall(SAMPLE):
        words[tuple(b2u[b] for b in w.encode())] += 1
    merges = train(words, n_merges)
    vocab = [b2u[b] for b in range(256)]
    seen = set(vocab)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            vocab.append(a + b)
    return vocab, merges


def spm_vocab(n_merges):
    """Characters of SAMPLE with "▁" for spaces + merges: (chars + merged, merges)."""
    words = collections.Counter()
    for w in SAMPLE.replace("\n", " ").split(" "):
        if w:
            words[tuple(SPACE + w)] += 1
    merges = train(words, n_merges)
    chars = sorted(set(SPACE + SAMPLE.replace(" ", "").replace("\n", "")))
    vocab, seen = list(chars), set(chars)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            vocab.append(a + b)
    return vocab, merges


def added(id_, content, special=True, lstrip=False, rstrip=False, single_word=False, normalized=None):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def bpe_model(vocab, merges, pairs=False, **flags):
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
    m.update(flags)
    m["vocab"] = {t: i for i, t in enumerate(vocab)}
    m["merges"] = [[a, b] for a, b in merges] if pairs else ["%s %s" % (a, b) for a, b in merges]
    return m


def tokenizer_json(model, added_tokens, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
            "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": decoder, "model": model}


def template(single_bos=None, single_eos=None, specials=()):
    single = []
    if single_bos:
        single.append({"SpecialToken": {"id": single_bos, "type_id": 0}})
    single.append({"Sequence": {"id": "A", "type_id": 0}})
    if single_eos:
        single.append({"SpecialToken": {"id": single_eos, "type_id": 0}})
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": single, "pair": pair,
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in specials}}


def byte_level_step(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True,
            "use_regex": use_regex}


def tokenizer_json_seeds():
    seeds = {}

    # 1. Llama-3 style: Split(Llama-3 regex) + ByteLevel, ignore_merges, BOS
    # through TemplateProcessing, special added tokens.
    vocab, merges = byte_level_vocab(44)
    n = len(vocab)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    seeds["bytelevel_llama3.json"] = tokenizer_json(
        bpe_model(vocab, merges, ignore_merges=True),
        [added(n + k, t) for k, t in enumerate(specials)],
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_REGEX}, "behavior": "Isolated", "invert": False},
            byte_level_step()]},
        post_processor={"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            template("<|begin_of_text|>", specials=[("<|begin_of_text|>", n)])]},
        decoder={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True})

    # 2. SentencePiece-style (Llama 2 / Mistral): Prepend + Replace
    # normalizer, byte_fallback with <0xXX> tokens, fuse_unk, <unk>, <s>.
    pieces, merges = spm_vocab(40)
    vocab = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + pieces
    seeds["spm_byte_fallback.json"] = tokenizer_json(
        bpe_model(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True),
        [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        post_processor=template("<s>", specials=[("<s>", 1)]),
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})

    # 3. GPT-2 / RoBERTa style: ByteLevel with its own regex and a prefix
    # space, merges as [left, right] pairs, added tokens of every kind.
    vocab, merges = byte_level_vocab(30)
    n = len(vocab)
    seeds["added_tokens_roberta.json"] = tokenizer_json(
        bpe_model(vocab, merges, pairs=True),
        [added(n, "<s>"), added(n + 1, "</s>"), added(n + 2, "<mask>", lstrip=True),
         added(n + 3, "[USER]", special=False, rstrip=True),
         added(n + 4, "hello", special=False, single_word=True),
         added(n + 5, "<tool>", special=False, lstrip=True, rstrip=True, normalized=False),
         added(n + 6, " \u00e9t\u00e9 ", special=True, normalized=True)],
        pre_tokenizer=byte_level_step(add_prefix_space=True, use_regex=True),
        post_processor={"type": "RobertaProcessing", "sep": ["</s>", n + 1], "cls": ["<s>", n],
                        "trim_offsets": True, "add_prefix_space": True},
        decoder={"type": "ByteLevel"})

    # 4. Metaspace pre-tokenizer (prepend "first"), Punctuation and Digits,
    # Strip + regex Replace normalizers, Metaspace decoder, unknown token.
    pieces, merges = spm_vocab(24)
    vocab = ["<unk>", "<s>", "</s>"] + pieces + [str(d) for d in range(10) if str(d) not in pieces]
    seeds["metaspace_digits.json"] = tokenizer_json(
        bpe_model(vocab, merges, unk_token="<unk>"),
        [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>", rstrip=True)],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": "Isolated"},
            {"type": "Digits", "individual_digits": True},
            {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": True}]},
        post_processor=template("<s>", "</s>", specials=[("<s>", 1), ("</s>", 2)]),
        decoder={"type": "Metaspace", "replacement": SPACE, "add_prefix_space": True})

    # 5. Every Split behavior, Whitespace splitting, String patterns, BERT
    # post-processing and a Strip decoder, over a byte-level vocabulary.
    vocab, merges = byte_level_vocab(20)
    n = len(vocab)
    seeds["split_behaviors.json"] = tokenizer_json(
        bpe_model(vocab, merges),
        [added(n, "[CLS]"), added(n + 1, "[SEP]")],
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Contiguous", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[aeiou]"}, "behavior": "MergedWithPrevious", "invert": True},
            {"type": "Split", "pattern": {"String": "x"}, "behavior": "Removed", "invert": False},
            {"type": "WhitespaceSplit"},
            {"type": "Whitespace"},
            byte_level_step()]},
        post_processor={"type": "BertProcessing", "sep": ["[SEP]", n + 1], "cls": ["[CLS]", n]},
        decoder={"type": "Sequence", "decoders": [
            {"type": "ByteLevel"}, {"type": "Strip", "content": " ", "start": 0, "stop": 1}]})
    return {name: (json.dumps(j, ensure_ascii=False, indent=2) + "\n").encode() for name, j in seeds.items()}

# ------------------------------------------------------- GGUF tokenizers

CONTROL, NORMAL, UNKNOWN, USER, UNUSED, BYTE = 3, 1, 2, 4, 5, 6


def spm_model_pieces(proto):
    """(piece, score, type) of a serialized SentencePiece ModelProto."""
    def varint(b, i):
        v = shift = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return v, i

    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            wt = key & 7
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 1:
                v, i = b[i:i + 8], i + 8
            elif wt == 5:
                v, i = b[i:i + 4], i + 4
            elif wt == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            else:
                raise ValueError("wire type %d" % wt)
            yield key >> 3, wt, v

    out = []
    for num, wt, body in fields(proto):
        if num == 1 and wt == 2:
            piece, score, typ = "", 0.0, NORMAL
            for n2, wt2, v in fields(body):
                if n2 == 1:
                    piece = v.decode()
                elif n2 == 2 and wt2 == 5:
                    score = struct.unpack("<f", v)[0]
                elif n2 == 3:
                    typ = v
            out.append((piece, score, typ))
    return out


def gguf_tokenizer_seeds():
    seeds = {}
    # "gpt2" with a full byte alphabet, Llama-3 specials, BOS added
    # (pre "llama-bpe": the Llama-3 regex, ignore_merges).
    vocab, merges = byte_level_vocab(40)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tokens = vocab + specials
    types = [NORMAL] * len(vocab) + [CONTROL] * len(specials)
    seeds["gpt2_llama_bpe.gguf"] = gguf([
        ("general.architecture", STRING, "llama"),
        ("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, "llama-bpe"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, types)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, ["%s %s" % m for m in merges])),
        ("tokenizer.ggml.bos_token_id", U32, len(vocab)), ("tokenizer.ggml.eos_token_id", U32, len(vocab) + 2),
        ("tokenizer.ggml.add_bos_token", BOOL, True),
        ("tokenizer.chat_template", STRING, "{% for m in messages %}{{ m.content }}{% endfor %}")], [])

    # "gpt2" with a few dozen tokens only (the printable ASCII of short
    # words) and an unknown token; one seed per pre-tokenizer family.
    b2u = bytes_to_unicode()
    small_text = "the cat sat on the mat, 123 times! it's fine"
    words = collections.Counter(tuple(b2u[b] for b in w.encode()) for w in WORD_RE.findall(small_text))
    small_merges = train(words, 16)
    small = ["<unk>", "<|endoftext|>"] + sorted({b2u[b] for b in small_text.encode()})
    for a, b in small_merges:
        if a + b not in small:
            small.append(a + b)
    for pre in ["gpt-2", "qwen2", "falcon", "starcoder", None]:
        kvs = [("tokenizer.ggml.model", STRING, "gpt2"),
               ("tokenizer.ggml.tokens", ARRAY, (STRING, small)),
               ("tokenizer.ggml.token_type", ARRAY, (I32, [UNKNOWN, CONTROL] + [NORMAL] * (len(small) - 2))),
               ("tokenizer.ggml.merges", ARRAY, (STRING, ["%s %s" % m for m in small_merges])),
               ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.eos_token_id", U32, 1)]
        if pre:
            kvs.insert(1, ("tokenizer.ggml.pre", STRING, pre))
        seeds["gpt2_small_%s.gguf" % (pre or "nopre")] = gguf(kvs, [])

    # "llama" (SentencePiece-style, score-ranked merges): <unk> <s> </s>, a
    # few byte tokens, characters and merged pieces with scores.
    pieces, merges = spm_vocab(16)
    byte_tokens = ["<0x%02X>" % b for b in (0x0A, 0x20, 0x21, 0xC3, 0xA9, 0xE2, 0x96, 0x81)]
    tokens = ["<unk>", "<s>", "</s>"] + byte_tokens + pieces + ["<|user|>", "<pad>"]
    scores = [0.0] * 3 + [0.0] * len(byte_tokens) + [-float(i) for i in range(len(pieces))] + [0.0, 0.0]
    types = ([UNKNOWN, CONTROL, CONTROL] + [BYTE] * len(byte_tokens) + [NORMAL] * len(pieces) +
             [USER, UNUSED])
    assert len(scores) == len(tokens) == len(types)
    base = [("general.architecture", STRING, "llama"),
            ("tokenizer.ggml.model", STRING, "llama"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.scores", ARRAY, (F32, scores)),
            ("tokenizer.ggml.token_type", ARRAY, (I32, types))]
    seeds["llama_spm.gguf"] = gguf(base + [
        ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.padding_token_id", U32, len(tokens) - 1),
        ("tokenizer.ggml.add_bos_token", BOOL, True), ("tokenizer.ggml.add_eos_token", BOOL, False)], [])
    seeds["llama_no_space_prefix.gguf"] = gguf(base + [
        ("tokenizer.ggml.add_space_prefix", BOOL, False), ("tokenizer.ggml.add_bos_token", BOOL, False),
        ("tern.tokenizer.eog_ids", ARRAY, (I32, [2]))], [])

    # tern's own keys: the tokenizer.json rules of a byte-level file kept as
    # tern.tokenizer.hf_pipeline, as tern's packer writes them.
    tj = json.loads(tokenizer_json_seeds()["added_tokens_roberta.json"])
    vocab = sorted(tj["model"]["vocab"], key=tj["model"]["vocab"].get) + [a["content"] for a in tj["added_tokens"]]
    pipeline = {k: tj[k] for k in ("normalizer", "pre_tokenizer", "decoder", "post_processor")}
    pipeline["model"] = {"byte_fallback": False, "ignore_merges": False, "fuse_unk": False}
    pipeline["added_tokens"] = tj["added_tokens"]
    seeds["tern_hf_pipeline.gguf"] = gguf([
        ("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, "gpt-2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, vocab)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, ["%s %s" % tuple(m) for m in tj["model"]["merges"]])),
        ("tokenizer.ggml.bos_token_id", U32, len(vocab) - 7), ("tokenizer.ggml.eos_token_id", U32, len(vocab) - 6),
        ("tern.tokenizer.hf_pipeline", STRING, json.dumps(pipeline, separators=(",", ":")))], [])

    # tern.tokenizer.spm_model: tests/data/tiny_tokenizer.model (512 pieces).
    with open(os.path.join(ROOT, "tests", "data", "tiny_tokenizer.model"), "rb") as f:
        proto = f.read()
    sp = spm_model_pieces(proto)
    seeds["tern_spm_model.gguf"] = gguf([
        ("tokenizer.ggml.model", STRING, "llama"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [p for p, _, _ in sp])),
        ("tokenizer.ggml.scores", ARRAY, (F32, [s for _, s, _ in sp])),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [t for _, _, t in sp])),
        ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tern.tokenizer.spm_model", ARRAY, (U8, list(proto)))], [])
    return seeds

# ------------------------------------------------------------------ text

def encode_seeds():
    return {
        "english.txt": "Hello world! It's 2024, isn't it? We'll see... THEY'RE HERE; I'M sure.\n".encode(),
        "code.txt": b"def f(x):\n\tif x >= 10:\n\t\treturn [i**2 for i in range(x)]  # squares\r\n\treturn {}\n",
        "scripts.txt": ("Caf\u00e9 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 "
                        "\u0939\u093f\u0928\u094d\u0926\u0940 \ud55c\uad6d\uc5b4 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac "
                        "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 e\u0301 \u00c5\u212b").encode(),
        "emoji.txt": "\U0001F999\u2728 \U0001F468\u200D\U0001F469\u200D\U0001F467 \U0001F1EB\U0001F1F7 \u2764\ufe0f x".encode(),
        "whitespace.txt": b"   \t\t\n\n\n  \r\n\r\n    x    \n \xc2\xa0\xe3\x80\x80 \xe2\x80\x83end   ",
        "digits.txt": b"1 12 123 1234 12345 3.14159 1,000,000 0x1F 2024-07-26 \xd9\xa3\xd9\xa4 \xef\xbc\x91\xef\xbc\x92",
        "special.txt": (b"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                        b"<|reserved_special_token_5|><|end_of_text|><|eot_id <|eot_id|x"),
        "invalid_utf8.txt": b"ok \xff\xfe \xc3 \xc3\x28 \xe2\x82 \xe2\x28\xa1 \xed\xa0\x80 \xf0\x90\x80 \xf4\x90\x80\x80 \xc0\xaf \x80\xbf end",
        "spm_markers.txt": "\u2581\u2581a <0x41> \u0120\u010a \ufffd \u0100x".encode(),
        "long_word.txt": ("a" * 300 + " " + "ab" * 150 + " " + "\u00e9" * 100).encode(),
    }


def chat_seeds():
    seeds = {}
    data = os.path.join(ROOT, "tests", "data", "chat")
    for name in sorted(os.listdir(data)):
        if name.endswith(".jinja"):
            with open(os.path.join(data, name), "rb") as f:
                seeds[name] = f.read()
    # Small templates reaching what the real ones do not: loops with
    # else/filters/loop variables, namespaces, set blocks, tests, methods,
    # slices, string formatting, tojson, raise_exception, strftime_now.
    extra = {
        "filters.jinja": (
            "{%- set ns = namespace(n=0, sys='') -%}\n"
            "{%- for m in messages if m.role != 'system' -%}\n"
            "{%- set ns.n = ns.n + 1 -%}\n"
            "[{{ loop.index }}/{{ loop.length }}{{ ' first' if loop.first }}{{ loop.cycle('a', 'b') }}] "
            "{{ m.role | upper }}: {{ m.content | trim | replace('\\n', ' ') | indent(2) }}\n"
            "{%- else -%}no messages\n"
            "{%- endfor %}\n"
            "{{ messages | map(attribute='role') | unique | join(',') }} {{ messages | length }} "
            "{{ messages | selectattr('role', 'equalto', 'user') | list | count }} "
            "{{ (messages | first).role }} {{ (messages | last)['content'][:5] }} {{ ns.n * 2 // 3 % 2 ** 3 }}\n"
            "{{ [3, 1, 2] | sort | reverse | list }} {{ {'b': 1, 'a': [1, 2.5, none, true]} | tojson }} "
            "{{ {'b': 1, 'a': 2} | dictsort }} {{ 'x,y,,z'.split(',') }} {{ '  pad '.strip() ~ '|' }} "
            "{{ 'abc'.startswith('a') and not 'abc'.endswith('x') }} {{ '%s-%d' % ('a', 3) }}"
            "{{ range(3) | sum }} {{ [1, 2, 3][::-1] }} {{ 'h\u00e9llo'[1:3] | capitalize | title }} "
            "{{ none is none }} {{ 3 is odd }} {{ x is defined }} {{ 'a' in 'cat' }} {{ [1] is iterable }}\n"
            "{%- if tools is not none %}{{ tools | tojson(indent=2) }}{% endif %}"
            "{{ strftime_now('%d %b %Y') }}{% if add_generation_prompt %}<|assistant|>{% endif %}"),
        "set_block.jinja": (
            "{% set sys %}{{ bos_token }}System: {{ messages[0].content if messages[0].role == 'system' else 'default' }}"
            "{% endset %}{{ sys | length }}{{ sys }}\n"
            "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }}{% if loop.last %}{% break %}{% endif %}"
            "{% continue %}{% endfor %}\n"
            "{%- for m in messages[1:] %}{% generation %}{{ m['content'] | default('none', true) }}{% endgeneration %}"
            "{{ eos_token if m.role == 'assistant' else '' }}{% endfor %}\n"
            "{% if messages | length > 9 %}{{ raise_exception('too many messages') }}{% elif date_string is defined %}"
            "{{ date_string }}{% else %}{{ '%r' }}{% endif %}{# a comment #}\n"
            "{{- '{{ not a tag }}' -}}\n"),
        "whitespace.jinja": (
            "  {%- for m in messages -%}\n    {{- m.content -}}\n  {%+ if not loop.last %}, {% endif -%}\n"
            "{%- endfor %}\n\n  {% if true %}\n    yes\n  {% endif %}\n{{ \"esc\\t\\u00e9\\x41\" }}"),
    }
    for name, text in extra.items():
        seeds[name] = text.encode()
    return seeds


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    corpora = {
        "gguf": gguf_seeds(),
        "gguf_tokenizer": gguf_tokenizer_seeds(),
        "tokenizer_json": tokenizer_json_seeds(),
        "encode": encode_seeds(),
        "chat_template": chat_seeds(),
    }
    for target, seeds in corpora.items():
        d = os.path.join(outdir, target)
        os.makedirs(d, exist_ok=True)
        # Generated seeds are rewritten; regress-* files are fuzzer findings
        # kept by hand and must survive a regeneration.
        for old in os.listdir(d):
            if not old.startswith("regress-"):
                os.remove(os.path.join(d, old))
        for name, blob in seeds.items():
            assert len(blob) < 64 << 10, (target, name, len(blob))
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)


if __name__ == "__main__":
    main()
