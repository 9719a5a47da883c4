// ops_cuda.h - the operators of ops_cpu.h as CUDA kernels: same names (in namespace gpu), same
// arguments, same results up to float rounding, but every pointer is a device pointer.
//
// The kernels read memory the way the GPU wants it read: a warp per row of W for one token
// (matvec.cu), shared-memory tiles for many (tiled_gemm.cu), block-wide reductions for RMSNorm
// and argmax (rmsnorm.cu, argmax.cu), and attention split over the cached positions
// (decode_attention.cu, prompt_attention.cu); the element-wise operators are in
// elementwise.cu. The declarations are step 6's, so forward_cuda.cpp runs them unchanged.
// Launches are asynchronous; a function returns before its kernel has finished, and a later
// copy to the host waits for it.
//
// Weight matrices on the device are F32, F16 or BF16 (device_weights.h converts every other
// type on the host); `table_type` and `w_type` are those ggml type ids, anything else fails.
#pragma once

#include <cstdint>

namespace gpu {

// out[t] = row ids[t] of the table; `ids` is on the device too.
void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim);

// RMSNorm, one block of 256 threads per token; `out` may be `x`.
void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps);

// out = x W^T, accumulating in float: for one token a warp per row of W (matvec_kernel), for
// more a 64 x 64 tile of out per block (tiled_gemm_kernel).
void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim);

void add_bias(float* x, const float* bias, int n_tokens, int dim);

// NEOX RoPE, one thread per rotated pair; the angle is computed in double as on the CPU.
void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base);

// Causal grouped-query attention of new queries over the cached keys and values, as in
// ops_cpu.h, with the softmax computed on the fly (online) rather than over a stored row of
// scores. One new token (decode): the positions split into chunks over many blocks, then
// merged. More (a prompt): a block per 16 queries of one head. Heads of up to 128 values and
// up to 8 query heads per key/value head; other shapes fail.
void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim);

void swiglu(float* out, const float* gate, const float* up, int64_t n);

void residual_add(float* x, const float* delta, int64_t n);

// Index of the largest of n values, the first one on a tie (as the CPU's); waits for the
// device to return it. Like the CPU's, it never picks a NaN, unless x[0] is one.
int argmax(const float* x, int n);

// ---- the kernels that matmul and attention choose between ----

// matmul of one token: a warp (or, for long rows, a block) per row of W.
void matvec(float* out, const float* x, const void* w, uint32_t w_type, int in_dim,
            int out_dim);
// matmul of several tokens: a 64 x 64 tile of out per block.
void tiled_gemm(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens,
                int in_dim, int out_dim);
// attention of one new token, at first_position: chunks of the positions, then their merge.
void split_attention(float* out, const float* q, const float* k, const float* v,
                     int first_position, int n_heads, int n_kv_heads, int head_dim);
// attention of several new tokens: a block per 16 queries of one head.
void prefill_attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
                       int first_position, int n_heads, int n_kv_heads, int head_dim);

}  // namespace gpu
