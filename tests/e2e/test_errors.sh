# Bad input gets one clear error naming the file/key, a non-zero exit, and nothing written:
# config problems, shard problems, checkpoint problems, tokenizer problems, output problems, CLI.
source "$(dirname "$0")/lib.sh"
require_data
TINY=configs/test/gpt2-tiny.json
run() { "$GOSSAMER" "$@"; }

# -- configs
expect_error "missing config" "nope.json: cannot open" run train -c "$WORK/nope.json"
echo '{"model": {' >"$WORK/broken.json"
expect_error "malformed JSON" "broken.json: not valid JSON" run train -c "$WORK/broken.json"
echo '{"optimizer": {"lrr": 1}}' >"$WORK/unknown.json"
expect_error "unknown key" "optimizer.lrr: unknown key" run train -c "$WORK/unknown.json"
echo '{"optimiser": {}}' >"$WORK/section.json"
expect_error "unknown section" "optimiser: unknown section" run train -c "$WORK/section.json"
echo '{"train": {"steps": "ten"}}' >"$WORK/type.json"
expect_error "wrong type" "train.steps: expected an integer, found string" run train -c "$WORK/type.json"
expect_error "fractional integer" "data.micro_batch: expected an integer" run train -c $TINY --set data.micro_batch=2.5
expect_error "integer out of range" "model.vocab_size: expected an integer from -2147483648 to 2147483647, found integer 4294967296, out of that range" \
  run train -c $TINY --set model.vocab_size=4294967296
expect_error "null for an enum" 'model.family: expected a string, one of "gpt2" or "llama", found null$' run train -c $TINY --set model.family=null
# Config files that are not files: refused at once, never read without end nor waited on.
expect_error "config from /dev/zero" "/dev/zero: is a character device, not a config file" timeout 20 "$GOSSAMER" train -c /dev/zero
expect_error "config from /dev/urandom" "/dev/urandom: is a character device, not a config file" timeout 20 "$GOSSAMER" train -c /dev/urandom
mkfifo "$WORK/fifo.json"
expect_error "config from a FIFO" "fifo.json: is a FIFO \(named pipe\), not a config file" timeout 20 "$GOSSAMER" train -c "$WORK/fifo.json"
ln -s "$WORK/loop-b.json" "$WORK/loop-a.json" && ln -s "$WORK/loop-a.json" "$WORK/loop-b.json"
expect_error "config behind a symbolic-link loop" "loop-a.json: cannot open config file: Too many levels of symbolic links" run train -c "$WORK/loop-a.json"
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$WORK/huge.json"
expect_error "config of 17 MiB" "huge.json: config file of more than 16777216 bytes; refusing to read it" run train -c "$WORK/huge.json"
# Limits of the machine that runs: threads, memory (refused before anything is allocated).
expect_error "threads beyond 4 per core" "kernels.threads: 100000 is more than 4 per core of the [0-9]+ core\(s\) here" \
  run train -c $TINY --set kernels.threads=100000 --out "$WORK/threads"
expect_error "a model that cannot fit in memory" "the run needs at least [0-9.]+ GiB per rank \(model.n_layer 100000, .*\), and this machine has [0-9.]+ GiB available" \
  run train -c $TINY --set model.n_layer=100000 --out "$WORK/huge"
[[ ! -e "$WORK/huge" && ! -e "$WORK/threads" ]] && pass "the refused runs wrote nothing" || fail "a refused run wrote its directory"
expect_error "heads do not divide" "model.n_head: must divide d_model=64" run train -c $TINY --set model.n_head=5
expect_error "seq_len beyond positions" "data.seq_len: must lie in" run train -c $TINY --set data.seq_len=65
expect_error "global batch not a multiple" "train.global_batch_tokens: must be a non-negative multiple" run train -c $TINY --set train.global_batch_tokens=1000
expect_error "unknown optimizer" 'optimizer.name: unknown optimizer "sgdx"' run train -c $TINY --set optimizer.name=sgdx
expect_error "bad --set" "--set oops: expected KEY=VALUE" run train -c $TINY --set oops
expect_error "old flat optimizer key" "optimizer.sparsity: this key moved to optimizer.scape.sparsity" \
  run train -c $TINY --set optimizer.name=scape --set optimizer.sparsity=0.9
expect_error "section of another method" 'optimizer.scape: section not used: optimizer.name is "adamw"' \
  run train -c $TINY --set optimizer.scape.sparsity=0.9
expect_error "unknown enum value" 'optimizer.scape.reading: expected a string, one of "A" or "B", found string "C"' \
  run train -c $TINY --set optimizer.name=scape --set optimizer.scape.reading=C
expect_error "nccl for host buffers" 'parallel.backend = "nccl": NCCL moves device memory' \
  run train -c $TINY --set parallel.backend=nccl
# Several ranks on GPUs: compression is refused before a GPU is chosen (the codec runs on host
# buffers); without a GPU (CI) the device is refused, naming the key, on every rank.
# (every rank reports it; the pattern takes rank 0's line, so the recorded message is stable)
expect_error "compression with device buffers" '\[error\] parallel.compression = on: the codec runs on host buffers' \
  mpirun_np 2 "$GOSSAMER" train -c $TINY --out "$WORK/dz" --set kernels.device=cuda --set parallel.compression=on
if out="$(mpirun_np 2 "$GOSSAMER" train -c $TINY --out "$WORK/d2" --set kernels.device=cuda 2>&1)"; then
  pass "2 ranks on cuda ran (a GPU machine)"
else
  grep -qE "kernels.device = cuda: (no GPU is visible|this build has no CUDA backend)" <<<"$out" && [[ ! -e "$WORK/d2/metrics.jsonl" ]] \
    && pass "2 ranks with kernels.device = cuda and no GPU: refused, naming the key, nothing written" || fail "2 ranks on cuda without a GPU: $out"
fi
echo '{"train": {"steps": 5, "seed": 1, "steps": 7}}' >"$WORK/dup.json"
expect_error "duplicate key" "dup.json: duplicate key train.steps" run train -c "$WORK/dup.json"
echo '{"optimizer": {"lr": 1e999}}' >"$WORK/huge.json"
expect_error "number out of range" "huge.json: not valid JSON: a number does not fit" run train -c "$WORK/huge.json"
mkdir -p "$WORK/adir"
expect_error "directory as config" "adir: is a directory, not a config file" run train -c "$WORK/adir"
expect_error "--set of a whole section" "--set model=\{\}: a value may not be an object" run train -c $TINY --set 'model={}'
expect_error "malformed fault" 'GOSSAMER_FAULT="delay:0:1": expected' env GOSSAMER_FAULT=delay:0:1 "$GOSSAMER" train -c $TINY --out "$WORK/f"

# -- shards
python3 - "$WORK" <<'PY'
import struct, sys, os
w = sys.argv[1]
def shard(name, magic=20240520, version=1, count=100, ntok=None, tok=5):
    ntok = count if ntok is None else ntok
    hdr = struct.pack("<256i", magic, version, count, *([0] * 253))
    with open(os.path.join(w, name), "wb") as f:
        f.write(hdr + struct.pack(f"<{ntok}H", *([tok] * ntok)))
shard("magic.bin", magic=1234)
shard("version.bin", version=7)
shard("truncated.bin", count=100, ntok=60)
shard("trailing.bin", count=100, ntok=120)
shard("bigtoken.bin", tok=60000, count=1000)
shard("tiny.bin", count=100)
open(os.path.join(w, "short.bin"), "wb").write(b"\x00" * 100)
PY
expect_error "shard bad magic" "magic.bin.*magic" run train -c $TINY --set data.train="$WORK/magic.bin"
expect_error "shard bad version" "version.bin.*version" run train -c $TINY --set data.train="$WORK/version.bin"
expect_error "shard truncated" "truncated.bin.*(truncated|length)" run train -c $TINY --set data.train="$WORK/truncated.bin"
expect_error "shard trailing bytes" "trailing.bin.*(trailing|length)" run train -c $TINY --set data.train="$WORK/trailing.bin"
expect_error "shard short header" "short.bin" run train -c $TINY --set data.train="$WORK/short.bin"
expect_error "token beyond vocab" "bigtoken.bin.*(token|offset)" run train -c $TINY --set data.train="$WORK/bigtoken.bin"
expect_error "too few windows" "data.train: holds 1 windows" run train -c $TINY --set data.train="$WORK/tiny.bin"
expect_error "glob in a missing directory" "directory $WORK/nodir: No such file or directory" \
  run train -c $TINY --set data.train="$WORK/nodir/train_*.bin"
expect_error "no shard matches" "nomatch_.*\\*\\.bin" run train -c $TINY --set data.train="$WORK/nomatch_*.bin"

# -- output directory
touch "$WORK/afile"
expect_error "unwritable out dir" "train.out_dir: cannot create run directory" run train -c $TINY --out "$WORK/afile/run"

# -- checkpoints
"$GOSSAMER" train -c $TINY --set train.steps=2 --set train.eval_every=0 --out "$WORK/small" >/dev/null 2>&1 || fail "small run failed"
expect_error "checkpoint of another model shape" "--resume: model.d_model is 64 in the checkpoint and 128 now" \
  run train -c $TINY --set model.d_model=128 --set train.steps=4 --out "$WORK/other" --resume "$WORK/small"
expect_error "resume from nothing" "no such checkpoint" run train -c $TINY --out "$WORK/x" --resume "$WORK/none"
mkdir -p "$WORK/empty"
expect_error "resume from a directory without checkpoints" "holds no complete checkpoint" run train -c $TINY --out "$WORK/x" --resume "$WORK/empty"
cp -r "$WORK/small" "$WORK/corrupt"
ck=$(ls -d "$WORK"/corrupt/checkpoints/step_* | tail -1)
head -c 1000 "$ck/model.safetensors" >"$ck/m" && mv "$ck/m" "$ck/model.safetensors"
expect_error "truncated checkpoint" "model.safetensors" run train -c $TINY --set train.steps=4 --out "$WORK/corrupt" --resume "$WORK/corrupt"
expect_error "generate from corrupt checkpoint" "model.safetensors" run generate --checkpoint "$WORK/corrupt" --tokens 2

# -- tokenizer
mkdir -p "$WORK/tok"
expect_error "missing tokenizer files" "tok.*encoder.json" run generate --checkpoint "$WORK/small" --tokenizer "$WORK/tok" --tokens 2
expect_error "sampling without tokenizer" "encoder.json" run train -c $TINY --set train.sample_every=1 --set data.tokenizer="$WORK/tok" --out "$WORK/y"

# -- prep: a file that is mostly not text is refused; invalid UTF-8 in text is counted
# 20000 pseudo-random bytes (a fixed LCG, so the message's counts are the same everywhere)
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 1103515245 + 12345) % 2**31 >> 16 & 255 for i in range(20000)))' >"$WORK/random.bin"
expect_error "prep of a binary file" "random.bin does not look like text: .*--allow-binary" \
  run prep --tokenizer data/tokenizers/gpt2 --output "$WORK/prep/bin" "$WORK/random.bin"
[[ ! -e "$WORK/prep" ]] && pass "refused prep wrote nothing" || fail "refused prep left $WORK/prep"
mkdir -p "$WORK/adir"
expect_error "prep of a directory" "adir: is a directory, not a prep input \(a regular file is expected\)" \
  run prep --tokenizer data/tokenizers/gpt2 --output "$WORK/prep/dir" "$WORK/adir"
expect_error "prep with too small an spm vocabulary" "prep: --spm-vocab-size 5 is smaller than the [0-9]+ characters and special pieces the corpus needs; give --spm-vocab-size [0-9]+ or more" \
  run prep --train-spm "$WORK/spm5" --spm-vocab-size 5 --output "$WORK/prep/spm5" data/corpus/web/val.txt
printf 'caf\xe9 au lait, pain et confiture\n\nna\xefve \xff text of some length here\n' >"$WORK/latin1.txt"
out=$("$GOSSAMER" prep --tokenizer data/tokenizers/gpt2 --output "$WORK/prep/latin1" "$WORK/latin1.txt" 2>&1) \
  && grep -q "latin1.txt: 3 invalid UTF-8 sequence(s), the first at byte 3" <<<"$out" \
  && pass "prep warns about invalid UTF-8 with counts" \
  && record_case "prep warns about invalid UTF-8" 0 "$(grep -m1 'invalid UTF-8' <<<"$out")" \
       gossamer prep --tokenizer data/tokenizers/gpt2 --output "$WORK/prep/latin1" "$WORK/latin1.txt" \
  || fail "prep of latin-1 text: $out"
"$GOSSAMER" prep --allow-binary --tokenizer data/tokenizers/gpt2 --output "$WORK/prep/bin" "$WORK/random.bin" \
  >/dev/null 2>&1 && [[ -f "$WORK/prep/bin_000000.bin" ]] && pass "prep --allow-binary tokenises it" \
  || fail "prep --allow-binary failed"

# -- generate and eval options (checked before the model loads)
for bad in "--temperature nan" "--temperature -1" "--top-p 2" "--top-k -3"; do
  # shellcheck disable=SC2086
  expect_error "generate $bad" "${bad/ /.*}: expected" run generate --checkpoint "$WORK/small" $bad --tokens 2
done
expect_error "eval --limit -1" "--limit -1: expected a number of examples >= 0" \
  run eval -c $TINY --checkpoint "$WORK/small" --limit -1

# -- CLI
expect_error "no subcommand" "subcommand" run
expect_error "unknown flag" "--bogus" run train -c $TINY --bogus
expect_error "missing -c" "--config is required" run train

# Nothing half-written: failed runs left no run directory behind where they failed before start.
[[ ! -e "$WORK/x" && ! -e "$WORK/y" && ! -e "$WORK/other/checkpoints" ]] && pass "failed runs wrote nothing" || fail "a failed run left files behind"
finish
