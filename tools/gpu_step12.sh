#!/usr/bin/env bash
# step12 on a GPU machine in one call (the device runs one command for at most ten minutes):
#   1. llama.cpp's llama-bench built in the background (tools/gpu/build_llama_cpp.sh), from the
#      trimmed source in .carry, when LLAMA_SRC_TARBALL names it; packed into OUT in pieces;
#   2. step12's checks on the GPU (binaries built by the Makefile for sm_90, in BIN, or here);
#   3. compute-sanitizer memcheck, racecheck and synccheck on the tensor-core checks;
#   4. the kernels at 0.5B, 1.5B and 7B shapes (tools/bench/bench_tensor_cores.cu) next to cuBLAS
#      (tools/bench/bench_cublas.py), prompts of 512 and 4096 tokens;
#   5. --check and one prompt of 512 tokens, step11 against step12 (and llama.cpp's llama-bench
#      when LLAMA_BENCH names it), on random-weight F16 files.
#
#   tools/gpu_step12.sh OUT [SIZE...]       SIZE of 0.5b 1.5b 7b (default 0.5b 1.5b)
#
# Needs what tools/gpu_step11.sh needs, and torch for the cuBLAS rows.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step12.sh OUT [SIZE...]}
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0.5b 1.5b)
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
gpu_start
if [ -n "${LLAMA_SRC_TARBALL:-}" ]; then
    (nice tools/gpu/build_llama_cpp.sh /tmp/llama >"$out/llama-build.log" 2>&1
        split -b 15M .carry/series/llama-bench.gz "$out/llama-bench.gz.part-"
        touch "$out/llama-built") &
fi
write_random_files f16 "${sizes[@]}"

if [ -n "${BIN:-}" ]; then
    mkdir -p build/release && cp "$BIN"/test_step12 build/release/ && cp "$BIN"/step11 "$BIN"/step12 .
    note "binaries from $BIN"
else
    make -j"$(nproc)" "${make_flags[@]}" step11 step12 build/release/test_step12 >"$out/build.log" 2>&1
    note "build: rc $?"
fi

timeout 300 build/release/test_step12 "$(gpu_files 12)" -tse=real_model >"$out/test12.log" 2>&1
note "step12 GPU checks: rc $? | $(tail -n 1 "$out/test12.log")"
grep -E "ERROR|SKIPPED|FAILED|values differ|outputs outside" "$out/test12.log" | head -n 30 >>"$summary"

sanitize 12 100 '*test_tensor_cores.cpp'

for size in 0.5b 1.5b 7b; do
    for tokens in 512 4096; do
        timeout 60 "${BENCH_TC:-build/bench_tensor_cores}" "$size" "$tokens" >>"$out/kernels.tsv" 2>&1
        timeout 60 python3 tools/bench/bench_cublas.py "$size" "$tokens" >>"$out/kernels.tsv" 2>&1
    done
done
note "kernels timed: $(wc -l <"$out/kernels.tsv") rows"

check_tiny 12
for size in "${sizes[@]}"; do
    while [ ! -f "$out/written-$size" ]; do sleep 1; done
    file=$(random_file "$size" f16)
    timeout 120 ./step12 "$file" -p "Once upon a time," -n 8 --check --temp 0 \
        >"$out/check-$size.log" 2>&1
    note "step12 --check $size F16: rc $? | $(grep -E '^check: [0-9]+ steps' "$out/check-$size.log")"
    for step in step11 step12; do
        for loading in LAZY EAGER; do
            CUDA_MODULE_LOADING=$loading timeout 120 ./$step "$file" -f tools/bench/bench_prompt.txt \
                -n 16 --temp 0 -c 4096 >"$out/$step-$size-$loading.log" 2>&1
            note "$step $size F16 prompt, $loading module loading: rc $? | $(grep -E '^prompt:' \
                "$out/$step-$size-$loading.log" | cut -d'|' -f1)"
        done
    done
    if [ -n "${LLAMA_BENCH:-}" ]; then
        timeout 120 "$LLAMA_BENCH" -m "$file" -p 512 -n 0 -r 3 -ngl 99 >"$out/llama-$size.log" 2>&1
        note "llama.cpp $size F16: rc $? | $(grep -E 'pp512' "$out/llama-$size.log" | tr -s ' ')"
    fi
done
if [ -n "${LLAMA_SRC_TARBALL:-}" ]; then
    while [ ! -f "$out/llama-built" ]; do sleep 2; done
    note "llama-bench: $(tail -n 1 "$out/llama-build.log")"
fi
echo
cat "$summary"
