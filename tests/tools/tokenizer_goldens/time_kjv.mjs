#!/usr/bin/env node
// Times the two oracles encoding the whole King James text (tests/tools/kjv_text.sh)
// with one committed tokenizer (default llama3): best of N runs, load time excluded.
//   TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 RAYON_RS_NUM_CPUS=1 \
//     ORACLE_DIR=/dir/with/node_modules node tests/tools/tokenizer_goldens/time_kjv.mjs [name] [runs]
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../../..');
const ORACLE_DIR = path.resolve(process.env.ORACLE_DIR || HERE);
const require = createRequire(path.join(ORACLE_DIR, 'package.json'));
const { Tokenizer: RustTokenizer } = require('tokenizers');
const { Tokenizer: JsTokenizer } = require('@huggingface/tokenizers');

const name = process.argv[2] || 'llama3';
const runs = Number(process.argv[3] || 3);
const dir = path.join(REPO, 'tests/data/tokenizers', name);
const text = execFileSync('sh', [path.join(REPO, 'tests/tools/kjv_text.sh')], { maxBuffer: 64 << 20 }).toString('utf8');
const jsonText = fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8');
const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));

const sec = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = (c0) => { const c = process.cpuUsage(c0); return (c.user + c.system) / 1e6; };
const fmt = (x) => x.toFixed(3);

console.log(`KJV: ${Buffer.byteLength(text)} bytes; tokenizer ${name}; best of ${runs}`);
const rust = RustTokenizer.fromString(jsonText);
let best = Infinity, bestAll = Infinity, n = 0;
for (let i = 0; i < runs; i++) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const enc = await rust.encode(text, null, { addSpecialTokens: true });
  const tEnc = sec(t0);
  n = enc.getIds().length;
  const tAll = sec(t0);
  console.log(`  rust run ${i + 1}: encode ${fmt(tEnc)} s, encode+getIds ${fmt(tAll)} s, process CPU ${fmt(cpu(c0))} s, ${n} ids`);
  best = Math.min(best, tEnc); bestAll = Math.min(bestAll, tAll);
}
console.log(`rust tokenizers: best encode ${fmt(best)} s (${fmt(Buffer.byteLength(text) / best / 1e6)} MB/s), best encode+getIds ${fmt(bestAll)} s, ${n} ids`);

const js = new JsTokenizer(JSON.parse(jsonText), config);
best = Infinity;
for (let i = 0; i < runs; i++) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const ids = js.encode(text, { add_special_tokens: true }).ids;
  const t = sec(t0);
  console.log(`  js run ${i + 1}: encode ${fmt(t)} s, process CPU ${fmt(cpu(c0))} s, ${ids.length} ids`);
  best = Math.min(best, t); n = ids.length;
}
console.log(`@huggingface/tokenizers (JS): best encode ${fmt(best)} s (${fmt(Buffer.byteLength(text) / best / 1e6)} MB/s), ${n} ids`);
