#!/usr/bin/env bash
# The speed series on a GPU machine, a few model sizes per call (the device runs one command for
# at most ten minutes): build the steps, write random-weight files of each size, run the last
# step with --check against its own CPU path (0.5b and 1.5b: the CPU side of a 7B check would
# take minutes), then tools/bench/bench_series.py on the F16 file.
#
#   tools/gpu_series.sh OUT SIZE... [-- bench_series.py flags...]
#   e.g. tools/gpu_series.sh out 0.5b 1.5b -- --engines step08,step09,llama.cpp \
#            --llama-bench /tmp/llama-bench --new-tokens-of step08=8
#
# With llama.cpp (tools/gpu/build_llama_cpp.sh packs it into .carry/series), the device call that
# made docs/bench/h200-step09.md carried .carry/series and began with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/series/wheels/*.whl
#   export PYTHONPATH=/tmp/site QWEN_TOKENIZER_DIR=$PWD/.carry/series
#   export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
#   gunzip -c .carry/series/llama-bench.gz >/tmp/llama-bench && chmod +x /tmp/llama-bench
# (.carry/series: the gguf wheel, qwen-bpe-vocab.gguf and llama-bench.gz).
#
# SIZE is 0.5b, 1.5b or 7b. Each size gets two files: an F16 one, for the series (every matrix
# in 16 bits, as the GPU steps hold them, so that llama.cpp reads the same bytes), and, for the
# --check of 0.5b and 1.5b, one laid out as Qwen's published Q4_K_M files are
# (make_tiny_model.py --as-published). Logs and the tables go to OUT. Needs gguf-py (PYTHONPATH
# may name its wheel), numpy, torch for the copy bandwidth, and the Qwen vocabulary in
# $QWEN_TOKENIZER_DIR (tokenizer.json or qwen-bpe-vocab.gguf).
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_series.sh OUT SIZE... [-- bench_series.py flags...]}
shift
sizes=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do sizes+=("$1"); shift; done
[ $# -gt 0 ] && shift
mkdir -p "$out" models
start=$SECONDS
stamp() { echo "[$1: $((SECONDS - start)) s]"; }
# The last step and the one before it: what a Part 2 record sets side by side.
last_step=$(ls -d step[0-9][0-9]_* | tail -n 1 | cut -c1-6)
previous_step=$(ls -d step[0-9][0-9]_* | tail -n 2 | head -n 1 | cut -c1-6)
# The Qwen vocabulary for make_tiny_model.py: tokenizer.json, or the smaller vocab-only GGUF.
vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}/tokenizer.json
[ -f "$vocab" ] || vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}/qwen-bpe-vocab.gguf

model_file() {  # model_file SIZE f16|q4_k_m
    echo "models/qwen2.5-$1-random-published-$2.gguf"
}
write_models() {  # one size's files, one after the other (each uses every core)
    local size=$1 types=f16
    [ "$size" = 7b ] || types="f16 q4_k_m"
    for type in $types; do
        [ -f "$(model_file "$size" $type)" ] ||
            python3 tools/fixtures/make_tiny_model.py --preset "$size" --types $type --as-published \
                --vocab "$vocab" -o "$(model_file "$size" $type)" >>"$out/make-$size.log" 2>&1 ||
            return 1
    done
}
(for size in "${sizes[@]}"; do write_models "$size" || exit 1; done) &
writer=$!
make -s -j"$(nproc)" CUDA_ARCHS="${CUDA_ARCHS:-90}" step04 "$previous_step" "$last_step" \
    >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
stamp built
wait $writer || { tail -n 20 "$out"/make-*.log; exit 1; }
stamp "wrote the models"

for size in "${sizes[@]}"; do
    if [ "$size" != 7b ]; then
        model=$(model_file "$size" q4_k_m)
        echo "== ./$last_step $model --check -n 16 --chat --temp 0"
        timeout 240 "./$last_step" "$model" --device cuda --check --chat --temp 0 \
            -p "Explain why the sky is blue, in two sentences." -n 16 >"$out/check-$size.log" 2>&1
        echo "rc $?"
        grep -E "^check: [0-9]+ steps|^prompt:" "$out/check-$size.log"
        stamp "checked $size"
    fi
    python3 tools/bench/bench_series.py --model "$(model_file "$size" f16)" --append \
        --output "$out/series.md" "$@"
    stamp "benchmarked $size"
done
