#!/usr/bin/env bash
# The kernel table: every operator of ops_cuda.h at Qwen2.5-1.5B sizes, step08's naive kernels
# beside step09's (time, speed-up, GB/s and share of a device-to-device copy, GFLOP/s), then
# step09's tokens/s on the models given. Not a test, and only where there is a GPU: it says
# why it skips otherwise. tools/bench/bench_kernels.cu says how each row is timed.
#
#   tools/bench/bench_kernels.sh [MODEL.gguf...]     the table also goes to build/bench/kernels.md
#   BENCH_STEPS="step08_sampling DIR step09_coalesced_kernels" tools/bench/bench_kernels.sh
#       other versions side by side, oldest first (DIR: a copy of a step's directory as an
#       earlier commit had it, for a worklog)
#   BENCH_GRAPH=1 tools/bench/bench_kernels.sh    also the one-token products replayed in a CUDA graph
#
# CUDA_ARCHS (default: native, the GPU of this machine) sets what nvcc builds for.
set -eu
cd "$(dirname "$0")/../.."
source tools/bench/gpu_bench_setup.sh bench_kernels
mkdir -p build/bench
tables=() names=()
for step in ${BENCH_STEPS:-step08_sampling step09_coalesced_kernels}; do
    name=$(basename "$step")
    binary=build/bench/bench_kernels_$name
    echo "building $binary (-O2)"
    # shellcheck disable=SC2086
    "$nvcc" -O2 -std=c++17 --default-stream per-thread $archs -I"$step" -Icommon \
        tools/bench/bench_kernels.cu "$step"/*.cu "$step"/ggml_types.cpp -o "$binary"
    echo "running $binary"
    "$binary" >"build/bench/kernels_$name.tsv"
    grep -q "^copy" "build/bench/kernels_$name.tsv" || { cat "build/bench/kernels_$name.tsv"; exit 0; }
    tables+=("build/bench/kernels_$name.tsv") names+=("$name")
done
python3 tools/bench/kernel_table.py "${tables[@]}" --names "${names[@]}" | tee build/bench/kernels.md

[ $# -gt 0 ] || exit 0
make -s step09
prompt="The history of the printing press begins in the fifteenth century, when Johannes \
Gutenberg combined movable metal type with an oil-based ink and a screw press."
for model in "$@"; do
    echo "== step09 on $model ($(du -h "$model" | cut -f1)), 32 new tokens"
    # The continuation goes to stdout, the timing line last to stderr.
    ./step09 "$model" -p "$prompt" -n 32 --temp 0 2>&1 >/dev/null | grep -e '^device:' -e '^prompt:'
done
