// matvec.cu - matmul for one token: out = W x, a warp (or a few) per output row. Its CPU twin
// is ops_cpu.cpp's matmul with one token; matmul.cu chooses it, and matvec_add adds the
// product to out (the residual add, fused into the product).
// Written in step 9; last changed in step 10 (loads in batches, matvec_add, a dependent launch
// that waits for the kernel before it once its first weights are on their way).
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

// warps_per_row is 1 (4 rows a block) or kMatvecWarps (1 row a block). With `accumulate` the
// result is added to out.
template <typename Weight>
__global__ void matvec_kernel(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                              int warps_per_row, bool vectorized, bool accumulate) {
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
            // kLoadBatch pieces a lane are loaded before the first is used: a row
            // of up to kLoadBatch * 32 pieces is then one wait for memory, not one a piece.
            const uint4* pieces = reinterpret_cast<const uint4*>(w_row);
            const int n_pieces = in_dim / kPerLoad;
            for (int first = first_lane + lane; first < n_pieces; first += kLoadBatch * stride) {
                uint4 batch[kLoadBatch];
#pragma unroll
                for (int j = 0; j < kLoadBatch; j++)
                    if (first + j * stride < n_pieces) batch[j] = pieces[first + j * stride];
                // x is the earlier kernels': the first batch waits for them with its weight
                // loads in flight; later batches pass at once (dependent_launch.cuh).
                wait_for_previous_kernel();
                allow_next_kernel();
#pragma unroll
                for (int j = 0; j < kLoadBatch; j++) {
                    const int p = first + j * stride;
                    if (p < n_pieces) sum += dot_16_bytes(batch[j], x + p * kPerLoad, w);
                }
            }
        } else {
            wait_for_previous_kernel();
            allow_next_kernel();
            for (int i = first_lane + lane; i < in_dim; i += stride)
                sum += to_float(w_row[i]) * x[i];
        }
    }
    wait_for_previous_kernel();  // every thread, also those with no row or no piece to load
    allow_next_kernel();
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

template <typename Weight>
static void launch_matvec(float* out, const float* x, const Weight* w, int in_dim, int out_dim,
                          bool accumulate = false, Stream stream = nullptr) {
    const int per_load = 16 / int(sizeof(Weight));
    const bool vectorized =
        in_dim % per_load == 0 && uintptr_t(x) % 16 == 0 && uintptr_t(w) % 16 == 0;
    const int warps_per_row = in_dim / per_load >= kPiecesToSplitRow ? kMatvecWarps : 1;
    const int rows_per_block = kMatvecWarps / warps_per_row;
    const unsigned blocks = unsigned((int64_t(out_dim) + rows_per_block - 1) / rows_per_block);
    launch_kernel("matvec_kernel", matvec_kernel<Weight>, blocks, kMatvecWarps * kWarpSize, stream,
                  out, x, w, in_dim, out_dim, warps_per_row, vectorized, accumulate);
}

void matvec(float* out, const float* x, const void* w, uint32_t w_type, int in_dim,
            int out_dim) {
    with_weight_type(w_type, "matmul", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        launch_matvec(out, x, static_cast<const Weight*>(w), in_dim, out_dim);
    });
}

// x += W in, for the decode step: matvec with the residual add in its epilogue.
void matvec_add(float* x, const float* in, const void* w, uint32_t w_type, int in_dim, int out_dim,
                Stream stream) {
    if (out_dim == 0) return;
    with_weight_type(w_type, "matvec_add", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        launch_matvec(x, in, static_cast<const Weight*>(w), in_dim, out_dim, true, stream);
    });
}

}  // namespace gpu
