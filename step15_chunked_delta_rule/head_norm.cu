// head_norm.cu - step 13: a prompt's QK-norm and RoPE in one kernel, a block per (token, head).
//
// The prompt path runs rope_kernel over Q and K anyway, reading and writing every value once.
// QK-norm is per head too, so it joins that pass instead of making one of its own: each block
// sums its head's squares, then normalizes and rotates the pairs (head_norm.cuh). The norm then
// adds no trip through memory, only a block reduction over head_dim values, next to the
// products of the same chunk that dominate the prompt's time. Step 14: qwen35's partial RoPE
// (qk_norm_partial_rope) turns only the first rope_dims values of a head, as rope_kernel does.
#include <algorithm>

#include "cuda_check.h"
#include "head_norm.cuh"
#include "ops_cuda.h"

namespace gpu {

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
    // A thread a pair, in whole warps.
    const int threads = std::min(1024, (head_dim / 2 + kWarpSize - 1) / kWarpSize * kWarpSize);
    qk_norm_rope_kernel<<<unsigned(n_rows), threads>>>(x, weight, n_heads, head_dim, rope_dims,
                                                       first_position, base, eps);
    check_launch("qk_norm_rope_kernel");
}

void qk_norm_rope(float* x, const float* weight, int n_tokens, int n_heads, int head_dim,
                  int first_position, float base, float eps) {
    qk_norm_partial_rope(x, weight, n_tokens, n_heads, head_dim, head_dim, first_position, base,
                         eps);
}

}  // namespace gpu
