// ops_cuda.cu - the kernels, each the loop body of its twin in ops_cpu.cpp with the loop
// indices replaced by the thread's index. Read the two files side by side.
//
// A launch starts a grid of blocks of kBlockSize threads; every thread computes
//   index = blockIdx.x * blockDim.x + threadIdx.x
// and the kernel turns that one number back into the (token, element) its CPU loop visits.
// The last block is usually only partly needed, so each kernel first returns if its index is
// past the end.
#include "ops_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "device_buffer.h"
#include "ggml_types.h"

namespace gpu {

// 256 threads (8 warps) per block: a common default; these kernels do not depend on it.
constexpr int kBlockSize = 256;

static unsigned blocks_for(int64_t n_threads) {
    return unsigned((n_threads + kBlockSize - 1) / kBlockSize);
}

__device__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

// A weight as float, whatever its storage type on the device.
__device__ float to_float(float value) { return value; }
__device__ float to_float(__half value) { return __half2float(value); }
__device__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

static const char* type_name(uint32_t type) { return ggml_type_info(type).name; }

// ---- embedding: one thread per output element out[t][i] ----

template <typename Weight>
__global__ void embedding_kernel(float* out, const Weight* table, const int32_t* ids, int n_tokens,
                                 int dim) {
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * dim) return;
    int64_t t = index / dim;
    int64_t i = index % dim;
    out[index] = to_float(table[int64_t(ids[t]) * dim + i]);
}

void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim) {
    int64_t n_threads = int64_t(n_tokens) * dim;
    if (n_threads == 0) return;
    unsigned blocks = blocks_for(n_threads);
    switch (GgmlType(table_type)) {
        case GgmlType::F32:
            embedding_kernel<<<blocks, kBlockSize>>>(out, static_cast<const float*>(table), ids,
                                                     n_tokens, dim);
            break;
        case GgmlType::F16:
            embedding_kernel<<<blocks, kBlockSize>>>(out, static_cast<const __half*>(table), ids,
                                                     n_tokens, dim);
            break;
        case GgmlType::BF16:
            embedding_kernel<<<blocks, kBlockSize>>>(out, static_cast<const __nv_bfloat16*>(table),
                                                     ids, n_tokens, dim);
            break;
        default:
            fail("gpu::embedding reads F32, F16 or BF16 tables, not %s", type_name(table_type));
    }
    check_launch("embedding_kernel");
}

// ---- rmsnorm: one thread per token, looping over its row twice like the CPU ----

__global__ void rmsnorm_kernel(float* out, const float* x, const float* weight, int n_tokens,
                               int dim, float eps) {
    // BEGIN SOLUTION step06 rmsnorm_kernel
    int64_t t = thread_index();
    if (t >= n_tokens) return;
    const float* row = x + t * dim;
    float* result = out + t * dim;
    double sum_of_squares = 0.0;  // in double, as on the CPU
    for (int i = 0; i < dim; i++) sum_of_squares += double(row[i]) * row[i];
    float inv_rms = float(1.0 / sqrt(sum_of_squares / dim + eps));
    for (int i = 0; i < dim; i++) result[i] = row[i] * inv_rms * weight[i];
    // END SOLUTION
}

void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps) {
    if (n_tokens == 0) return;
    rmsnorm_kernel<<<blocks_for(n_tokens), kBlockSize>>>(out, x, weight, n_tokens, dim, eps);
    check_launch("rmsnorm_kernel");
}

// ---- matmul: one thread per output element out[t][o] = dot(x[t], W[o]) ----
//
// Consecutive threads take consecutive o, so at each step i the 32 threads of a warp read
// W[o][i] for 32 rows of W, in_dim elements apart: 32 separate memory transactions where one
// would do if they read consecutive addresses. And every token's thread reads the whole row
// of W again. Step 9 removes these two costs (a warp per row of W, tiles of W in shared memory).

template <typename Weight>
__global__ void matmul_kernel(float* out, const float* x, const Weight* w, int n_tokens, int in_dim,
                              int out_dim) {
    // BEGIN SOLUTION step06 matmul_kernel
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * out_dim) return;
    int64_t t = index / out_dim;
    int64_t o = index % out_dim;
    const float* x_row = x + t * in_dim;
    const Weight* w_row = w + o * in_dim;
    float sum = 0.0f;
    for (int i = 0; i < in_dim; i++) sum += x_row[i] * to_float(w_row[i]);
    out[index] = sum;
    // END SOLUTION
}

void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim) {
    int64_t n_threads = int64_t(n_tokens) * out_dim;
    if (n_threads == 0) return;
    unsigned blocks = blocks_for(n_threads);
    switch (GgmlType(w_type)) {
        case GgmlType::F32:
            matmul_kernel<<<blocks, kBlockSize>>>(out, x, static_cast<const float*>(w), n_tokens,
                                                  in_dim, out_dim);
            break;
        case GgmlType::F16:
            matmul_kernel<<<blocks, kBlockSize>>>(out, x, static_cast<const __half*>(w), n_tokens,
                                                  in_dim, out_dim);
            break;
        case GgmlType::BF16:
            matmul_kernel<<<blocks, kBlockSize>>>(out, x, static_cast<const __nv_bfloat16*>(w),
                                                  n_tokens, in_dim, out_dim);
            break;
        default: fail("gpu::matmul reads F32, F16 or BF16 weights, not %s", type_name(w_type));
    }
    check_launch("matmul_kernel");
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

// ---- rope: one thread per rotated pair (token t, head h, element i < head_dim/2) ----
//
// The angle is a double, as on the CPU: in float, position 30000 times a frequency near 1
// would be off by ~0.002 rad. Double arithmetic is slow on consumer GPUs (1/64 of the float
// rate), but here it is a handful of operations per pair, next to nothing beside matmul.

__global__ void rope_kernel(float* x, int n_tokens, int n_heads, int head_dim, int first_position,
                            float base) {
    // BEGIN SOLUTION step06 rope_kernel
    int half = head_dim / 2;
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * n_heads * half) return;
    int i = int(index % half);
    int64_t head_index = index / half;  // t * n_heads + h
    int64_t t = head_index / n_heads;
    double position = double(first_position) + t;
    double angle = position * pow(double(base), -2.0 * i / head_dim);
    float c = float(cos(angle));
    float s = float(sin(angle));
    float* head = x + head_index * head_dim;
    float first = head[i];
    float second = head[i + half];
    head[i] = first * c - second * s;
    head[i + half] = second * c + first * s;
    // END SOLUTION
}

void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base) {
    int64_t n_threads = int64_t(n_tokens) * n_heads * (head_dim / 2);
    if (n_threads == 0) return;
    rope_kernel<<<blocks_for(n_threads), kBlockSize>>>(x, n_tokens, n_heads, head_dim,
                                                       first_position, base);
    check_launch("rope_kernel");
}

// ---- attention: one thread per (query token t, query head h) ----
//
// The CPU fills a scores buffer, runs softmax over it (max, exp and sum, divide) and then sums
// the values. A buffer of n_tokens scores per thread would take n_heads * n_tokens^2 floats,
// so each thread instead recomputes the dot products in each of its three loops: three times
// the arithmetic, no extra memory.

__device__ float dot(const float* a, const float* b, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

__global__ void attention_kernel(float* out, const float* q, const float* k, const float* v,
                                 int n_tokens, int first_position, int n_heads, int n_kv_heads,
                                 int head_dim) {
    // BEGIN SOLUTION step07 attention_kernel
    int64_t index = thread_index();
    if (index >= int64_t(n_tokens) * n_heads) return;
    int64_t t = index / n_heads;
    int64_t position = first_position + t;  // the query's place in the sequence
    int h = int(index % n_heads);
    int q_dim = n_heads * head_dim;
    int kv_dim = n_kv_heads * head_dim;
    int kv_head = h / (n_heads / n_kv_heads);  // query heads that share one key/value head
    float scale = 1.0f / sqrtf(float(head_dim));
    const float* query = q + t * q_dim + h * head_dim;
    const float* keys = k + kv_head * head_dim;    // key j at keys + j * kv_dim
    const float* values = v + kv_head * head_dim;  // value j at values + j * kv_dim

    // Later positions are masked: the loops stop at the query's own position instead of
    // adding -infinity.
    float max_score = -INFINITY;
    for (int64_t j = 0; j <= position; j++)
        max_score = fmaxf(max_score, dot(query, keys + j * kv_dim, head_dim) * scale);
    float sum = 0.0f;
    for (int64_t j = 0; j <= position; j++)
        sum += expf(dot(query, keys + j * kv_dim, head_dim) * scale - max_score);

    float* result = out + t * q_dim + h * head_dim;
    for (int d = 0; d < head_dim; d++) result[d] = 0.0f;
    for (int64_t j = 0; j <= position; j++) {
        float weight = expf(dot(query, keys + j * kv_dim, head_dim) * scale - max_score) / sum;
        const float* value = values + j * kv_dim;
        for (int d = 0; d < head_dim; d++) result[d] += weight * value[d];
    }
    // END SOLUTION
}

void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim) {
    int64_t n_threads = int64_t(n_tokens) * n_heads;
    if (n_threads == 0) return;
    attention_kernel<<<blocks_for(n_threads), kBlockSize>>>(out, q, k, v, n_tokens, first_position,
                                                            n_heads, n_kv_heads, head_dim);
    check_launch("attention_kernel");
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

// ---- argmax: one thread per element, all of them racing for one slot ----
//
// Each thread packs (its value, its index) into one 64-bit key whose unsigned order is the
// order we want, and atomicMax keeps the largest key: the value decides first, and on a tie
// the smaller index, since the low half holds UINT32_MAX - index.

// Float bits rearranged so that comparing them as unsigned integers compares the floats:
// positive floats get the sign bit set; negative ones are inverted, so the most negative
// becomes the smallest.
__device__ uint32_t ordered_bits(float value) {
    uint32_t bits = __float_as_uint(value);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__global__ void argmax_kernel(unsigned long long* best, const float* x, int n) {
    int64_t i = thread_index();
    if (i >= n) return;
    unsigned long long key =
        (unsigned long long)ordered_bits(x[i]) << 32 | (0xffffffffu - uint32_t(i));
    atomicMax(best, key);
}

int argmax(const float* x, int n) {
    if (n <= 0) fail("gpu::argmax of %d values", n);
    DeviceBuffer<unsigned long long> best(std::vector<unsigned long long>{0});  // below any key
    argmax_kernel<<<blocks_for(n), kBlockSize>>>(best.data(), x, n);
    check_launch("argmax_kernel");
    unsigned long long key = best.download()[0];
    return int(0xffffffffu - uint32_t(key & 0xffffffffu));
}

}  // namespace gpu
