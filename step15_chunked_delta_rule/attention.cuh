// attention.cuh - the shapes both attention kernels handle (decode_attention.cu,
// prompt_attention.cu): a lane owns kSlots dimensions of a head (d, d + 32, ... for a float
// cache), so a head has at most 32 kSlots values; a block holds at most kMaxGroup query heads of
// one key/value head in shared memory. Written in step 9; last changed in step 14 (Qwen3.5's
// heads of 256: the kernels became templates on kSlots, 4 or 8).
#pragma once

#include <type_traits>

#include "error.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kMaxHeadDim = 256;  // Qwen2.5: 64 or 128; Qwen3.5: 256
constexpr int kMaxGroup = 8;      // query heads per KV head (Qwen2.5: 5 to 8, the tiny model 2)
static_assert(kMaxHeadDim == 8 * kWarpSize, "with_head_slots covers heads of up to 8 slots a lane");

// Calls launch(std::integral_constant<int, kSlots>{}) with the slots a lane needs for a head of
// head_dim values: 4 up to 128 (so a model with such heads keeps the registers it had), else 8.
template <typename Launch>
void with_head_slots(int head_dim, Launch&& launch) {
    if (head_dim <= 4 * kWarpSize) launch(std::integral_constant<int, 4>{});
    else launch(std::integral_constant<int, 8>{});
}

inline void check_attention_shape(int n_heads, int n_kv_heads, int head_dim) {
    if (head_dim > kMaxHeadDim)
        fail("gpu::attention handles heads of up to %d values, not %d", kMaxHeadDim, head_dim);
    if (n_heads / n_kv_heads > kMaxGroup)
        fail("gpu::attention handles up to %d query heads per key/value head, not %d", kMaxGroup,
             n_heads / n_kv_heads);
}

}  // namespace gpu
