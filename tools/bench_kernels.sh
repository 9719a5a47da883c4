#!/usr/bin/env bash
# step06's kernels at Qwen2.5-1.5B sizes (time, GB/s, share of a device-to-device copy), then
# step06's tokens/s on the models given. Not a test, and only where there is a GPU: it says
# why it skips otherwise.
#
#   tools/bench_kernels.sh [MODEL.gguf...], e.g. a 1.5B-shaped model from
#       python3 tools/make_tiny_model.py --preset 1.5b --types f16 -o models/qwen2.5-1.5b-random-f16.gguf
#
# CUDA_ARCHS (default: native, the GPU of this machine) sets what nvcc builds for.
set -eu
cd "$(dirname "$0")/.."
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if ! command -v "$nvcc" >/dev/null; then
    echo "bench_kernels: skipped, $nvcc not found (it needs the CUDA toolkit and a GPU)"
    exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "bench_kernels: skipped, no GPU here (nvidia-smi lists none)"
    exit 0
fi
step=step06_cuda_kernels
archs=""
for arch in ${CUDA_ARCHS:-native}; do
    if [ "$arch" = native ]; then archs+=" -arch=native"; else archs+=" -gencode arch=compute_$arch,code=sm_$arch"; fi
done
mkdir -p build/bench
echo "building build/bench/bench_kernels (-O2)"
# shellcheck disable=SC2086
"$nvcc" -O2 -std=c++17 $archs -I$step -Icommon tools/bench_kernels.cu $step/ops_cuda.cu \
    $step/device_buffer.cu $step/cuda_device.cu $step/ggml_types.cpp -o build/bench/bench_kernels
build/bench/bench_kernels

[ $# -gt 0 ] || exit 0
make -s step06
prompt="The history of the printing press begins in the fifteenth century, when Johannes \
Gutenberg combined movable metal type with an oil-based ink and a screw press."
for model in "$@"; do
    echo "== step06 on $model ($(du -h "$model" | cut -f1)), 32 new tokens"
    # step06 prints the continuation on stdout and the timing line last on stderr.
    ./step06 "$model" -p "$prompt" -n 32 2>&1 >/dev/null | grep -e '^device:' -e '^prompt:'
done
