// ops_cuda.h - the operators of ops_cpu.h as CUDA kernels: same names (in namespace gpu), same
// arguments, same results up to float rounding, but every pointer is a device pointer.
//
// Each function launches one naive kernel: one thread per output element, or per row where
// the CPU loop carries a running sum across the row. No shared memory, no tiling, no tensor
// cores: step06 only moves the loops of ops_cpu.cpp onto the GPU, so that later steps have a
// correct baseline to make fast. Launches are asynchronous; a function returns before its
// kernel has finished, and a later copy to the host waits for it.
//
// Weight matrices on the device are F32, F16 or BF16 (device_weights.h converts every other
// type on the host); `table_type` and `w_type` are those ggml type ids, anything else fails.
#pragma once

#include <cstdint>

namespace gpu {

// out[t] = row ids[t] of the table; `ids` is on the device too.
void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim);

// RMSNorm with one thread per token; `out` may be `x`.
void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps);

// out = x W^T, one thread per output element out[t][o], accumulating in float.
void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim);

void add_bias(float* x, const float* bias, int n_tokens, int dim);

// NEOX RoPE, one thread per rotated pair; the angle is computed in double as on the CPU.
void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base);

// Causal grouped-query attention of new queries over the cached keys and values, as in
// ops_cpu.h, one thread per (new token, query head). The softmax of ops_cpu.h is folded in:
// there is no buffer for the scores, each thread recomputes them.
void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim);

void swiglu(float* out, const float* gate, const float* up, int64_t n);

void residual_add(float* x, const float* delta, int64_t n);

// Index of the largest of n values, the first one on a tie (as the CPU's); waits for the
// device to return it. NaN values are not handled as the CPU does.
int argmax(const float* x, int n);

}  // namespace gpu
