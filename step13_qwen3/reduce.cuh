// reduce.cuh - the reductions the kernels share: the sum and the maximum of a value over the
// 32 lanes of a warp, values rounded to 8-bit blocks (a warp a block, and the last of several
// blocks rounding what the others wrote), and argmax's best (value, index)
// over a warp and over a block.
// Written in step 9; last changed in step 11 (quantize_in_warp and the blocks around it).
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

// A warp's 32 values, value i in lane i, as block b of an 8-bit vector: quantize_row_q8's
// arithmetic (quant_dot.cpp), d = max |h| / 127 and q = h / d rounded to nearest even; and the
// sums of the block's two halves of quants.
__device__ inline void quantize_in_warp(float h, Q8Vector out, int b) {
    const int lane = threadIdx.x % kWarpSize;
    const bool finite = __all_sync(kFullWarp, isfinite(h));
    const float d = finite ? warp_max(fabsf(h)) / 127.0f : NAN;
    const float q = finite && d != 0.0f ? fminf(fmaxf(rintf(h / d), -127.0f), 127.0f) : 0.0f;
    out.q[b * kQ8BlockSize + lane] = int8_t(q);
    // The sums of the two halves, each over its 16 lanes, packed as q8_vector.h says.
    int half_sum = int(q);
    for (int offset = kWarpSize / 4; offset > 0; offset /= 2)
        half_sum += __shfl_xor_sync(kFullWarp, half_sum, offset);
    const int high_sum = __shfl_sync(kFullWarp, half_sum, kWarpSize / 2);
    if (lane == 0) {
        out.d[b] = d;
        out.sums[b] = half_sum + high_sum * 65536;  // low + 65536 high, low in -2032 .. 2032
    }
}

// Whether this block is the last of `n_blocks` to get here, in every thread of the block
// (each must call it, after its own writes): the counter at `done` is then reset to 0, and
// every write of the other blocks before their call is visible to this one.
__device__ inline bool last_block_done(int* done, int n_blocks) {
    __shared__ bool last;
    __threadfence();  // this thread's writes, before the count says they are done
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(done, 1) == n_blocks - 1;
        if (last) *done = 0;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
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
