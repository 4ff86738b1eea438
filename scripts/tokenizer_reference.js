#!/usr/bin/env node
// Reference GPT-2 tokenisation with the npm package gpt-3-encoder (tools/node_modules), the
// ground truth for gossamer's C++ tokenizer (src/data/gpt2_tokenizer.cpp).
//
//   node scripts/tokenizer_reference.js cases > tests/assets/tokenizer_cases.json
//       expected tokens for the hand-picked and fuzzed strings of the unit test
//   node scripts/tokenizer_reference.js compare [--docs blank-line|file] PREFIX INPUT...
//       tokenises INPUT... the way `gossamer prep` does (EOT before every document, documents
//       as in src/data/prep.h) and compares token for token with the shards PREFIX_000000.bin,
//       ...; prints the first mismatch with context and exits 1 on any difference
//   node scripts/tokenizer_reference.js encode FILE
//       prints encode(file contents) as JSON, fed piecewise (below)
//
// encode() of gpt-3-encoder is quadratic in its input's length, so long texts are fed in
// pieces cut only before a single space or newline that stands between two non-whitespace
// characters: the pattern's token there always ends at the non-whitespace character (no
// alternative continues from non-space into whitespace) and matching never looks behind, so
// such a cut cannot change the pre-tokenisation. (Cutting after every newline could:
// "\n\n" and trailing spaces tokenise differently at a string's end.)
'use strict';

const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
let gpt;
try {
  gpt = require(path.join(root, 'tools/node_modules/gpt-3-encoder'));
} catch (e) {
  console.error('tokenizer_reference: gpt-3-encoder is not installed; run scripts/get-tokenizer.sh');
  process.exit(2);
}
const EOT = 50256;
const PIECE_CHARS = 2000;

const isSpace = (ch) => /\s/.test(ch);

// encode(text) == concatenation of encode(piece) for the cuts described above.
function encodeLong(text) {
  const out = [];
  let start = 0;
  for (let i = start + PIECE_CHARS; i < text.length - 1; i++) {
    const c = text[i];
    if ((c === ' ' || c === '\n') && !isSpace(text[i - 1]) && !isSpace(text[i + 1])) {
      for (const t of gpt.encode(text.slice(start, i))) out.push(t);
      start = i;
      i = start + PIECE_CHARS - 1;
    }
  }
  for (const t of gpt.encode(text.slice(start))) out.push(t);
  return out;
}

// Documents of one file, as src/data/prep.cpp reads them.
function documents(buf, mode) {
  const text = buf.toString('utf8');
  if (mode === 'file') return text.length ? [text] : [];
  const docs = [];
  let cur = null;
  for (const line of text.split('\n')) {
    if (/^[ \t\r]*$/.test(line)) {
      if (cur !== null) docs.push(cur.join('\n'));
      cur = null;
    } else {
      (cur = cur || []).push(line);
    }
  }
  if (cur !== null) docs.push(cur.join('\n'));
  return docs;
}

function readShards(prefix) {
  const parts = [];
  for (let i = 0; ; i++) {
    const file = `${prefix}_${String(i).padStart(6, '0')}.bin`;
    if (!fs.existsSync(file)) break;
    const b = fs.readFileSync(file);
    const magic = b.readInt32LE(0), version = b.readInt32LE(4), count = b.readInt32LE(8);
    if (magic !== 20240520 || (version !== 1 && version !== 2))
      throw new Error(`${file}: bad header (magic ${magic}, version ${version})`);
    const width = version === 1 ? 2 : 4;
    if (b.length !== 1024 + count * width)
      throw new Error(`${file}: ${b.length} bytes, header says ${count} tokens of ${width} bytes`);
    for (let k = 0; k < count; k++)
      parts.push(version === 1 ? b.readUInt16LE(1024 + 2 * k) : b.readUInt32LE(1024 + 4 * k));
  }
  if (!parts.length) throw new Error(`no shards ${prefix}_000000.bin ...`);
  return parts;
}

const show = (tokens) => JSON.stringify(gpt.decode(tokens));

function compare(args) {
  let mode = 'blank-line';
  if (args[0] === '--docs') {
    mode = args[1];
    args = args.slice(2);
  }
  const [prefix, ...inputs] = args;
  if (!prefix || !inputs.length) usage();
  const t0 = Date.now();
  const ref = [];
  const docStart = [];  // index in ref of each document's EOT
  for (const file of inputs) {
    for (const doc of documents(fs.readFileSync(file), mode)) {
      docStart.push(ref.length);
      ref.push(EOT);
      for (const t of encodeLong(doc)) ref.push(t);
    }
  }
  const secs = (Date.now() - t0) / 1000;
  const got = readShards(prefix);
  const n = Math.min(ref.length, got.length);
  let i = 0;
  while (i < n && ref[i] === got[i]) i++;
  if (i === n && ref.length === got.length) {
    console.log(`tokenizer parity OK: ${ref.length} tokens in ${docStart.length} documents ` +
                `(${inputs.join(' ')}) identical to gpt-3-encoder (reference took ${secs.toFixed(1)} s)`);
    return;
  }
  let d = 0;
  while (d + 1 < docStart.length && docStart[d + 1] <= i) d++;
  console.error(`tokenizer parity FAILED at token ${i} of ${ref.length} (reference) / ` +
                `${got.length} (shards), document ${d}, token ${i - docStart[d]} of the document`);
  const lo = Math.max(0, i - 8);
  console.error(`  reference ${JSON.stringify(ref.slice(lo, i + 8))}`);
  console.error(`  shards    ${JSON.stringify(got.slice(lo, i + 8))}`);
  console.error(`  context   ${show(ref.slice(Math.max(0, i - 30), i))} | ` +
                `reference ${show(ref.slice(i, i + 10))} vs shards ${show(got.slice(i, i + 10))}`);
  process.exit(1);
}

// ---- unit-test cases ----------------------------------------------------------------------

const HANDPICKED = [
  ['empty', ''],
  ['hello', 'Hello world'],
  ['leading space', ' Hello'],
  ['trailing space', 'Hello '],
  ['trailing spaces', 'Hello   '],
  ['only spaces', '     '],
  ['spaces newlines x', '  \n\n  x'],
  ['newlines at end', 'x\n\n'],
  ['only newlines', '\n\n\n'],
  ['space before newline', 'a \nb'],
  ['spaces run then word', 'a     b'],
  ['tabs', '\t\tfoo\tbar\t'],
  ['tab space mix', '\t \t \n x'],
  ['crlf', 'line one\r\nline two\r\n'],
  ['cr only', 'a\rb\r'],
  ['vertical tab form feed', 'a\u000bb\u000cc'],
  ['nbsp', 'a\u00a0b a\u00a0\u00a0b \u00a0x'],
  ['ideographic space', 'a \u3000b\u3000\u3000c'],
  ['unicode spaces', 'a\u2000b\u2009c\u200ad\u202fe\u205ff\u1680g'],
  ['line separators', 'x\u2028y\u2029z'],
  ['bom', '\ufeffBOM at start'],
  ['nel not space', 'a\u0085b'],
  ['zero width', 'a\u200bb\u200cc\u200dd'],
  ['mongolian vowel separator', 'a\u180eb'],
  ['contractions', "don't I'm we'll they've you're he'd it's"],
  ['uppercase contractions', "DON'T IT'S I'M WE'LL THEY'VE YOU'RE HE'D"],
  ['contraction starts', "'s 't 're 've 'm 'll 'd 'S 'x ''s"],
  ['spaced apostrophes', " 's x 'S rock 'n' roll 'tis"],
  ['curly apostrophes', 'don\u2019t it\u2019s \u2018quoted\u2019 \u201cdouble\u201d'],
  ['ascii quotes', '"Hello," she said. \'Hi.\''],
  ['greek', 'Ελληνικά κείμενα με τόνους'],
  ['cyrillic', 'Русский текст, ёжик.'],
  ['hebrew', 'עברית עם ניקוד: שָׁלוֹם'],
  ['arabic', 'العربية مع أرقام ١٢٣'],
  ['devanagari', 'हिन्दी पाठ ०१२३'],
  ['cjk', '中文字符测试，标点。'],
  ['japanese', '日本語のテキスト、カタカナ。'],
  ['korean', '한국어 텍스트입니다'],
  ['thai', 'ภาษาไทยไม่มีช่องว่าง'],
  ['vietnamese', 'Tiếng Việt có dấu'],
  ['latin accents', 'naïve café façade Ångström'],
  ['combining marks', 'e\u0301 a\u0308\u0304 Z\u0324\u0354\u0367\u0311o\u0319'],
  ['math letters', '\u{1d400}\u{1d401} \u{1d7ce}\u{1d7cf}'],
  ['other digits', '١٢٣ ٤٥٦ ०१२ ൧൨ ໑໒ 𝟙𝟚'],
  ['number symbols', 'Ⅻ ½ ² ³ ① ⑳ 〇'],
  ['numbers', '3.14159 1,000,000 $100 50% 2024-05-20 0x1F'],
  ['digit letter mix', 'abc123def 123abc'],
  ['emoji', '😀 😃😄 a😀b'],
  ['emoji skin tones', '👍🏽 👋🏿 🤝🏻'],
  ['emoji zwj', '👨‍👩‍👧‍👦 🏳️‍🌈 👩🏽‍💻'],
  ['flags', '🇺🇸🇬🇧 🇯🇵'],
  ['variation selectors', '❤️ ☺︎ ✔️'],
  ['punctuation runs', '!!!??? ... --- ***'],
  ['endoftext literal', 'foo<|endoftext|>bar <|endoftext|>'],
  ['json', '{"a": [1, 2], "b": "c,d", "e": {"f": ["g", "h"]}}'],
  ['comma quotes', '",",",","\'",\'\',\'"],["'],
  ['brackets', '(parens) [brackets] {braces} <angles>'],
  ['code', 'for (int i = 0; i < n; ++i) {\n    x += a[i];\n}\n'],
  ['url', 'https://example.com/path?q=1&r=two#frag'],
  ['control chars', 'a\u0000b\u0001c\u007fd'],
  ['private use', '\ue000\uf8ff \u{f0000}'],
  ['unassigned and noncharacters', '\u0378 \ufffe \uffff \u{10ffff} \u{e0001}'],
  ['replacement char', 'a\ufffdb'],
  ['long word', 'a'.repeat(3000)],
  ['long punctuation', '='.repeat(1000)],
  ['long spaces', ' '.repeat(500) + 'x' + ' '.repeat(500)],
  ['mixed sentence', 'Hello, world! How\'s it going? 😀 — fine…  really\u00a0fine.\n\nNew paragraph.'],
];

// Bytes that are not valid UTF-8: Node turns them into U+FFFD per maximal invalid subpart.
const INVALID_HEX = [
  ['lone ff', 'ff'],
  ['lone continuation', '6180 62'],
  ['continuations', '8080bf'],
  ['overlong nul', 'c080'],
  ['overlong slash', 'e080af'],
  ['surrogate', 'eda080'],
  ['above max', 'f4908080'],
  ['f5 lead', 'f5808080'],
  ['truncated 2', 'c3'],
  ['truncated 3', 'e282'],
  ['truncated 3 then ascii', 'e28241'],
  ['truncated 4', 'f09f98'],
  ['truncated 4 then space', 'f09f9820'],
  ['mixed', '48656c6c6f20ff20776f726c64e28220f09f9880'],
  ['valid replacement', 'efbfbd'],
];

// Deterministic fuzz: short strings drawn from a pool that mixes the pattern's classes.
function fuzzCases(count) {
  const pool = [
    'a', 'b', 'Z', 'é', 'ß', 'λ', 'Ж', '中', 'の', '한', 'ก', '\u0301', '1', '7', '٣', '½',
    ' ', ' ', ' ', '  ', '\n', '\n\n', '\t', '\r\n', '\u00a0', '\u3000', "'", "'s", "'t",
    "'re", "'ll", 'S', '\u2019', '"', ',', '.', '!', '?', '-', '—', '(', ')', '[', ']', '{',
    '}', '😀', '👍🏽', '👨‍👩‍👧', '\u200d', '\ufe0f', '<|endoftext|>', '$', '%', '#',
  ];
  let seed = 20240520;
  const rnd = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const cases = [];
  for (let k = 0; k < count; k++) {
    const len = 1 + Math.floor(rnd() * 24);
    let s = '';
    for (let i = 0; i < len; i++) s += pool[Math.floor(rnd() * pool.length)];
    cases.push([`fuzz ${k}`, s]);
  }
  return cases;
}

function cases() {
  const out = [];
  for (const [name, text] of HANDPICKED.concat(fuzzCases(300))) {
    const tokens = gpt.encode(text);
    // (gpt-3-encoder's decode() goes through TextDecoder, which drops a leading BOM.)
    if (gpt.decode(tokens) !== text.replace(/^\ufeff/, ''))
      throw new Error(`reference round trip fails for ${name}`);
    out.push({name, text, tokens});
  }
  for (const [name, hex] of INVALID_HEX) {
    const text = Buffer.from(hex.replace(/ /g, ''), 'hex').toString('utf8');
    out.push({name, hex: hex.replace(/ /g, ''), sanitized_hex: Buffer.from(text, 'utf8').toString('hex'),
              tokens: gpt.encode(text)});
  }
  const pkg = require(path.join(root, 'tools/node_modules/gpt-3-encoder/package.json'));
  const doc = {
    generator: 'node scripts/tokenizer_reference.js cases > tests/assets/tokenizer_cases.json',
    node: process.version,
    unicode: process.versions.unicode,
    gpt_3_encoder: pkg.version,
    cases: out,
  };
  // One case per line keeps diffs readable.
  process.stdout.write(
      `{"generator":${JSON.stringify(doc.generator)},\n"node":${JSON.stringify(doc.node)},` +
      `"unicode":${JSON.stringify(doc.unicode)},"gpt_3_encoder":${JSON.stringify(doc.gpt_3_encoder)},\n` +
      `"cases":[\n${doc.cases.map((c) => JSON.stringify(c)).join(',\n')}\n]}\n`);
}

function usage() {
  console.error('usage: tokenizer_reference.js cases | compare [--docs blank-line|file] PREFIX INPUT... | encode FILE');
  process.exit(2);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === 'cases') cases();
else if (cmd === 'compare') compare(rest);
else if (cmd === 'encode' && rest.length === 1)
  process.stdout.write(JSON.stringify(encodeLong(fs.readFileSync(rest[0]).toString('utf8'))) + '\n');
else usage();
