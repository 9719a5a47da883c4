// tiled_gemm.cu - matmul for several tokens: out = x W^T with x (n_tokens, in_dim), a 64 x 64
// tile of out per block. Its CPU twin is ops_cpu.cpp's matmul; matmul.cu chooses it. Written
// in step 9; last changed in step 12 (only F32 matrices where there are tensor cores).
//
// Read the naive way, every token re-reads all of W; 512 tokens read it 512 times. The tiled
// GEMM (general matrix multiply) gives each block a tile of 64 tokens x 64 outputs and walks
// in_dim in steps of kTileDepth: each step copies a 64 x 16 slice of x and one of W into
// shared memory (coalesced: neighbouring threads copy neighbouring k), and then every weight
// in shared memory is used by 64 tokens and every activation by 64 outputs. Each of the 128
// threads keeps a 4 x 8 block of the tile in registers (register blocking): per step k it
// reads 4 activations and 8 weights from shared memory and does 32 multiply-adds with them.
// The tiles are stored k-major (transposed) so those 4 and 8 values are consecutive floats;
// each row has 4 floats of padding, which spreads the transposing stores over the banks.
// While a step's slices are multiplied, the next step's are on their way into registers
// (prefetching): without it, the few blocks of a narrow matrix (ffn_down: 1536 outputs,
// 24 x 8 tiles at 512 tokens) spend most of their time waiting for each slice. A block
// matrix's weights are dequantized on their way into shared memory. The products of F16, BF16
// and block matrices run on the tensor cores (gemm_tensor_cores.cu) where the GPU has them;
// this kernel keeps those of F32 matrices, the checks' exact path.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "ops_cuda.h"
#include "weight_pieces.cuh"

namespace gpu {

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
        // A block type's weight is dequantized here, on its way into shared memory.
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

void tiled_gemm(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens,
                int in_dim, int out_dim) {
    if ((n_tokens + kTileTokens - 1) / kTileTokens > 65535)  // the grid's y dimension
        fail("gpu::matmul takes up to %d tokens at once, not %d", 65535 * kTileTokens, n_tokens);
    with_weight_type(w_type, "matmul", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const dim3 grid((out_dim + kTileOutputs - 1) / kTileOutputs,
                        (n_tokens + kTileTokens - 1) / kTileTokens);
        tiled_gemm_kernel<<<grid, kGemmThreads>>>(out, x, static_cast<const Weight*>(w), n_tokens,
                                                  in_dim, out_dim);
    });
    check_launch("tiled_gemm_kernel");
}

}  // namespace gpu
