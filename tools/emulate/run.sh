#!/bin/bash
# tools/emulate/run.sh - step 15's chunk kernels run lane by lane on the CPU (lanes.h): built
# from step15_chunked_delta_rule/chunked_delta_rule.cu as it stands, into build/emulate.
#   tools/emulate/run.sh rule [MAX_TOKENS]          against the recurrence, random inputs
#   tools/emulate/run.sh check                      the same up to 130 tokens, as `make test` runs it
#   tools/emulate/run.sh model MODEL.gguf IDS.txt   a file's prompt: every position's logits
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
case "${1:-}" in
rule)
    build_rule
    $OUT/chunk_rule ${2:-200}
    ;;
check)
    if [ ! -f $CUDA_INCLUDE/cuda_fp16.h ]; then
        echo "SKIPPED: the emulated chunk kernels need CUDA's headers ($CUDA_INCLUDE/cuda_fp16.h is missing)"
        echo "emulated_chunk_kernels: 0 passed, 0 failed, 1 skipped"
        exit 0
    fi
    build_rule
    $OUT/chunk_rule 130 check
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
    sed -n '2,9p' "$0"
    exit 1
    ;;
esac
