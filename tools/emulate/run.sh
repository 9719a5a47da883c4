#!/bin/bash
# tools/emulate/run.sh - GPU kernels run lane by lane on the CPU (lanes.h), built from the step's
# source as it stands, into build/emulate: step 15's chunk kernels and step 11's decode attention.
#   tools/emulate/run.sh rule [MAX_TOKENS]          the chunk kernels against the recurrence
#   tools/emulate/run.sh check                      the same up to 130 tokens, as `make test` runs it
#   tools/emulate/run.sh model MODEL.gguf IDS.txt   a file's prompt: every position's logits
#   tools/emulate/run.sh attention [check]          the split and merge kernels against attention
#                                                   in double (check: fewer cases, as `make test`)
# EMU_TRUNCATE=1 cuts each mma sum as the tensor cores do (lanes.h). Needs g++ and CUDA's headers
# (cuda_fp16.h), not a GPU; run `make build/release-cpu-only/test_step15 HAVE_NVCC=` first for
# `model` (it links that build's objects).
set -euo pipefail
cd "$(dirname "$0")/../.."
STEP=step15_chunked_delta_rule
OUT=build/emulate
CUDA_INCLUDE=${CUDA_HOME:-/usr/local/cuda}/include
mkdir -p $OUT

# The kernels: chunked_delta_rule.cu up to its launch code, their dynamic shared memory taken
# from lanes.h, the headers of its host code left out (ops_cuda.h stays: it sizes the scratch).
end=$(grep -n -- '// ---- the launch ----' $STEP/chunked_delta_rule.cu | cut -d: -f1)
{
    head -n $((end - 1)) $STEP/chunked_delta_rule.cu |
        grep -vE '#include "(cuda_check|device_buffer|gemm_tensor_cores)\.h"' |
        sed 's/extern __shared__ __align__(16) uint8_t shared_bytes\[\];/uint8_t* shared_bytes = emu::dynamic_shared();/'
    echo '}  // namespace gpu'
} >$OUT/chunk_kernels.inc
grep -q 'emu::dynamic_shared' $OUT/chunk_kernels.inc || { echo "run.sh: chunk_prepare_kernel's shared memory line not found" >&2; exit 1; }

# tools/emulate first: its tensor_core_ptx.cuh stands in for the step's.
CXX="g++ -std=c++17 -O2 -fopenmp -Itools/emulate -I$OUT -I$STEP -Icommon -isystem $CUDA_INCLUDE"
build_rule() {
    $CXX -DDOCTEST_CONFIG_DISABLE ${DOCTEST_INCLUDE:+-isystem $DOCTEST_INCLUDE} \
        -include tools/emulate/lanes.h tools/emulate/chunk_rule.cpp \
        $STEP/ops_cpu.cpp $STEP/dequantize.cpp $STEP/ggml_types.cpp -o $OUT/chunk_rule
}
# skip_without_headers WHAT COUNTER: where CUDA's headers are missing, a check says why and
# prints its count line as skipped.
skip_without_headers() {
    [ -f $CUDA_INCLUDE/cuda_fp16.h ] && return
    echo "SKIPPED: $1 need CUDA's headers ($CUDA_INCLUDE/cuda_fp16.h is missing)"
    echo "$2: 0 passed, 0 failed, 1 skipped"
    exit 0
}
case "${1:-}" in
rule)
    build_rule
    $OUT/chunk_rule ${2:-200}
    ;;
check)
    skip_without_headers "the emulated chunk kernels" emulated_chunk_kernels
    build_rule
    $OUT/chunk_rule 130 check
    ;;
attention)
    skip_without_headers "the emulated decode attention kernels" emulated_decode_attention
    # decode_attention.cu up to its host code; blockDim named as lanes.h provides it
    ATTENTION_STEP=step11_quantized_weights
    end=$(grep -n '^// The multiprocessors of the current device' $ATTENTION_STEP/decode_attention.cu | cut -d: -f1)
    [ -n "$end" ] || { echo "run.sh: decode_attention.cu's host code not found" >&2; exit 1; }
    {
        head -n $((end - 1)) $ATTENTION_STEP/decode_attention.cu | sed 's/\bblockDim\b/emu::block_dim()/g'
        echo '}  // namespace gpu'
    } >$OUT/decode_attention_kernels.inc
    g++ -std=c++17 -O2 -Itools/emulate -I$OUT -I$ATTENTION_STEP -Icommon -isystem $CUDA_INCLUDE \
        -include tools/emulate/lanes.h tools/emulate/decode_attention_check.cpp -o $OUT/decode_attention_check
    $OUT/decode_attention_check ${2:-}
    ;;
model)
    objects=build/release-cpu-only/$STEP
    [ -f $objects/weights.o ] || { echo "run.sh: build $objects first (make build/release-cpu-only/test_step15 HAVE_NVCC=)" >&2; exit 1; }
    $CXX -Dchunked_gated_delta_rule=chunked_rule_under_test -c $STEP/forward_cpu.cpp -o $OUT/forward_cpu.o
    $CXX -DDOCTEST_CONFIG_DISABLE ${DOCTEST_INCLUDE:+-isystem $DOCTEST_INCLUDE} \
        -include tools/emulate/lanes.h -c tools/emulate/chunk_rule_in_model.cpp -o $OUT/chunk_rule_in_model.o
    g++ -fopenmp $OUT/chunk_rule_in_model.o $OUT/forward_cpu.o \
        $(ls $objects/*.o | grep -vE '/(test_[a-z0-9_]*|forward_cpu|main)\.o$') -o $OUT/chunk_rule_in_model
    $OUT/chunk_rule_in_model "$2" "$3"
    ;;
*)
    sed -n '2,11p' "$0"
    exit 1
    ;;
esac
