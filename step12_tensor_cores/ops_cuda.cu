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
// Launches are asynchronous and checked as in step 6. Weights are F32, F16 or BF16, or (step 11)
// blocks of Q8_0, Q5_0, Q4_K or Q6_K, read as quant_blocks_cuda.cuh describes.
#include "ops_cuda.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "cuda_device.h"
#include "device_buffer.h"
#include "gemm_tensor_cores.h"
#include "ggml_types.h"
#include "quant_blocks_cuda.cuh"
#include "weight_pieces.cuh"

namespace gpu {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// 256 threads (8 warps) per block for the element-wise kernels: a common default.
constexpr int kBlockSize = 256;

static unsigned blocks_for(int64_t n_threads) {
    return unsigned((n_threads + kBlockSize - 1) / kBlockSize);
}

__device__ int64_t thread_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

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

// Step 11: a warp's 32 values, value i in lane i, as one BlockQ8: quantize_row_q8's arithmetic
// (quant_dot.cpp), d = max |h| / 127 and q = h / d rounded to nearest even, and their sum.
__device__ void quantize_in_warp(float h, BlockQ8& out) {
    const int lane = threadIdx.x % kWarpSize;
    const bool finite = __all_sync(kFullWarp, isfinite(h));
    const float d = finite ? warp_max(fabsf(h)) / 127.0f : NAN;
    const float q = finite && d != 0.0f ? fminf(fmaxf(rintf(h / d), -127.0f), 127.0f) : 0.0f;
    out.q[lane] = int8_t(q);
    int sum = int(q);
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(kFullWarp, sum, offset);
    if (lane == 0) out.d = d, out.sum = sum;
}

// ---- embedding: one thread per output element out[t][i] (as in step 6) ----

template <typename Weight>
__global__ void embedding_kernel(float* out, const Weight* table, const int32_t* ids, int n_tokens,
                                 int dim) {
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
        embedding_kernel<<<blocks, kBlockSize, 0, stream>>>(out, static_cast<const Weight*>(table),
                                                            ids, n_tokens, dim);
    });
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
// Step 10: the pieces a lane loads before it uses the first. An unrolled loop does not do
// that for a row shorter than the unrolling: the GPU issues instructions in order, so each
// iteration's multiply-adds waited for its own load before the next load was asked for.
// Measured (docs/en/step10.md, section 6): 18% faster decoding at 0.5B, whose rows are 3.5
// loads a lane; 11% slower at 1.5B, where the batches' registers (twice as many) halve the
// blocks a multiprocessor holds. Choosing the batch by row length is the next change to make.
constexpr int kLoadBatch = 8;

// Step 11: a block type's pieces hold more registers than a 16-byte load (its block's scales
// come with it), so fewer of them are loaded ahead. Measured (docs/bench/h200-step11.md): 8
// ahead in matvec_kernel decoded 2 to 8% slower, 8 in the two-row kernels 5 to 15% slower.
constexpr int kBlockBatch = 4;
template <typename Weight>
constexpr int kLoadBatchOf = kBlockWeights<Weight> == 1 ? kLoadBatch : kBlockBatch;

// The dot product of piece p of a row with the floats of x it multiplies (x + p * kPieceWeights).
template <typename Weight, typename Piece>
__device__ float dot_piece(const Piece& piece, int p, const float* x, const Weight* row) {
    constexpr int kWeights = kPieceWeights<Weight>;
    float w[kWeights];
    unpack(piece, p, w, row);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kWeights; j += 4) {
        const float4 xs = __ldg(reinterpret_cast<const float4*>(x + j));
        sum += w[j] * xs.x + w[j + 1] * xs.y + w[j + 2] * xs.z + w[j + 3] * xs.w;
    }
    return sum;
}

// Step 11: piece p of a block row times the 8-bit activations beneath it (quant_blocks_cuda.cuh).
// The plain types never take this path; their overload exists so that the kernels compile.
template <typename Weight, typename Piece>
__device__ float dot_piece_q8(const Piece& piece, int p, const BlockQ8* x, const Weight*) {
    if constexpr (kBlockWeights < Weight >> 1) return dot_q8(piece, p, activation_piece(x, p));
    else return 0.0f;
}

// warps_per_row is 1 (4 rows a block) or kMatvecWarps (1 row a block). With `accumulate` the
// result is added to out (step 10's residual add, fused into the product).
// Step 11: with x_q8 (block types only) the row is multiplied with x's 8-bit blocks, not x.
template <typename Weight>
__global__ void matvec_kernel(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                              int warps_per_row, bool vectorized, bool accumulate,
                              const BlockQ8* x_q8) {
    // BEGIN SOLUTION step09 matvec_kernel
    __shared__ float partial_sums[kMatvecWarps];
    constexpr int kPerLoad = kPieceWeights<Weight>, kBatch = kLoadBatchOf<Weight>;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int rows_per_block = kMatvecWarps / warps_per_row;
    const int64_t row = int64_t(blockIdx.x) * rows_per_block + warp / warps_per_row;
    const int part = warp % warps_per_row;  // which share of the row this warp reads
    float sum = 0.0f;
    if (row < out_dim) {
        const Weight* w_row = row_start(w, row, in_dim);
        const int first_lane = part * kWarpSize, stride = warps_per_row * kWarpSize;
        if (vectorized) {  // the row is read in pieces (pieces_fit)
            // kBatch pieces a lane are loaded before the first is used (step 10): a row of up
            // to kBatch * 32 pieces is then one wait for memory, not one a piece.
            const int n_pieces = in_dim / kPerLoad;
            for (int first = first_lane + lane; first < n_pieces; first += kBatch * stride) {
                decltype(load_piece(w_row, 0)) batch[kBatch];
#pragma unroll
                for (int j = 0; j < kBatch; j++)
                    if (first + j * stride < n_pieces)
                        batch[j] = load_piece(w_row, first + j * stride);
#pragma unroll
                for (int j = 0; j < kBatch; j++) {
                    const int p = first + j * stride;
                    if (p >= n_pieces) continue;
                    sum += x_q8 ? dot_piece_q8(batch[j], p, x_q8, w_row)
                                : dot_piece(batch[j], p, x + p * kPerLoad, w_row);
                }
            }
        } else {
            for (int i = first_lane + lane; i < in_dim; i += stride)
                sum += weight_at(w_row, i) * x[i];
        }
    }
    sum = warp_sum(sum);
    if (warps_per_row == 1) {
        if (row < out_dim && lane == 0) out[row] = accumulate ? out[row] + sum : sum;
        return;
    }
    if (lane == 0) partial_sums[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0 && row < out_dim) {
        float total = 0.0f;
        for (int i = 0; i < kMatvecWarps; i++) total += partial_sums[i];
        out[row] = accumulate ? out[row] + total : total;
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
// Step 12: a prompt's products of F16, BF16 and block matrices run on the tensor cores
// (gemm_tensor_cores.cu); this kernel keeps those of F32 matrices, the checks' exact path.

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
    const int64_t step = int64_t(kRowsPerPass) * in_dim;
#pragma unroll
    for (int j = 0; j < kPerThread; j++) {
        const int w_row = first_output + row + j * kRowsPerPass;
        xs[j] = in_k && first_token + row + j * kRowsPerPass < n_tokens ? x_column[j * step] : 0.0f;
        // Step 11: a block type's weight is dequantized here, on its way into shared memory.
        ws[j] = in_k && w_row < out_dim ? weight_at(row_start(w, w_row, in_dim), column) : 0.0f;
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
                          int out_dim, bool accumulate = false, Stream stream = nullptr,
                          const BlockQ8* x_q8 = nullptr) {
    if (n_tokens == 1) {
        const bool vectorized = pieces_fit<Weight>(in_dim, w, x);
        const int warps_per_row =
            in_dim / kPieceWeights<Weight> >= kPiecesToSplitRow ? kMatvecWarps : 1;
        const int rows_per_block = kMatvecWarps / warps_per_row;
        const unsigned blocks = unsigned((int64_t(out_dim) + rows_per_block - 1) / rows_per_block);
        matvec_kernel<<<blocks, kMatvecWarps * kWarpSize, 0, stream>>>(
            out, x, w, in_dim, out_dim, warps_per_row, vectorized || x_q8, accumulate, x_q8);
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
    if (n_tokens > 1 && tensor_cores_take(w_type) && gpu_has_tensor_core_mma())  // step 12
        return tensor_core_matmul(out, x, w, w_type, n_tokens, in_dim, out_dim);
    if ((n_tokens + kTileTokens - 1) / kTileTokens > 65535)  // the grid's y dimension
        fail("gpu::matmul takes up to %d tokens at once, not %d", 65535 * kTileTokens, n_tokens);
    with_weight_type(w_type, "matmul", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        launch_matmul(out, x, static_cast<const Weight*>(w), n_tokens, in_dim, out_dim);
    });
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

// How the positions are cut: chunks of whole passes, as few passes a chunk as keeps the
// number of chunks at most max_chunks. The host and the kernels work it out alike (step 10's
// graph knows the number of positions only on the device).
struct ChunkLayout {
    int chunk_positions;
    int n_chunks;
};

__host__ __device__ ChunkLayout chunk_layout(int n_positions, int max_chunks) {
    const int n_passes = (n_positions + kPassPositions - 1) / kPassPositions;
    const int passes_per_chunk = (n_passes + max_chunks - 1) / max_chunks;
    const int chunk_positions = passes_per_chunk * kPassPositions;
    return ChunkLayout{chunk_positions, (n_positions + chunk_positions - 1) / chunk_positions};
}

// The chunks' partial results, for each (chunk, query head).
struct ChunkPartials {
    float* max;     // (n_chunks, n_heads)
    float* sum;     // (n_chunks, n_heads)
    float* values;  // (n_chunks, n_heads, head_dim)
};

// With `position` (step 10), the query is at *position and n_positions is *position + 1, and a
// grid sized for the longest context has blocks with no chunk to do.
__global__ void split_attention_kernel(ChunkPartials partials, const float* q, const float* k,
                                       const float* v, int n_positions, const int32_t* position,
                                       int max_chunks, int n_heads, int n_kv_heads, int head_dim) {
    if (position) n_positions = *position + 1;
    const ChunkLayout layout = chunk_layout(n_positions, max_chunks);
    if (int(blockIdx.x) >= layout.n_chunks) return;
    const int chunk_positions = layout.chunk_positions;
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
    for (int i = threadIdx.x; i < kMaxGroup * kMaxHeadDim; i += blockDim.x) {
        const int g = i / kMaxHeadDim, d = i % kMaxHeadDim;
        queries[g][d] = g < group && d < head_dim ? q[(first_head + g) * head_dim + d] * scale : 0;
    }
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
            // The scores of every head of the group, reduced together (step 10): each step of
            // the shuffle tree moves all of them, so the group's sums wait for the tree once,
            // not once a head. Rows past the group are zeros, computed and never kept. (No
            // faster at 512 positions, measured: there a pass's loads and barriers are the cost.)
            float partial[kMaxGroup];
#pragma unroll
            for (int g = 0; g < kMaxGroup; g++) {
                partial[g] = 0.0f;
#pragma unroll
                for (int s = 0; s < kSlotsPerLane; s++)
                    if (lane + s * kWarpSize < head_dim)
                        partial[g] += queries[g][lane + s * kWarpSize] * key[p][s];
            }
            for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
#pragma unroll
                for (int g = 0; g < kMaxGroup; g++)
                    partial[g] += __shfl_xor_sync(kFullWarp, partial[g], offset);
            if (lane == 0)
                for (int g = 0; g < group; g++)
                    weights[g][slot] = pass + slot < chunk_end ? partial[g] : -INFINITY;
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
// Step 11: with out_q8, the head's outputs are also written as 8-bit blocks, the input of a
// block-type Wo (warp w quantizes outputs 32w .. 32w + 31; head_dim must be a multiple of 32).
__global__ void merge_chunks_kernel(float* out, ChunkPartials partials, int n_positions,
                                    const int32_t* position, int max_chunks, int n_heads,
                                    int head_dim, BlockQ8* out_q8) {
    if (position) n_positions = *position + 1;
    const int n_chunks = chunk_layout(n_positions, max_chunks).n_chunks;
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
    if (out_q8 && threadIdx.x < head_dim) {  // whole warps: head_dim is a multiple of 32
        float value = 0.0f;
        for (int i = 0; i < kDecodeWarps; i++) value += warp_values[i][threadIdx.x];
        quantize_in_warp(value / total, out_q8[(head * head_dim + threadIdx.x) / kQ8BlockSize]);
    }
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

// The three arrays of ChunkPartials for n_chunks chunks, in one buffer of
// n_chunks * n_heads * (head_dim + 2) floats.
static ChunkPartials partials_in(float* scratch, int n_chunks, int n_heads) {
    const size_t stats = size_t(n_chunks) * n_heads;
    return ChunkPartials{scratch, scratch + stats, scratch + 2 * stats};
}

// The chunks' partial results, in device memory kept between calls (a cudaMalloc per call
// would cost more than the kernels). There are at most ~2 chunks per multiprocessor, so it
// stays small at any context length. (A CUDA graph cannot allocate while it replays:
// decode_attention() takes scratch sized once, with the KV cache.)
static ChunkPartials chunk_partials(int n_chunks, int n_heads, int head_dim) {
    static DeviceBuffer<float> scratch;
    scratch.resize(size_t(n_chunks) * n_heads * (head_dim + 2));
    return partials_in(scratch.data(), n_chunks, n_heads);
}

// About two blocks per multiprocessor: as many chunks as that takes for all KV heads.
static int max_decode_chunks(int n_kv_heads) {
    return std::max(1, 2 * multiprocessor_count() / n_kv_heads);
}

static void check_attention_shape(int n_heads, int n_kv_heads, int head_dim) {
    if (head_dim > kMaxHeadDim)
        fail("gpu::attention handles heads of up to %d values, not %d", kMaxHeadDim, head_dim);
    if (n_heads / n_kv_heads > kMaxGroup)
        fail("gpu::attention handles up to %d query heads per key/value head, not %d", kMaxGroup,
             n_heads / n_kv_heads);
}

void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim) {
    if (n_tokens == 0) return;
    check_attention_shape(n_heads, n_kv_heads, head_dim);
    if (n_tokens == 1) {
        const int n_positions = first_position + 1;
        const int max_chunks = max_decode_chunks(n_kv_heads);
        const int n_chunks = chunk_layout(n_positions, max_chunks).n_chunks;
        const ChunkPartials partials = chunk_partials(n_chunks, n_heads, head_dim);
        split_attention_kernel<<<dim3(n_chunks, n_kv_heads), kDecodeWarps * kWarpSize>>>(
            partials, q, k, v, n_positions, nullptr, max_chunks, n_heads, n_kv_heads, head_dim);
        check_launch("split_attention_kernel");
        merge_chunks_kernel<<<n_heads, kDecodeWarps * kWarpSize>>>(
            out, partials, n_positions, nullptr, max_chunks, n_heads, head_dim, nullptr);
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

// ---- Step 10: the fused kernels of one token's pass ----
//
// The 19 kernels a layer of step 9 become 6:
//   qkv_rope_cache_kernel   rmsnorm + 3 matvecs + 3 bias adds + 2 ropes (and the cache write)
//   split + merge           attention, as step 9's, the length read from device memory
//   matvec_kernel           attention output projection + residual add
//   gate_up_swiglu_kernel   rmsnorm + 2 matvecs + swiglu
//   matvec_kernel           down projection + residual add
// What the fusion saves is launches and the round trips of small vectors through memory, not
// weight bytes: every weight is still read exactly once.
//
// RMSNorm folds into the product that follows it because the norm is a per-row scale:
// W (x * g / rms) = (W (x * g)) / rms, g being the norm's weights. Each block multiplies
// W with x * g at once (x comes from L1, as in step 9) and works out 1/rms itself, a block sum
// of x's squares: x is a few KB, read by every block from the L2 cache, and the weight loads
// do not wait for it.

// Sum of w[j] * x[j] * g[j] over the weights of piece p.
template <typename Weight, typename Piece>
__device__ float dot_piece_normed(const Piece& piece, int p, const float* x, const float* g,
                                  const Weight* row) {
    constexpr int kWeights = kPieceWeights<Weight>;
    float w[kWeights];
    unpack(piece, p, w, row);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kWeights; j += 4) {
        const float4 xs = __ldg(reinterpret_cast<const float4*>(x + j));
        const float4 gs = __ldg(reinterpret_cast<const float4*>(g + j));
        sum += w[j] * (xs.x * gs.x) + w[j + 1] * (xs.y * gs.y) + w[j + 2] * (xs.z * gs.z) +
               w[j + 3] * (xs.w * gs.w);
    }
    return sum;
}

// The warp's dot products of two rows of W with x * g, in every lane: the rows' loads are
// interleaved, so each lane has both rows' pieces in flight at once.
// Step 11: for a block type, x_q8 holds rmsnorm(x) already rounded to 8-bit blocks (the
// CPU's, quantize_q8 below), and the rows are multiplied with it: the sums need no 1 / rms.
template <typename Weight>
__device__ float2 normed_dot_2rows(const Weight* row_a, const Weight* row_b, const float* x,
                                   const float* g, int dim, bool vectorized, const BlockQ8* x_q8) {
    constexpr int kPerLoad = kPieceWeights<Weight>, kBatch = kLoadBatchOf<Weight>;
    const int lane = threadIdx.x % kWarpSize;
    float sum_a = 0.0f, sum_b = 0.0f;
    if (vectorized) {
        const int n_pieces = dim / kPerLoad;
        for (int first = lane; first < n_pieces; first += kBatch * kWarpSize) {
            // both rows' loads, then the sums
            decltype(load_piece(row_a, 0)) batch_a[kBatch], batch_b[kBatch];
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p < n_pieces)
                    batch_a[j] = load_piece(row_a, p), batch_b[j] = load_piece(row_b, p);
            }
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p >= n_pieces) continue;
                if constexpr (kBlockWeights < Weight >> 1) {
                    sum_a += dot_piece_q8(batch_a[j], p, x_q8, row_a);
                    sum_b += dot_piece_q8(batch_b[j], p, x_q8, row_b);
                } else {
                    sum_a +=
                        dot_piece_normed(batch_a[j], p, x + p * kPerLoad, g + p * kPerLoad, row_a);
                    sum_b +=
                        dot_piece_normed(batch_b[j], p, x + p * kPerLoad, g + p * kPerLoad, row_b);
                }
            }
        }
    } else {
        for (int i = lane; i < dim; i += kWarpSize) {
            const float xg = x[i] * g[i];
            sum_a += weight_at(row_a, i) * xg;
            sum_b += weight_at(row_b, i) * xg;
        }
    }
    return make_float2(warp_sum(sum_a), warp_sum(sum_b));
}

// 1 / rms(x) for the block, in every thread; every thread of the block must call it. A block
// type's products are taken with the normalized x (x_q8), and need no scale: 1.
__device__ float block_inv_rms(const float* x, int dim, float eps) {
    __shared__ float warp_sums[kMatvecWarps];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sum += x[i] * x[i];
    sum = warp_sum(sum);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < kMatvecWarps; w++) sum += warp_sums[w];
    return 1.0f / sqrtf(sum / dim + eps);
}

// ---- Step 11: quantize_q8, the activations of a block matrix's product as 8-bit blocks ----
//
// The CPU's quantize_row_q8 (quant_dot.cpp), with the CPU's rmsnorm first when there is a norm:
// the sum of squares in double, h = x * (1 / rms) * g in float, then per block of 32 d = max |h|
// / 127 and q = h / d rounded to nearest even. Each block recomputes the sum of squares (a few
// KB from L2) so that the blocks need not wait for one another; a warp quantizes a block of 32,
// lane i value i, the maximum and the sum two shuffle trees. The bits match the CPU's, so the
// integer sums of the two devices' dot products are the same numbers.

constexpr int kQuantizeWarps = 8;

__global__ void quantize_q8_kernel(BlockQ8* out, const float* x, const float* norm_weight,
                                   float eps, int n) {
    __shared__ double warp_sums[kQuantizeWarps];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float inv_rms = 1.0f;
    if (norm_weight) {  // every thread of the block takes this branch, or none
        double sum = 0.0;
        for (int i = threadIdx.x; i < n; i += blockDim.x) sum += double(x[i]) * x[i];
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
            sum += __shfl_xor_sync(kFullWarp, sum, offset);
        if (lane == 0) warp_sums[warp] = sum;
        __syncthreads();
        sum = 0.0;
        for (int w = 0; w < kQuantizeWarps; w++) sum += warp_sums[w];
        inv_rms = float(1.0 / sqrt(sum / n + eps));
    }
    const int b = blockIdx.x * kQuantizeWarps + warp;
    if (b >= n / kQ8BlockSize) return;
    const int i = b * kQ8BlockSize + lane;
    quantize_in_warp(norm_weight ? x[i] * inv_rms * norm_weight[i] : x[i], out[b]);
}

void quantize_q8(BlockQ8* out, const float* x, const float* norm_weight, float eps, int n,
                 Stream stream) {
    if (n % kQ8BlockSize != 0) fail("gpu::quantize_q8 of %d values: not whole blocks of 32", n);
    const int n_blocks = n / kQ8BlockSize;
    if (n_blocks == 0) return;
    quantize_q8_kernel<<<(n_blocks + kQuantizeWarps - 1) / kQuantizeWarps,
                         kQuantizeWarps * kWarpSize, 0, stream>>>(out, x, norm_weight, eps, n);
    check_launch("quantize_q8_kernel");
}

static bool is_block_type(uint32_t type) { return ggml_type_info(type).block_size > 1; }

// ---- qkv_rope_cache: rmsnorm, Q/K/V products, biases, RoPE and the cache write ----
//
// RoPE turns element i of a head together with element i + head_dim/2, so the warp that owns
// a pair of output rows can rotate them as soon as it has both sums. The pairs are numbered
// through Q's, then K's, then V's (which are not rotated, but are computed two rows a warp
// all the same). A launch covers pairs [first_pair, end_pair): all of them when the three
// matrices share a type, else one matrix a launch, each with its own Weight.

template <typename Weight>
__global__ void qkv_rope_cache_kernel(float* q, float* k_cache, float* v_cache, const float* x,
                                      const float* norm_weight, float eps, const Weight* wq,
                                      const Weight* wk, const Weight* wv, const float* q_bias,
                                      const float* k_bias, const float* v_bias, int d_model,
                                      HeadShape heads, float rope_base, const DecodeSlots* slots,
                                      int first_pair, int end_pair, bool vectorized,
                                      const BlockQ8* x_q8) {
    // BEGIN SOLUTION step10 qkv_rope_cache_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int head_dim = heads.head_dim, half = head_dim / 2;
    const int kv_dim = heads.n_kv_heads * head_dim;
    const int q_pairs = heads.n_heads * half, kv_pairs = heads.n_kv_heads * half;
    const int position = slots->position;
    int pair = first_pair + blockIdx.x * kMatvecWarps + warp;
    const bool active = pair < end_pair;
    // Which matrix the pair is in, and where its two values go.
    const Weight* w = wq;
    const float* bias = q_bias;
    float* out = q;
    bool rotate = true;
    if (pair >= q_pairs) {
        pair -= q_pairs;
        w = wk, bias = k_bias, out = k_cache + int64_t(position) * kv_dim;
        if (pair >= kv_pairs) {
            pair -= kv_pairs;
            w = wv, bias = v_bias, out = v_cache + int64_t(position) * kv_dim, rotate = false;
        }
    }
    const int i = pair % half;  // the pair's place in its head
    const int row_a = (pair / half) * head_dim + i, row_b = row_a + half;
    float2 sums = make_float2(0.0f, 0.0f);
    if (active)
        sums = normed_dot_2rows(row_start(w, row_a, d_model), row_start(w, row_b, d_model), x,
                                norm_weight, d_model, vectorized, x_q8);
    // every warp, active or not
    const float inv_rms = kBlockWeights<Weight> > 1 ? 1.0f : block_inv_rms(x, d_model, eps);
    if (!active || lane != 0) return;
    float a = sums.x * inv_rms + bias[row_a], b = sums.y * inv_rms + bias[row_b];
    if (rotate) {  // the angle as rope_kernel computes it, in double
        const double angle = double(position) * pow(double(rope_base), -2.0 * i / head_dim);
        const float c = float(cos(angle)), s = float(sin(angle));
        const float first = a, second = b;
        a = first * c - second * s;
        b = second * c + first * s;
    }
    out[row_a] = a;
    out[row_b] = b;
    // END SOLUTION
}

void qkv_rope_cache(float* q, float* k_cache, float* v_cache, const float* x,
                    const float* norm_weight, float eps, const QkvWeights& w, int d_model,
                    HeadShape heads, float rope_base, const DecodeSlots* slots, BlockQ8* x_q8,
                    Stream stream) {
    if (heads.head_dim % 2 != 0)
        fail("gpu::qkv_rope_cache needs an even head_dim, not %d", heads.head_dim);
    if (is_block_type(w.q_type) || is_block_type(w.k_type) || is_block_type(w.v_type))
        quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
    const int q_pairs = heads.n_heads * heads.head_dim / 2;
    const int kv_pairs = heads.n_kv_heads * heads.head_dim / 2;
    // Pairs [first, end) of the matrix of type `type` (or of all three).
    auto launch = [&](uint32_t type, int first, int end) {
        const unsigned blocks = unsigned((end - first + kMatvecWarps - 1) / kMatvecWarps);
        with_weight_type(type, "qkv_rope_cache", [&](auto tag) {
            using Weight = typename decltype(tag)::type;
            const bool vectorized = pieces_fit<Weight>(d_model, w.q, x, norm_weight) &&
                                    pieces_fit<Weight>(d_model, w.k, x, norm_weight) &&
                                    pieces_fit<Weight>(d_model, w.v, x, norm_weight);
            qkv_rope_cache_kernel<<<blocks, kMatvecWarps * kWarpSize, 0, stream>>>(
                q, k_cache, v_cache, x, norm_weight, eps, static_cast<const Weight*>(w.q),
                static_cast<const Weight*>(w.k), static_cast<const Weight*>(w.v), w.q_bias,
                w.k_bias, w.v_bias, d_model, heads, rope_base, slots, first, end, vectorized, x_q8);
        });
        check_launch("qkv_rope_cache_kernel");
    };
    if (w.q_type == w.k_type && w.q_type == w.v_type) {
        launch(w.q_type, 0, q_pairs + 2 * kv_pairs);
    } else if (w.q_type == w.k_type) {  // e.g. Q4_K_M files' Q6_K V in some layers (step 11)
        launch(w.q_type, 0, q_pairs + kv_pairs);
        launch(w.v_type, q_pairs + kv_pairs, q_pairs + 2 * kv_pairs);
    } else {  // e.g. the tiny model's F16 and BF16 matrices
        launch(w.q_type, 0, q_pairs);
        launch(w.k_type, q_pairs, q_pairs + kv_pairs);
        launch(w.v_type, q_pairs + kv_pairs, q_pairs + 2 * kv_pairs);
    }
}

// ---- decode_attention: step 9's split attention, its length a device value ----

// The grid is sized for the longest context: at most max_decode_chunks() chunks, and never
// more chunks than a full cache has passes.
static int decode_grid_chunks(int capacity, int n_kv_heads) {
    return std::min(max_decode_chunks(n_kv_heads),
                    (capacity + kPassPositions - 1) / kPassPositions);
}

int64_t decode_attention_scratch(int capacity, HeadShape heads) {
    return int64_t(decode_grid_chunks(capacity, heads.n_kv_heads)) * heads.n_heads *
           (heads.head_dim + 2);
}

void decode_attention(float* out, const float* q, const float* k_cache, const float* v_cache,
                      float* scratch, int capacity, HeadShape heads, const DecodeSlots* slots,
                      BlockQ8* out_q8, Stream stream) {
    check_attention_shape(heads.n_heads, heads.n_kv_heads, heads.head_dim);
    if (out_q8 && heads.head_dim % kQ8BlockSize != 0)
        fail("gpu::decode_attention writes 8-bit blocks of heads of a multiple of 32, not %d",
             heads.head_dim);
    const int grid_chunks = decode_grid_chunks(capacity, heads.n_kv_heads);
    const int max_chunks = max_decode_chunks(heads.n_kv_heads);
    const ChunkPartials partials = partials_in(scratch, grid_chunks, heads.n_heads);
    const int32_t* position = &slots->position;
    split_attention_kernel<<<dim3(grid_chunks, heads.n_kv_heads), kDecodeWarps * kWarpSize, 0,
                             stream>>>(partials, q, k_cache, v_cache, 0, position, max_chunks,
                                       heads.n_heads, heads.n_kv_heads, heads.head_dim);
    check_launch("split_attention_kernel");
    merge_chunks_kernel<<<heads.n_heads, kDecodeWarps * kWarpSize, 0, stream>>>(
        out, partials, 0, position, max_chunks, heads.n_heads, heads.head_dim, out_q8);
    check_launch("merge_chunks_kernel");
}

// ---- matvec_add: x += W in, step 9's matvec with the residual add in its epilogue ----

void matvec_add(float* x, const float* in, const void* w, uint32_t w_type, int in_dim, int out_dim,
                BlockQ8* in_q8, bool in_q8_written, Stream stream) {
    if (out_dim == 0) return;
    const bool blocks = is_block_type(w_type);
    with_weight_type(w_type, "matvec_add", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        if (blocks && !in_q8_written) quantize_q8(in_q8, in, nullptr, 0.0f, in_dim, stream);
        launch_matmul(x, in, static_cast<const Weight*>(w), 1, in_dim, out_dim, true, stream,
                      blocks ? in_q8 : nullptr);
    });
}

// ---- gate_up_swiglu: rmsnorm, the gate and up products, and swiglu ----

template <typename Weight>
__global__ void gate_up_swiglu_kernel(float* out, const float* x, const float* norm_weight,
                                      float eps, const Weight* w_gate, const Weight* w_up,
                                      int d_model, int d_ff, bool vectorized, const BlockQ8* x_q8) {
    // BEGIN SOLUTION step10 gate_up_swiglu_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp;
    float2 sums = make_float2(0.0f, 0.0f);
    if (row < d_ff)
        sums = normed_dot_2rows(row_start(w_gate, row, d_model), row_start(w_up, row, d_model), x,
                                norm_weight, d_model, vectorized, x_q8);
    const float inv_rms = kBlockWeights<Weight> > 1 ? 1.0f : block_inv_rms(x, d_model, eps);
    if (row >= d_ff || lane != 0) return;
    const float gate = sums.x * inv_rms, up = sums.y * inv_rms;
    out[row] = gate / (1.0f + expf(-gate)) * up;  // swiglu_kernel's formula
    // END SOLUTION
}

void gate_up_swiglu(float* out, const float* x, const float* norm_weight, float eps,
                    const void* w_gate, const void* w_up, uint32_t w_type, int d_model, int d_ff,
                    BlockQ8* x_q8, Stream stream) {
    if (d_ff == 0) return;
    const unsigned blocks = unsigned((d_ff + kMatvecWarps - 1) / kMatvecWarps);
    with_weight_type(w_type, "gate_up_swiglu", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = pieces_fit<Weight>(d_model, w_gate, x, norm_weight) &&
                                pieces_fit<Weight>(d_model, w_up, x, norm_weight);
        if (kBlockWeights < Weight >> 1) quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
        gate_up_swiglu_kernel<<<blocks, kMatvecWarps * kWarpSize, 0, stream>>>(
            out, x, norm_weight, eps, static_cast<const Weight*>(w_gate),
            static_cast<const Weight*>(w_up), d_model, d_ff, vectorized, x_q8);
    });
    check_launch("gate_up_swiglu_kernel");
}

// ---- lm_head_argmax: the final rmsnorm, the LM head and argmax ----
//
// The LM head is the largest matrix (151936 rows). Its blocks loop over rows (block b, warp w
// take rows 4b + w, then 4b + w + 4 * blocks, ...) so that there are only kLmHeadBlocks of
// them; each keeps the best logit it has seen, and one block of pick_next_token_kernel picks
// the best of those: argmax()'s two stages, the first one inside the product.

constexpr int kLmHeadBlocks = 1024;

template <typename Weight>
__global__ void lm_head_argmax_kernel(float* logits, Candidate* block_winners, const float* x,
                                      const float* norm_weight, float eps, const Weight* w,
                                      int d_model, int n_vocab, bool vectorized,
                                      const BlockQ8* x_q8) {
    __shared__ Candidate warp_winners[kMatvecWarps];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float inv_rms = kBlockWeights<Weight> > 1 ? 1.0f : block_inv_rms(x, d_model, eps);
    Candidate best{-INFINITY, n_vocab};
    // Two rows a warp at a time, as in the other fused products.
    const int64_t stride = int64_t(gridDim.x) * kMatvecWarps;
    for (int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp; row < n_vocab;
         row += 2 * stride) {
        const int64_t other = row + stride < n_vocab ? row + stride : row;
        const float2 sums =
            normed_dot_2rows(row_start(w, row, d_model), row_start(w, other, d_model), x,
                             norm_weight, d_model, vectorized, x_q8);
        const float logit = sums.x * inv_rms, other_logit = sums.y * inv_rms;
        if (lane == 0) {
            logits[row] = logit;
            logits[other] = other_logit;
        }
        best = better(best, Candidate{logit, int(row)});
        best = better(best, Candidate{other_logit, int(other)});
    }
    if (lane == 0) warp_winners[warp] = best;
    __syncthreads();
    if (threadIdx.x != 0) return;  // lane 0 of warp 0, which holds warp 0's winner
    for (int i = 1; i < kMatvecWarps; i++) best = better(best, warp_winners[i]);
    block_winners[blockIdx.x] = best;
}

// The best of the blocks' winners becomes the next step's token, at the next position.
__global__ void pick_next_token_kernel(DecodeSlots* slots, const Candidate* block_winners,
                                       int n_blocks, const float* logits, int n_vocab) {
    const Candidate best = block_best(nullptr, block_winners, n_blocks, threadIdx.x, blockDim.x);
    if (threadIdx.x != 0) return;
    slots->token = isnan(logits[0]) || best.index >= n_vocab ? 0 : best.index;  // as argmax()
    slots->position += 1;
}

int64_t lm_head_argmax_scratch() { return int64_t(kLmHeadBlocks) * sizeof(Candidate); }

void lm_head_argmax(float* logits, void* scratch, const float* x, const float* norm_weight,
                    float eps, const void* w, uint32_t w_type, int d_model, int n_vocab,
                    DecodeSlots* slots, BlockQ8* x_q8, Stream stream) {
    if (n_vocab <= 0) fail("gpu::lm_head_argmax of %d logits", n_vocab);
    // Every block gets at least one row, so every winner is a real row.
    const int n_blocks = std::min(kLmHeadBlocks, (n_vocab + kMatvecWarps - 1) / kMatvecWarps);
    Candidate* winners = static_cast<Candidate*>(scratch);
    with_weight_type(w_type, "lm_head_argmax", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = pieces_fit<Weight>(d_model, w, x, norm_weight);
        if (kBlockWeights < Weight >> 1) quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
        lm_head_argmax_kernel<<<n_blocks, kMatvecWarps * kWarpSize, 0, stream>>>(
            logits, winners, x, norm_weight, eps, static_cast<const Weight*>(w), d_model, n_vocab,
            vectorized, x_q8);
    });
    check_launch("lm_head_argmax_kernel");
    pick_next_token_kernel<<<1, kArgmaxThreads, 0, stream>>>(slots, winners, n_blocks, logits,
                                                             n_vocab);
    check_launch("pick_next_token_kernel");
}

}  // namespace gpu
