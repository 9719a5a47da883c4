// head_norm.cu - step 13: a prompt's QK-norm and RoPE in one kernel, a block per (token, head).
//
// The prompt path runs rope_kernel over Q and K anyway, reading and writing every value once.
// QK-norm is per head too, so it joins that pass instead of making one of its own: each block
// sums its head's squares, then normalizes and rotates the pairs (head_norm.cuh). The norm then
// adds no trip through memory, only a block reduction over head_dim values, next to the
// products of the same chunk that dominate the prompt's time. Step 14: qwen35's partial RoPE
// (qk_norm_partial_rope) turns only the first rope_dims values of a head, as rope_kernel does;
// gated_qk_norm_rope_cache does the same for one token of the gated attention in its decode step,
// reading the position from the slots and writing the key and value into the cache.
#include <algorithm>

#include "cuda_check.h"
#include "head_norm.cuh"
#include "ops_cuda.h"

namespace gpu {

// A block's threads for one head: a thread a pair, in whole warps.
static int pair_threads(int head_dim) {
    return std::min(1024, (head_dim / 2 + kWarpSize - 1) / kWarpSize * kWarpSize);
}

__global__ void qk_norm_rope_kernel(float* x, const float* weight, int n_heads, int head_dim,
                                    int rope_dims, int first_position, float rope_base,
                                    float eps) {
    const int64_t row = blockIdx.x;  // t * n_heads + h
    const int position = first_position + int(row / n_heads);
    float* head = x + row * head_dim;
    norm_rope_head(head, head, weight, eps, head_dim, rope_dims, position, rope_base);
}

void qk_norm_partial_rope(float* x, const float* weight, int n_tokens, int n_heads, int head_dim,
                          int rope_dims, int first_position, float base, float eps) {
    if (head_dim % 2 != 0) fail("gpu::qk_norm_rope needs an even head_dim, not %d", head_dim);
    if (rope_dims % 2 != 0 || rope_dims < 0 || rope_dims > head_dim)
        fail("gpu::qk_norm_partial_rope needs an even rope_dims up to head_dim %d, not %d",
             head_dim, rope_dims);
    const int64_t n_rows = int64_t(n_tokens) * n_heads;
    if (n_rows == 0) return;
    qk_norm_rope_kernel<<<unsigned(n_rows), pair_threads(head_dim)>>>(
        x, weight, n_heads, head_dim, rope_dims, first_position, base, eps);
    check_launch("qk_norm_rope_kernel");
}

// ---- step 14: the gated attention's decode step, a block a head ----

template <typename Cache>
__global__ void gated_qk_norm_rope_cache_kernel(float* q, float* gate, Cache* k_cache,
                                                Cache* v_cache, const float* query_gate,
                                                const float* k, const float* v,
                                                const float* q_norm, const float* k_norm,
                                                HeadShape heads, int rope_dims, float rope_base,
                                                float eps, const DecodeSlots* slots) {
    const int position = slots->position, head_dim = heads.head_dim;
    const int64_t row = int64_t(position) * heads.n_kv_heads * head_dim;  // the cache's row
    const int block = blockIdx.x;  // query heads, then key heads, then value heads
    if (block < heads.n_heads) {
        const float* from = query_gate + int64_t(block) * 2 * head_dim;  // (2, head_dim)
        norm_rope_head(q + block * head_dim, from, q_norm, eps, head_dim, rope_dims, position,
                       rope_base);
        for (int i = threadIdx.x; i < head_dim; i += blockDim.x)
            gate[block * head_dim + i] = from[head_dim + i];
    } else if (block < heads.n_heads + heads.n_kv_heads) {
        const int h = block - heads.n_heads;
        norm_rope_head(k_cache + row + h * head_dim, k + h * head_dim, k_norm, eps, head_dim,
                       rope_dims, position, rope_base);
    } else {
        const int h = block - heads.n_heads - heads.n_kv_heads;
        for (int i = threadIdx.x; i < head_dim; i += blockDim.x)
            store(v_cache + row + h * head_dim, i, v[h * head_dim + i]);
    }
}

void gated_qk_norm_rope_cache(float* q, float* gate, void* k_cache, void* v_cache,
                              CacheType cache_type, const float* query_gate, const float* k,
                              const float* v, const float* q_norm, const float* k_norm,
                              HeadShape heads, int rope_dims, float rope_base, float eps,
                              const DecodeSlots* slots, Stream stream) {
    if (heads.head_dim % 2 != 0 || rope_dims % 2 != 0 || rope_dims > heads.head_dim)
        fail("gpu::gated_qk_norm_rope_cache needs an even head_dim and rope_dims, not %d and %d",
             heads.head_dim, rope_dims);
    const int blocks = heads.n_heads + 2 * heads.n_kv_heads;
    with_cache_type(cache_type, [&](auto tag) {
        using Cache = typename decltype(tag)::type;
        gated_qk_norm_rope_cache_kernel<<<blocks, pair_threads(heads.head_dim), 0, stream>>>(
            q, gate, static_cast<Cache*>(k_cache), static_cast<Cache*>(v_cache), query_gate, k, v,
            q_norm, k_norm, heads, rope_dims, rope_base, eps, slots);
    });
    check_launch("gated_qk_norm_rope_cache_kernel");
}

void qk_norm_rope(float* x, const float* weight, int n_tokens, int n_heads, int head_dim,
                  int first_position, float base, float eps) {
    qk_norm_partial_rope(x, weight, n_tokens, n_heads, head_dim, head_dim, first_position, base,
                         eps);
}

}  // namespace gpu
