// attention.cuh - the shapes both attention kernels handle (decode_attention.cu,
// prompt_attention.cu): a lane owns dimensions d, d + 32, ... of a head, kSlotsPerLane of them,
// so a head has at most kMaxHeadDim values; a block holds at most kMaxGroup query heads of one
// key/value head in shared memory. Written in step 9.
#pragma once

#include "error.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kMaxHeadDim = 128;  // Qwen2.5: 64 or 128
constexpr int kMaxGroup = 8;      // query heads per KV head (Qwen2.5: 5 to 8, the tiny model 2)
constexpr int kSlotsPerLane = kMaxHeadDim / kWarpSize;
static_assert(kMaxHeadDim % kWarpSize == 0, "a head is a whole number of slots per lane");

inline void check_attention_shape(int n_heads, int n_kv_heads, int head_dim) {
    if (head_dim > kMaxHeadDim)
        fail("gpu::attention handles heads of up to %d values, not %d", kMaxHeadDim, head_dim);
    if (n_heads / n_kv_heads > kMaxGroup)
        fail("gpu::attention handles up to %d query heads per key/value head, not %d", kMaxGroup,
             n_heads / n_kv_heads);
}

}  // namespace gpu
