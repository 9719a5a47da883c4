// head_norm.cuh - step 13: Qwen3's QK-norm and RoPE on one head of Q or K, by one block: the
// sum of the head's squares, then each thread's pairs (i, i + head_dim / 2) divided by the rms,
// times the norm's weights, and rotated. The prompt's qk_norm_rope_kernel (head_norm.cu) runs
// it for every (token, head); the decode step's qkv_rope_cache_kernel (fused_decode.cu) runs it
// in the last of a head's blocks, once the head's products are all in. The CPU's twin is
// qk_norm() then rope() (ops_cpu.h).
#pragma once

#include <cstdint>

#include "cache_elements.cuh"
#include "reduce.cuh"

namespace gpu {

// RoPE's rotation of the pair (a, b) = (element i, element i + rope_dims / 2) at `position`, the
// angle computed in double as rope_kernel computes it (rope_dims = head_dim but for qwen35).
__device__ inline void rotate_pair(float& a, float& b, int position, int i, int rope_dims,
                                   float rope_base) {
    const double angle = double(position) * pow(double(rope_base), -2.0 * i / rope_dims);
    const float c = float(cos(angle)), s = float(sin(angle));
    const float first = a, second = b;
    a = first * c - second * s;
    b = second * c + first * s;
}

// out[0..head_dim) = rope(in / rms(in) * weight) for one head, the rotation on the pairs
// (i, i + rope_dims / 2) with i < rope_dims / 2 (partial_rope's): `in` (head_dim) is read through
// L2 (__ldcg), so values other blocks have just written are seen, and out may be in. Every
// thread of the block calls it; blockDim.x is a multiple of 32, at most 1024. The sum of
// squares is in float, as block_inv_rms's: head_dim values, not d_model.
template <typename Out>
__device__ void norm_rope_head(Out* out, const float* in, const float* weight, float eps,
                               int head_dim, int rope_dims, int position, float rope_base) {
    // BEGIN SOLUTION step13 norm_rope_head
    __shared__ float warp_sums[32];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int half = rope_dims / 2;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
        const float value = __ldcg(in + i);
        sum += value * value;
    }
    sum = warp_sum(sum);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();  // every read of `in` above is done before any write below
    sum = 0.0f;
    for (int w = 0; w < int(blockDim.x) / kWarpSize; w++) sum += warp_sums[w];
    const float inv_rms = 1.0f / sqrtf(sum / head_dim + eps);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float a = __ldcg(in + i) * inv_rms * weight[i];  // rmsnorm()'s order: x * inv * w
        float b = __ldcg(in + i + half) * inv_rms * weight[i + half];
        rotate_pair(a, b, position, i, rope_dims, rope_base);
        store(out, i, a);
        store(out, i + half, b);
    }
    for (int i = rope_dims + threadIdx.x; i < head_dim; i += blockDim.x)  // step 14: the tail
        store(out, i, __ldcg(in + i) * inv_rms * weight[i]);
    // END SOLUTION
}

}  // namespace gpu
