// argmax.cu - the index of the largest of n values, as a two-stage reduction. Its CPU twin is
// ops_cpu.cpp's argmax. Written in step 9.
//
// All n threads racing for one 64-bit slot with atomicMax would be 151936 atomic operations on
// one address, served one after another. Here each of kArgmaxBlocks blocks finds the best of
// its share (each thread over every blocks * 256th value, then shuffles within warps, then the
// warps' winners in shared memory: reduce.cuh's block_best), and one more block picks the best
// of those.
#include "cuda_check.h"
#include "device_buffer.h"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kArgmaxBlocks = 128;

__global__ void argmax_blocks_kernel(Candidate* winners, const float* x, int n) {
    const Candidate best =
        block_best(x, nullptr, n, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    if (threadIdx.x == 0) winners[blockIdx.x] = best;
}

__global__ void argmax_final_kernel(int* result, const Candidate* winners, const float* x, int n) {
    const Candidate best = block_best(nullptr, winners, kArgmaxBlocks, threadIdx.x, blockDim.x);
    // No candidate below n means every value was NaN or the winner was not found: argmax()
    // then returns 0, as it does for a NaN at x[0].
    if (threadIdx.x == 0) *result = isnan(x[0]) || best.index >= n ? 0 : best.index;
}

int argmax(const float* x, int n) {
    if (n <= 0) fail("gpu::argmax of %d values", n);
    // Kept between calls, like the attention's partial results.
    static DeviceBuffer<Candidate> winners(kArgmaxBlocks);
    static DeviceBuffer<int> result(1);
    argmax_blocks_kernel<<<kArgmaxBlocks, kArgmaxThreads>>>(winners.data(), x, n);
    check_launch("argmax_blocks_kernel");
    argmax_final_kernel<<<1, kArgmaxThreads>>>(result.data(), winners.data(), x, n);
    check_launch("argmax_final_kernel");
    return result.download()[0];
}

}  // namespace gpu
