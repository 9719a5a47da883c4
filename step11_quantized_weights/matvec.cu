// matvec.cu - matmul for one token: out = W x, a warp (or a few) per output row. Its CPU twin
// is ops_cpu.cpp's matmul with one token; matmul.cu chooses it, and matvec_add adds the
// product to out (the residual add, fused into the product).
// A block matrix's product can also take x rounded to 8 bits (x_q8), as the CPU's does.
// Written in step 9; last changed in step 11 (weights of any type, 8-bit activations).
//
// Decode multiplies each weight matrix by one vector, so it is a read of W and little else:
// 2 bytes per F16 weight for 2 floating-point operations. Its speed is the speed at which W
// comes from memory. The warp of row o reads the row front to back, lane k taking the 16-byte
// pieces k, k + 32, k + 64, ...: one warp load covers 512 consecutive bytes, and the loop is
// unrolled so that each lane has several loads in flight. The lanes' partial sums meet in a
// warp_sum.
//
// Two choices keep the loads in flight:
//   - x comes through the L1 cache, not through shared memory. Copying x into shared memory
//     first would make every warp of a block wait for the whole of x before it could ask for
//     its row of W. x is at most 75 KB, read by every warp of an SM from L1.
//   - A long row is split among the block's 4 warps (ffn_down: 8960 weights a row, 1536
//     rows). With one warp a row, its 1536 warps could not keep enough loads in flight; so
//     warp w takes every 4th group of 32 pieces (pieces 32w + lane, + 128, + 256, ...), and
//     the 4 partial sums meet in shared memory.
//
// A 16-byte load needs a 16-byte aligned address. cudaMalloc aligns the start of W, so every
// row is aligned when its length is a multiple of the weights per load (8 F16, 4 F32); models'
// rows are (multiples of 64). Other lengths take the one-element-per-lane loop, which is just
// as coalesced, with 8 times as many load instructions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "ops_cuda.h"
#include "reduce.cuh"
#include "weight_pieces.cuh"

namespace gpu {

constexpr int kWeightsToSplitRow = 8192;  // a row of this many weights takes 4 warps

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

// warps_per_row is 1 (4 rows a block) or kMatvecWarps (1 row a block). With `accumulate` the
// result is added to out. With x_q8.q (block types only) the row is multiplied with x's 8-bit
// values, a chunk of 32 or 64 weights a lane, not with x.
template <typename Weight>
__global__ void matvec_kernel(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                              int warps_per_row, bool vectorized, bool accumulate, Q8Vector x_q8) {
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
        if (x_q8.q) {  // a block row times 8-bit activations
            if constexpr (kIsBlockType<Weight>) {
                const Weight* rows[1] = {w_row};
                float sums[1];
                dot_rows_q8(rows, x_q8, in_dim, first_lane + lane, stride, sums);
                sum = sums[0];
            }
        } else if (vectorized) {  // the row is read in pieces (pieces_fit)
            // kBatch pieces a lane are loaded before the first is used: a row of up to
            // kBatch * 32 pieces is then one wait for memory, not one a piece.
            const int n_pieces = in_dim / kPerLoad;
            for (int first = first_lane + lane; first < n_pieces; first += kBatch * stride) {
                decltype(load_piece(w_row, 0)) batch[kBatch];
#pragma unroll
                for (int j = 0; j < kBatch; j++)
                    if (first + j * stride < n_pieces)
                        batch[j] = load_piece(w_row, first + j * stride);
                // x is the earlier kernels': the first batch waits for them with its weight
                // loads in flight; later batches pass at once (dependent_launch.cuh).
                wait_for_previous_kernel();
                allow_next_kernel();
#pragma unroll
                for (int j = 0; j < kBatch; j++) {
                    const int p = first + j * stride;
                    if (p < n_pieces) sum += dot_piece(batch[j], p, x + p * kPerLoad, w_row);
                }
            }
        } else {
            wait_for_previous_kernel();
            allow_next_kernel();
            for (int i = first_lane + lane; i < in_dim; i += stride)
                sum += weight_at(w_row, i) * x[i];
        }
    }
    wait_for_previous_kernel();  // every thread, also those with no row or no piece to load
    allow_next_kernel();
    sum = warp_sum(sum);
    if (warps_per_row == 1) {
        if (row < out_dim && lane == 0) out[row] = accumulate ? out[row] + sum : sum;
    } else {
        if (lane == 0) partial_sums[warp] = sum;
        __syncthreads();
        if (threadIdx.x == 0 && row < out_dim) {
            float total = 0.0f;
            for (int i = 0; i < kMatvecWarps; i++) total += partial_sums[i];
            out[row] = accumulate ? out[row] + total : total;
        }
    }
    // END SOLUTION
}

template <typename Weight>
static void launch_matvec(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                          bool accumulate = false, Stream stream = nullptr,
                          Q8Vector x_q8 = Q8Vector{}) {
    const bool vectorized = pieces_fit<Weight>(in_dim, w, x);
    const int warps_per_row = in_dim >= kWeightsToSplitRow ? kMatvecWarps : 1;
    const int rows_per_block = kMatvecWarps / warps_per_row;
    const unsigned blocks = unsigned((int64_t(out_dim) + rows_per_block - 1) / rows_per_block);
    launch_kernel("matvec_kernel", matvec_kernel<Weight>, blocks, kMatvecWarps * kWarpSize, stream,
                  out, x, w, in_dim, out_dim, warps_per_row, vectorized, accumulate, x_q8);
}

void matvec(float* out, const float* x, const void* w, uint32_t w_type, int in_dim,
            int out_dim) {
    with_weight_type(w_type, "matmul", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        launch_matvec(out, x, static_cast<const Weight*>(w), in_dim, out_dim);
    });
}

// x += W in, for the decode step: matvec with the residual add in its epilogue; a block
// matrix takes `in` rounded to 8 bits (in_q8), rounded here unless in_q8_written.
void matvec_add(float* x, const float* in, const void* w, uint32_t w_type, int in_dim, int out_dim,
                Q8Vector in_q8, bool in_q8_written, Stream stream) {
    if (out_dim == 0) return;
    const bool blocks = is_block_type(w_type);
    with_weight_type(w_type, "matvec_add", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        if (blocks && !in_q8_written) quantize_q8(in_q8, in, nullptr, 0.0f, in_dim, stream);
        launch_matvec(x, in, static_cast<const Weight*>(w), in_dim, out_dim, true, stream,
                      blocks ? in_q8 : Q8Vector{});
    });
}

}  // namespace gpu
