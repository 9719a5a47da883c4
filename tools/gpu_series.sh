#!/usr/bin/env bash
# One model size on a GPU machine, in one go (the device runs one command for at most ten
# minutes, so each size is its own call): build steps 04-08, write a random-weight file of the
# size, run steps 06-08 with --check against their own CPU path (0.5b and 1.5b: the CPU side of
# a 7B check would take minutes), then the speed series (tools/bench_series.py).
#
#   tools/gpu_series.sh SIZE OUT [bench_series.py flags...]
#
# SIZE is 0.5b, 1.5b or 7b. The 0.5b and 1.5b files are laid out as Qwen's published Q4_K_M
# files are (make_tiny_model.py --as-published: the same type for every tensor); 7b follows
# llama.cpp's Q4_K_M rules. Logs and the table go to OUT. Needs gguf-py (PYTHONPATH may name
# its wheel), torch and transformers, and the Qwen tokenizer.json in $QWEN_TOKENIZER_DIR.
set -u
cd "$(dirname "$0")/.."
size=$1 out=$2
shift 2
mkdir -p "$out" models
start=$SECONDS
stamp() { echo "[$1: $((SECONDS - start)) s]"; }

published=""
[ "$size" = 7b ] || published=--as-published
model=models/qwen2.5-$size-random-${published:+published-}q4_k_m.gguf
vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}/tokenizer.json
[ -f "$model" ] || python3 tools/make_tiny_model.py --preset "$size" --types q4_k_m $published \
    --vocab "$vocab" -o "$model" >"$out/make-$size.log" 2>&1 &
make -s -j"$(nproc)" CUDA_ARCHS="${CUDA_ARCHS:-90}" step04 step05 step06 step07 step08 \
    >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
stamp built
wait
[ -f "$model" ] || { tail -n 20 "$out/make-$size.log"; exit 1; }
stamp "wrote $model"

if [ "$size" != 7b ]; then
    prompt="Explain why the sky is blue, in two sentences."
    for step in step06 step07 step08; do
        extra=""
        [ "$step" = step08 ] && extra="--temp 0"
        echo "== ./$step $model --check -n 16 --chat $extra"
        timeout 240 ./$step "$model" --device cuda --check --chat -p "$prompt" -n 16 $extra \
            >"$out/check-$step-$size.log" 2>&1
        echo "rc $?"
        grep -E "^check: [0-9]+ steps|^prompt:" "$out/check-$step-$size.log"
    done
    stamp checked
fi

python3 tools/bench_series.py --model "$model" --output "$out/series-$size.md" "$@"
stamp benchmarked
