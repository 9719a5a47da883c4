// quantize_q8.cu - quantize_q8: a vector rounded to 8 bits (a Q8Vector) for a block matrix's
// product, optionally after an rmsnorm. Its CPU twin is quant_dot.cpp's quantize_row_q8, with
// the CPU's rmsnorm first when there is a norm. Written in step 11.
//
// The sum of squares is taken in double, h = x * (1 / rms) * g in float, then per block of 32
// d = max |h| / 127 and q = h / d rounded to nearest even (reduce.cuh's quantize_in_warp, which
// the kernels that produce activations call too). Each block of this kernel recomputes the sum
// of squares (a few KB from L2) so that the blocks need not wait for one another. The bits
// match the CPU's, so the integer sums of the two devices' dot products are the same numbers.
// The decode step launches it for the normalized inputs, which need the whole residual vector:
// after the embedding, after Wo and after down. Wo's and down's own inputs are rounded by the
// kernels that produce them.
#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "ops_cuda.h"
#include "quant_blocks_cuda.cuh"
#include "reduce.cuh"

namespace gpu {

constexpr int kQuantizeWarps = 8;

__global__ void quantize_q8_kernel(Q8Vector out, const float* x, const float* norm_weight,
                                   float eps, int n) {
    __shared__ double warp_sums[kQuantizeWarps];
    wait_for_previous_kernel();  // x is the previous kernel's (dependent_launch.cuh)
    allow_next_kernel();
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float inv_rms = 1.0f;
    if (norm_weight) {  // every thread of the block takes this branch, or none
        double sum = 0.0;
        for (int i = threadIdx.x; i < n; i += blockDim.x) sum += double(x[i]) * x[i];
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
            sum += __shfl_xor_sync(kFullWarp, sum, offset);
        if (lane == 0) warp_sums[warp] = sum;
        __syncthreads();
        sum = 0.0;
        for (int w = 0; w < kQuantizeWarps; w++) sum += warp_sums[w];
        inv_rms = float(1.0 / sqrt(sum / n + eps));
    }
    const int b = blockIdx.x * kQuantizeWarps + warp;
    if (b >= n / kQ8BlockSize) return;
    const int i = b * kQ8BlockSize + lane;
    quantize_in_warp(norm_weight ? x[i] * inv_rms * norm_weight[i] : x[i], out, b);
}

void quantize_q8(Q8Vector out, const float* x, const float* norm_weight, float eps, int n,
                 Stream stream) {
    if (n % kQ8BlockSize != 0) fail("gpu::quantize_q8 of %d values: not whole blocks of 32", n);
    const int n_blocks = n / kQ8BlockSize;
    if (n_blocks == 0) return;
    launch_kernel("quantize_q8_kernel", quantize_q8_kernel,
                  (n_blocks + kQuantizeWarps - 1) / kQuantizeWarps, kQuantizeWarps * kWarpSize,
                  stream, out, x, norm_weight, eps, n);
}

}  // namespace gpu
