// cache_elements.cuh - the KV cache's two element types in the kernels that write and read it:
// float, the keys and values as computed, or __half, each rounded to nearest (11 significant
// bits), half the bytes a decode step's attention reads. Written in step 11; last changed in
// step 14 (a lane's slots, kSlots, a template parameter: heads of 256).
//
// A kernel that touches the cache is a template on its element type, Cache; with_cache_type()
// picks the instance a CacheType names. store() writes a float into either; the attention
// kernels read a lane's share of a row with load_slots(), which for halves takes one 8-byte
// load of 4 neighbouring values where floats take 4 loads of one (slot_dim says which).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "attention.cuh"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

__device__ inline void store(float* row, int64_t i, float value) { row[i] = value; }
__device__ inline void store(__half* row, int64_t i, float value) {
    row[i] = __float2half_rn(value);  // ties to even, as half.h's f32_to_f16
}

__device__ inline float as_float(float value) { return value; }
__device__ inline float as_float(__half value) { return __half2float(value); }

template <typename Cache>
struct CacheTag {
    using type = Cache;
};

// Calls launch(CacheTag<Cache>{}) with Cache the element type of cache_type.
template <typename Launch>
void with_cache_type(CacheType cache_type, Launch&& launch) {
    if (cache_type == CacheType::F16) launch(CacheTag<__half>{});
    else launch(CacheTag<float>{});
}

// The dimension of a head that slot s of a lane holds (attention.cuh: kSlots slots a lane).
// Floats: lane + 32 s, so the lanes of a warp read neighbouring floats, one load a slot.
// Halves: kSlots lane + s, the lane's slots side by side, 8-byte loads of 4; a warp then reads
// 256 bytes of a row at once (a head of 128 halves), or 512 (256).
template <typename Cache, int kSlots>
__device__ inline int slot_dim(int lane, int s) {
    if constexpr (std::is_same_v<Cache, __half>) return kSlots * lane + s;
    else return lane + s * kWarpSize;
}

// The lane's slots of one head's row (`head` points at its first value) as floats: zeros when
// the row is not `inside` and past head_dim.
template <int kSlots>
__device__ inline void load_slots(const float* head, int lane, int head_dim, bool inside,
                                  float (&out)[kSlots]) {
#pragma unroll
    for (int s = 0; s < kSlots; s++) {
        const int d = slot_dim<float, kSlots>(lane, s);
        out[s] = inside && d < head_dim ? head[d] : 0.0f;
    }
}

// Halves: head_dim a multiple of 4 (check_cache_shape), so each group of 4 of a lane's slots is
// wholly inside the head or wholly past it, and 8-byte aligned.
template <int kSlots>
__device__ inline void load_slots(const __half* head, int lane, int head_dim, bool inside,
                                  float (&out)[kSlots]) {
    static_assert(kSlots % 4 == 0, "a lane's slots are 8-byte loads of 4 halves");
#pragma unroll
    for (int s = 0; s < kSlots; s += 4) {
        const int d = slot_dim<__half, kSlots>(lane, s);
        uint2 bits = make_uint2(0u, 0u);  // four zeros
        if (inside && d < head_dim) bits = *reinterpret_cast<const uint2*>(head + d);
        const float2 low = __half22float2(*reinterpret_cast<const __half2*>(&bits.x));
        const float2 high = __half22float2(*reinterpret_cast<const __half2*>(&bits.y));
        out[s] = low.x, out[s + 1] = low.y, out[s + 2] = high.x, out[s + 3] = high.y;
    }
}

// An F16 cache is read 4 halves (8 bytes) at a time: its heads must be whole groups of 4.
inline void check_cache_shape(CacheType cache_type, int head_dim, const char* op) {
    if (cache_type == CacheType::F16 && head_dim % 4 != 0)
        fail("gpu::%s reads an F16 cache in heads of a multiple of 4 values, not %d", op, head_dim);
}

}  // namespace gpu
