// rmsnorm.cu - RMSNorm, one block per token, the sum of squares a block reduction. Its CPU
// twin is ops_cpu.cpp's rmsnorm. Written in step 9.
//
// One thread per token would keep 1 thread of the GPU busy for one token (decode), looping
// over the row twice. Here 256 threads share a row: each squares and adds every 256th
// element, the warps reduce their partial sums with shuffles, and the 8 warp sums meet in
// shared memory. Neighbouring threads read neighbouring elements, so every load is coalesced.
#include "cuda_check.h"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kNormThreads = 256;

__global__ void rmsnorm_kernel(float* out, const float* x, const float* weight, int dim,
                               float eps) {
    // BEGIN SOLUTION step09 rmsnorm_kernel
    __shared__ float warp_sums[kNormThreads / kWarpSize];
    const float* row = x + int64_t(blockIdx.x) * dim;
    float* result = out + int64_t(blockIdx.x) * dim;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sum += row[i] * row[i];
    sum = warp_sum(sum);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();  // every warp's sum is in shared memory, and every read of row is done
    sum = lane < kNormThreads / kWarpSize ? warp_sums[lane] : 0.0f;
    sum = warp_sum(sum);  // each warp adds the 8 warp sums: every thread has the total
    const float inv_rms = 1.0f / sqrtf(sum / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) result[i] = row[i] * inv_rms * weight[i];
    // END SOLUTION
}

void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps,
             Stream stream) {
    if (n_tokens == 0) return;
    rmsnorm_kernel<<<n_tokens, kNormThreads, 0, stream>>>(out, x, weight, dim, eps);
    check_launch("rmsnorm_kernel");
}

}  // namespace gpu
