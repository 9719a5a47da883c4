// ops_cuda.cu - the kernels of step 6, rewritten the way the GPU reads memory. Each still has
// its CPU twin in ops_cpu.cpp, and the checks hold every one of them to it.
//
// Step 6 gave each thread one output and let it loop like the CPU. That is correct, and slow
// for two reasons this file removes:
//   - Uncoalesced reads. The 32 threads of a warp load together: 32 neighbouring addresses
//     cost one or two 32-byte memory transactions, 32 scattered ones cost 32. Step 6's matmul
//     had neighbouring threads walk neighbouring *rows* of W, in_dim elements apart. Here a
//     warp walks *along* one row, each lane loading 16 bytes next to its neighbour's.
//   - Too little parallelism, and work done twice. One thread per token for RMSNorm, one per
//     head for attention, one thread's loop for a whole row of a 1536-wide dot product: most of
//     the GPU waits. Here a block shares the work of a row (reductions with warp shuffles),
//     the cached positions are split over many blocks (split attention), and a weight tile in
//     shared memory serves 64 tokens at once (the tiled GEMM) instead of being re-read by each.
// The element-wise kernels (embedding, add_bias, rope, swiglu, residual_add) were already
// coalesced, one thread per element, and stay as step 6 wrote them.
//
// Launches are asynchronous and checked as in step 6. Weights are F32, F16 or BF16.
#include "ops_cuda.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "device_buffer.h"
#include "ggml_types.h"

namespace gpu {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// 256 threads (8 warps) per block for the element-wise kernels: a common default.
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

// The sum of `value` over the 32 lanes of a warp, in every lane. Each step adds the value of
// the lane `offset` away (lane ^ offset), halving the distance: 16, 8, 4, 2, 1. Five steps
// instead of 31 additions, and no shared memory: the values move between registers.
__device__ float warp_sum(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value += __shfl_xor_sync(kFullWarp, value, offset);
    return value;
}

__device__ float warp_max(float value) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        value = fmaxf(value, __shfl_xor_sync(kFullWarp, value, offset));
    return value;
}

// ---- embedding: one thread per output element out[t][i] (as in step 6) ----

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

// ---- rmsnorm: one block per token, the sum of squares a block reduction ----
//
// Step 6 ran one thread per token: 1 token (decode) kept 1 thread of the GPU busy, looping
// over 1536 elements twice. Here 256 threads share a row: each squares and adds every 256th
// element, the warps reduce their partial sums with shuffles, and the 8 warp sums meet in
// shared memory. Neighbouring threads read neighbouring elements, so every load is coalesced.

constexpr int kNormThreads = 256;

__global__ void rmsnorm_kernel(float* out, const float* x, const float* weight, int dim,
                               float eps) {
    // BEGIN SOLUTION step09 rmsnorm_kernel
    __shared__ float warp_sums[kNormThreads / kWarpSize];
    const float* row = x + int64_t(blockIdx.x) * dim;
    float* result = out + int64_t(blockIdx.x) * dim;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sum += row[i] * row[i];
    sum = warp_sum(sum);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();  // every warp's sum is in shared memory, and every read of row is done
    sum = lane < kNormThreads / kWarpSize ? warp_sums[lane] : 0.0f;
    sum = warp_sum(sum);  // each warp adds the 8 warp sums: every thread has the total
    const float inv_rms = 1.0f / sqrtf(sum / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) result[i] = row[i] * inv_rms * weight[i];
    // END SOLUTION
}

void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps) {
    if (n_tokens == 0) return;
    rmsnorm_kernel<<<n_tokens, kNormThreads>>>(out, x, weight, dim, eps);
    check_launch("rmsnorm_kernel");
}

// ---- matmul, one token: matvec_kernel, a warp (or a few) per output row ----
//
// Decode multiplies each weight matrix by one vector, so it is a read of W and little else:
// 2 bytes per F16 weight for 2 floating-point operations. Its speed is the speed at which W
// comes from memory. The warp of row o reads the row front to back, lane k taking the 16-byte
// pieces k, k + 32, k + 64, ...: one warp load covers 512 consecutive bytes, and the loop is
// unrolled so that each lane has several loads in flight. The lanes' partial sums meet in a
// warp_sum.
//
// Two refinements, each measured (docs/en/step09.md, section 2):
//   - x comes through the L1 cache, not through shared memory. The first version copied x
//     into shared memory once per block, so no warp could ask for its row of W before the
//     whole block had waited for x. x is at most 75 KB, read by every warp of an SM from L1.
//   - A long row is split among the block's 4 warps (ffn_down: 8960 weights a row, 1536
//     rows). With one warp a row, its 1536 warps could not keep enough loads in flight; now
//     warp w takes every 4th group of 32 pieces (pieces 32w + lane, + 128, + 256, ...), and
//     the 4 partial sums meet in shared memory.
//
// A 16-byte load needs a 16-byte aligned address. cudaMalloc aligns the start of W, so every
// row is aligned when its length is a multiple of the weights per load (8 F16, 4 F32); models'
// rows are (multiples of 64). Other lengths take the one-element-per-lane loop, which is just
// as coalesced, with 8 times as many load instructions.

constexpr int kMatvecWarps = 4;          // warps per block
constexpr int kPiecesToSplitRow = 1024;  // a row of this many 16-byte pieces takes 4 warps

// The dot product of one 16-byte load of weights with the floats of x it multiplies.
__device__ float dot_16_bytes(uint4 bytes, const float* x, const float*) {
    const float4 xs = __ldg(reinterpret_cast<const float4*>(x));
    return __uint_as_float(bytes.x) * xs.x + __uint_as_float(bytes.y) * xs.y +
           __uint_as_float(bytes.z) * xs.z + __uint_as_float(bytes.w) * xs.w;
}
__device__ float dot_16_bytes(uint4 bytes, const float* x, const __half*) {
    const __half2* pairs = reinterpret_cast<const __half2*>(&bytes);
    const float4 x0 = __ldg(reinterpret_cast<const float4*>(x));
    const float4 x1 = __ldg(reinterpret_cast<const float4*>(x + 4));
    const float2 w0 = __half22float2(pairs[0]), w1 = __half22float2(pairs[1]);
    const float2 w2 = __half22float2(pairs[2]), w3 = __half22float2(pairs[3]);
    return w0.x * x0.x + w0.y * x0.y + w1.x * x0.z + w1.y * x0.w + w2.x * x1.x + w2.y * x1.y +
           w3.x * x1.z + w3.y * x1.w;
}
__device__ float dot_16_bytes(uint4 bytes, const float* x, const __nv_bfloat16*) {
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&bytes);
    const float4 x0 = __ldg(reinterpret_cast<const float4*>(x));
    const float4 x1 = __ldg(reinterpret_cast<const float4*>(x + 4));
    const float2 w0 = __bfloat1622float2(pairs[0]), w1 = __bfloat1622float2(pairs[1]);
    const float2 w2 = __bfloat1622float2(pairs[2]), w3 = __bfloat1622float2(pairs[3]);
    return w0.x * x0.x + w0.y * x0.y + w1.x * x0.z + w1.y * x0.w + w2.x * x1.x + w2.y * x1.y +
           w3.x * x1.z + w3.y * x1.w;
}

// warps_per_row is 1 (4 rows a block) or kMatvecWarps (1 row a block).
template <typename Weight>
__global__ void matvec_kernel(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                              int warps_per_row, bool vectorized) {
    // BEGIN SOLUTION step09 matvec_kernel
    __shared__ float partial_sums[kMatvecWarps];
    constexpr int kPerLoad = 16 / sizeof(Weight);  // weights in one 16-byte load
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int rows_per_block = kMatvecWarps / warps_per_row;
    const int64_t row = int64_t(blockIdx.x) * rows_per_block + warp / warps_per_row;
    const int part = warp % warps_per_row;  // which share of the row this warp reads
    float sum = 0.0f;
    if (row < out_dim) {
        const Weight* w_row = w + row * in_dim;
        const int first_lane = part * kWarpSize, stride = warps_per_row * kWarpSize;
        if (vectorized) {  // every row and x are 16-byte aligned
            const uint4* pieces = reinterpret_cast<const uint4*>(w_row);
#pragma unroll 8
            for (int p = first_lane + lane; p < in_dim / kPerLoad; p += stride)
                sum += dot_16_bytes(pieces[p], x + p * kPerLoad, w);
        } else {
            for (int i = first_lane + lane; i < in_dim; i += stride)
                sum += to_float(w_row[i]) * x[i];
        }
    }
    sum = warp_sum(sum);
    if (warps_per_row == 1) {
        if (row < out_dim && lane == 0) out[row] = sum;
        return;
    }
    if (lane == 0) partial_sums[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0 && row < out_dim) {
        float total = 0.0f;
        for (int i = 0; i < kMatvecWarps; i++) total += partial_sums[i];
        out[row] = total;
    }
    // END SOLUTION
}

// ---- matmul, several tokens: tiled_gemm_kernel, 64 x 64 output tiles ----
//
// A prompt multiplies W by many vectors at once: out = x W^T with x (n_tokens, in_dim). Read
// the naive way, every token re-reads all of W; 512 tokens read it 512 times. The tiled GEMM
// (general matrix multiply) gives each block a tile of 64 tokens x 64 outputs and walks in_dim
// in steps of kTileDepth: each step copies a 64 x 16 slice of x and one of W into shared
// memory (coalesced: neighbouring threads copy neighbouring k), and then every weight in
// shared memory is used by 64 tokens and every activation by 64 outputs. Each of the 128
// threads keeps a 4 x 8 block of the tile in registers (register blocking): per step k it
// reads 4 activations and 8 weights from shared memory and does 32 multiply-adds with them.
// The tiles are stored k-major (transposed) so those 4 and 8 values are consecutive floats;
// each row has 4 floats of padding, which spreads the transposing stores over the banks.
// While a step's slices are multiplied, the next step's are on their way into registers
// (prefetching): the first version waited for each slice, and with the few blocks of a narrow
// matrix (ffn_down: 1536 outputs, 24 x 8 tiles at 512 tokens) that wait was most of its time.
// Tensor cores, which do the same multiply-adds in hardware tiles, are step 12's lesson.

constexpr int kTileTokens = 64, kTileOutputs = 64, kTileDepth = 16;
constexpr int kThreadTokens = 4, kThreadOutputs = 8;  // each thread's block of the tile
constexpr int kGemmThreads = (kTileTokens / kThreadTokens) * (kTileOutputs / kThreadOutputs);
constexpr int kTilePad = 4;
static_assert((kTileTokens + kTilePad) % 4 == 0 && (kTileOutputs + kTilePad) % 4 == 0,
              "tile rows stay 16-byte aligned, for the float4 reads");
static_assert(kTileTokens == kTileOutputs && kTileTokens * kTileDepth % kGemmThreads == 0,
              "every thread copies as many elements of each slice");

// One thread's share of a k step's two slices: kPerThread elements of x and of w, in column
// k0 + threadIdx.x % 16 of rows threadIdx.x / 16, + 8, + 16, ..., loaded from global memory
// into registers. Zeros past the edges: they add nothing to the sums.
constexpr int kPerThread = kTileTokens * kTileDepth / kGemmThreads;  // 8
constexpr int kRowsPerPass = kGemmThreads / kTileDepth;              // 8
static_assert(kPerThread * kRowsPerPass == kTileTokens, "the passes cover every row of a tile");

template <typename Weight>
__device__ void load_slices(float (&xs)[kPerThread], float (&ws)[kPerThread], const float* x,
                            const Weight* w, int first_token, int first_output, int k0,
                            int n_tokens, int in_dim, int out_dim) {
    const int row = threadIdx.x / kTileDepth, column = k0 + threadIdx.x % kTileDepth;
    const bool in_k = column < in_dim;
    const float* x_column = x + int64_t(first_token + row) * in_dim + column;
    const Weight* w_column = w + int64_t(first_output + row) * in_dim + column;
    const int64_t step = int64_t(kRowsPerPass) * in_dim;
#pragma unroll
    for (int j = 0; j < kPerThread; j++) {
        xs[j] = in_k && first_token + row + j * kRowsPerPass < n_tokens ? x_column[j * step] : 0.0f;
        ws[j] = in_k && first_output + row + j * kRowsPerPass < out_dim
                    ? to_float(w_column[j * step])
                    : 0.0f;
    }
}

template <typename Weight>
__global__ void tiled_gemm_kernel(float* out, const float* x, const Weight* w, int n_tokens,
                                  int in_dim, int out_dim) {
    // BEGIN SOLUTION step09 tiled_gemm_kernel
    __shared__ __align__(16) float x_tile[kTileDepth][kTileTokens + kTilePad];
    __shared__ __align__(16) float w_tile[kTileDepth][kTileOutputs + kTilePad];
    const int first_token = blockIdx.y * kTileTokens, first_output = blockIdx.x * kTileOutputs;
    const int my_tokens = (threadIdx.x / (kTileOutputs / kThreadOutputs)) * kThreadTokens;
    const int my_outputs = (threadIdx.x % (kTileOutputs / kThreadOutputs)) * kThreadOutputs;
    float acc[kThreadTokens][kThreadOutputs] = {};

    // The next k step's slices are loaded into registers while this step's are multiplied
    // out of shared memory (prefetching): the loads' latency hides behind the arithmetic.
    float next_x[kPerThread], next_w[kPerThread];
    load_slices(next_x, next_w, x, w, first_token, first_output, 0, n_tokens, in_dim, out_dim);
    for (int k0 = 0; k0 < in_dim; k0 += kTileDepth) {
        const int row = threadIdx.x / kTileDepth, k = threadIdx.x % kTileDepth;
#pragma unroll
        for (int j = 0; j < kPerThread; j++) {  // registers -> shared memory, transposed
            x_tile[k][row + j * kRowsPerPass] = next_x[j];
            w_tile[k][row + j * kRowsPerPass] = next_w[j];
        }
        __syncthreads();
        if (k0 + kTileDepth < in_dim)
            load_slices(next_x, next_w, x, w, first_token, first_output, k0 + kTileDepth, n_tokens,
                        in_dim, out_dim);
#pragma unroll
        for (int k = 0; k < kTileDepth; k++) {
            const float4 xs = *reinterpret_cast<const float4*>(&x_tile[k][my_tokens]);
            const float4 w0 = *reinterpret_cast<const float4*>(&w_tile[k][my_outputs]);
            const float4 w1 = *reinterpret_cast<const float4*>(&w_tile[k][my_outputs + 4]);
            const float xv[kThreadTokens] = {xs.x, xs.y, xs.z, xs.w};
            const float wv[kThreadOutputs] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
            for (int a = 0; a < kThreadTokens; a++)
#pragma unroll
                for (int b = 0; b < kThreadOutputs; b++) acc[a][b] += xv[a] * wv[b];
        }
        __syncthreads();  // the tiles are read before the next step overwrites them
    }
#pragma unroll
    for (int a = 0; a < kThreadTokens; a++) {
        const int t = first_token + my_tokens + a;
#pragma unroll
        for (int b = 0; b < kThreadOutputs; b++) {
            const int o = first_output + my_outputs + b;
            if (t < n_tokens && o < out_dim) out[int64_t(t) * out_dim + o] = acc[a][b];
        }
    }
    // END SOLUTION
}

template <typename Weight>
static void launch_matmul(float* out, const float* x, const Weight* w, int n_tokens, int in_dim,
                          int out_dim) {
    if (n_tokens == 1) {
        const int per_load = 16 / int(sizeof(Weight));
        const bool vectorized =
            in_dim % per_load == 0 && uintptr_t(x) % 16 == 0 && uintptr_t(w) % 16 == 0;
        const int warps_per_row = in_dim / per_load >= kPiecesToSplitRow ? kMatvecWarps : 1;
        const int rows_per_block = kMatvecWarps / warps_per_row;
        const unsigned blocks = unsigned((int64_t(out_dim) + rows_per_block - 1) / rows_per_block);
        matvec_kernel<<<blocks, kMatvecWarps * kWarpSize>>>(out, x, w, in_dim, out_dim,
                                                            warps_per_row, vectorized);
        check_launch("matvec_kernel");
    } else {
        const dim3 grid((out_dim + kTileOutputs - 1) / kTileOutputs,
                        (n_tokens + kTileTokens - 1) / kTileTokens);
        tiled_gemm_kernel<<<grid, kGemmThreads>>>(out, x, w, n_tokens, in_dim, out_dim);
        check_launch("tiled_gemm_kernel");
    }
}

void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim) {
    if (int64_t(n_tokens) * out_dim == 0) return;
    if ((n_tokens + kTileTokens - 1) / kTileTokens > 65535)  // the grid's y dimension
        fail("gpu::matmul takes up to %d tokens at once, not %d", 65535 * kTileTokens, n_tokens);
    switch (GgmlType(w_type)) {
        case GgmlType::F32:
            launch_matmul(out, x, static_cast<const float*>(w), n_tokens, in_dim, out_dim);
            break;
        case GgmlType::F16:
            launch_matmul(out, x, static_cast<const __half*>(w), n_tokens, in_dim, out_dim);
            break;
        case GgmlType::BF16:
            launch_matmul(out, x, static_cast<const __nv_bfloat16*>(w), n_tokens, in_dim, out_dim);
            break;
        default: fail("gpu::matmul reads F32, F16 or BF16 weights, not %s", type_name(w_type));
    }
}

// ---- add_bias: one thread per element x[t][i] (as in step 6) ----

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

// ---- rope: one thread per rotated pair (as in step 6), the angle in double ----

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

// ---- attention of one new token: split over the cached positions ("flash-decoding") ----
//
// Step 7's decode attention ran one thread per query head: 12 threads for a 1.5B model, each
// reading every cached key and value alone, three times over. The work is a read of the
// cache, (positions, kv_dim) floats of K and of V, so it wants the whole GPU reading it.
// Here the positions are cut into chunks and each block takes one chunk of one KV head, for
// all the query heads that share that head (grouped-query attention: a cache row is read
// once, not once per query head). A chunk is a whole number of passes of 32 positions, as few
// as makes about two blocks per multiprocessor (a short cache has fewer: one pass a chunk). In
// a pass each of the 4 warps takes 8 positions, a whole row each, lanes reading neighbouring
// floats.
//
// A softmax needs the maximum and the sum over *all* positions, which no chunk has. So each
// chunk keeps its own: its largest score m, the sum l of exp(score - m) and the sum of the
// values weighted by exp(score - m). Two such partial results combine exactly: with
// M = max(m1, m2), l = l1 e^(m1-M) + l2 e^(m2-M), and likewise for the weighted values (the
// "online softmax"). A block does that from pass to pass; merge_chunks_kernel does it over
// the chunks, and divides by l.

constexpr int kDecodeWarps = 4;
constexpr int kPositionsPerWarp = 8;
constexpr int kPassPositions = kDecodeWarps * kPositionsPerWarp;  // 32: one per lane, later
constexpr int kMaxHeadDim = 128;                                  // Qwen2.5: 64 or 128
constexpr int kMaxGroup = 8;  // query heads per KV head (Qwen2.5: 5 to 8, the tiny model 2)
constexpr int kSlotsPerLane = kMaxHeadDim / kWarpSize;

// The chunks' partial results, for each (chunk, query head).
struct ChunkPartials {
    float* max;     // (n_chunks, n_heads)
    float* sum;     // (n_chunks, n_heads)
    float* values;  // (n_chunks, n_heads, head_dim)
};

__global__ void split_attention_kernel(ChunkPartials partials, const float* q, const float* k,
                                       const float* v, int n_positions, int chunk_positions,
                                       int n_heads, int n_kv_heads, int head_dim) {
    // BEGIN SOLUTION step09 split_attention_kernel
    __shared__ float queries[kMaxGroup][kMaxHeadDim];     // this KV head's group, scaled
    __shared__ float weights[kMaxGroup][kPassPositions];  // scores, then exp(score - max)
    __shared__ float running_max[kMaxGroup], running_sum[kMaxGroup], rescale[kMaxGroup];
    __shared__ float warp_values[kDecodeWarps][kMaxGroup][kMaxHeadDim];
    const int chunk = blockIdx.x, kv_head = blockIdx.y;
    const int group = n_heads / n_kv_heads, first_head = kv_head * group;
    const int kv_dim = n_kv_heads * head_dim;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float scale = 1.0f / sqrtf(float(head_dim));
    for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x)
        queries[i / head_dim][i % head_dim] = q[first_head * head_dim + i] * scale;
    if (threadIdx.x < group) {
        running_max[threadIdx.x] = -INFINITY;
        running_sum[threadIdx.x] = 0.0f;
    }
    const int chunk_end = min(n_positions, (chunk + 1) * chunk_positions);
    float value_sum[kMaxGroup][kSlotsPerLane] = {};  // this warp's share, lane's dimensions

    for (int pass = chunk * chunk_positions; pass < chunk_end; pass += kPassPositions) {
        __syncthreads();  // the queries are stored; the last pass's weights are used
        // The warp's 8 key rows and 8 value rows, all loaded before the first is used (the
        // loops are unrolled): 16 loads in flight per lane instead of one at a time.
        float key[kPositionsPerWarp][kSlotsPerLane], value[kPositionsPerWarp][kSlotsPerLane];
#pragma unroll
        for (int p = 0; p < kPositionsPerWarp; p++) {
            const int position = pass + warp + p * kDecodeWarps;
#pragma unroll
            for (int s = 0; s < kSlotsPerLane; s++) {
                const int d = lane + s * kWarpSize;
                const bool inside = position < chunk_end && d < head_dim;
                const int64_t at = int64_t(position) * kv_dim + kv_head * head_dim + d;
                key[p][s] = inside ? k[at] : 0.0f;
                value[p][s] = inside ? v[at] : 0.0f;
            }
        }
#pragma unroll
        for (int p = 0; p < kPositionsPerWarp; p++) {
            const int slot = warp + p * kDecodeWarps;  // the position's place in the pass
            for (int g = 0; g < group; g++) {
                float partial = 0.0f;
#pragma unroll
                for (int s = 0; s < kSlotsPerLane; s++)
                    if (lane + s * kWarpSize < head_dim)
                        partial += queries[g][lane + s * kWarpSize] * key[p][s];
                const float score = warp_sum(partial);
                if (lane == 0) weights[g][slot] = pass + slot < chunk_end ? score : -INFINITY;
            }
        }
        __syncthreads();
        // The online softmax, one warp per query head: lane j holds position pass + j. The
        // pass holds at least one position, so the new maximum is finite.
        for (int g = warp; g < group; g += kDecodeWarps) {
            const float score = weights[g][lane], old_max = running_max[g];
            const float new_max = fmaxf(old_max, warp_max(score));
            const float weight = expf(score - new_max);  // 0 for the masked slots
            const float weight_sum = warp_sum(weight);
            weights[g][lane] = weight;
            __syncwarp();  // every lane has read running_max[g] before lane 0 replaces it
            if (lane == 0) {
                rescale[g] = expf(old_max - new_max);  // 0 in the first pass
                running_sum[g] = running_sum[g] * rescale[g] + weight_sum;
                running_max[g] = new_max;
            }
        }
        __syncthreads();
        // The weighted values (a masked slot's weight is 0, its value row 0).
#pragma unroll
        for (int g = 0; g < kMaxGroup; g++)
            if (g < group) {
#pragma unroll
                for (int s = 0; s < kSlotsPerLane; s++) value_sum[g][s] *= rescale[g];
#pragma unroll
                for (int p = 0; p < kPositionsPerWarp; p++) {
                    const float weight = weights[g][warp + p * kDecodeWarps];
#pragma unroll
                    for (int s = 0; s < kSlotsPerLane; s++) value_sum[g][s] += weight * value[p][s];
                }
            }
    }

    // The four warps' sums, added up: the chunk's result.
#pragma unroll
    for (int g = 0; g < kMaxGroup; g++)
#pragma unroll
        for (int s = 0; s < kSlotsPerLane; s++)
            if (g < group && lane + s * kWarpSize < head_dim)
                warp_values[warp][g][lane + s * kWarpSize] = value_sum[g][s];
    __syncthreads();
    for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) {
        const int g = i / head_dim, d = i % head_dim;
        float total = 0.0f;
        for (int w = 0; w < kDecodeWarps; w++) total += warp_values[w][g][d];
        partials.values[(int64_t(chunk) * n_heads + first_head + g) * head_dim + d] = total;
        if (d == 0) {
            partials.max[chunk * n_heads + first_head + g] = running_max[g];
            partials.sum[chunk * n_heads + first_head + g] = running_sum[g];
        }
    }
    // END SOLUTION
}

// One block per query head. Its 4 warps take every 4th chunk, lanes the head's dimensions,
// so the chunks' rows are read coalesced and 4 at a time; then the warps' sums are added.
__global__ void merge_chunks_kernel(float* out, ChunkPartials partials, int n_chunks, int n_heads,
                                    int head_dim) {
    // BEGIN SOLUTION step09 merge_chunks_kernel
    __shared__ float warp_maxima[kDecodeWarps];
    __shared__ float warp_sums[kDecodeWarps];
    __shared__ float warp_values[kDecodeWarps][kMaxHeadDim];
    const int head = blockIdx.x;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float max = -INFINITY;
    for (int c = threadIdx.x; c < n_chunks; c += blockDim.x)
        max = fmaxf(max, partials.max[c * n_heads + head]);
    max = warp_max(max);
    if (lane == 0) warp_maxima[warp] = max;
    __syncthreads();
    for (int i = 0; i < kDecodeWarps; i++) max = fmaxf(max, warp_maxima[i]);

    float sum = 0.0f, weighted[kSlotsPerLane] = {};
#pragma unroll 4
    for (int c = warp; c < n_chunks; c += kDecodeWarps) {
        const float rescale = expf(partials.max[c * n_heads + head] - max);
        sum += partials.sum[c * n_heads + head] * rescale;
        const float* values = partials.values + (int64_t(c) * n_heads + head) * head_dim;
#pragma unroll
        for (int s = 0; s < kSlotsPerLane; s++)
            if (lane + s * kWarpSize < head_dim)
                weighted[s] += values[lane + s * kWarpSize] * rescale;
    }
    if (lane == 0) warp_sums[warp] = sum;
#pragma unroll
    for (int s = 0; s < kSlotsPerLane; s++)
        if (lane + s * kWarpSize < head_dim) warp_values[warp][lane + s * kWarpSize] = weighted[s];
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < kDecodeWarps; i++) total += warp_sums[i];
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float value = 0.0f;
        for (int i = 0; i < kDecodeWarps; i++) value += warp_values[i][d];
        out[head * head_dim + d] = value / total;
    }
    // END SOLUTION
}

// ---- attention of a prompt: one block per (tile of 16 queries, query head) ----
//
// With many new tokens the same keys serve many queries, so a block takes 16 queries of one
// head and walks the cached keys and values in tiles of 32 rows, copied to shared memory once
// for all 16. Each warp owns two queries: lane j scores key j of the tile, the warp keeps a
// running max and sum per query (the online softmax of the decode kernel, one tile at a time)
// and the lanes hold the query's output, lane d owning dimensions d, d + 32, ... No score
// matrix is ever stored: a tile's scores live in registers until its values are added.

constexpr int kPrefillWarps = 8;
constexpr int kQueriesPerWarp = 2;
constexpr int kQueryTile = kPrefillWarps * kQueriesPerWarp;  // 16
constexpr int kKeyTile = kWarpSize;                          // 32: one key per lane

__global__ void prefill_attention_kernel(float* out, const float* q, const float* k, const float* v,
                                         int n_tokens, int first_position, int n_heads,
                                         int n_kv_heads, int head_dim) {
    __shared__ float queries[kQueryTile][kMaxHeadDim];
    __shared__ float keys[kKeyTile][kMaxHeadDim + 1];  // +1: lanes read a column, not a row
    __shared__ float values[kKeyTile][kMaxHeadDim];
    const int first_query = blockIdx.x * kQueryTile, head = blockIdx.y;
    const int kv_head = head / (n_heads / n_kv_heads);
    const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float scale = 1.0f / sqrtf(float(head_dim));
    for (int i = threadIdx.x; i < kQueryTile * head_dim; i += blockDim.x) {
        const int row = i / head_dim, d = i % head_dim, t = first_query + row;
        queries[row][d] = t < n_tokens ? q[int64_t(t) * q_dim + head * head_dim + d] * scale : 0;
    }

    float max[kQueriesPerWarp], sum[kQueriesPerWarp], acc[kQueriesPerWarp][kSlotsPerLane];
    for (int r = 0; r < kQueriesPerWarp; r++) {
        max[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int s = 0; s < kSlotsPerLane; s++) acc[r][s] = 0.0f;
    }
    // Queries past n_tokens are padding: they compute like the others and are never written.
    const int last_query = min(first_query + kQueryTile, n_tokens) - 1;
    const int n_keys = first_position + last_query + 1;  // what the tile's last query sees
    for (int first_key = 0; first_key < n_keys; first_key += kKeyTile) {
        __syncthreads();  // the previous tile is no longer read (and the queries are stored)
        for (int i = threadIdx.x; i < kKeyTile * head_dim; i += blockDim.x) {
            const int row = i / head_dim, d = i % head_dim, position = first_key + row;
            const int64_t at = int64_t(position) * kv_dim + kv_head * head_dim + d;
            keys[row][d] = position < n_keys ? k[at] : 0.0f;
            values[row][d] = position < n_keys ? v[at] : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < kQueriesPerWarp; r++) {
            const int row = warp * kQueriesPerWarp + r;
            const int query_position = first_position + first_query + row;
            const int position = first_key + lane;
            float score = 0.0f;
            for (int d = 0; d < head_dim; d++) score += queries[row][d] * keys[lane][d];
            if (position > query_position) score = -INFINITY;  // the causal mask
            // The first tile holds position 0, which every query sees: max is finite from
            // there on, so no exp(-inf - -inf) ever happens.
            const float new_max = fmaxf(max[r], warp_max(score));
            const float rescale = expf(max[r] - new_max);
            const float weight = expf(score - new_max);
            sum[r] = sum[r] * rescale + warp_sum(weight);
            max[r] = new_max;
            for (int s = 0; s < kSlotsPerLane; s++) acc[r][s] *= rescale;
            for (int j = 0; j < kKeyTile; j++) {
                const float weight_j = __shfl_sync(kFullWarp, weight, j);
                for (int s = 0; s < kSlotsPerLane; s++) {
                    const int d = lane + s * kWarpSize;
                    if (d < head_dim) acc[r][s] += weight_j * values[j][d];
                }
            }
        }
    }
    for (int r = 0; r < kQueriesPerWarp; r++) {
        const int t = first_query + warp * kQueriesPerWarp + r;
        if (t >= n_tokens) continue;
        for (int s = 0; s < kSlotsPerLane; s++) {
            const int d = lane + s * kWarpSize;
            if (d < head_dim) out[int64_t(t) * q_dim + head * head_dim + d] = acc[r][s] / sum[r];
        }
    }
}

static int multiprocessor_count() {
    static const int count = [] {
        int n = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0));
        return n;
    }();
    return count;
}

// The chunks' partial results, in device memory kept between calls (a cudaMalloc per call
// would cost more than the kernels). There are at most ~2 chunks per multiprocessor, so it
// stays small at any context length. (A CUDA graph cannot allocate while it replays: step 10
// sizes it once, with the KV cache.)
static ChunkPartials chunk_partials(int n_chunks, int n_heads, int head_dim) {
    static DeviceBuffer<float> scratch;
    const size_t stats = size_t(n_chunks) * n_heads;
    scratch.resize(stats * (head_dim + 2));
    float* base = scratch.data();
    return ChunkPartials{base, base + stats, base + 2 * stats};
}

void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim) {
    if (n_tokens == 0) return;
    if (head_dim > kMaxHeadDim)
        fail("gpu::attention handles heads of up to %d values, not %d", kMaxHeadDim, head_dim);
    if (n_heads / n_kv_heads > kMaxGroup)
        fail("gpu::attention handles up to %d query heads per key/value head, not %d", kMaxGroup,
             n_heads / n_kv_heads);
    if (n_tokens == 1) {
        // About two blocks per multiprocessor: as many chunks as that takes for all KV heads,
        // each a whole number of 32-position passes.
        const int n_positions = first_position + 1;
        const int wanted_chunks = std::max(1, 2 * multiprocessor_count() / n_kv_heads);
        const int n_passes = (n_positions + kPassPositions - 1) / kPassPositions;
        const int passes_per_chunk = (n_passes + wanted_chunks - 1) / wanted_chunks;
        const int chunk_positions = passes_per_chunk * kPassPositions;
        const int n_chunks = (n_positions + chunk_positions - 1) / chunk_positions;
        const ChunkPartials partials = chunk_partials(n_chunks, n_heads, head_dim);
        split_attention_kernel<<<dim3(n_chunks, n_kv_heads), kDecodeWarps * kWarpSize>>>(
            partials, q, k, v, n_positions, chunk_positions, n_heads, n_kv_heads, head_dim);
        check_launch("split_attention_kernel");
        merge_chunks_kernel<<<n_heads, kDecodeWarps * kWarpSize>>>(out, partials, n_chunks, n_heads,
                                                                   head_dim);
        check_launch("merge_chunks_kernel");
    } else {
        const dim3 grid((n_tokens + kQueryTile - 1) / kQueryTile, n_heads);
        prefill_attention_kernel<<<grid, kPrefillWarps * kWarpSize>>>(
            out, q, k, v, n_tokens, first_position, n_heads, n_kv_heads, head_dim);
        check_launch("prefill_attention_kernel");
    }
}

// ---- swiglu and residual_add: one thread per element (as in step 6) ----

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

// ---- argmax: a two-stage reduction ----
//
// Step 6 had all n threads race for one 64-bit slot with atomicMax: 151936 atomic operations
// on one address, served one after another. Here each of kArgmaxBlocks blocks finds the best
// of its share (each thread over every blocks * 256th value, then shuffles within warps, then
// the warps' winners in shared memory), and one more block picks the best of those.
// "Best" is argmax()'s: the largest value, the first one on a tie. argmax() starts at x[0]
// and moves only to a strictly larger value, so a NaN is never chosen, except at x[0], where
// nothing is larger than it: the last stage checks that case.

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxBlocks = 128;

struct Candidate {
    float value;
    int index;
};

// The better of two candidates: the larger value, on a tie the smaller index; never a NaN.
__device__ Candidate better(Candidate a, Candidate b) {
    if (isnan(b.value)) return a;
    if (isnan(a.value)) return b;
    return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

__device__ Candidate warp_best(Candidate c) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const Candidate other{__shfl_xor_sync(kFullWarp, c.value, offset),
                              __shfl_xor_sync(kFullWarp, c.index, offset)};
        c = better(c, other);
    }
    return c;
}

// The best of `n` candidates, or of x[0..n) when `candidates` is null, for the block; thread 0
// gets it. Threads start from (-inf, n): any value or index beats it.
__device__ Candidate block_best(const float* x, const Candidate* candidates, int n, int first,
                                int stride) {
    __shared__ Candidate warp_winners[kArgmaxThreads / kWarpSize];
    Candidate best{-INFINITY, n};
    for (int i = first; i < n; i += stride)
        best = better(best, candidates ? candidates[i] : Candidate{x[i], i});
    best = warp_best(best);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    if (lane == 0) warp_winners[warp] = best;
    __syncthreads();
    best = lane < kArgmaxThreads / kWarpSize ? warp_winners[lane] : Candidate{-INFINITY, n};
    return warp_best(best);
}

__global__ void argmax_blocks_kernel(Candidate* winners, const float* x, int n) {
    const Candidate best =
        block_best(x, nullptr, n, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    if (threadIdx.x == 0) winners[blockIdx.x] = best;
}

__global__ void argmax_final_kernel(int* result, const Candidate* winners, const float* x, int n) {
    const Candidate best = block_best(nullptr, winners, kArgmaxBlocks, threadIdx.x, blockDim.x);
    // No candidate below n means every value was NaN or the winner was not found: argmax()
    // then returns 0, as it does for a NaN at x[0].
    if (threadIdx.x == 0) *result = isnan(x[0]) || best.index >= n ? 0 : best.index;
}

int argmax(const float* x, int n) {
    if (n <= 0) fail("gpu::argmax of %d values", n);
    // Kept between calls, like the attention's partial results.
    static DeviceBuffer<Candidate> winners(kArgmaxBlocks);
    static DeviceBuffer<int> result(1);
    argmax_blocks_kernel<<<kArgmaxBlocks, kArgmaxThreads>>>(winners.data(), x, n);
    check_launch("argmax_blocks_kernel");
    argmax_final_kernel<<<1, kArgmaxThreads>>>(result.data(), winners.data(), x, n);
    check_launch("argmax_final_kernel");
    return result.download()[0];
}

}  // namespace gpu
