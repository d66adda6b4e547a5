#!/usr/bin/env node
// Perplexity of an exact token list under llama.cpp, as an independent oracle
// for `tern perplexity` (see llamacpp_ppl_results.md beside this file).
//
// usage: node llamacpp_perplexity.mjs MODEL.gguf TOKENS.txt [--first N]
//                                     [--threads T] [--kv f16|f32]
//   TOKENS.txt  whitespace-separated token ids (commas and brackets are
//               ignored, so `tern tokenize --ids` output works as is). They
//               are evaluated as ONE sequence in ONE llama.cpp context of
//               exactly that many tokens: no chunking, no BOS added, no
//               context shift.
//   --first N   score positions i >= N only (default 1): token i is scored by
//               the distribution the model gives after tokens 0..i-1.
//               `tern perplexity -c C --chunks 1` (llama-perplexity's
//               protocol) scores i = C/2+1 .. C-1 of the first chunk, so
//               pass the chunk's C ids and --first C/2+1 to match it.
//   --threads T CPU threads (default: node-llama-cpp's choice).
//   --kv TYPE   KV-cache type: f16 (llama.cpp's default) or f32.
// prints one JSON line:
//   {"ppl", "n_scored", "first", "n_tokens", "nll_mean", "kv", "llama_cpp", "node_llama_cpp"}
//   ppl = exp(mean over scored i of -log p(token_i | tokens_<i)).
//
// The log-probabilities come from the raw logits of every position
// (controlledEvaluate with generateNext.logits = true): the whole vocabulary,
// straight from llama_get_logits_ith, because the sampler chain node-llama-cpp
// runs before returning them is only the greedy sampler (temperature 0; no
// repetition penalty, token bias, top-k/top-p or grammar is set). The
// log-softmax is computed here in double precision. CPU backend only.
//
// Needs node-llama-cpp (prebuilt llama.cpp binaries) installed with network
// access, outside the repository, e.g.
//   mkdir -p /tmp/oracle && cd /tmp/oracle && npm install node-llama-cpp@3.22.1
//   node /path/to/tern/tests/tools/llamacpp_perplexity.mjs MODEL.gguf TOKENS.txt
// It is resolved from the script's directory first, then from the current
// directory. A tool for making and checking goldens by hand; not run in CI.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

function usage(msg) {
  if (msg) console.error(`llamacpp_perplexity: ${msg}`);
  console.error("usage: node llamacpp_perplexity.mjs MODEL.gguf TOKENS.txt [--first N] [--threads T] [--kv f16|f32]");
  process.exit(2);
}

const pos = [];
let first = 1, threads, kv = "f16";
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  if (a === "--first") first = Number(val());
  else if (a === "--threads") threads = Number(val());
  else if (a === "--kv") kv = val();
  else if (a === "-h" || a === "--help") usage();
  else if (a.startsWith("--")) usage(`unknown option ${a}`);
  else pos.push(a);
}
if (pos.length !== 2) usage();
if (!Number.isInteger(first) || first < 1) usage("--first must be an integer >= 1");
if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) usage("--threads must be >= 1");
if (kv !== "f16" && kv !== "f32") usage("--kv must be f16 or f32");
const [modelPath, tokensPath] = pos.map((p) => path.resolve(p));

const tokens = fs.readFileSync(tokensPath, "utf8").replace(/[[\],]/g, " ").trim().split(/\s+/)
  .filter((s) => s.length > 0).map(Number);
if (tokens.some((t) => !Number.isInteger(t) || t < 0)) usage(`${tokensPath}: not a list of token ids`);
const n = tokens.length;
if (n <= first) usage(`${n} tokens leave nothing to score from position ${first}`);

async function importNlc() {
  for (const base of [import.meta.url, pathToFileURL(path.join(process.cwd(), "x.js")).href]) {
    try {
      const resolved = createRequire(base).resolve("node-llama-cpp");
      return {mod: await import(pathToFileURL(resolved).href), dir: resolved};
    } catch (e) {
      if (e.code !== "MODULE_NOT_FOUND" && e.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") throw e;
    }
  }
  try {
    const mod = await import("node-llama-cpp");
    return {mod, dir: fileURLToPathSafe(import.meta.resolve("node-llama-cpp"))};
  } catch {
    usage("node-llama-cpp not found: npm install node-llama-cpp (here or in the current directory)");
  }
}
function fileURLToPathSafe(u) {
  return u.startsWith("file:") ? new URL(u).pathname : u;
}

const {mod: nlc, dir: nlcEntry} = await importNlc();
let nlcVersion = "unknown";
for (let d = path.dirname(nlcEntry); d !== path.dirname(d); d = path.dirname(d)) {
  const pj = path.join(d, "package.json");
  if (fs.existsSync(pj)) {
    const j = JSON.parse(fs.readFileSync(pj, "utf8"));
    if (j.name === "node-llama-cpp") { nlcVersion = j.version; break; }
  }
}

const log = [];
const llama = await nlc.getLlama({
  gpu: false,
  build: "never",
  logLevel: nlc.LlamaLogLevel.warn,
  logger: (level, message) => log.push(`${level}: ${message}`.trimEnd()),
});
const rel = llama.llamaCppRelease;
const llamaCpp = `${rel.repo}@${rel.release} (${llama.buildType}, gpu ${llama.gpu})`;

let model;
try {
  model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
} catch (e) {
  console.error(log.join("\n"));
  console.error(`llamacpp_perplexity: ${modelPath}: llama.cpp failed to load the model: ${e.message}`);
  process.exit(1);
}
const nVocab = model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length;
const maxId = Math.max(...tokens);
if (nVocab !== undefined && maxId >= nVocab) usage(`token id ${maxId} outside the vocabulary of ${nVocab}`);

const context = await model.createContext({
  contextSize: n,
  batchSize: n,
  sequences: 1,
  flashAttention: false,
  ...(threads ? {threads} : {}),
  experimentalKvCacheKeyType: kv.toUpperCase(),
  experimentalKvCacheValueType: kv.toUpperCase(),
  ignoreMemorySafetyChecks: true,
});
if (context.contextSize < n) throw new Error(`context of ${context.contextSize} < ${n} tokens`);
const seq = context.getSequence();

// Item i asks for the distribution of token i+1.
const items = tokens.map((t, i) =>
  i + 1 < n && i + 1 >= first ? [t, {generateNext: {logits: true}}] : t);
const out = await seq.controlledEvaluate(items);

let nll = 0, nScored = 0;
for (let i = first; i < n; ++i) {
  const logits = out[i - 1]?.next?.logits;
  if (!(logits instanceof Map)) throw new Error(`no logits for position ${i}`);
  if (nVocab !== undefined && logits.size !== nVocab)
    throw new Error(`position ${i}: ${logits.size} logits, vocabulary ${nVocab} (not the full distribution)`);
  let mx = -Infinity;
  for (const v of logits.values()) if (v > mx) mx = v;
  let sum = 0;
  for (const v of logits.values()) sum += Math.exp(v - mx);
  const lt = logits.get(tokens[i]);
  if (lt === undefined) throw new Error(`position ${i}: no logit for token ${tokens[i]}`);
  nll -= lt - mx - Math.log(sum);
  ++nScored;
}
const mean = nll / nScored;
console.log(JSON.stringify({
  ppl: Math.exp(mean),
  n_scored: nScored,
  first,
  n_tokens: n,
  nll_mean: mean,
  kv,
  llama_cpp: llamaCpp,
  node_llama_cpp: nlcVersion,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
