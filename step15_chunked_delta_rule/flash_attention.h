// flash_attention.h - step 12: a prompt's attention on the tensor cores.
#pragma once

#include "ops_cuda.h"

namespace gpu {

// Whether flash_attention handles heads of this size: 64 and 128 values (Qwen2.5's), and 256
// (Qwen3.5's, step 14).
bool flash_attention_takes(int head_dim);

// attention() of ops_cuda.h (same arguments, same result up to F16 rounding) as flash attention:
// a block takes 64 queries of one head and walks the keys and values of its KV head in tiles
// of 64 positions, copied to shared memory as F16. Q K^T and P V run on the tensor cores; the
// softmax is online (a running maximum and sum per query, rescaled from tile to tile), so no
// score matrix is ever stored; tiles past a query tile's last position are never read (the
// causal mask), and query heads that share a KV head read the same rows (grouped-query
// attention). Scores and sums stay F32; q, k, v and the softmax weights are rounded to F16.
// k and v hold values of cache_type: an F16 cache's rows are copied into the tiles as they are.
void flash_attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
                     int first_position, int n_heads, int n_kv_heads, int head_dim,
                     CacheType cache_type = CacheType::F32);

}  // namespace gpu
