#!/usr/bin/env node
// llama.cpp's speed on the same GGUF file as `tern bench`, measured the way
// llama-bench measures it (pp: one batch of N random tokens from an empty
// cache; tg: N tokens one at a time, every one through the output head),
// through node-llama-cpp's prebuilt CPU build of llama.cpp. The anchor of
// docs/PERFORMANCE.md's end-to-end table; not run in CI.
//
// usage: node llamacpp_bench.mjs MODEL.gguf [--threads T] [--pp N] [--tg N] [--reps R]
// prints one JSON line per test: {"test", "n_threads", "avg_ts", "samples_ts", "llama_cpp"}
//
// Needs node-llama-cpp installed outside the repository, e.g.
//   mkdir -p /tmp/oracle && cd /tmp/oracle && npm install node-llama-cpp@3.22.1
//   cd /tmp/oracle && node /path/to/tern/bench/llamacpp_bench.mjs MODEL.gguf --threads 2
import path from "node:path";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

const argv = process.argv.slice(2);
const opt = {threads: 2, pp: 128, tg: 64, reps: 3};
let modelPath;
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  if (a.startsWith("--") && a.slice(2) in opt) opt[a.slice(2)] = Number(argv[++i]);
  else if (!modelPath && !a.startsWith("--")) modelPath = path.resolve(a);
  else {
    console.error(`llamacpp_bench: unknown argument ${a}`);
    process.exit(2);
  }
}
if (!modelPath) {
  console.error("usage: node llamacpp_bench.mjs MODEL.gguf [--threads T] [--pp N] [--tg N] [--reps R]");
  process.exit(2);
}

const base = pathToFileURL(path.join(process.cwd(), "x.js")).href;
const nlc = await import(pathToFileURL(createRequire(base).resolve("node-llama-cpp")).href);
const llama = await nlc.getLlama({gpu: false, build: "never", logLevel: nlc.LlamaLogLevel.error});
const rel = llama.llamaCppRelease;
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
const vocab = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
const n = Math.max(opt.pp, opt.tg) + 1;
const context = await model.createContext({
  contextSize: n, batchSize: Math.max(opt.pp, 1), sequences: 1, threads: opt.threads,
  flashAttention: false, ignoreMemorySafetyChecks: true,
});
const seq = context.getSequence();
let x = 12345n;
const tokens = Array.from({length: n}, () => {
  x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
  return Number((x >> 33n) % BigInt(vocab));
});

async function pp() {
  await seq.clearHistory();
  const items = tokens.slice(0, opt.pp).map((t, i) => (i + 1 === opt.pp ? [t, {generateNext: {token: true}}] : t));
  await seq.controlledEvaluate(items);
}
async function tg() {
  await seq.clearHistory();
  for (let i = 0; i < opt.tg; ++i) await seq.controlledEvaluate([[tokens[i], {generateNext: {token: true}}]]);
}

for (const [name, count, fn] of [[`pp${opt.pp}`, opt.pp, pp], [`tg${opt.tg}`, opt.tg, tg]]) {
  if (count <= 0) continue;
  await fn();  // warm-up
  const rates = [];
  for (let r = 0; r < opt.reps; ++r) {
    const t0 = process.hrtime.bigint();
    await fn();
    rates.push(count / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
  const avg = rates.reduce((a, b) => a + b, 0) / rates.length;
  console.log(JSON.stringify({test: name, n_threads: opt.threads, avg_ts: avg, samples_ts: rates,
                              llama_cpp: `${rel.repo}@${rel.release}`}));
}
await context.dispose();
await model.dispose();
