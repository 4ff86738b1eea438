# Hugging Face export/import through the command line, for GPT-2 (GPT-2 BPE) and Llama
# (SentencePiece): export-hf writes the documented files (tokenizer files byte for byte),
# import-hf gives back the checkpoint's model.safetensors bit for bit and a second export the
# same directory; train --init-from an HF directory evaluates to exactly the source run's
# validation loss, and so does the config key train.init_from (recorded in config.json,
# unused on --resume); generate on the run, the HF directory and the imported checkpoint prints
# the same text. Logits parity with the HF architectures is tests/unit/test_hf.cpp.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"

no_leftovers() {  # no staging directories may remain anywhere under $WORK
  if find "$WORK" -name '.*.tmp-*' -o -name '.*.old-*' | grep -q .; then fail "$1: staging directory left behind"; else pass "$1: nothing left behind"; fi
}
json_get() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(JSON.stringify(j[process.argv[2]]))' "$1" "$2"; }
expect_json() {  # FILE KEY VALUE (JSON text)
  local got; got="$(json_get "$1" "$2")"
  [[ "$got" == "$3" ]] && pass "$(basename "$1") $2 = $3" || fail "$(basename "$1") $2 = $got, expected $3"
}

# ---- GPT-2 --------------------------------------------------------------------------------
TINY=configs/test/gpt2-tiny.json
common=(--set train.eval_every=4 --set train.eval_batches=4 --set train.log_every=100)
"$G" train -c $TINY "${common[@]}" --set train.steps=4 --out "$WORK/run" >"$WORK/run.log" 2>&1 \
  || { cat "$WORK/run.log"; fail "gpt2 training failed"; finish; }
CK="$WORK/run/checkpoints/step_00000004"

"$G" export-hf "$WORK/run" "$WORK/hf" 2>"$WORK/export.log" || { cat "$WORK/export.log"; fail "export-hf failed"; finish; }
for f in config.json generation_config.json model.safetensors vocab.json merges.txt tokenizer_config.json; do
  [[ -s "$WORK/hf/$f" ]] && pass "export wrote $f" || fail "export lacks $f"
done
cmp -s "$WORK/hf/vocab.json" data/tokenizers/gpt2/encoder.json && pass "vocab.json is encoder.json" || fail "vocab.json differs from encoder.json"
cmp -s "$WORK/hf/merges.txt" data/tokenizers/gpt2/vocab.bpe && pass "merges.txt is vocab.bpe" || fail "merges.txt differs from vocab.bpe"
[[ "$(head -1 "$WORK/hf/merges.txt")" == "#version: 0.2" ]] && pass "merges.txt starts with #version: 0.2" || fail "merges.txt header"
expect_json "$WORK/hf/config.json" model_type '"gpt2"'
expect_json "$WORK/hf/config.json" architectures '["GPT2LMHeadModel"]'
expect_json "$WORK/hf/config.json" n_embd 64
expect_json "$WORK/hf/config.json" n_positions 64
expect_json "$WORK/hf/config.json" vocab_size 50257
expect_json "$WORK/hf/config.json" activation_function '"gelu_new"'
expect_json "$WORK/hf/config.json" tie_word_embeddings true
expect_json "$WORK/hf/config.json" eos_token_id 50256
expect_json "$WORK/hf/generation_config.json" bos_token_id 50256
expect_json "$WORK/hf/tokenizer_config.json" tokenizer_class '"GPT2Tokenizer"'
grep -qa '"transformer.h.1.attn.c_attn.weight":{"dtype":"F32","shape":\[64,192\]' "$WORK/hf/model.safetensors" \
  && pass "c_attn.weight in Conv1D layout (in, out)" || fail "c_attn.weight layout"
grep -qa '"lm_head.weight"' "$WORK/hf/model.safetensors" && fail "tied lm_head.weight written" || pass "tied lm_head.weight omitted"
no_leftovers "export"

"$G" import-hf "$WORK/hf" "$WORK/ckpt" 2>"$WORK/import.log" || { cat "$WORK/import.log"; fail "import-hf failed"; finish; }
st_same_tensors "$WORK/ckpt/model.safetensors" "$CK/model.safetensors" \
  && pass "gpt2: export then import is bit-identical (model.safetensors's tensors)" || fail "gpt2: imported weights differ"
"$G" export-hf "$WORK/ckpt" "$WORK/hf2" 2>/dev/null || fail "export of the imported checkpoint failed"
for f in model.safetensors config.json vocab.json merges.txt tokenizer_config.json; do
  cmp -s "$WORK/hf/$f" "$WORK/hf2/$f" && pass "re-export: identical $f" || fail "re-export: $f differs"
done
"$G" export-hf "$WORK/run" "$WORK/hf" >/dev/null 2>&1 && fail "export over an existing export without --force" || pass "export refuses to overwrite"
"$G" export-hf --force "$WORK/run" "$WORK/hf" 2>/dev/null && pass "export --force replaces it" || fail "export --force failed"
no_leftovers "import"

# Starting from the HF directory (or the run) evaluates exactly like the run's last step.
want=$(json_field "$WORK/run/metrics.jsonl" 4 val_loss)
for src in hf run; do
  "$G" train -c $TINY "${common[@]}" --set train.steps=1 --init-from "$WORK/$src" --out "$WORK/init-$src" >"$WORK/init.log" 2>&1 \
    || { cat "$WORK/init.log"; fail "train --init-from $src failed"; continue; }
  got=$(json_field "$WORK/init-$src/metrics.jsonl" 0 val_loss)
  [[ "$got" == "$want" ]] && pass "train --init-from $src: step-0 val loss $got == the run's final" \
    || fail "train --init-from $src: step-0 val loss $got, the run ended at $want"
done

# train.init_from, the key a config or a sweep sets: the same start, recorded in the run's
# config.json; --resume of that run restores its own checkpoint and says the key goes unused.
key_init=(--set train.steps=1 --set "train.init_from=\"$WORK/run\"" --out "$WORK/init-key")
"$G" train -c $TINY "${common[@]}" "${key_init[@]}" >"$WORK/init-key.log" 2>&1 \
  || { cat "$WORK/init-key.log"; fail "train with train.init_from failed"; }
got=$(json_field "$WORK/init-key/metrics.jsonl" 0 val_loss)
recorded=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).train.init_from)' \
  "$WORK/init-key/config.json")
[[ "$got" == "$want" && "$recorded" == "$WORK/run" ]] \
  && pass "train.init_from: step-0 val loss $got == the run's final; config.json records it" \
  || fail "train.init_from: step-0 val loss $got (want $want), config.json records [$recorded]"
"$G" train -c $TINY "${common[@]}" "${key_init[@]}" --set train.steps=2 --resume "$WORK/init-key" \
  >"$WORK/init-key-resume.log" 2>&1 \
  && grep -q "train.init_from .*: unused, --resume restores the checkpoint's weights" "$WORK/init-key-resume.log" \
  && [[ "$(json_field "$WORK/init-key/metrics.jsonl" 1 loss)" != "" ]] \
  && pass "train.init_from on --resume: unused (logged), the run continues to step 2" \
  || { tail -n 5 "$WORK/init-key-resume.log"; fail "resume of a run with train.init_from"; }

gen() { "$G" generate --checkpoint "$1" --prompt "The history of" --tokens 16 --seed 7 2>/dev/null; }
a=$(gen "$WORK/run"); b=$(gen "$WORK/hf"); c=$(gen "$WORK/ckpt")
[[ -n "$a" && "$a" == "$b" && "$a" == "$c" ]] && pass "generate: run, HF dir and imported checkpoint agree: $a" \
  || fail "generate differs: run [$a] hf [$b] imported [$c]"

# ---- Llama + SentencePiece ----------------------------------------------------------------
"$G" prep --train-spm "$WORK/spm" --spm-vocab-size 400 --output "$WORK/sp" data/corpus/web/val.txt >"$WORK/prep.log" 2>&1 \
  || { cat "$WORK/prep.log"; fail "spm prep failed"; finish; }
llama=(-c configs/test/llama-tiny.json --set model.vocab_size=400 --set "data.train=$WORK/sp_*.bin" --set data.val=
       --set "data.tokenizer=spm:$WORK/spm.model" --set train.eval_every=0 --set train.log_every=100)
"$G" train "${llama[@]}" --set train.steps=3 --out "$WORK/lrun" >"$WORK/lrun.log" 2>&1 \
  || { cat "$WORK/lrun.log"; fail "llama training failed"; finish; }
"$G" export-hf "$WORK/lrun" "$WORK/lhf" 2>/dev/null || fail "llama export-hf failed"
cmp -s "$WORK/lhf/tokenizer.model" "$WORK/spm.model" && pass "tokenizer.model is the spm model" || fail "tokenizer.model differs"
expect_json "$WORK/lhf/config.json" architectures '["LlamaForCausalLM"]'
expect_json "$WORK/lhf/config.json" num_key_value_heads 2
expect_json "$WORK/lhf/config.json" intermediate_size 192
expect_json "$WORK/lhf/config.json" tie_word_embeddings false
expect_json "$WORK/lhf/tokenizer_config.json" tokenizer_class '"LlamaTokenizer"'
expect_json "$WORK/lhf/tokenizer_config.json" bos_token '"<s>"'
"$G" import-hf "$WORK/lhf" "$WORK/lckpt" 2>/dev/null || fail "llama import-hf failed"
st_same_tensors "$WORK/lckpt/model.safetensors" "$WORK/lrun/checkpoints/step_00000003/model.safetensors" \
  && pass "llama: export then import is bit-identical (model.safetensors's tensors)" || fail "llama: imported weights differ"
cmp -s "$WORK/lckpt/tokenizer/tokenizer.model" "$WORK/spm.model" && pass "imported tokenizer.model" || fail "imported tokenizer.model differs"
"$G" export-hf "$WORK/lckpt" "$WORK/lhf2" 2>/dev/null || fail "export of the imported llama checkpoint failed"
for f in model.safetensors config.json tokenizer.model tokenizer_config.json; do
  cmp -s "$WORK/lhf/$f" "$WORK/lhf2/$f" && pass "llama re-export: identical $f" || fail "llama re-export: $f differs"
done
a=$(gen "$WORK/lrun"); b=$(gen "$WORK/lhf"); c=$(gen "$WORK/lckpt")
[[ -n "$a" && "$a" == "$b" && "$a" == "$c" ]] && pass "llama generate: run, HF dir and imported checkpoint agree: $a" \
  || fail "llama generate differs: run [$a] hf [$b] imported [$c]"
"$G" train "${llama[@]}" --set train.steps=1 --init-from "$WORK/lhf" --out "$WORK/linit" >/dev/null 2>&1 \
  && pass "llama train --init-from HF dir" || fail "llama train --init-from HF dir failed"
no_leftovers "llama"
finish
