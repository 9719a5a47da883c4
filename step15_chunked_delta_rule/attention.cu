// attention.cu - gpu::attention: it checks the shape and chooses the kernel by the number of
// new tokens, the split attention for one (decode_attention.cu), query tiles for more
// (prompt_attention.cu). Written in step 9; last changed in step 11 (the cache's type).
#include "attention.cuh"
#include "cache_elements.cuh"
#include "ops_cuda.h"

namespace gpu {

void attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim,
               CacheType cache_type) {
    if (n_tokens == 0) return;
    check_attention_shape(n_heads, n_kv_heads, head_dim);
    check_cache_shape(cache_type, head_dim, "attention");
    if (n_tokens == 1) {
        split_attention(out, q, k, v, first_position, n_heads, n_kv_heads, head_dim, cache_type);
    } else {
        prefill_attention(out, q, k, v, n_tokens, first_position, n_heads, n_kv_heads, head_dim,
                          cache_type);
    }
}

}  // namespace gpu
