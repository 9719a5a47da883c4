#!/usr/bin/env bash
# Full-scale check of step05 on random-weight models with the exact Qwen2.5-0.5B and 1.5B shapes
# (too big to commit, so they are generated here), against transformers fp32, plus the step05
# benchmark on the 0.5B-shaped model. Meant for a many-core machine with torch + transformers.
#
#   tools/check/full_scale_check.sh VOCAB_DIR [OUT_DIR]
#
# VOCAB_DIR holds the real Qwen tokenizer.json; OUT_DIR (default build/full-scale) receives the
# models and the logs. Needs python3 with numpy, gguf==0.19.0, tokenizers, torch, transformers.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The project's Python (make setup) where it exists, else the machine's (as on the GPU machine).
python=.venv/bin/python3
[ -x "$python" ] || python=python3
vocab_dir=$1
out=${2:-build/full-scale}
mkdir -p "$out"
make -s -j"$(nproc)" step05

small="$out/qwen2.5-0.5b-random-q8_0.gguf"
large="$out/qwen2.5-1.5b-random-q4_k_m.gguf"
"$python" tools/fixtures/make_tiny_model.py --preset 0.5b --types q8_0 --vocab "$vocab_dir/tokenizer.json" -o "$small" > "$out/make-0.5b.log" 2>&1 &
"$python" tools/fixtures/make_tiny_model.py --preset 1.5b --types q4_k_m --vocab "$vocab_dir/tokenizer.json" -o "$large" > "$out/make-1.5b.log" 2>&1 &
wait
ls -l "$small" "$large"

for model in "$small" "$large"; do
    echo "== logits of $model against transformers fp32"
    "$python" tools/check/compare_logits.py "$model" --tokenizer "$vocab_dir/tokenizer.json"
done

echo "== step05 speed on the 0.5B-shaped model"
N_NEW=8 tools/bench/bench.sh "$small"
