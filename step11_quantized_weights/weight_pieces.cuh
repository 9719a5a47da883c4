// weight_pieces.cuh - how the kernels read weights of any storage type, plain (F32, F16, BF16)
// or blocks (Q8_0, Q5_0, Q4_K, Q6_K, laid out in quant_blocks_cuda.cuh): a row read in pieces,
// the one switch that turns a ggml type id into the device type a kernel is compiled for, and
// the shape of the kernels that read rows of W a warp at a time (matvec.cu, fused_decode.cu).
// Written in step 9; last changed in step 11 (the block types, read in pieces).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "dependent_launch.cuh"
#include "error.h"
#include "ggml_types.h"
#include "quant_blocks_cuda.cuh"

namespace gpu {

// A weight as float, whatever its storage type on the device.
__device__ inline float to_float(float value) { return value; }
__device__ inline float to_float(__half value) { return __half2float(value); }
__device__ inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

inline const char* type_name(uint32_t type) { return ggml_type_info(type).name; }

// ---- a row of any weight type, read the same way ----
//
// The kernels are written once for every weight type. They need four things of a type:
//   kBlockWeights<W>  weights per W (1 for F32/F16/BF16, 32 or 256 for a block type), so that
//                     row r of a matrix of rows of `dim` weights starts at w + r * dim / kBlockWeights
//   kPieceWeights<W>  weights per piece, the unit a lane loads: a 16-byte load of F32/F16/BF16
//                     (4 or 8 weights), 8 weights of a block
//   load_piece(row, p) and unpack(piece, p, w, row): piece p of a row, and its weights as floats
//   weight_at(row, i) weight i alone
// quant_blocks_cuda.cuh defines them for the block types; here are the plain types'.

template <typename Weight>
constexpr int kBlockWeights = 1;
template <>
constexpr int kBlockWeights<BlockQ8_0> = 32;
template <>
constexpr int kBlockWeights<BlockQ5_0> = 32;
template <>
constexpr int kBlockWeights<BlockQ4_K> = 256;
template <>
constexpr int kBlockWeights<BlockQ6_K> = 256;

template <typename Weight>
constexpr bool kIsBlockType = kBlockWeights<Weight> > 1;

template <typename Weight>
constexpr int kPieceWeights = kBlockWeights<Weight> == 1 ? 16 / sizeof(Weight) : 8;

template <typename Weight>
__device__ inline const Weight* row_start(const Weight* w, int64_t row, int dim) {
    return w + row * (dim / kBlockWeights<Weight>);
}

template <typename Weight>
__device__ inline float weight_at(const Weight* row, int i) {
    return to_float(row[i]);
}

template <typename Weight>
__device__ inline uint4 load_piece(const Weight* row, int p) {
    return __ldg(reinterpret_cast<const uint4*>(row) + p);
}

// The weights of one 16-byte load, as floats: 4 of F32, 8 of F16 or BF16.
__device__ inline void unpack(uint4 bytes, int, float (&w)[4], const float*) {
    w[0] = __uint_as_float(bytes.x), w[1] = __uint_as_float(bytes.y);
    w[2] = __uint_as_float(bytes.z), w[3] = __uint_as_float(bytes.w);
}
__device__ inline void unpack(uint4 bytes, int, float (&w)[8], const __half*) {
    const __half2* pairs = reinterpret_cast<const __half2*>(&bytes);
    for (int j = 0; j < 4; j++) {
        const float2 pair = __half22float2(pairs[j]);
        w[2 * j] = pair.x, w[2 * j + 1] = pair.y;
    }
}
__device__ inline void unpack(uint4 bytes, int, float (&w)[8], const __nv_bfloat16*) {
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&bytes);
    for (int j = 0; j < 4; j++) {
        const float2 pair = __bfloat1622float2(pairs[j]);
        w[2 * j] = pair.x, w[2 * j + 1] = pair.y;
    }
}
// A block type's pieces are unpacked by quant_blocks_cuda.cuh's unpack(piece, p, w).
template <typename Piece, typename Block>
__device__ inline void unpack(const Piece& piece, int p, float (&w)[8], const Block*) {
    unpack(piece, p, w);
}

// Whether a row can be read in pieces: 16-byte loads need rows, x and g (when given) aligned
// to 16 bytes, and a row a whole number of pieces; a block type's rows are whole blocks, whose
// fields are read with loads of 2 to 8 bytes. Otherwise the kernels read one weight at a time.
template <typename Weight>
inline bool pieces_fit(int dim, const void* w, const float* x, const float* g = nullptr) {
    const bool vectors_align = uintptr_t(x) % 16 == 0 && uintptr_t(g) % 16 == 0;
    if (kIsBlockType<Weight>) return vectors_align && dim % kBlockWeights<Weight> == 0;
    return vectors_align && dim % kPieceWeights<Weight> == 0 && uintptr_t(w) % 16 == 0;
}

template <typename T>
struct TypeTag {
    using type = T;
};

// Calls launch(TypeTag<W>{}) with W the device type of ggml type w_type.
template <typename Launch>
static void with_weight_type(uint32_t w_type, const char* op, Launch&& launch) {
    switch (GgmlType(w_type)) {
        case GgmlType::F32: launch(TypeTag<float>{}); break;
        case GgmlType::F16: launch(TypeTag<__half>{}); break;
        case GgmlType::BF16: launch(TypeTag<__nv_bfloat16>{}); break;
        case GgmlType::Q8_0: launch(TypeTag<BlockQ8_0>{}); break;
        case GgmlType::Q5_0: launch(TypeTag<BlockQ5_0>{}); break;
        case GgmlType::Q4_K: launch(TypeTag<BlockQ4_K>{}); break;
        case GgmlType::Q6_K: launch(TypeTag<BlockQ6_K>{}); break;
        default:
            fail("gpu::%s reads F32, F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K weights, not %s", op,
                 type_name(w_type));
    }
}

// Warps per block of the kernels that read a row of W a warp at a time.
constexpr int kMatvecWarps = 4;

// The 16-byte pieces of a row a lane loads before it uses the first. An unrolled loop does not
// do that for a row shorter than the unrolling: the GPU issues instructions in order, so each
// iteration's multiply-adds would wait for its own load before the next load is asked for.
// The batch's registers are the price: twice as many registers a thread can halve the blocks
// a multiprocessor holds, so a row much longer than a batch may read slower.
constexpr int kLoadBatch = 8;

// A block type's pieces hold more registers than a 16-byte load (its block's scales come with
// them), so fewer of them are loaded ahead.
constexpr int kBlockBatch = 4;
template <typename Weight>
constexpr int kLoadBatchOf = kBlockWeights<Weight> == 1 ? kLoadBatch : kBlockBatch;

// ---- block rows times 8-bit activations, a chunk of 32 or 64 weights a lane ----

// Chunks a lane loads before it multiplies the first, over all the rows it reads at once:
// enough bytes in flight for the memory's latency, within the registers that keep a
// multiprocessor's warps resident (a Q6_K chunk holds 15 registers, a Q4_K one 12).
template <typename Block>
constexpr int kChunkBatch = kChunkWeights<Block> == 64 ? 3 : 4;

// Each lane's share of the dot products of kRows block rows (row[r], `dim` weights each) with
// x_q8: the chunks first, first + stride, ... of every row, their loads interleaved so that
// all of them are in flight at once, and the activations beneath a chunk loaded once for all
// the rows. The caller adds the lanes' shares (warp_sum). x_q8 is an earlier kernel's: the
// first batch waits for that kernel with its weight loads in flight (dependent_launch.cuh);
// the caller waits too, for the lanes with no chunk.
template <typename Block, int kRows>
__device__ void dot_rows_q8(const Block* const (&row)[kRows], Q8Vector x_q8, int dim, int first,
                            int stride, float (&sums)[kRows]) {
    static_assert(kIsBlockType<Block>, "chunks are a block type's");
    constexpr int kBatch = kChunkBatch<Block> / kRows > 0 ? kChunkBatch<Block> / kRows : 1;
    const int n_chunks = dim / kChunkWeights<Block>;
    for (int r = 0; r < kRows; r++) sums[r] = 0.0f;
    for (int c0 = first; c0 < n_chunks; c0 += kBatch * stride) {
        decltype(load_chunk(row[0], 0)) batch[kRows][kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
#pragma unroll
            for (int r = 0; r < kRows; r++)
                if (c0 + j * stride < n_chunks) batch[r][j] = load_chunk(row[r], c0 + j * stride);
        wait_for_previous_kernel();
        allow_next_kernel();
#pragma unroll
        for (int j = 0; j < kBatch; j++) {
            const int c = c0 + j * stride;
            if (c >= n_chunks) continue;
            const auto x = load_x_chunk(x_q8, c, row[0]);
#pragma unroll
            for (int r = 0; r < kRows; r++) sums[r] += dot_chunk(batch[r][j], c, x);
        }
    }
}

}  // namespace gpu
