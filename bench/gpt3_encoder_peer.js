#!/usr/bin/env node
// bench/gpt3_encoder_peer.js: the JavaScript peer for the GPT-2 tokenizer benchmark. It times
// gpt-3-encoder@1.1.4 (npm), a JavaScript port of GPT-2's byte-level BPE, encoding one text.
//
// Usage:
//   node bench/gpt3_encoder_peer.js PACKAGE_DIR TEXT_FILE [REPEATS]
//
//   PACKAGE_DIR  the unpacked npm package: the folder holding Encoder.js, encoder.json, vocab.bpe
//   TEXT_FILE    a UTF-8 text (rejected if it is not valid UTF-8)
//   REPEATS      timed runs, default 3; the median is reported
//
// Prints exactly one line:
//   gpt3_encoder_peer: bytes=<n> tokens=<n> median_s=<s> mb_per_s=<MB/s, MB = 1e6 bytes> fnv1a=<0x...>
// where fnv1a is 64-bit FNV-1a over the ids, each fed as 4 bytes little-endian, the same hash as
// kFortunesFnv1a in tests/data/golden_gpt2_tokenizer.hpp (scripts/golden/gpt2_tokenizer.js).
//
// What is timed: encode() over the whole text, a line at a time, and nothing else: not reading
// the file, not loading the module (which parses encoder.json and vocab.bpe).
//
// Why a line at a time: encode() appends each word's ids with
// `bpe_tokens = bpe_tokens.concat(new_tokens)`, which copies the whole id array every time, so
// one call costs O(tokens^2): measured on a 2-core machine, 24 KB in about 0.1 s, 250 KB in about
// 58 s, 1 MB in about 850 s; one call on 10 MB would take about a day. A user encodes a large
// text in pieces, and so does this peer: it cuts before each "\n" that follows a character
// outside \s, where GPT-2's pattern always ends a piece, so the ids are exactly those of one call
// (scripts/golden/gpt2_tokenizer.js cuts the same way, and checks it).
//
// Fairness: Encoder.js memoizes BPE results in a module-level `cache` (a Map from word to
// merged word) that lives as long as the module. After the warm-up run every word of the text
// is in it, so a second run skips every BPE merge and looks several times faster than a cold
// run. So before each timed run we drop the module from require.cache and require it again:
// every timed run gets a fresh module with an empty cache, like a first call in a new process.
// (tapegrad's encode keeps no cache between calls either.)

'use strict';

const fs = require('fs');
const path = require('path');

function usage() {
  process.stderr.write('usage: node bench/gpt3_encoder_peer.js PACKAGE_DIR TEXT_FILE [REPEATS]\n');
  process.exit(2);
}

const [packageDir, textFile, repeatsArg] = process.argv.slice(2);
if (!packageDir || !textFile || process.argv.length > 5) usage();
const repeats = repeatsArg === undefined ? 3 : Number(repeatsArg);
if (!Number.isInteger(repeats) || repeats < 1) usage();

const encoderPath = path.resolve(packageDir, 'Encoder.js');

// A fresh copy of Encoder.js, with an empty word cache (see "Fairness" above).
function freshEncoder() {
  delete require.cache[require.resolve(encoderPath)];
  return require(encoderPath);
}

// 64-bit FNV-1a over the ids, 4 bytes each, little-endian (same as the golden script).
function fnv1a64(ids) {
  const prime = 0x100000001b3n;
  let h = 0xcbf29ce484222325n;
  for (const id of ids) {
    for (let k = 0; k < 4; ++k) {
      h ^= BigInt((id >>> (8 * k)) & 0xff);
      h = BigInt.asUintN(64, h * prime);
    }
  }
  return h;
}

const bytes = fs.readFileSync(textFile);
let text;
try {
  text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
} catch (e) {
  process.stderr.write(`${textFile}: not valid UTF-8 (${e.message})\n`);
  process.exit(1);
}

// encode() a line at a time (see "Why a line at a time" above).
function encodeByLine(encode, text) {
  const ids = [];
  let start = 0;
  for (let i = text.indexOf('\n', 1); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (/\s/u.test(text[i - 1])) continue;
    for (const id of encode(text.slice(start, i))) ids.push(id);
    start = i;
  }
  for (const id of encode(text.slice(start))) ids.push(id);
  return ids;
}

// Warm-up: one untimed run. Its ids are the reference the timed runs must reproduce.
const reference = encodeByLine(freshEncoder().encode, text);

const seconds = [];
for (let r = 0; r < repeats; ++r) {
  const { encode } = freshEncoder();  // not timed: loading parses encoder.json and vocab.bpe
  const t0 = process.hrtime.bigint();
  const ids = encodeByLine(encode, text);
  const t1 = process.hrtime.bigint();
  seconds.push(Number(t1 - t0) / 1e9);
  // Not timed: make sure every run did the same work.
  if (ids.length !== reference.length || ids.some((id, i) => id !== reference[i])) {
    process.stderr.write(`run ${r}: ids differ from the warm-up run\n`);
    process.exit(1);
  }
}

seconds.sort((a, b) => a - b);
const mid = seconds.length >> 1;
const median = seconds.length % 2 ? seconds[mid] : (seconds[mid - 1] + seconds[mid]) / 2;
const mbPerS = bytes.length / 1e6 / median;

console.log(
  `gpt3_encoder_peer: bytes=${bytes.length} tokens=${reference.length} ` +
  `median_s=${median.toFixed(4)} mb_per_s=${mbPerS.toFixed(3)} ` +
  `fnv1a=0x${fnv1a64(reference).toString(16).padStart(16, '0')}`);
