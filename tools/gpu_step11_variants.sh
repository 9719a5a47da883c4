#!/usr/bin/env bash
# step11's record call with two variants of its batch sizes beside it, all in one device call:
#   1. copies step11_quantized_weights into step97_matvec_batch4 (matvec_kernel loads 4 pieces
#      of a block row ahead instead of 8) and step98_two_row_batch8 (the two-row kernels load 8
#      instead of 4), changing only that constant: directories made here, never committed;
#   2. builds step11's checks and runs its kernel and decoder checks, memcheck and racecheck on
#      the kernels step 11 changed last, and --check at the 0.5B and 1.5B Q4_K_M shapes;
#   3. tools/gpu_step11_record.sh with step10, step11, both variants and llama.cpp.
#
#   tools/gpu_step11_variants.sh OUT LLAMA_BENCH SIZE...
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step11_variants.sh OUT LLAMA_BENCH SIZE...}
llama_bench=${2:?the llama-bench binary}
shift 2
mkdir -p "$out"
start=$SECONDS
note() { echo "[$((SECONDS - start)) s] $*" | tee -a "$out/summary.txt"; }
rm -rf step97_* step98_*
cp -r step11_quantized_weights step97_matvec_batch4
sed -i 's/kMatvecBlockBatch = 8;/kMatvecBlockBatch = 4;/' step97_matvec_batch4/ops_cuda.cu
cp -r step11_quantized_weights step98_two_row_batch8
sed -i 's/kBlockBatch = 4;/kBlockBatch = 8;/' step98_two_row_batch8/ops_cuda.cu
note "variants: $(grep -h 'BlockBatch = [0-9]' step9[78]_*/ops_cuda.cu | tr -s ' ' | paste -sd' ' -)"

make -s -j"$(nproc)" CUDA_ARCHS="${CUDA_ARCHS:-90}" ${DOCTEST_INCLUDE:+DOCTEST_INCLUDE="$DOCTEST_INCLUDE"} \
    step11 build/release/test_step11 >"$out/build-checks.log" 2>&1
note "build: rc $?"
checks='-sf=*test_ops_cuda.cpp,*test_forward_cuda.cpp'
timeout 120 build/release/test_step11 "$checks" >"$out/checks.log" 2>&1
note "kernel and decoder checks: rc $? | $(tail -n 1 "$out/checks.log")"
changed='*quantize_q8*,*decode_attention reads*,*matvec_add*,*qkv_rope_cache*,*gate_up*'
for tool in memcheck racecheck; do
    timeout 90 compute-sanitizer --tool $tool --print-limit 20 build/release/test_step11 \
        -sf='*test_ops_cuda.cpp' -tc="$changed" >"$out/$tool.log" 2>&1
    note "$tool: rc $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log" | tail -n 1)"
done
ENGINES=step10,step11,step97,step98,llama.cpp tools/gpu_step11_record.sh "$out" "$llama_bench" "$@"
for size in 0.5b 1.5b; do
    timeout 60 ./step11 "models/qwen2.5-$size-random-published-q4_k_m.gguf" -p "Once upon a time," \
        -n 8 --check --temp 0 >"$out/check-$size.log" 2>&1
    note "--check $size: rc $? | $(grep -E '^(check: [0-9]+ steps|decode:)' "$out/check-$size.log" | paste -sd' ' -)"
done
cat "$out/summary.txt"
