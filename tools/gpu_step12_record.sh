#!/usr/bin/env bash
# The prompt-speed record of step12 (docs/bench/h200-step12.md), in one device call: step11,
# step12 and llama.cpp's llama-bench on the same random-weight files, F16 and laid out as Qwen's
# published Q4_K_M files, at 0.5B, 1.5B and 7B; prompts of 512 and 4096 tokens
# (tools/bench/bench_prompt.txt, and 8 copies of it), -c 8192, no generation (-n 0).
#
#   tools/gpu_step12_record.sh OUT LLAMA_BENCH [SIZE...]     default sizes: 0.5b 1.5b 7b
#
# Each step runs a prompt REPEAT times (default 3, once at 7B; the program measures its one
# prompt) and the record keeps the median; llama-bench runs its warm-up and 5 repetitions. Every
# program loads its kernels at start (CUDA_MODULE_LOADING=EAGER), as llama-bench's warm-up
# run does: a prompt's time is then its kernels', not the driver's first-call loading.
# Then ncu's view of one GEMM (tools/bench/bench_tensor_cores.cu at 1.5B, 4096 tokens), for the
# article. Output: OUT/prompts.tsv (engine, size, type, tokens, tokens/s), logs beside it.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step12_record.sh OUT LLAMA_BENCH [SIZE...]}
llama_bench=${2:?the llama-bench binary}
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0.5b 1.5b 7b)
repeat=${REPEAT:-3}
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
gpu_start
export CUDA_MODULE_LOADING=EAGER
(for size in "${sizes[@]}"; do
    for type in f16 q4_k_m; do
        file=$(random_file "$size" $type)
        [ -f "$file" ] || python3 tools/fixtures/make_tiny_model.py --preset "$size" --types $type \
            --as-published --vocab "$QWEN_TOKENIZER_DIR/qwen-bpe-vocab.gguf" -o "$file" \
            >>"$out/make-$size-$type.log" 2>&1
        touch "$out/written-$size-$type"
    done
done) &
prompt4096=$out/prompt-4096.txt
for _ in 1 2 3 4 5 6 7 8; do cat tools/bench/bench_prompt.txt; done >"$prompt4096"
make -s -j"$(nproc)" "${make_flags[@]}" step11 step12 >"$out/build.log" 2>&1 || { tail "$out/build.log"; exit 1; }
note "built"
printf 'engine\tsize\ttype\ttokens\ttokens_per_s\n' >"$out/prompts.tsv"
for size in "${sizes[@]}"; do
    for type in f16 q4_k_m; do
        while [ ! -f "$out/written-$size-$type" ]; do sleep 1; done
        file=$(random_file "$size" $type)
        for step in step11 step12; do
            for prompt in tools/bench/bench_prompt.txt "$prompt4096"; do
                runs=() reps=$repeat
                [ "$size" = 7b ] && reps=1  # 7B loads 15 GB a run: one run each, in the call's time
                for ((r = 0; r < reps; r++)); do
                    log=$out/$step-$size-$type-$(basename "$prompt" .txt)-$r.log
                    timeout 120 ./$step "$file" -f "$prompt" -n 0 -c 8192 >"$log" 2>&1
                    runs+=("$(grep -oE '^prompt: [0-9]+ tokens in [0-9.]+ ms \([0-9.]+' "$log" |
                        sed -E 's/.*\(//')")
                done
                tokens=$(grep -oE '^prompt: [0-9]+' "$log" | grep -oE '[0-9]+')
                median=$(printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p")
                printf '%s\t%s\t%s\t%s\t%s\n' "$step" "$size" "$type" "$tokens" "$median" >>"$out/prompts.tsv"
                note "$step $size $type $tokens tokens: ${runs[*]} tokens/s"
            done
        done
        timeout 150 "$llama_bench" -m "$file" -p 512,4096 -n 0 -r 5 -ngl 99 -o md \
            >"$out/llama-$size-$type.md" 2>"$out/llama-$size-$type.log"
        for tokens in 512 4096; do
            tps=$(grep -E "\| +pp$tokens +\|" "$out/llama-$size-$type.md" | awk -F'|' '{print $(NF-1)}' | tr -d ' ')
            printf 'llama.cpp\t%s\t%s\t%s\t%s\n' "$size" "$type" "$tokens" "$tps" >>"$out/prompts.tsv"
            note "llama.cpp $size $type pp$tokens: $tps"
        done
    done
done
if command -v ncu >/dev/null && [ -x "${BENCH_TC:-}" ]; then
    timeout 90 ncu --kernel-name regex:tensor_core_gemm --launch-count 1 --section SpeedOfLight \
        --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
        "$BENCH_TC" 1.5b 4096 >"$out/ncu-gemm.txt" 2>&1
    timeout 90 ncu --kernel-name regex:flash_attention --launch-count 1 --section SpeedOfLight \
        --section WarpStateStats "$BENCH_TC" 1.5b 4096 >"$out/ncu-flash.txt" 2>&1
    note "ncu: rc $?"
fi
echo
cat "$summary"
