#!/usr/bin/env bash
# Everything step06 needs a GPU for, in one go, with a log per stage in OUT (default
# build/step06_gpu_check): the checks (make test-step06, GPU checks running), compute-sanitizer
# memcheck and racecheck on the GPU checks, two Qwen2.5-1.5B-shaped random-weight models (F16
# and Q4_K_M) run with --check, and tools/bench/bench_kernels.sh. This is how docs/en/step06.md's
# H200 figures were made.
#
#   tools/step06_gpu_check.sh
#
# Needs nvcc and a GPU, gguf-py for tools/fixtures/make_tiny_model.py, the real tokenizer.json in
# $QWEN_TOKENIZER_DIR, and doctest (DOCTEST_INCLUDE, as for make). Each stage has a time limit.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/step06_gpu_check}
mkdir -p "$out" models
archs=${CUDA_ARCHS:-90}
make_flags=(CUDA_ARCHS="$archs" ${DOCTEST_INCLUDE:+DOCTEST_INCLUDE="$DOCTEST_INCLUDE"})
vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}/tokenizer.json
model=models/qwen2.5-1.5b-random
start=$SECONDS
stamp() { echo "[$1: rc $2, $((SECONDS - start)) s since the start]"; }

{ date -u; nvidia-smi; compute-sanitizer --version; echo "$(nproc) cores"; } >"$out/info.log" 2>&1

# The two models are written in the background while the checks build and run.
for type in f16 q4_k_m; do
    (
        s=$SECONDS
        python3 tools/fixtures/make_tiny_model.py --preset 1.5b --types $type --vocab "$vocab" \
            -o $model-$type.gguf
        echo "written in $((SECONDS - s)) s"
    ) >"$out/model_$type.log" 2>&1 &
done

{
    make -j"$(nproc)" "${make_flags[@]}" step06 build/release/test_step06 >/dev/null
    stamp build $?
    timeout 180 make "${make_flags[@]}" test-step06
    stamp test-step06 $?
} >"$out/test.log" 2>&1

# Only the GPU checks: the CPU ones gain nothing from a GPU sanitizer. The check that makes
# cudaMalloc fail on purpose is left out, since the sanitizer reports the failed call.
gpu_checks=('-sf=*test_ops_cuda.cpp,*test_forward_cuda.cpp' '-tce=*failing CUDA call*')
for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool build/release/test_step06 "${gpu_checks[@]}"
    stamp $tool $?
done >"$out/sanitizer.log" 2>&1

wait
prompt="The history of the printing press"
for type in f16 q4_k_m; do
    echo "== $model-$type.gguf"
    timeout 120 ./step06 $model-$type.gguf -p "$prompt" -n 16 --check
    stamp check $?
done >"$out/check.log" 2>&1

timeout 150 tools/bench/bench_kernels.sh $model-f16.gguf $model-q4_k_m.gguf >"$out/bench.log" 2>&1
stamp bench $? >>"$out/bench.log"
