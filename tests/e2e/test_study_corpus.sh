# The study corpus builder (scripts/build_corpus.js study, docs/DATA.md) on a small fixture in
# the shape of its sources: which files it reads (kernel: *.rst and *.txt outside translations/,
# no symbolic links; Python: *.rst.txt), the cleaning (paragraph lines, SPDX and rule lines,
# files with few letters or nothing left), the split (file i to validation when i % 20 == 19,
# counted before dropping) and the interleaved order, byte for byte; the same bytes twice; and
# the version check of scripts/get-corpus.sh study --check against a manifest. Needs node and
# dpkg-query, not the Debian packages of the real corpus (nothing is downloaded).
source "$(dirname "$0")/lib.sh"

command -v node >/dev/null || { echo "FAIL: node not found (install Node.js >= 18)" >&2; exit 1; }

k="$WORK/kernel" p="$WORK/python" w="$WORK/web" b="$WORK/brown"
mkdir -p "$k/translations/zh_CN" "$k/sub" "$p/library" "$w" "$b"
for i in $(seq -w 0 39); do printf '.. SPDX-License-Identifier: GPL-2.0\n\nKernel doc %s.\n' "$i" >"$k/doc$i.rst"; done
printf '.. SPDX-License-Identifier: GPL-2.0\r\n\r\n=====\r\nTitle\r\n=====\r\n\r\nFirst\tparagraph  line one\r\n   continues here.\r\n\f\r\n+---+---+\r\n| a | b |\r\n+---+---+\r\n' >"$k/doc19.rst"
printf 'Last kernel doc.\n' >"$k/doc39.rst"
ln -s doc05.rst "$k/doc05-link.rst"                # a link is not read (it would shift the split)
printf 'Nested doc.\n' >"$k/sub/nested.txt"
printf 'Translated doc.\n' >"$k/translations/zh_CN/doc.rst"
printf 'yaml: text\n' >"$k/binding.yaml"
printf '+--+\n|  |--> 0x00 0x01 0x02 0x03\n' >"$k/zz-art.txt"
printf '.. SPDX-License-Identifier: GPL-2.0\n\n======\n' >"$k/zz-empty.rst"
for i in $(seq -w 0 19); do printf 'Python doc %s.\n' "$i" >"$p/library/p$i.rst.txt"; done
printf "Python doc nineteen.\n\n>>> print('x')\nx\n" >"$p/library/p19.rst.txt"
printf 'Not a source.\n' >"$p/notes.txt"
printf 'w1 a\nw1 b\n\nw2\n' >"$w/train.txt"
printf 'wv1\n\nwv2\n' >"$w/val.txt"
printf 'b1\n' >"$b/train.txt"
printf 'bv1\n' >"$b/val.txt"

node scripts/build_corpus.js study "$WORK/out1" "$k" "$p" "$w" "$b" 2>"$WORK/log1"
node scripts/build_corpus.js study "$WORK/out2" "$k" "$p" "$w" "$b" 2>/dev/null
cat "$WORK/log1"
for f in train.txt val.txt; do
  if cmp -s "$WORK/out1/$f" "$WORK/out2/$f"; then pass "$f: the same bytes twice"; else fail "$f differs between two builds"; fi
done

# Validation: kernel files 19 and 39, Python file 19, web's and brown's own validation documents,
# interleaved by position (i + 0.5) / n, ties in source order.
expected_val=$'Title\nFirst paragraph line one continues here.\n| a | b |\n\nwv1\n\nPython doc nineteen.\n>>> print(\'x\') x\n\nbv1\n\nLast kernel doc.\n\nwv2\n'
if [[ "$(cat "$WORK/out1/val.txt"; echo .)" == "$expected_val." ]]; then
  pass "val.txt: split, cleaning and order as specified"
else
  fail "val.txt differs from the expected text: $(head -c 400 "$WORK/out1/val.txt")"
fi

train="$WORK/out1/train.txt"
docs=$(($(grep -c '^$' "$train") + 1))
# kernel 40 + sub/nested.txt = 41 read, minus the two in validation; python 19; web 2; brown 1.
if [[ $docs -eq $((39 + 19 + 2 + 1)) ]]; then pass "train.txt: $docs documents"; else fail "train.txt: $docs documents, expected 61"; fi
for absent in 'Translated doc' 'yaml: text' 'Not a source' 'SPDX' '0x00' '====' 'Kernel doc 19' 'Python doc 19'; do
  if grep -qF -- "$absent" "$train"; then fail "train.txt holds \"$absent\""; else pass "train.txt: no \"$absent\""; fi
done
n05=$(grep -cxF 'Kernel doc 05.' "$train" || true)
[[ $n05 -eq 1 ]] && pass "the symbolic link is not read" || fail "Kernel doc 05 appears $n05 times"
grep -qxF 'Nested doc.' "$train" && pass "files in subdirectories are read" || fail "sub/nested.txt missing"
grep -qF 'zz-art.txt (' "$WORK/log1" && grep -qF 'zz-empty.rst (empty)' "$WORK/log1" &&
  pass "dropped files are named in the log" || fail "the log does not name the dropped files"
# Layout (docs/DATA.md): no leading or trailing spaces, one empty line between documents, a final
# "\n" and no empty line at the end.
for f in "$train" "$WORK/out1/val.txt"; do
  if grep -qE '^ | $' "$f" || grep -qzP '\n\n\n|^\n|\n\n$' "$f" || [[ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ]]; then
    fail "$(basename "$f"): not in the corpus layout"
  else
    pass "$(basename "$f"): corpus layout"
  fi
done

expect_error "study: a source directory missing" 'not a directory' \
  node scripts/build_corpus.js study "$WORK/out3" "$WORK/none" "$p" "$w" "$b"
printf 'a\n\n\nb\n' >"$WORK/bad.txt"
mkdir -p "$WORK/badweb" && cp "$WORK/bad.txt" "$WORK/badweb/train.txt" && cp "$w/val.txt" "$WORK/badweb/val.txt"
expect_error "study: web corpus not in the corpus layout" 'not in the corpus layout' \
  node scripts/build_corpus.js study "$WORK/out3" "$k" "$p" "$WORK/badweb" "$b"

# The committed manifest pins both Debian packages and both files.
m=scripts/study-corpus.manifest
for re in '^deb linux-source-6\.1 [0-9]' '^deb python3\.11-doc [0-9]' '^sha256 train\.txt [0-9a-f]{64}$' \
  '^sha256 val\.txt [0-9a-f]{64}$'; do
  grep -qE "$re" "$m" && pass "$m: /$re/" || fail "$m has no line /$re/"
done

# get-corpus.sh study --check compares installed versions with a manifest (diatheke stands in
# for the study packages: install-deps.sh installs it for every build).
if have="$(dpkg-query -W -f='${Version}' diatheke 2>/dev/null)" && [[ -n "$have" ]]; then
  printf 'deb diatheke %s\n' "$have" >"$WORK/ok.manifest"
  if GOSSAMER_STUDY_MANIFEST="$WORK/ok.manifest" bash scripts/get-corpus.sh study --check >/dev/null; then
    pass "--check: installed versions match"
  else
    fail "--check failed on a manifest of the installed diatheke $have"
  fi
  printf 'deb gossamer-no-such-package 1.0-1\n' >"$WORK/missing.manifest"
  expect_error "study: a pinned package not installed" \
    'gossamer-no-such-package: pinned 1.0-1, installed \(not installed\)' \
    env GOSSAMER_STUDY_MANIFEST="$WORK/missing.manifest" bash scripts/get-corpus.sh study --check
  printf 'deb diatheke 0.0-test\n' >"$WORK/old.manifest"
  msg="$(GOSSAMER_STUDY_MANIFEST="$WORK/old.manifest" bash scripts/get-corpus.sh study --check 2>&1 || true)"
  grep -qF 'apt-get install --allow-downgrades diatheke=0.0-test' <<<"$msg" && grep -qF 'GOSSAMER_STUDY_REPIN=1' <<<"$msg" &&
    pass "--check, another version installed: the message says how to install the pinned one or re-pin" ||
    fail "--check: the message lacks the remedies: $msg"
else
  fail "diatheke is not installed (scripts/install-deps.sh)"
fi
expect_error "get-corpus: unknown corpus" 'usage: scripts/get-corpus.sh' bash scripts/get-corpus.sh nosuch

finish
