// Which code points does the Rust oracle's regex engine put in \p{L}, \p{N}, \p{P}?
// Split(regex, Removed) drops matching text: a code point that matches disappears.
const t = require('tokenizers');
const fs = require('fs');
for (const k of ['L', 'N', 'P']) {
  const j = {version:'1.0',truncation:null,padding:null,added_tokens:[],normalizer:null,
    pre_tokenizer:{type:'Split',pattern:{Regex:`\\p{${k}}`},behavior:'Removed',invert:false},
    post_processor:null,decoder:null,model:{type:'BPE',dropout:null,unk_token:null,continuing_subword_prefix:null,
    end_of_word_suffix:null,fuse_unk:false,byte_fallback:false,vocab:{},merges:[]}};
  const p = t.Tokenizer.fromString(JSON.stringify(j)).getPreTokenizer();
  const out = [];
  let start = -1;
  const CH = 8192;
  for (let base = 0; base < 0x110000; base += CH) {
    let s = '';
    const cps = [];
    for (let cp = base; cp < base + CH && cp < 0x110000; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      s += String.fromCodePoint(cp) + '\u0000'; cps.push(cp);
    }
    const kept = new Set();
    for (const [str] of p.preTokenizeString(s)) for (const c of str) kept.add(c.codePointAt(0));
    for (const cp of cps) { const m = !kept.has(cp); if (m && start < 0) start = cp; if (!m && start >= 0) { out.push([start, cp - 1]); start = -1; } }
  }
  if (start >= 0) out.push([start, 0x10ffff]);
  fs.writeFileSync(process.argv[2] + '/hf_' + k + '.json', JSON.stringify(out));
  console.log(k, out.length);
}
