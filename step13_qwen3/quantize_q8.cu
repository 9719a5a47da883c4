// quantize_q8.cu - quantize_q8: a vector rounded to 8 bits (a Q8Vector) for a block matrix's
// product, optionally after an rmsnorm. Its CPU twin is quant_dot.cpp's quantize_row_q8, with
// the CPU's rmsnorm first when there is a norm. Written in step 11.
//
// The sum of squares is taken in double, h = x * (1 / rms) * g in float, then per block of 32
// d = max |h| / 127 and q = h / d rounded to nearest even (reduce.cuh's quantize_blocks, which
// the kernels that produce activations call too). Each block of this kernel recomputes the sum
// of squares (a few KB from L2) so that the blocks need not wait for one another. The bits
// match the CPU's, so the integer sums of the two devices' dot products are the same numbers.
// The decode step launches it once a token, after the embedding: every later input is rounded
// by the kernel that produces it.
#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "ops_cuda.h"
#include "quant_blocks_cuda.cuh"
#include "reduce.cuh"

namespace gpu {

constexpr int kQuantizeWarps = 8;

__global__ void quantize_q8_kernel(Q8Vector out, const float* x, const float* norm_weight,
                                   float eps, int n) {
    wait_for_previous_kernel();  // x is the previous kernel's (dependent_launch.cuh)
    allow_next_kernel();
    quantize_blocks(out, x, norm_weight, eps, n, blockIdx.x * kQuantizeWarps,
                    gridDim.x * kQuantizeWarps);
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
