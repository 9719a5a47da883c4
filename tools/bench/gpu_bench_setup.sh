# gpu_bench_setup.sh - sourced by the benchmarks that build CUDA programs of their own
# (bench_kernels.sh, bench_decode_layers.sh): sets `nvcc` and `archs` (nvcc's flags for
# CUDA_ARCHS, default native: the GPU of this machine), or ends the calling script with a line
# that says why it skips (no CUDA toolkit, no GPU). $1: the benchmark's name for that line.
nvcc=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if ! command -v "$nvcc" >/dev/null; then
    echo "$1: skipped, $nvcc not found (it needs the CUDA toolkit and a GPU)"
    exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$1: skipped, no GPU here (nvidia-smi lists none)"
    exit 0
fi
archs=""
for arch in ${CUDA_ARCHS:-native}; do
    if [ "$arch" = native ]; then archs+=" -arch=native"; else archs+=" -gencode arch=compute_$arch,code=sm_$arch"; fi
done
