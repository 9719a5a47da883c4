// reduce.cuh - the reductions the kernels share: the sum and the maximum of a value over the
// 32 lanes of a warp, a warp's 32 values as one 8-bit block, and argmax's best (value, index)
// over a warp and over a block.
// Written in step 9; last changed in step 11 (quantize_in_warp).
#pragma once

#include <cmath>

#include "quant_blocks_cuda.cuh"

namespace gpu {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// The sum of `value` over the 32 lanes of a warp, in every lane. Each step adds the value of
// the lane `offset` away (lane ^ offset), halving the distance: 16, 8, 4, 2, 1. Five steps
// instead of 31 additions, and no shared memory: the values move between registers.
__device__ inline float warp_sum(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullWarp, value, offset);
    return value;
}

__device__ inline float warp_max(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value = fmaxf(value, __shfl_xor_sync(kFullWarp, value, offset));
    return value;
}

// A warp's 32 values, value i in lane i, as one BlockQ8: quantize_row_q8's arithmetic
// (quant_dot.cpp), d = max |h| / 127 and q = h / d rounded to nearest even, and their sum.
__device__ inline void quantize_in_warp(float h, BlockQ8& out) {
    const int lane = threadIdx.x % kWarpSize;
    const bool finite = __all_sync(kFullWarp, isfinite(h));
    const float d = finite ? warp_max(fabsf(h)) / 127.0f : NAN;
    const float q = finite && d != 0.0f ? fminf(fmaxf(rintf(h / d), -127.0f), 127.0f) : 0.0f;
    out.q[lane] = int8_t(q);
    int sum = int(q);
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(kFullWarp, sum, offset);
    if (lane == 0) out.d = d, out.sum = sum;
}

// ---- the best of many values: argmax's reduction ----
//
// "Best" is argmax()'s: the largest value, the first one on a tie. argmax() starts at x[0]
// and moves only to a strictly larger value, so a NaN is never chosen, except at x[0], where
// nothing is larger than it: the caller checks that case.

constexpr int kArgmaxThreads = 256;  // the block size block_best works with

struct Candidate {
    float value;
    int index;
};

// The better of two candidates: the larger value, on a tie the smaller index; never a NaN.
__device__ inline Candidate better(Candidate a, Candidate b) {
    if (isnan(b.value)) return a;
    if (isnan(a.value)) return b;
    return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

__device__ inline Candidate warp_best(Candidate c) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const Candidate other{__shfl_xor_sync(kFullWarp, c.value, offset),
                              __shfl_xor_sync(kFullWarp, c.index, offset)};
        c = better(c, other);
    }
    return c;
}

// The best of `n` candidates, or of x[0..n) when `candidates` is null, for a block of
// kArgmaxThreads threads; thread 0 gets it. Threads start from (-inf, n): any value or index
// beats it.
__device__ inline Candidate block_best(const float* x, const Candidate* candidates, int n,
                                       int first, int stride) {
    __shared__ Candidate warp_winners[kArgmaxThreads / kWarpSize];
    Candidate best{-INFINITY, n};
    for (int i = first; i < n; i += stride)
        best = better(best, candidates ? candidates[i] : Candidate{x[i], i});
    best = warp_best(best);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    if (lane == 0) warp_winners[warp] = best;
    __syncthreads();
    best = lane < kArgmaxThreads / kWarpSize ? warp_winners[lane] : Candidate{-INFINITY, n};
    return warp_best(best);
}

}  // namespace gpu
