// The reference for wit's GPT-2 tokenizer: tiktoken's "gpt2" encoding (npm package tiktoken, a
// WASM build of its Rust core), run by node. Installed in deps/node_modules by
// launch/install-deps; run with NODE_PATH pointing there.
//
//   node tiktoken_ids.cjs file FILE        ids of FILE's bytes, space-separated, on one line
//   node tiktoken_ids.cjs check JSONL      compares `wit tokenize --documents` output line by
//                                          line; prints the first difference and exits 1
//   node tiktoken_ids.cjs bench JSONL      encoding speed over the same documents (MB/s)
//
// Bytes that are not UTF-8 cannot be a JS string: as wit does, each byte that starts no valid
// UTF-8 sequence is its own one-byte token, and the valid stretches between them are encoded.
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");

const enc = get_encoding("gpt2");

// Length of the valid UTF-8 sequence at b[i], 0 when none starts there (as wit decides it).
function sequence(b, i) {
  const c = b[i];
  if (c < 0x80) return 1;
  let n, cp;
  if (c >= 0xc2 && c <= 0xdf) { n = 2; cp = c & 0x1f; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; cp = c & 0x0f; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > b.length) return 0;
  for (let k = 1; k < n; k++) {
    if ((b[i + k] & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (b[i + k] & 0x3f);
  }
  if ((n === 3 && cp < 0x800) || (n === 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

function encodeBytes(b) {
  const out = [];
  let begin = 0, i = 0;
  const text = (from, to) => { if (to > from) out.push(...enc.encode_ordinary(b.toString("utf8", from, to))); };
  while (i < b.length) {
    const n = sequence(b, i);
    if (n > 0) { i += n; continue; }
    text(begin, i);
    out.push(enc.encode_single_token(b.subarray(i, i + 1)));
    begin = ++i;
  }
  text(begin, b.length);
  return out;
}

function documents(file) {
  return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0).map((l) => {
    const d = JSON.parse(l);
    d.bytes = d.text !== undefined ? Buffer.from(d.text, "utf8") : Buffer.from(d.text_hex, "hex");
    return d;
  });
}

const [mode, file] = process.argv.slice(2);
if (mode === "file") {
  console.log(encodeBytes(fs.readFileSync(file)).join(" "));
} else if (mode === "check") {
  let tokens = 0, n = 0;
  for (const d of documents(file)) {
    const want = encodeBytes(d.bytes);
    const got = d.tokens;
    const k = want.findIndex((t, i) => t !== got[i]);
    if (k >= 0 || want.length !== got.length) {
      const at = k >= 0 ? k : Math.min(want.length, got.length);
      console.log(`DIFFERS: ${d.source}: token ${at}: wit ${JSON.stringify(got.slice(at, at + 8))}, ` +
                  `tiktoken ${JSON.stringify(want.slice(at, at + 8))} (${got.length} vs ${want.length} tokens)`);
      process.exit(1);
    }
    tokens += want.length;
    n++;
  }
  console.log(`${n} documents, ${tokens} tokens: the same ids as tiktoken's gpt2`);
} else if (mode === "bench") {
  const docs = documents(file);
  let bytes = 0, tokens = 0;
  for (const d of docs.slice(0, 50)) enc.encode_ordinary(d.text);  // warm-up
  const start = process.hrtime.bigint();
  for (const d of docs) { tokens += enc.encode_ordinary(d.text).length; bytes += d.bytes.length; }
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ bytes, tokens, seconds: s, mb_per_s: bytes / s / 1e6 }));
} else {
  console.error("usage: tiktoken_ids.cjs file|check|bench FILE");
  process.exit(2);
}
enc.free();
