#!/usr/bin/env node
// Checks that llama.cpp tokenizes tern's packed GGUF files exactly as tern
// does, and records llama.cpp's ids in tests/data/tokenizers/llamacpp/ so the
// C++ tests (tests/tokenizer/test_llamacpp_tokenize.cpp) can hold tern to
// them without npm. See README.md beside this file.
//
// For every tokenizer under tests/data/tokenizers/<name>/ that has a
// tokenizer.json and goldens/<name>.json:
//   1. make a tiny BitNet checkpoint with that tokenizer
//      (tests/tools/make_tiny_checkpoint.py) and pack it (tern pack);
//   2. load the pack with node-llama-cpp (vocabulary only) and tokenize every
//      golden case, special tokens parsed and not parsed, with BOS/EOS as the
//      model adds them (llama_vocab_get_add_bos/eos);
//   3. tokenize the same bytes with `tern tokenize -f FILE --ids --no-escape`
//      (and --no-parse-special) and compare; compare llama.cpp with the
//      Hugging Face goldens too;
//   4. the same for the goldens' big inputs (the King James Bible, the 1 MB
//      random Unicode text): count, FNV-1a 64 and the first difference.
//
// Usage: node check.mjs [--repo DIR] [--tern EXE] [--work DIR] [--only a,b]
//                       [--no-big] [--no-write] [--jobs N]
// Exits 1 if tern and llama.cpp disagree anywhere that llama.cpp agrees
// with Hugging Face (tern follows Hugging Face where the two differ).
import {execFileSync, spawn} from "node:child_process";
import {createHash} from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
function opt(name, def) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
}
const flag = (name) => args.includes(name);

const repo = path.resolve(opt("--repo", path.join(here, "../../..")));
const ternExe = path.resolve(opt("--tern", path.join(repo, "build/tern")));
const work = path.resolve(opt("--work", "/tmp/tern-llamacpp-tokenize"));
const only = opt("--only", "") ? opt("--only").split(",") : null;
const jobs = Number(opt("--jobs", "2"));
const data = path.join(repo, "tests/data/tokenizers");
const outDir = path.join(data, "llamacpp");
if (!fs.existsSync(path.join(data, "goldens"))) {
  console.error(`${data}/goldens not found: pass --repo (the tern checkout) when running a copy of this script`);
  process.exit(2);
}
if (!fs.existsSync(ternExe)) {
  console.error(`${ternExe} not found: build tern first or pass --tern`);
  process.exit(2);
}

const nlcPkg = JSON.parse(fs.readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))), "../package.json"), "utf8"));

function fnv1a64Bytes(buf, h = 0xcbf29ce484222325n) {
  for (const b of buf) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h;
}
function fnvIdsFast(ids) {
  // 64-bit FNV-1a with two 32-bit halves (prime 0x100000001b3 = 2^40 + 0x1b3).
  let hi = 0xcbf29ce4, lo = 0x84222325;
  const step = (byte) => {
    lo = (lo ^ byte) >>> 0;
    // (hi,lo) * 0x1b3 + (hi,lo) << 40
    const loMul = lo * 0x1b3;
    const carry = Math.floor(loMul / 0x100000000);
    const newLo = loMul >>> 0;
    const newHi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    hi = newHi; lo = newLo;
  };
  for (const v of ids) {
    const u = v >>> 0;
    step(u & 0xff); step((u >>> 8) & 0xff); step((u >>> 16) & 0xff); step(u >>> 24);
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}
const eq = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; ++i) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function run(cmd, argv, input) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, {stdio: ["pipe", "pipe", "pipe"]});
    const out = [], err = [];
    p.stdout.on("data", (d) => out.push(d));
    p.stderr.on("data", (d) => err.push(d));
    p.on("error", reject);
    p.on("close", (code) => {
      if (code !== 0) reject(new Error(`${cmd} ${argv.join(" ")}: exit ${code}\n${Buffer.concat(err)}`));
      else resolve(Buffer.concat(out).toString("utf8"));
    });
    p.stdin.end(input ?? "");
  });
}
async function pool(tasks, n) {
  const results = new Array(tasks.length);
  let next = 0;
  await Promise.all(Array.from({length: n}, async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  }));
  return results;
}
async function ternIds(model, file, parseSpecial) {
  const a = ["tokenize", "-m", model, "-f", file, "--ids", "--no-escape"];
  if (!parseSpecial) a.push("--no-parse-special");
  // A rebuild may be relinking tern just now: wait for it rather than fail.
  for (let attempt = 0; ; ++attempt) {
    try {
      return JSON.parse(await run(ternExe, a));
    } catch (e) {
      if (attempt >= 20 || !["EACCES", "ETXTBSY", "ENOENT"].includes(e.code)) throw e;
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
}

function pack(name) {
  const dir = path.join(work, name);
  fs.rmSync(dir, {recursive: true, force: true});
  fs.mkdirSync(dir, {recursive: true});
  execFileSync("/usr/bin/python3", [path.join(repo, "tests/tools/make_tiny_checkpoint.py"), path.join(dir, "hf"),
    "--mode", "bitnet", "--dtype", "f16", "--layers", "1", "--seed", "11",
    "--tokenizer-dir", path.join(data, name)], {stdio: ["ignore", "ignore", "inherit"]});
  const model = path.join(dir, "model.gguf");
  execFileSync(ternExe, ["pack", path.join(dir, "hf"), "-o", model], {stdio: ["ignore", "ignore", "inherit"]});
  return model;
}

function bigText(b) {
  if (b.name === "kjv") return execFileSync("sh", [path.join(repo, "tests/tools/kjv_text.sh")], {maxBuffer: 1 << 30});
  return fs.readFileSync(path.join(repo, b.source));
}

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const release = llama.llamaCppRelease;
console.log(`node-llama-cpp ${nlcPkg.version}, llama.cpp ${release.repo} ${release.release} (${llama.buildType}, gpu ${llama.gpu})`);

const names = fs.readdirSync(data)
  .filter((n) => fs.existsSync(path.join(data, n, "tokenizer.json")) && fs.existsSync(path.join(data, "goldens", n + ".json")))
  .filter((n) => !only || only.includes(n))
  .sort();
let bad = 0;
const summary = [];
for (const name of names) {
  console.log(`\n== ${name}`);
  const golden = JSON.parse(fs.readFileSync(path.join(data, "goldens", name + ".json"), "utf8"));
  const model = pack(name);
  const m = await llama.loadModel({modelPath: model, vocabOnly: true});
  const addBos = m.tokens.shouldPrependBosToken && m.tokens.bos != null;
  const addEos = m.tokens.shouldAppendEosToken && m.tokens.eos != null;
  const lcpp = (text, special) => [...(addBos ? [m.tokens.bos] : []), ...m.tokenize(text, special), ...(addEos ? [m.tokens.eos] : [])];
  console.log(`vocab type ${m.vocabularyType ?? "?"}, add_bos ${addBos} (${m.tokens.bos}), add_eos ${addEos} (${m.tokens.eos})`);

  const caseDir = path.join(work, name, "cases");
  fs.mkdirSync(caseDir, {recursive: true});
  const cases = golden.cases.map((c, i) => {
    // tern gets the raw bytes; llama.cpp gets a JS string, which for invalid
    // UTF-8 is the WHATWG-decoded text (one U+FFFD per maximal invalid subpart).
    const bytes = c.hex !== undefined ? Buffer.from(c.hex, "hex") : Buffer.from(c.text, "utf8");
    const text = c.hex !== undefined ? new TextDecoder("utf-8").decode(bytes) : c.text;
    const file = path.join(caseDir, `${String(i).padStart(3, "0")}.txt`);
    fs.writeFileSync(file, bytes);
    return {c, text, file};
  });
  const ternRes = await pool(cases.flatMap(({file}) => [() => ternIds(model, file, true), () => ternIds(model, file, false)]), jobs);

  const out = [];
  const st = {cases: cases.length, tern_lcpp: 0, tern_lcpp_unparsed: 0, lcpp_hf: 0, lcpp_hf_unparsed: 0, hf_unparsed_known: 0};
  cases.forEach(({c, text}, i) => {
    const ids = lcpp(text, true), idsLit = lcpp(text, false);
    const tIds = ternRes[2 * i], tLit = ternRes[2 * i + 1];
    const hf = c.ids, hfLit = c.ids_no_parse_special ?? (c.name.startsWith("special_") ? null : c.ids);
    const rec = {name: c.name};
    if (c.hex !== undefined) { rec.hex = c.hex; rec.llamacpp_text = text; } else rec.text = c.text;
    rec.ids = ids;
    rec.ids_no_parse_special = idsLit;
    const agreeHf = eq(ids, hf), agreeHfLit = hfLit === null ? null : eq(idsLit, hfLit);
    if (!agreeHf) rec.hf_ids = hf;
    if (agreeHfLit === false) rec.hf_ids_no_parse_special = hfLit;
    st.tern_lcpp += eq(tIds, ids);
    st.tern_lcpp_unparsed += eq(tLit, idsLit);
    st.lcpp_hf += agreeHf;
    if (hfLit !== null) { st.hf_unparsed_known++; st.lcpp_hf_unparsed += agreeHfLit; }
    const show = (label, a) => `    ${label.padEnd(28)} ${JSON.stringify(a)}`;
    if (!eq(tIds, ids) || !agreeHf) {
      console.log(`  ${c.name} (special parsed):\n${show("llama.cpp", ids)}\n${show("tern", tIds)}\n${show("hf", hf)}`);
      if (!eq(tIds, ids) && agreeHf) bad++;
    }
    if (!eq(tLit, idsLit) || agreeHfLit === false) {
      console.log(`  ${c.name} (special not parsed):\n${show("llama.cpp", idsLit)}\n${show("tern", tLit)}\n${show("hf", hfLit)}`);
      if (!eq(tLit, idsLit) && agreeHfLit !== false) bad++;
    }
    out.push(rec);
  });

  const big = [];
  if (!flag("--no-big")) {
    for (const b of golden.big ?? []) {
      const buf = bigText(b);
      const textFnv = fnv1a64Bytes(buf).toString(16).padStart(16, "0");
      if (buf.length !== b.text_bytes || textFnv !== b.text_fnv1a64) {
        console.log(`  ${b.name}: not the text the goldens were made from; skipped`);
        continue;
      }
      const file = path.join(work, name, b.name + ".txt");
      fs.writeFileSync(file, buf);
      let t0 = Date.now();
      const ids = lcpp(buf.toString("utf8"), true);
      const lcppMs = Date.now() - t0;
      t0 = Date.now();
      const tIds = await ternIds(model, file, true);
      const ternMs = Date.now() - t0;
      const fnv = fnvIdsFast(ids), tFnv = fnvIdsFast(tIds);
      const d = firstDiff(ids, tIds);
      const rec = {name: b.name, text_bytes: b.text_bytes, text_fnv1a64: b.text_fnv1a64, count: ids.length, fnv1a64: fnv};
      if (fnv !== b.fnv1a64 || ids.length !== b.count) { rec.hf_count = b.count; rec.hf_fnv1a64 = b.fnv1a64; }
      big.push(rec);
      console.log(`  ${b.name}: llama.cpp ${ids.length} ids ${fnv} (${lcppMs} ms), tern ${tIds.length} ids ${tFnv} (${ternMs} ms), hf ${b.count} ids ${b.fnv1a64}`);
      if (d >= 0) {
        console.log(`    tern vs llama.cpp: first difference at id ${d}: llama.cpp ${JSON.stringify(ids.slice(Math.max(0, d - 3), d + 8))} tern ${JSON.stringify(tIds.slice(Math.max(0, d - 3), d + 8))}`);
        if (fnv === b.fnv1a64) bad++;
      }
      if (fnv !== b.fnv1a64 && b.first_ids) {
        const hd = firstDiff(ids.slice(0, b.first_ids.length), b.first_ids);
        console.log(`    llama.cpp vs hf: ${hd >= 0 ? `first difference at id ${hd}` : "first " + b.first_ids.length + " ids agree"}`);
      }
      st[b.name] = {tern_lcpp: d < 0, lcpp_hf: fnv === b.fnv1a64 && ids.length === b.count};
    }
  }
  await m.dispose();
  console.log(`  ${JSON.stringify(st)}`);
  summary.push({name, ...st});

  if (!flag("--no-write")) {
    fs.mkdirSync(outDir, {recursive: true});
    const sha = (f) => createHash("sha256").update(fs.readFileSync(path.join(data, name, f))).digest("hex");
    const doc = {
      tokenizer: name,
      llama_cpp: {node_llama_cpp: nlcPkg.version, repo: release.repo, release: release.release},
      packed: "tests/tools/make_tiny_checkpoint.py OUT --mode bitnet --dtype f16 --layers 1 --seed 11 " +
        `--tokenizer-dir tests/data/tokenizers/${name}; tern pack OUT`,
      files: Object.fromEntries(["tokenizer.json", "tokenizer_config.json"]
        .filter((f) => fs.existsSync(path.join(data, name, f))).map((f) => [f, sha(f)])),
      add_bos: addBos, add_eos: addEos,
      fields: {
        ids: "llama.cpp: llama_tokenize(text, add_special=true, parse_special=true)",
        ids_no_parse_special: "llama.cpp: the same with parse_special=false",
        hf_ids: "only where Hugging Face (goldens/<name>.json ids) differs from llama.cpp",
        hf_ids_no_parse_special: "only where Hugging Face differs (its ids_no_parse_special, or ids for a case without special-token text)",
        llamacpp_text: "hex cases: the text llama.cpp was given (the bytes decoded with U+FFFD replacement)",
      },
      cases: out,
      big,
    };
    // One case per line keeps the file small and diffs readable.
    const head = Object.entries(doc).filter(([k]) => k !== "cases" && k !== "big")
      .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`);
    const list = (k, rows) => `${JSON.stringify(k)}: [\n` + rows.map((r) => "  " + JSON.stringify(r)).join(",\n") + "\n]";
    const body = "{\n" + [...head, list("cases", out), list("big", big)].join(",\n") + "\n}\n";
    JSON.parse(body);
    fs.writeFileSync(path.join(outDir, name + ".json"), body);
  }
}
console.log("\nsummary (cases agreeing):");
for (const s of summary) console.log("  " + JSON.stringify(s));
console.log(bad ? `\n${bad} disagreement(s) between tern and llama.cpp where llama.cpp agrees with Hugging Face` : "\ntern == llama.cpp wherever llama.cpp == Hugging Face");
process.exit(bad ? 1 : 0);
