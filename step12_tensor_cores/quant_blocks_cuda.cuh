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
// Decoding (fused_decode.cu's kernels) multiplies a piece with 8-bit activations instead,
// the CPU's BlockQ8 (quant_dot.h), built by the same arithmetic: dot_q8(piece, p, x) makes the
// 8 quants into 4-byte words of small integers and adds their products with x's 8 bytes by
// two dp4a instructions (4 products of bytes and their sum, in one instruction), then scales
// the integer sum by the two blocks' scales. Per weight that is a quarter of an instruction
// and one byte of x, where the float path takes two instructions and 4 bytes of x.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "ggml_types.h"
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
// The 8 activations of piece p, as two words of 4 int8, and their block's scale.
struct ActivationPiece {
    int2 q;
    float d;
};
__device__ inline ActivationPiece activation_piece(const BlockQ8* x, int p) {
    const BlockQ8& block = x[p / 4];
    return ActivationPiece{*reinterpret_cast<const int2*>(block.q + 8 * (p % 4)), block.d};
}
// The integer dot product of 8 small non-negative integers (4 bytes in each of two words)
// with 8 int8 activations, and the sum of those activations.
__device__ inline int dot_8_bytes(uint32_t low, uint32_t high, int2 x) {
    return __dp4a(int(low), x.x, __dp4a(int(high), x.y, 0));
}
__device__ inline int sum_8_bytes(int2 x) {
    return __dp4a(0x01010101, x.x, __dp4a(0x01010101, x.y, 0));
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
__device__ inline float dot_q8(const PieceQ8_0& piece, int, const ActivationPiece& x) {
    const int sum = __dp4a(int(piece.q.x), x.q.x, __dp4a(int(piece.q.y), x.q.y, 0));
    return half_bits_to_float(piece.d) * x.d * float(sum);
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
// Fifth bits 0-3 of `bits` moved to bit 4 of bytes 0-3.
__device__ inline uint32_t spread_4_bits(uint32_t bits) {
    return ((bits & 1) << 4) | ((bits & 2) << 11) | ((bits & 4) << 18) | ((bits & 8) << 25);
}
__device__ inline float dot_q8(const PieceQ5_0& piece, int p, const ActivationPiece& x) {
    const int shift = p % 4 >= 2 ? 4 : 0;
    const uint32_t low = ((piece.qs.x >> shift) & 0x0F0F0F0F) | spread_4_bits(piece.qh);
    const uint32_t high = ((piece.qs.y >> shift) & 0x0F0F0F0F) | spread_4_bits(piece.qh >> 4);
    // sum of (q - 16) * x = sum of q * x - 16 * sum of x
    const int sum = dot_8_bytes(low, high, x.q) - 16 * sum_8_bytes(x.q);
    return half_bits_to_float(piece.d) * x.d * float(sum);
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
    uint32_t scales_0_3, scales_4_7, scales_8_11;  // the 12 bytes of scales and mins
    uint2 qs;                                      // 8 bytes of qs
};
__device__ inline PieceQ4_K load_piece(const BlockQ4_K* row, int p) {
    const uint8_t* block = row[p / 32].bytes;
    const int r = p % 32;  // weights 8r .. 8r + 7 of the block
    const uint8_t* qs_bytes = block + Q4_K::kOffsetQs + 32 * (r / 8) + 8 * (r % 4);
    const uint2 qs = __ldg(reinterpret_cast<const uint2*>(qs_bytes));
    const uint8_t* scales = block + Q4_K::kOffsetScales;
    return PieceQ4_K{load_u32(block + Q4_K::kOffsetD), load_u32(scales), load_u32(scales + 4),
                     load_u32(scales + 8), qs};
}
// The 6-bit scale and min of the piece's sub-block.
__device__ inline void scale_min(const PieceQ4_K& piece, int sub, int& scale, int& min) {
    // Byte sub % 4 of each third of the 12 bytes (dequantize.cpp's unpack_k_scale_min).
    const int shift = 8 * (sub % 4);
    const int low = (piece.scales_0_3 >> shift) & 0xFF, high = (piece.scales_4_7 >> shift) & 0xFF;
    const int extra = (piece.scales_8_11 >> shift) & 0xFF;
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
    scale_min(piece, sub, scale, min);
    const float d = half_bits_to_float(piece.d_dmin) * float(scale);
    const float m = half_bits_to_float(piece.d_dmin >> 16) * float(min);
    const int nibble = sub % 2 ? 4 : 0;  // the odd sub-block of a pair: the high nibbles
    for (int k = 0; k < 8; k++) w[k] = d * float((byte_of(piece.qs, k) >> nibble) & 0xF) - m;
}
__device__ inline float dot_q8(const PieceQ4_K& piece, int p, const ActivationPiece& x) {
    const int sub = (p % 32) / 4;
    int scale, min;
    scale_min(piece, sub, scale, min);
    const int nibble = sub % 2 ? 4 : 0;
    const int qx =
        dot_8_bytes((piece.qs.x >> nibble) & 0x0F0F0F0F, (piece.qs.y >> nibble) & 0x0F0F0F0F, x.q);
    // sum of (d * scale * q - dmin * min) * x_d * xq = x_d * (d * scale * sum(q xq) - dmin * min * sum(xq))
    const float d = half_bits_to_float(piece.d_dmin), dmin = half_bits_to_float(piece.d_dmin >> 16);
    return x.d * (d * float(scale * qx) - dmin * float(min * sum_8_bytes(x.q)));
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
__device__ inline float dot_q8(const PieceQ6_K& piece, int p, const ActivationPiece& x) {
    const int quarter = (8 * (p % 32) % 128) / 32;
    const int low_shift = quarter >= 2 ? 4 : 0, high_shift = 2 * quarter;
    const uint32_t low =
        ((piece.ql.x >> low_shift) & 0x0F0F0F0F) | (((piece.qh.x >> high_shift) & 0x03030303) << 4);
    const uint32_t high =
        ((piece.ql.y >> low_shift) & 0x0F0F0F0F) | (((piece.qh.y >> high_shift) & 0x03030303) << 4);
    const int sum = dot_8_bytes(low, high, x.q) - 32 * sum_8_bytes(x.q);  // q - 32
    return half_bits_to_float(piece.d) * float(piece.scale) * x.d * float(sum);
}
__device__ inline float weight_at(const BlockQ6_K* row, int i) {
    const BlockQ6_K* block = row + i / 256;
    const int e = i % 256;
    float w[8];
    unpack(load_piece(block, e / 8), e / 8, w);
    return pick(w, e % 8);
}

}  // namespace gpu
