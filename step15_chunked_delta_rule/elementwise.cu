// elementwise.cu - the operators that are one thread per output element: embedding, add_bias,
// rope, swiglu and residual_add. Neighbouring threads read and write neighbouring elements, so
// every access is coalesced as it is. Each kernel has its CPU twin in ops_cpu.cpp, and the
// checks hold it to it. The kernels are step 6's; step 11 adds store_cache_rows, a prompt's
// keys and values rounded into an F16 cache (its twin: half.h's f32_to_f16); step 14 adds
// Qwen3.5's partial RoPE (rope_kernel on the first rope_dims values of a head), sigmoid_gate and
// split_query_gate. Written in step 9; last changed in step 14 (rope_dims; sigmoid_gate;
// split_query_gate).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cache_elements.cuh"
#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "ggml_types.h"
#include "ops_cuda.h"
#include "weight_pieces.cuh"

namespace gpu {

// 256 threads (8 warps) per block: a common default.
constexpr int kBlockSize = 256;

static unsigned blocks_for(int64_t n_threads) {
    return unsigned((n_threads + kBlockSize - 1) / kBlockSize);
}

__device__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

// ---- embedding: one thread per output element out[t][i] ----

// The first kernel of a decode step: the id is the one the step before chose, so it waits
// before anything (dependent_launch.cuh).
template <typename Weight>
__global__ void embedding_kernel(float* out, const Weight* table, const int32_t* ids, int n_tokens,
                                 int dim) {
    wait_for_previous_kernel();
    allow_next_kernel();
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * dim) return;
    int64_t t = index / dim;
    int64_t i = index % dim;
    out[index] = weight_at(row_start(table, ids[t], dim), int(i));
}

void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim, Stream stream) {
    int64_t n_threads = int64_t(n_tokens) * dim;
    if (n_threads == 0) return;
    unsigned blocks = blocks_for(n_threads);
    with_weight_type(table_type, "embedding", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        launch_kernel("embedding_kernel", embedding_kernel<Weight>, blocks, kBlockSize, stream, out,
                      static_cast<const Weight*>(table), ids, n_tokens, dim);
    });
}

// ---- add_bias: one thread per element x[t][i] ----

__global__ void add_bias_kernel(float* x, const float* bias, int n_tokens, int dim) {
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * dim) return;
    x[index] += bias[index % dim];
}

void add_bias(float* x, const float* bias, int n_tokens, int dim) {
    int64_t n_threads = int64_t(n_tokens) * dim;
    if (n_threads == 0) return;
    add_bias_kernel<<<blocks_for(n_threads), kBlockSize>>>(x, bias, n_tokens, dim);
    check_launch("add_bias_kernel");
}

// ---- rope: one thread per rotated pair, the angle in double ----
// Step 14: only the first rope_dims values of each head turn (rope_dims = head_dim: all).

__global__ void rope_kernel(float* x, int n_tokens, int n_heads, int head_dim, int rope_dims,
                            int first_position, float base) {
    // BEGIN SOLUTION step06 rope_kernel
    int half = rope_dims / 2;
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * n_heads * half) return;
    int i = int(index % half);
    int64_t head_index = index / half;  // t * n_heads + h
    int64_t t = head_index / n_heads;
    double position = double(first_position) + t;
    double angle = position * pow(double(base), -2.0 * i / rope_dims);
    float c = float(cos(angle));
    float s = float(sin(angle));
    float* head = x + head_index * head_dim;
    float first = head[i];
    float second = head[i + half];
    head[i] = first * c - second * s;
    head[i + half] = second * c + first * s;
    // END SOLUTION
}

void partial_rope(float* x, int n_tokens, int n_heads, int head_dim, int rope_dims,
                  int first_position, float base) {
    int64_t n_threads = int64_t(n_tokens) * n_heads * (rope_dims / 2);
    if (n_threads == 0) return;
    rope_kernel<<<blocks_for(n_threads), kBlockSize>>>(x, n_tokens, n_heads, head_dim, rope_dims,
                                                       first_position, base);
    check_launch("rope_kernel");
}

void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base) {
    partial_rope(x, n_tokens, n_heads, head_dim, head_dim, first_position, base);
}

// ---- swiglu and residual_add: one thread per element ----

__global__ void swiglu_kernel(float* out, const float* gate, const float* up, int64_t n) {
    // BEGIN SOLUTION step06 swiglu_kernel
    int64_t i = thread_index();
    if (i >= n) return;
    float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
    // END SOLUTION
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
    if (n == 0) return;
    swiglu_kernel<<<blocks_for(n), kBlockSize>>>(out, gate, up, n);
    check_launch("swiglu_kernel");
}

__global__ void residual_add_kernel(float* x, const float* delta, int64_t n) {
    int64_t i = thread_index();
    if (i >= n) return;
    x[i] += delta[i];
}

void residual_add(float* x, const float* delta, int64_t n) {
    if (n == 0) return;
    residual_add_kernel<<<blocks_for(n), kBlockSize>>>(x, delta, n);
    check_launch("residual_add_kernel");
}

// ---- sigmoid_gate: one thread per element ----

__global__ void sigmoid_gate_kernel(float* x, const float* gate, int64_t n) {
    int64_t i = thread_index();
    if (i >= n) return;
    x[i] *= 1.0f / (1.0f + expf(-gate[i]));
}

void sigmoid_gate(float* x, const float* gate, int64_t n, Stream stream) {
    if (n == 0) return;
    sigmoid_gate_kernel<<<blocks_for(n), kBlockSize, 0, stream>>>(x, gate, n);
    check_launch("sigmoid_gate_kernel");
}

// ---- split_query_gate: one thread per value of the query ----

__global__ void split_query_gate_kernel(float* query, float* gate, const float* query_gate,
                                        int64_t n, int head_dim) {
    int64_t i = thread_index();  // (t * n_heads + h) * head_dim + j
    if (i >= n) return;
    int64_t row = i / head_dim;
    int64_t j = i % head_dim;
    const float* from = query_gate + row * 2 * head_dim;  // (2, head_dim)
    query[i] = from[j];
    gate[i] = from[head_dim + j];
}

void split_query_gate(float* query, float* gate, const float* query_gate, int n_tokens,
                      int n_heads, int head_dim) {
    int64_t n = int64_t(n_tokens) * n_heads * head_dim;
    if (n == 0) return;
    split_query_gate_kernel<<<blocks_for(n), kBlockSize>>>(query, gate, query_gate, n, head_dim);
    check_launch("split_query_gate_kernel");
}

// ---- store_cache_rows: one thread per value ----

template <typename Cache>
__global__ void store_cache_rows_kernel(Cache* rows, const float* x, int64_t n) {
    int64_t i = thread_index();
    if (i >= n) return;
    store(rows, i, x[i]);
}

void store_cache_rows(void* rows, CacheType cache_type, const float* x, int64_t n) {
    if (n == 0) return;
    with_cache_type(cache_type, [&](auto tag) {
        using Cache = typename decltype(tag)::type;
        store_cache_rows_kernel<<<blocks_for(n), kBlockSize>>>(static_cast<Cache*>(rows), x, n);
    });
    check_launch("store_cache_rows_kernel");
}

}  // namespace gpu
