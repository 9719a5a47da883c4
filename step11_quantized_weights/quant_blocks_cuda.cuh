// quant_blocks_cuda.cuh - step 11: GGUF weight blocks read on the GPU as the file stores them.
//
// Steps 06-10 turned every matrix into F16 at load, 2 bytes a weight. A Q4_K block holds 256
// weights in 144 bytes (0.56 bytes a weight), so decoding, which reads every weight once per
// token, reads 3.5 times fewer bytes when the kernels take the blocks themselves and turn them
// into floats in registers, just before the multiply-adds.
//
// The kernels of matvec.cu and fused_decode.cu read a row of W in *pieces* (weight_pieces.cuh):
// a lane loads a piece, unpacks it into float weights and multiplies them with x. For F16 a piece
// is 16 bytes, 8 weights. Here a piece of a block type is also 8 consecutive weights, so x is
// read exactly as for F16: piece p multiplies x[8p .. 8p + 7]. Each format says where those 8
// weights lie inside its block:
//   load(row, p)     the bytes piece p needs (its quants, and its block's scales), loaded
//   unpack(piece, p) the 8 float weights, as dequantize.cpp computes them: (d * scale) * q - m
// and a third function, weight_at(row, i), turns one weight into a float (the embedding and the
// tiled GEMM's tiles read single weights). The bit layouts are dequantize.cpp's; the article
// (docs/en/step11.md) draws them.
//
// The fields are read with loads of 2 or 4 bytes: blocks of 34, 22 and 210 bytes leave fields
// only 2-byte aligned, and the file's layout is kept as it is.
//
// Decoding multiplies each row with 8-bit activations instead (the CPU's BlockQ8 values, held
// as a Q8Vector: the quants, the scales and the sums in three arrays). There a lane takes a
// *chunk* of 32 or 64 weights: a whole Q8_0 or Q5_0 block, or a quarter of a Q4_K or Q6_K block,
// loaded with 16-byte loads where the layout allows, its scales decoded once, and multiplied
// with the activations beneath it by dp4a (4 products of bytes and their sum, in one
// instruction):
//   load_chunk(row, c)             the bytes chunk c needs
//   load_x_chunk(x, c, row)        the activations beneath it, shared by rows of the same type
//   dot_chunk(chunk, c, x_chunk)   sum of w * x over its weights, the integer sums exact
// Consecutive lanes take consecutive chunks, so a warp's loads cover consecutive bytes of the row.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "ggml_types.h"
#include "ops_cuda.h"
#include "quant_dot.h"

namespace gpu {

// A type of block: its bytes, so that `row + n` steps over n blocks. The fields lie at
// block_layout's offsets (ggml_types.h).
using Q8_0 = block_layout::Q8_0;
using Q5_0 = block_layout::Q5_0;
using Q4_K = block_layout::Q4_K;
using Q6_K = block_layout::Q6_K;
struct BlockQ8_0 {
    uint8_t bytes[Q8_0::kBytes];  // f16 d, 32 int8 q: w = d * q
};
struct BlockQ5_0 {
    // f16 d, 4 bytes of 5th bits, 16 bytes of two 4-bit q: w = d * (q - 16)
    uint8_t bytes[Q5_0::kBytes];
};
struct BlockQ4_K {
    // f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit q
    uint8_t bytes[Q4_K::kBytes];
};
struct BlockQ6_K {
    // 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, f16 d
    uint8_t bytes[Q6_K::kBytes];
};
static_assert(sizeof(BlockQ8_0) == Q8_0::kBytes && sizeof(BlockQ5_0) == Q5_0::kBytes &&
                  sizeof(BlockQ4_K) == Q4_K::kBytes && sizeof(BlockQ6_K) == Q6_K::kBytes,
              "a row of blocks steps by the file's block size");

__device__ inline uint32_t load_u16(const uint8_t* p) {
    return __ldg(reinterpret_cast<const unsigned short*>(p));
}
__device__ inline uint32_t load_u32(const uint8_t* p) {
    return __ldg(reinterpret_cast<const unsigned int*>(p));
}
// 8 bytes at a 2-byte aligned address, as two words: byte k of the 8 is byte k % 4 of word k / 4.
__device__ inline uint2 load_8_bytes(const uint8_t* p) {
    return make_uint2(load_u16(p) | (load_u16(p + 2) << 16),
                      load_u16(p + 4) | (load_u16(p + 6) << 16));
}
__device__ inline float half_bits_to_float(uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}
__device__ inline uint32_t byte_of(uint2 bytes, int k) {
    return ((k < 4 ? bytes.x : bytes.y) >> (8 * (k % 4))) & 0xFF;
}
// w[k] of an unpacked piece for a k known only at run time, without indexing the array (which
// would move it from registers to local memory).
__device__ inline float pick(const float (&w)[8], int k) {
    float value = w[0];
    for (int j = 1; j < 8; j++)
        if (j == k) value = w[j];
    return value;
}

// ---- Q8_0: 32 weights, w = d * q with q an int8 ----

struct PieceQ8_0 {
    uint32_t d;  // f16 bits
    uint2 q;     // 8 int8
};
__device__ inline PieceQ8_0 load_piece(const BlockQ8_0* row, int p) {
    const uint8_t* block = row[p / 4].bytes;
    return PieceQ8_0{load_u16(block + Q8_0::kOffsetD),
                     load_8_bytes(block + Q8_0::kOffsetQs + 8 * (p % 4))};
}
__device__ inline void unpack(const PieceQ8_0& piece, int, float (&w)[8]) {
    const float d = half_bits_to_float(piece.d);
    for (int k = 0; k < 8; k++) w[k] = d * float(int8_t(byte_of(piece.q, k)));
}
__device__ inline float weight_at(const BlockQ8_0* row, int i) {
    const uint8_t* block = row[i / 32].bytes;
    return half_bits_to_float(load_u16(block + Q8_0::kOffsetD)) *
           float(int8_t(block[Q8_0::kOffsetQs + i % 32]));
}

// ---- Q5_0: 32 weights, w = d * (q - 16), q = 4 low bits | 1 high bit << 4 ----
// Weight k < 16 has its low bits in the low nibble of qs[k], weight k + 16 in the high one;
// bit k of qh is weight k's fifth bit.

struct PieceQ5_0 {
    uint32_t d;   // f16 bits
    uint32_t qh;  // the 8 fifth bits of the piece, in bits 0-7
    uint2 qs;     // 8 bytes of qs, whose low or high nibbles are the piece's
};
__device__ inline PieceQ5_0 load_piece(const BlockQ5_0* row, int p) {
    const uint8_t* block = row[p / 4].bytes;
    const int j = p % 4;  // weights 8j .. 8j + 7 of the block
    return PieceQ5_0{load_u16(block + Q5_0::kOffsetD), block[Q5_0::kOffsetQh + j],
                     load_8_bytes(block + Q5_0::kOffsetQs + 8 * (j % 2))};
}
__device__ inline void unpack(const PieceQ5_0& piece, int p, float (&w)[8]) {
    const float d = half_bits_to_float(piece.d);
    const int shift = p % 4 >= 2 ? 4 : 0;  // weights 16..31 are the high nibbles
    for (int k = 0; k < 8; k++) {
        const int q = ((byte_of(piece.qs, k) >> shift) & 0xF) | (((piece.qh >> k) & 1) << 4);
        w[k] = d * float(q - 16);
    }
}
__device__ inline float weight_at(const BlockQ5_0* row, int i) {
    const uint8_t* block = row[i / 32].bytes;
    const int k = i % 32;
    const uint32_t qh =
        load_u16(block + Q5_0::kOffsetQh) | (load_u16(block + Q5_0::kOffsetQh + 2) << 16);
    const uint8_t* qs = block + Q5_0::kOffsetQs;
    const int low = k < 16 ? qs[k] & 0xF : qs[k - 16] >> 4;
    const int q = low | (((qh >> k) & 1) << 4);
    return half_bits_to_float(load_u16(block + Q5_0::kOffsetD)) * float(q - 16);
}

// ---- Q4_K: 256 weights in 8 sub-blocks of 32, w = (d * scale) * q - dmin * min ----
// Sub-blocks 2j and 2j + 1 share 32 bytes of qs: the low nibbles are 2j's, the high 2j + 1's.
// The 8 six-bit scales and mins are packed into 12 bytes (dequantize.cpp's unpack_k_scale_min).

// A piece holds the scale words as loaded: a lane issues all its loads before it uses any
// (weight_pieces.cuh's batches), so picking the sub-block's bytes out of them waits for unpack().
static_assert(Q4_K::kOffsetDmin == Q4_K::kOffsetD + 2, "one 4-byte load reads d and dmin");
struct PieceQ4_K {
    uint32_t d_dmin;  // f16 d in the low half, f16 dmin in the high one
    uint32_t scales[3];  // the 12 bytes of scales and mins
    uint2 qs;            // 8 bytes of qs
};
__device__ inline PieceQ4_K load_piece(const BlockQ4_K* row, int p) {
    const uint8_t* block = row[p / 32].bytes;
    const int r = p % 32;  // weights 8r .. 8r + 7 of the block
    const uint8_t* qs_bytes = block + Q4_K::kOffsetQs + 32 * (r / 8) + 8 * (r % 4);
    const uint2 qs = __ldg(reinterpret_cast<const uint2*>(qs_bytes));
    const uint8_t* scales = block + Q4_K::kOffsetScales;
    return PieceQ4_K{load_u32(block + Q4_K::kOffsetD),
                     {load_u32(scales), load_u32(scales + 4), load_u32(scales + 8)}, qs};
}
// The 6-bit scale and min of sub-block `sub`, from the 12 bytes of scales as three words.
__device__ inline void scale_min(const uint32_t (&words)[3], int sub, int& scale, int& min) {
    // Byte sub % 4 of each third of the 12 bytes (dequantize.cpp's unpack_k_scale_min).
    const int shift = 8 * (sub % 4);
    const int low = (words[0] >> shift) & 0xFF, high = (words[1] >> shift) & 0xFF;
    const int extra = (words[2] >> shift) & 0xFF;
    if (sub < 4) {
        scale = low & 63;
        min = high & 63;
    } else {
        scale = (extra & 0xF) | ((low >> 6) << 4);
        min = (extra >> 4) | ((high >> 6) << 4);
    }
}
__device__ inline void unpack(const PieceQ4_K& piece, int p, float (&w)[8]) {
    const int sub = (p % 32) / 4;  // the sub-block of 32 weights
    int scale, min;
    scale_min(piece.scales, sub, scale, min);
    const float d = half_bits_to_float(piece.d_dmin) * float(scale);
    const float m = half_bits_to_float(piece.d_dmin >> 16) * float(min);
    const int nibble = sub % 2 ? 4 : 0;  // the odd sub-block of a pair: the high nibbles
    for (int k = 0; k < 8; k++) w[k] = d * float((byte_of(piece.qs, k) >> nibble) & 0xF) - m;
}
__device__ inline float weight_at(const BlockQ4_K* row, int i) {
    const BlockQ4_K* block = row + i / 256;
    const int e = i % 256;
    float w[8];
    unpack(load_piece(block, e / 8), e / 8, w);
    return pick(w, e % 8);
}

// ---- Q6_K: 256 weights in 16 sub-blocks of 16, w = (d * scale) * (q - 32), q of 6 bits ----
// Each half of 128 weights has 64 bytes of ql (low 4 bits), 32 of qh (high 2 bits) and 8
// scales. Weight l + 32 * quarter of a half (l < 32) takes the low (quarter 0, 1) or high
// (quarter 2, 3) nibble of ql[l + 32 * (quarter % 2)], bits 2 * quarter of qh[l], and scale
// l / 16 + 2 * quarter.

struct PieceQ6_K {
    uint2 ql;       // 8 bytes of ql
    uint2 qh;       // 8 bytes of qh
    uint32_t d;     // f16 bits
    int32_t scale;  // the piece's int8 scale
};
__device__ inline PieceQ6_K load_piece(const BlockQ6_K* row, int p) {
    const uint8_t* block = row[p / 32].bytes;
    const int e = 8 * (p % 32), half = e / 128, quarter = (e % 128) / 32, l = e % 32;
    const uint8_t* ql = block + Q6_K::kOffsetQl + 64 * half + l + 32 * (quarter % 2);
    const uint8_t* qh = block + Q6_K::kOffsetQh + 32 * half + l;
    const int8_t scale = int8_t(block[Q6_K::kOffsetScales + 8 * half + l / 16 + 2 * quarter]);
    return PieceQ6_K{load_8_bytes(ql), load_8_bytes(qh), load_u16(block + Q6_K::kOffsetD), scale};
}
__device__ inline void unpack(const PieceQ6_K& piece, int p, float (&w)[8]) {
    const int quarter = (8 * (p % 32) % 128) / 32;
    const int low_shift = quarter >= 2 ? 4 : 0, high_shift = 2 * quarter;
    const float d = half_bits_to_float(piece.d) * float(piece.scale);
    for (int k = 0; k < 8; k++) {
        const int q = ((byte_of(piece.ql, k) >> low_shift) & 0xF) |
                      (((byte_of(piece.qh, k) >> high_shift) & 3) << 4);
        w[k] = d * float(q - 32);
    }
}
__device__ inline float weight_at(const BlockQ6_K* row, int i) {
    const BlockQ6_K* block = row + i / 256;
    const int e = i % 256;
    float w[8];
    unpack(load_piece(block, e / 8), e / 8, w);
    return pick(w, e % 8);
}

// ==== Chunks: a block row times 8-bit activations (decoding) ====
//
// A lane takes a chunk of a row: a whole Q8_0 or Q5_0 block (32 weights), or a quarter of a
// Q4_K or Q6_K block (64 weights). The activations beneath it (an XChunk: their quants, the
// scales and the half sums of their 8-bit blocks) are loaded once for every row the lane reads
// at those columns. A chunk's weights are unsigned integers of 4 to 8 bits before their offset
// (Q5_0's -16, Q6_K's -32) and min: sum (q - o) x = sum q x - o sum x, so the offsets and mins
// come out of the activations' stored sums, not out of a subtraction per weight.

template <typename Block>
constexpr int kChunkWeights = 32;  // Q8_0, Q5_0: a block
template <>
constexpr int kChunkWeights<BlockQ4_K> = 64;  // a pair of sub-blocks
template <>
constexpr int kChunkWeights<BlockQ6_K> = 64;  // 16 weights of each quarter of a half
static_assert(Q8_0::kWeights == kQ8BlockSize && Q5_0::kWeights == kQ8BlockSize,
              "a Q8_0 or Q5_0 block is one block of activations");

// The 16-bit halves of a block's packed sums (q8_vector.h): low, the first 16 quants', and high.
__device__ inline int low_half(int sums) { return int16_t(sums & 0xFFFF); }
__device__ inline int high_half(int sums) { return (sums - low_half(sums)) >> 16; }

// The kBytes bytes at p, an address that is only 2-byte aligned, as words: v[i] holds bytes
// 4i .. 4i + 3. The loads are of aligned words (the last one of 2 bytes when only its first
// half belongs to the field), shifted into place: no byte past p + kBytes is read.
template <int kBytes>
__device__ inline void load_unaligned(const uint8_t* p, uint32_t (&v)[(kBytes + 3) / 4]) {
    static_assert(kBytes % 2 == 0, "the fields are whole 2-byte units");
    constexpr int kWords = (kBytes + 3) / 4;
    const int shift = int(reinterpret_cast<uintptr_t>(p) & 2);  // 0 or 2
    const uint8_t* base = p - shift;
    const int n_words = (shift + kBytes + 2) / 4;  // words overlapping [p, p + kBytes)
    const bool last_is_half = (shift + kBytes) % 4 == 2;
    uint32_t w[kWords + 1];
#pragma unroll
    for (int k = 0; k <= kWords; k++) {
        if (k < n_words - 1) w[k] = load_u32(base + 4 * k);
        else if (k == n_words - 1) w[k] = last_is_half ? load_u16(base + 4 * k) : load_u32(base + 4 * k);
        else w[k] = 0;
    }
#pragma unroll
    for (int i = 0; i < kWords; i++) v[i] = __funnelshift_r(w[i], w[i + 1], 8 * shift);
}

__device__ inline int4 load_quants_16(const int8_t* q) {
    return __ldg(reinterpret_cast<const int4*>(q));
}
// Sum over 16 weights (4 words of 4 bytes, each byte a small integer) times 16 int8 activations.
__device__ inline int dot_16(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, int4 x) {
    return __dp4a(int(w0), x.x, __dp4a(int(w1), x.y, __dp4a(int(w2), x.z, __dp4a(int(w3), x.w, 0))));
}
__device__ inline int dot_16(uint4 w, int4 x) { return dot_16(w.x, w.y, w.z, w.w, x); }
__device__ inline uint4 low_nibbles(uint4 q) {
    return make_uint4(q.x & 0x0F0F0F0F, q.y & 0x0F0F0F0F, q.z & 0x0F0F0F0F, q.w & 0x0F0F0F0F);
}
__device__ inline uint4 high_nibbles(uint4 q) {
    return make_uint4((q.x >> 4) & 0x0F0F0F0F, (q.y >> 4) & 0x0F0F0F0F, (q.z >> 4) & 0x0F0F0F0F,
                      (q.w >> 4) & 0x0F0F0F0F);
}

// The activations of one block of 32 (Q8_0, Q5_0): chunk c's.
struct XBlock {
    int4 q[2];
    float d;
    int sum;
};
__device__ inline XBlock load_x_block(Q8Vector x, int c) {
    return XBlock{{load_quants_16(x.q + 32 * c), load_quants_16(x.q + 32 * c + 16)},
                  __ldg(x.d + c), __ldg(x.sums + c)};
}

// ---- Q8_0: chunk c is block c ----

struct ChunkQ8_0 {
    uint32_t v[9];  // the block's 34 bytes: f16 d, then 32 int8 q
};
__device__ inline ChunkQ8_0 load_chunk(const BlockQ8_0* row, int c) {
    ChunkQ8_0 chunk;
    load_unaligned<Q8_0::kBytes>(row[c].bytes, chunk.v);
    return chunk;
}
__device__ inline XBlock load_x_chunk(Q8Vector x, int c, const BlockQ8_0*) {
    return load_x_block(x, c);
}
__device__ inline float dot_chunk(const ChunkQ8_0& chunk, int, const XBlock& x) {
    static_assert(Q8_0::kOffsetD == 0 && Q8_0::kOffsetQs == 2, "d, then the quants");
    uint32_t q[8];  // quants 4m .. 4m + 3 in q[m]
    for (int m = 0; m < 8; m++) q[m] = __funnelshift_r(chunk.v[m], chunk.v[m + 1], 16);
    const int sum = dot_16(q[0], q[1], q[2], q[3], x.q[0]) + dot_16(q[4], q[5], q[6], q[7], x.q[1]);
    return half_bits_to_float(chunk.v[0]) * x.d * float(sum);
}

// ---- Q5_0: chunk c is block c ----

struct ChunkQ5_0 {
    uint32_t v[6];  // the block's 22 bytes: f16 d, 4 bytes of fifth bits, 16 bytes of nibbles
};
__device__ inline ChunkQ5_0 load_chunk(const BlockQ5_0* row, int c) {
    ChunkQ5_0 chunk;
    load_unaligned<Q5_0::kBytes>(row[c].bytes, chunk.v);
    return chunk;
}
__device__ inline XBlock load_x_chunk(Q8Vector x, int c, const BlockQ5_0*) {
    return load_x_block(x, c);
}
// Bits 0-3 of `bits` moved to bit 4 of bytes 0-3: the multiply puts bit i at bit 8i (the
// four shifted copies of the bits never overlap, so no carries).
__device__ inline uint32_t spread_4_bits(uint32_t bits) {
    return (((bits & 0xF) * 0x00204081u) & 0x01010101u) << 4;
}
__device__ inline float dot_chunk(const ChunkQ5_0& chunk, int, const XBlock& x) {
    static_assert(Q5_0::kOffsetD == 0 && Q5_0::kOffsetQh == 2 && Q5_0::kOffsetQs == 6,
                  "d, the fifth bits, then the nibbles");
    const uint32_t qh = __funnelshift_r(chunk.v[0], chunk.v[1], 16);
    uint32_t low[4], high[4];  // weights 4m .. 4m + 3 and 16 + 4m .. 16 + 4m + 3, as 0 .. 31
    for (int m = 0; m < 4; m++) {
        const uint32_t qs = __funnelshift_r(chunk.v[1 + m], chunk.v[2 + m], 16);
        low[m] = (qs & 0x0F0F0F0F) | spread_4_bits(qh >> (4 * m));
        high[m] = ((qs >> 4) & 0x0F0F0F0F) | spread_4_bits(qh >> (16 + 4 * m));
    }
    const int sum = dot_16(low[0], low[1], low[2], low[3], x.q[0]) +
                    dot_16(high[0], high[1], high[2], high[3], x.q[1]);
    const int x_sum = low_half(x.sum) + high_half(x.sum);
    return half_bits_to_float(chunk.v[0]) * x.d * float(sum - 16 * x_sum);
}

// ---- Q4_K: chunk c of a row is sub-blocks 2j and 2j + 1 of block c / 4, j = c % 4 ----
// Their 32 bytes of qs hold sub-block 2j's weights in the low nibbles, 2j + 1's in the high.

struct ChunkQ4_K {
    uint4 head;   // f16 d, f16 dmin, then the 12 bytes of 6-bit scales and mins as 3 words
    uint4 qs[2];  // the pair's 32 bytes of nibbles
};
static_assert(Q4_K::kOffsetD == 0 && Q4_K::kOffsetDmin == 2 && Q4_K::kOffsetScales == 4 &&
                  Q4_K::kOffsetQs == 16 && Q4_K::kBytes % 16 == 0,
              "a block's first 16 bytes are its scales, then 16-byte aligned nibbles");
__device__ inline ChunkQ4_K load_chunk(const BlockQ4_K* row, int c) {
    const uint8_t* block = row[c / 4].bytes;
    const uint4* qs = reinterpret_cast<const uint4*>(block + Q4_K::kOffsetQs + 32 * (c % 4));
    return ChunkQ4_K{__ldg(reinterpret_cast<const uint4*>(block)), {__ldg(qs), __ldg(qs + 1)}};
}
// 64 activations: blocks 2c and 2c + 1.
struct XChunk64 {
    int4 q[4];
    float d[2];
    int sums[2];
};
__device__ inline XChunk64 load_x_chunk(Q8Vector x, int c, const BlockQ4_K*) {
    const int8_t* q = x.q + 64 * c;
    const float2 d = __ldg(reinterpret_cast<const float2*>(x.d + 2 * c));
    const int2 sums = __ldg(reinterpret_cast<const int2*>(x.sums + 2 * c));
    return XChunk64{{load_quants_16(q), load_quants_16(q + 16), load_quants_16(q + 32),
                     load_quants_16(q + 48)},
                    {d.x, d.y},
                    {sums.x, sums.y}};
}
// The 6-bit scales (sc) and mins (mn) of sub-blocks 2j and 2j + 1, two bytes each: 2j's in
// the low byte. dequantize.cpp's unpack_k_scale_min, for two neighbouring sub-blocks at once.
__device__ inline void pair_scales_mins(uint4 head, int j, uint32_t& sc, uint32_t& mn) {
    const int shift = 16 * (j % 2);
    const uint32_t low = head.y >> shift, high = head.z >> shift;  // bytes 2j % 4 .. of 0-3, 4-7
    if (j < 2) {
        sc = low & 0x3F3F, mn = high & 0x3F3F;
    } else {  // 4 bits from bytes 8-11, the top 2 from the top bits of bytes 0-7
        const uint32_t extra = head.w >> shift;
        sc = (extra & 0x0F0F) | ((low >> 2) & 0x3030);
        mn = ((extra >> 4) & 0x0F0F) | ((high >> 2) & 0x3030);
    }
}
__device__ inline float dot_chunk(const ChunkQ4_K& chunk, int c, const XChunk64& x) {
    uint32_t sc, mn;
    pair_scales_mins(chunk.head, c % 4, sc, mn);
    const int dot_a = dot_16(low_nibbles(chunk.qs[0]), x.q[0]) + dot_16(low_nibbles(chunk.qs[1]), x.q[1]);
    const int dot_b = dot_16(high_nibbles(chunk.qs[0]), x.q[2]) + dot_16(high_nibbles(chunk.qs[1]), x.q[3]);
    const int sum_a = low_half(x.sums[0]) + high_half(x.sums[0]);
    const int sum_b = low_half(x.sums[1]) + high_half(x.sums[1]);
    const float d = half_bits_to_float(chunk.head.x), dmin = half_bits_to_float(chunk.head.x >> 16);
    // w = d scale q - dmin min, so sum w x = x_d (d scale sum(q xq) - dmin min sum(xq))
    return d * (x.d[0] * float(int(sc & 0xFF) * dot_a) + x.d[1] * float(int(sc >> 8) * dot_b)) -
           dmin * (x.d[0] * float(int(mn & 0xFF) * sum_a) + x.d[1] * float(int(mn >> 8) * sum_b));
}

// ---- Q6_K: chunk c of a row: weights l0 .. l0 + 15 of each quarter of half h ----
// of block c / 4, with h = (c % 4) / 2 and l0 = 16 (c % 2). Weight 128 h + 32 quarter + l takes
// the low (quarters 0, 1) or high (2, 3) nibble of ql[64 h + 32 (quarter % 2) + l], bits
// 2 quarter of qh[32 h + l], and the scale 8 h + l / 16 + 2 quarter (dequantize.cpp's layout).
// A quarter's 16 weights are the first or second half of one block of activations.

struct ChunkQ6_K {
    uint32_t ql_a[4], ql_b[4], qh[4];  // 16 bytes each: ql of quarters 0 and 2, of 1 and 3; qh
    uint32_t scales[2];                // the half's 8 int8 scales
    uint32_t d;                        // f16 bits
};
__device__ inline ChunkQ6_K load_chunk(const BlockQ6_K* row, int c) {
    const uint8_t* block = row[c / 4].bytes;
    const int h = (c % 4) / 2, l0 = 16 * (c % 2);
    ChunkQ6_K chunk;
    load_unaligned<16>(block + Q6_K::kOffsetQl + 64 * h + l0, chunk.ql_a);
    load_unaligned<16>(block + Q6_K::kOffsetQl + 64 * h + 32 + l0, chunk.ql_b);
    load_unaligned<16>(block + Q6_K::kOffsetQh + 32 * h + l0, chunk.qh);
    load_unaligned<8>(block + Q6_K::kOffsetScales + 8 * h, chunk.scales);
    chunk.d = load_u16(block + Q6_K::kOffsetD);
    return chunk;
}
// The four runs of 16 activations beneath the chunk, one per quarter, with their blocks'
// scales and the half sums of those runs.
struct XQuarters {
    int4 q[4];
    float4 d;
    int sums[4];
};
__device__ inline XQuarters load_x_chunk(Q8Vector x, int c, const BlockQ6_K*) {
    const int first_block = 8 * (c / 4) + 4 * ((c % 4) / 2), l0 = 16 * (c % 2);
    const int8_t* q = x.q + 32 * first_block + l0;
    const int4 sums = __ldg(reinterpret_cast<const int4*>(x.sums + first_block));
    const bool high = c % 2;
    return XQuarters{{load_quants_16(q), load_quants_16(q + 32), load_quants_16(q + 64),
                      load_quants_16(q + 96)},
                     __ldg(reinterpret_cast<const float4*>(x.d + first_block)),
                     {high ? high_half(sums.x) : low_half(sums.x),
                      high ? high_half(sums.y) : low_half(sums.y),
                      high ? high_half(sums.z) : low_half(sums.z),
                      high ? high_half(sums.w) : low_half(sums.w)}};
}
__device__ inline float dot_chunk(const ChunkQ6_K& chunk, int c, const XQuarters& x) {
    const float x_d[4] = {x.d.x, x.d.y, x.d.z, x.d.w};
    float sum = 0.0f;
#pragma unroll
    for (int quarter = 0; quarter < 4; quarter++) {
        const int low_shift = quarter >= 2 ? 4 : 0, high_shift = 2 * quarter;
        uint32_t q[4];  // the quarter's 16 six-bit values, 0 .. 63
#pragma unroll
        for (int m = 0; m < 4; m++) {
            const uint32_t ql = quarter % 2 ? chunk.ql_b[m] : chunk.ql_a[m];
            q[m] = ((ql >> low_shift) & 0x0F0F0F0F) | (((chunk.qh[m] >> high_shift) & 0x03030303) << 4);
        }
        const int dot = dot_16(q[0], q[1], q[2], q[3], x.q[quarter]) - 32 * x.sums[quarter];
        // The half's scale byte c % 2 + 2 quarter: word quarter / 2 of the two.
        const int scale = int8_t(chunk.scales[quarter / 2] >> (8 * (c % 2 + 2 * (quarter % 2))));
        sum += x_d[quarter] * float(scale * dot);
    }
    return half_bits_to_float(chunk.d) * sum;
}

}  // namespace gpu
