// gemm_tensor_cores.cu - out = x W^T for a prompt, on the tensor cores; matmul.cu chooses it for
// F16, BF16 and block matrices. Written in step 12.
//
// The tiled GEMM (tiled_gemm.cu) does its multiply-adds one FMA instruction at a time, 32 a
// warp. A tensor core takes a whole (16 x 16) x (16 x 8) product in one mma instruction (2048
// multiply-adds a warp), on operands of 16 bits. So the work of this kernel is less the
// arithmetic than keeping those instructions fed:
//
//   1. Tiles. A block of 4 warps computes a tile of kTileTokens x 128 outputs. It walks in_dim
//      32 at a time; each step brings a (tokens, 32) slice of x and a (128, 32) slice of W into
//      shared memory, and each warp multiplies its (tokens / 2, 64) quarter of the tile with
//      8 x (tokens / 32) mma per 16 of in_dim, from 4 + tokens / 32 ldmatrix loads.
//   2. Operands of 16 bits. mma multiplies F16 or BF16. x is rounded to F16 once, before the
//      kernel (BF16 when W is BF16, whose values may not fit F16's range), into a scratch matrix
//      padded to whole tiles, so the kernel never checks an edge of x. A block matrix's
//      weights are dequantized to F16 on their way into shared memory.
//   3. ldmatrix. Each lane of an mma holds fixed elements of its tiles (tensor_core_ptx.cuh);
//      ldmatrix loads a warp's 8 x 8 tiles from shared memory straight into that layout.
//   4. Rows padded to 80 bytes. ldmatrix reads 8 rows of 16 bytes at once; with 64-byte rows
//      (32 values) rows 0, 2, 4, 6 would fall on the same memory banks and be read one after
//      the other. 8 values of padding a row put the 8 reads on 8 different banks.
//   5. cp.async and a pipeline of kStages stages. While step k is multiplied out of one stage,
//      the slices of steps k + 1 .. k + 3 are on their way into the others, copied without a
//      round trip through registers; a block matrix's pieces go through registers (they are
//      unpacked), loaded before step k's multiplications and stored after them.
//
// Hopper's own tensor-core instructions (wgmma: a warp group of 128 threads multiplying tiles
// straight out of shared memory, fed by the TMA copy engine) are the next level; mma.sync
// runs on every GPU since Ampere and shows every part of the pipeline.
#include "gemm_tensor_cores.h"

#include <algorithm>

#include "cuda_check.h"
#include "cuda_device.h"
#include "device_buffer.h"
#include "tensor_core_ptx.cuh"
#include "weight_pieces.cuh"

namespace gpu {

constexpr int kTcTileOutputs = 128, kTcTileDepth = 32, kStages = 4;
// A tile is kTallTileTokens tokens high, or kShortTileTokens when tall tiles would leave
// multiprocessors without one; the operand matrix is padded to whole tiles of either height.
constexpr int kTallTileTokens = 128, kShortTileTokens = 64;
static_assert(kTallTileTokens % kShortTileTokens == 0, "a tall tile is whole short tiles");
constexpr int kTcWarpsTokens = 2, kTcWarpsOutputs = 2;  // 4 warps: 2 x 2 of the tile
constexpr int kTcThreads = 32 * kTcWarpsTokens * kTcWarpsOutputs;
constexpr int kRowStride = kTcTileDepth + 8;  // values a tile row takes in shared memory (80 bytes)
constexpr int kWarpOutputs = kTcTileOutputs / kTcWarpsOutputs;  // 64: 8 mma columns of 8
constexpr int kChunkValues = 8;                               // 16 bytes of 16-bit values
constexpr int kChunksPerRow = kTcTileDepth / kChunkValues;      // 4
static_assert(kTcTileDepth % 16 == 0 && kTcTileDepth % kChunkValues == 0,
              "a slice is whole mma steps of 16 and whole 16-byte chunks");

// How a block gets its slice of W into shared memory.
enum class WeightPath {
    Copy,     // cp.async: F16 or BF16 rows whose 16-byte pieces are 16-byte aligned
    Pieces,   // a block type: load_piece and unpack 8 weights, round them to F16, store
    Singles,  // F16 or BF16 rows of a length not a multiple of 8: weight_at, one at a time
};

template <typename Operand, int kTileTokens>
struct GemmTiles {
    Operand x[kStages][kTileTokens][kRowStride];   // (stage, token, k) of the operand matrix
    Operand w[kStages][kTcTileOutputs][kRowStride];  // (stage, output, k) of W
};

// A thread's share of one slice of W: kWeightChunks (row, k chunk) pairs, chunk threadIdx.x +
// j * kTcThreads for j = 0, 1, ...: neighbouring threads fill neighbouring chunks of a row.
constexpr int kWeightChunks = kTcTileOutputs * kChunksPerRow / kTcThreads;  // 4
static_assert(kTcTileOutputs * kChunksPerRow % kTcThreads == 0,
              "every thread loads as many chunks of W's slice");

template <typename Operand, typename Weight, WeightPath path>
struct WeightSlice {
    uint4 values[kWeightChunks];  // 8 rounded weights a chunk (Pieces, Singles)
};

// Loads the chunks of W's slice at k0 that this thread owns: issues cp.async (Copy) or fills
// slice.values (Pieces, Singles). Rows past out_dim, and for Singles k past in_dim, are zeros.
template <typename Operand, typename Weight, WeightPath path>
__device__ void load_weight_slice(WeightSlice<Operand, Weight, path>& slice,
                                  Operand (*w_tile)[kRowStride], const Weight* w, int first_output,
                                  int k0, int in_dim, int out_dim) {
#pragma unroll
    for (int j = 0; j < kWeightChunks; j++) {
        const int chunk = threadIdx.x + j * kTcThreads;
        const int row = chunk / kChunksPerRow, k = k0 + (chunk % kChunksPerRow) * kChunkValues;
        const int w_row = first_output + row;
        const bool inside = w_row < out_dim && k < in_dim;
        const Weight* row_start_w = row_start(w, inside ? w_row : 0, in_dim);
        if constexpr (path == WeightPath::Copy) {
            copy_async_16(&w_tile[row][k - k0], inside ? row_start_w + k : w, inside);
        } else {
            float weights[8] = {};
            if constexpr (path == WeightPath::Pieces) {
                if (inside) unpack(load_piece(row_start_w, k / 8), k / 8, weights, row_start_w);
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (inside && k + e < in_dim) weights[e] = weight_at(row_start_w, k + e);
            }
            slice.values[j] = make_uint4(pack_pair<Operand>(weights[0], weights[1]),
                                         pack_pair<Operand>(weights[2], weights[3]),
                                         pack_pair<Operand>(weights[4], weights[5]),
                                         pack_pair<Operand>(weights[6], weights[7]));
        }
    }
}

// The register half of load_weight_slice: its chunks into shared memory (not for Copy).
template <typename Operand, typename Weight, WeightPath path>
__device__ void store_weight_slice(const WeightSlice<Operand, Weight, path>& slice,
                                   Operand (*w_tile)[kRowStride]) {
    if constexpr (path != WeightPath::Copy) {
#pragma unroll
        for (int j = 0; j < kWeightChunks; j++) {
            const int chunk = threadIdx.x + j * kTcThreads;
            *reinterpret_cast<uint4*>(
                &w_tile[chunk / kChunksPerRow][(chunk % kChunksPerRow) * kChunkValues]) =
                slice.values[j];
        }
    }
}

// The slice of the operand matrix at k0: kTileTokens rows of 4 chunks, by cp.async. The matrix
// is padded with zeros to whole tiles (padded_dim a multiple of kTcTileDepth), so no chunk is out.
template <typename Operand, int kTileTokens>
__device__ void load_x_slice(Operand (*x_tile)[kRowStride], const Operand* x, int first_token,
                             int k0, int padded_dim) {
    constexpr int kChunks = kTileTokens * kChunksPerRow;
#pragma unroll
    for (int chunk = threadIdx.x; chunk < kChunks; chunk += kTcThreads) {
        const int row = chunk / kChunksPerRow, k = (chunk % kChunksPerRow) * kChunkValues;
        copy_async_16(&x_tile[row][k], x + int64_t(first_token + row) * padded_dim + k0 + k, true);
    }
}

template <typename Operand, typename Weight, WeightPath path, int kTileTokens>
__global__ void __launch_bounds__(kTcThreads)
    tensor_core_gemm_kernel(float* out, const Operand* x, const Weight* w, int n_tokens, int in_dim,
                            int padded_dim, int out_dim) {
    constexpr int kWarpTokens = kTileTokens / kTcWarpsTokens;  // 64 or 32
    constexpr int kFragsTokens = kWarpTokens / 16;             // mma rows of 16: 4 or 2
    constexpr int kFragsOutputs = kWarpOutputs / 8;            // mma columns of 8: 8
    // kStages stages of tiles: 80 KB at 128 tokens, past the 48 KB of a static array.
    extern __shared__ __align__(128) uint8_t shared_bytes[];
    GemmTiles<Operand, kTileTokens>& tiles =
        *reinterpret_cast<GemmTiles<Operand, kTileTokens>*>(shared_bytes);
    const int first_token = blockIdx.y * kTileTokens, first_output = blockIdx.x * kTcTileOutputs;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_tokens = (warp / kTcWarpsOutputs) * kWarpTokens;
    const int warp_outputs = (warp % kTcWarpsOutputs) * kWarpOutputs;
    const int n_steps = padded_dim / kTcTileDepth;
    // BEGIN SOLUTION step12 tensor_core_gemm_kernel
    float acc[kFragsTokens][kFragsOutputs][4] = {};
    WeightSlice<Operand, Weight, path> slice;

    // The first kStages - 1 steps' slices set off, one cp.async group each.
    for (int step = 0; step < kStages - 1; step++) {
        if (step < n_steps) {
            load_x_slice<Operand, kTileTokens>(tiles.x[step], x, first_token, step * kTcTileDepth,
                                               padded_dim);
            load_weight_slice(slice, tiles.w[step], w, first_output, step * kTcTileDepth, in_dim,
                              out_dim);
            store_weight_slice(slice, tiles.w[step]);
        }
        copy_async_commit();
    }
    for (int step = 0; step < n_steps; step++) {
        // This step's group is in once at most kStages - 2 younger ones are in flight; after
        // the barrier every warp has also finished the last step, whose stage is refilled now.
        copy_async_wait<kStages - 2>();
        __syncthreads();
        const int ahead = step + kStages - 1, ahead_stage = ahead % kStages;
        if (ahead < n_steps) {
            load_x_slice<Operand, kTileTokens>(tiles.x[ahead_stage], x, first_token,
                                               ahead * kTcTileDepth, padded_dim);
            load_weight_slice(slice, tiles.w[ahead_stage], w, first_output, ahead * kTcTileDepth,
                              in_dim, out_dim);
        }
        copy_async_commit();
        const int stage = step % kStages;
#pragma unroll
        for (int kk = 0; kk < kTcTileDepth; kk += 16) {
            // A's quarters: lanes 0-15 give rows 0-15 at column kk, lanes 16-31 at kk + 8.
            uint32_t a[kFragsTokens][4];
#pragma unroll
            for (int i = 0; i < kFragsTokens; i++) {
                load_matrix_x4(
                    a[i], &tiles.x[stage][warp_tokens + 16 * i + lane % 16][kk + (lane / 16) * 8]);
            }
            // B for two columns of 8 at once: lanes 0-7 rows 0-7 at kk, 8-15 the same rows at
            // kk + 8, 16-31 rows 8-15 likewise.
#pragma unroll
            for (int j = 0; j < kFragsOutputs; j += 2) {
                uint32_t b[4];
                load_matrix_x4(b, &tiles.w[stage][warp_outputs + 8 * j + lane % 8 + (lane / 16) * 8]
                                          [kk + ((lane / 8) % 2) * 8]);
#pragma unroll
                for (int i = 0; i < kFragsTokens; i++) {
                    mma_16x8x16<Operand>(acc[i][j], a[i], b[0], b[1]);
                    mma_16x8x16<Operand>(acc[i][j + 1], a[i], b[2], b[3]);
                }
            }
        }
        // A block matrix's pieces, loaded before the multiplications, go in after them.
        if (ahead < n_steps) store_weight_slice(slice, tiles.w[ahead_stage]);
    }
    // END SOLUTION

    // acc[i][j] holds rows group and group + 8 of mma tile (i, j), columns pair and pair + 1.
    const int group = lane / 4, pair = 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < kFragsTokens; i++)
#pragma unroll
        for (int j = 0; j < kFragsOutputs; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int t = first_token + warp_tokens + 16 * i + group + (e / 2) * 8;
                const int o = first_output + warp_outputs + 8 * j + pair + e % 2;
                if (t < n_tokens && o < out_dim) out[int64_t(t) * out_dim + o] = acc[i][j][e];
            }
}

// x (n_tokens, in_dim) rounded to the operand type into (padded_tokens, padded_dim), zeros
// around it: one thread per element of the padded matrix.
template <typename Operand>
__global__ void round_operands_kernel(Operand* out, const float* x, int n_tokens, int in_dim,
                                      int padded_tokens, int padded_dim) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= int64_t(padded_tokens) * padded_dim) return;
    const int t = int(i / padded_dim), k = int(i % padded_dim);
    out[i] = to_operand<Operand>(t < n_tokens && k < in_dim ? x[int64_t(t) * in_dim + k] : 0.0f);
}

bool gpu_has_tensor_core_mma() {
    static const bool has = [] {
        int device = 0, major = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        return major >= 8;
    }();
    return has;
}

bool tensor_cores_take(uint32_t w_type) { return ggml_type_info(w_type).tensor_core_gemm; }

int tensor_core_tile_tokens(int n_tokens, int out_dim) {
    const int64_t column_tiles = (out_dim + kTcTileOutputs - 1) / kTcTileOutputs;
    const int64_t tall_tiles = column_tiles * ((n_tokens + kTallTileTokens - 1) / kTallTileTokens);
    return tall_tiles >= multiprocessor_count() ? kTallTileTokens : kShortTileTokens;
}

// The rounded operand matrix, in device memory kept between calls like the attention's scratch.
static void* operand_scratch(size_t bytes) {
    static DeviceBuffer<uint8_t> scratch;
    scratch.resize(bytes);
    return scratch.data();
}

template <typename Operand, typename Weight, WeightPath path, int kTileTokens>
static void launch_tiles(float* out, const Operand* x, const Weight* w, int n_tokens, int in_dim,
                         int padded_dim, int out_dim) {
    const dim3 grid((out_dim + kTcTileOutputs - 1) / kTcTileOutputs,
                    (n_tokens + kTileTokens - 1) / kTileTokens);
    auto* kernel = tensor_core_gemm_kernel<Operand, Weight, path, kTileTokens>;
    const int shared_bytes = sizeof(GemmTiles<Operand, kTileTokens>);
    // More than 48 KB of shared memory a block is opted into, kernel by kernel.
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    kernel<<<grid, kTcThreads, shared_bytes>>>(out, x, w, n_tokens, in_dim, padded_dim, out_dim);
    check_launch("tensor_core_gemm_kernel");
}

template <typename Operand, typename Weight, WeightPath path>
static void launch_gemm(float* out, const float* x, const Weight* w, int n_tokens, int in_dim,
                        int out_dim) {
    const int tile_tokens = tensor_core_tile_tokens(n_tokens, out_dim);
    // whole tiles of either height
    const int padded_tokens = (n_tokens + kTallTileTokens - 1) / kTallTileTokens * kTallTileTokens;
    const int padded_dim = (in_dim + kTcTileDepth - 1) / kTcTileDepth * kTcTileDepth;
    const int64_t n_operands = int64_t(padded_tokens) * padded_dim;
    Operand* operands = static_cast<Operand*>(operand_scratch(n_operands * sizeof(Operand)));
    round_operands_kernel<Operand><<<unsigned((n_operands + 255) / 256), 256>>>(
        operands, x, n_tokens, in_dim, padded_tokens, padded_dim);
    check_launch("round_operands_kernel");
    if (tile_tokens == kTallTileTokens) {
        launch_tiles<Operand, Weight, path, kTallTileTokens>(out, operands, w, n_tokens, in_dim,
                                                             padded_dim, out_dim);
    } else {
        launch_tiles<Operand, Weight, path, kShortTileTokens>(out, operands, w, n_tokens, in_dim,
                                                              padded_dim, out_dim);
    }
}

void tensor_core_matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens,
                        int in_dim, int out_dim) {
    if (int64_t(n_tokens) * out_dim == 0) return;
    if (!tensor_cores_take(w_type))
        fail("gpu::tensor_core_matmul takes F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K weights, not %s",
             type_name(w_type));
    if ((n_tokens + kShortTileTokens - 1) / kShortTileTokens > 65535)  // the grid's y dimension
        fail("gpu::tensor_core_matmul takes up to %d tokens at once, not %d",
             65535 * kShortTileTokens, n_tokens);
    // 16-byte copies need rows of whole, aligned chunks.
    const bool copies_fit = in_dim % kChunkValues == 0 && uintptr_t(w) % 16 == 0;
    with_weight_type(w_type, "tensor_core_matmul", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const Weight* weights = static_cast<const Weight*>(w);
        if constexpr (std::is_same_v<Weight, __half> || std::is_same_v<Weight, __nv_bfloat16>) {
            if (copies_fit)
                launch_gemm<Weight, Weight, WeightPath::Copy>(out, x, weights, n_tokens, in_dim,
                                                              out_dim);
            else
                launch_gemm<Weight, Weight, WeightPath::Singles>(out, x, weights, n_tokens, in_dim,
                                                                 out_dim);
        } else if constexpr (kIsBlockType<Weight>) {
            launch_gemm<__half, Weight, WeightPath::Pieces>(out, x, weights, n_tokens, in_dim,
                                                            out_dim);
        } else {  // a type tensor_cores_take accepts and no path here reads
            fail("gpu::tensor_core_matmul has no way to read %s weights", type_name(w_type));
        }
    });
}

}  // namespace gpu
