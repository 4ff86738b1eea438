#!/usr/bin/env bash
# The main job from a fresh clone: installs dependencies, builds, prepares the default corpus
# (World English Bible, GPT-2 BPE), trains a small GPT-2 on the CPU for a few minutes into
# runs/quickstart/, then prints the validation loss, a text sample and the loss-curve PNG path.
# Idempotent: every step skips what is done, except training, which starts afresh.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/prepare-data.sh web

RUN=runs/quickstart
rm -rf "$RUN"
echo "== training configs/quickstart.json into $RUN =="
build/bin/gossamer train -c configs/quickstart.json --out "$RUN"

/usr/bin/python3 scripts/plot_metrics.py "$RUN/loss.png" "$RUN" >/dev/null
first=$(grep '"val_loss"' "$RUN/metrics.jsonl" | head -1 | grep -oE '"val_loss":[0-9.]+' | cut -d: -f2)
last=$(grep '"val_loss"' "$RUN/metrics.jsonl" | tail -1 | grep -oE '"val_loss":[0-9.]+' | cut -d: -f2)
echo
echo "== quickstart result =="
echo "validation loss: $first before training -> $last after (nats/token)"
echo "loss curve: $RUN/loss.png"
echo "sample (prompt \"And God said\"):"
build/bin/gossamer generate --checkpoint "$RUN" --prompt "And God said" --tokens 60 --seed 1 2>/dev/null
