// quant_dot_x86.cpp - the block dot products of quant_dot.cpp in AVX2 and AVX-512 VNNI.
//
// The program is built for plain x86-64 (no -march flag), so each function here names the
// instructions it may use in a target attribute, and quant_dot.cpp calls one only after
// cpuid said the CPU has them.
//
// A kernel takes the weight row eight activation blocks at a time: 256 weights, one K-quant
// super-block or eight Q8_0/Q5_0 blocks. For each block it multiplies unsigned bytes by signed
// ones into eight int32 partial sums in one register (vpmaddubsw + vpmaddwd in AVX2, one
// vpdpbusd in VNNI), a tree of vphaddd folds the eight registers into one that holds the eight
// exact block sums, and the float combination is then a few vector instructions for all eight
// blocks: lane i of the accumulator is the scalar code's lanes[b % 8], and it takes the same
// fused multiply-adds in the same order. Those float steps are written once (the add_*
// functions) and inlined into both instruction sets' kernels. The short loops over a group's
// blocks and over the tokens are unrolled (#pragma GCC unroll) so that their arrays of
// registers stay in registers: without, the kernels run 1.4 to 1.8 times slower.
//
// Both instruction sets multiply an unsigned byte by a signed one, so the weights go in as
// unsigned: Q5_0, Q4_K and Q6_K as their unsigned q (0..31, 0..15, 0..63), the offset (16 or
// 32) taken off afterwards in integers; Q8_0's signed q as |q|, its sign moved onto the
// activation. vpmaddubsw adds two products into int16 with saturation, which never happens
// here: |q| <= 128 and |x| <= 127 keep a pair below 2^15.
#include "quant_dot_x86.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "block_fields.h"
#include "ggml_types.h"

#define AVX2_FUNCTION __attribute__((target("avx2,fma,f16c")))
#define VNNI_FUNCTION __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace {

// The weight blocks' layouts (ggml_types.h; quant_dot.cpp draws them).
using Q8_0 = block_layout::Q8_0;
using Q5_0 = block_layout::Q5_0;
using Q4_K = block_layout::Q4_K;
using Q6_K = block_layout::Q6_K;
static_assert(Q8_0::kOffsetD == 0 && Q5_0::kOffsetD == 0,
              "weight_scales reads the f16 d that opens a Q8_0 or Q5_0 block");

AVX2_FUNCTION inline __m256i load_256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

AVX2_FUNCTION inline __m256i lane_numbers() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }

// All bits set in lanes 0..count-1, none after: which lanes of a group hold a block.
AVX2_FUNCTION inline __m256i first_lanes(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane_numbers());
}

// The scales of the group's activation blocks, block i in lane i, zeros past count (a masked
// load reads nothing there, so the last group of a row may end anywhere).
AVX2_FUNCTION inline __m256 activation_scales(const float* scales, int count) {
    return _mm256_maskload_ps(scales, first_lanes(count));
}

// The sums of the group's activation blocks, block i in lane i, zeros past count.
AVX2_FUNCTION inline __m256i activation_sums(const int32_t* sums, int count) {
    return _mm256_maskload_epi32(sums, first_lanes(count));
}

// The f16 scales that open `count` weight blocks `stride` bytes apart, as floats in lanes
// 0..count-1 (zeros after): packed four to a 64-bit integer and converted. A gather
// (vpgatherdd) costs these cores more than the eight plain loads, which take no vector unit.
AVX2_FUNCTION inline __m256 weight_scales(const uint8_t* blocks, int stride, int count) {
    uint64_t packed[2] = {0, 0};
#pragma GCC unroll 8
    for (int i = 0; i < kDotLanes; i++)
        if (i < count) packed[i / 4] |= uint64_t(load_u16(blocks + i * stride)) << (16 * (i % 4));
    return _mm256_cvtph_ps(_mm_set_epi64x(int64_t(packed[1]), int64_t(packed[0])));
}

AVX2_FUNCTION inline float f16_scalar(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return _cvtsh_ss(bits);
}

// The exact sums of eight blocks' registers v0..v7 of eight int32 partial sums, block i in
// lane i, from pairs[k] = vphaddd(v[2k], v[2k + 1]). Taking the blocks in pairs as they are
// computed keeps fewer registers alive.
AVX2_FUNCTION inline __m256i sum_block_pairs(const __m256i* pairs) {  // (4)
    // Blocks 0-3: lanes 0-3 of each block's register summed in the low half, 4-7 in the high.
    __m256i blocks_0_3 = _mm256_hadd_epi32(pairs[0], pairs[1]);
    __m256i blocks_4_7 = _mm256_hadd_epi32(pairs[2], pairs[3]);
    __m256i low = _mm256_permute2x128_si256(blocks_0_3, blocks_4_7, 0x20);
    __m256i high = _mm256_permute2x128_si256(blocks_0_3, blocks_4_7, 0x31);
    return _mm256_add_epi32(low, high);
}

// Adds block i's register to the pairs for sum_block_pairs: the even block waits for its odd
// neighbour.
AVX2_FUNCTION inline void pair_up(__m256i* pairs, int i, __m256i v) {  // (4)
    pairs[i / 2] = i % 2 == 0 ? v : _mm256_hadd_epi32(pairs[i / 2], v);
}

// sum_dot_lanes' tree in registers, the same adds in the same order: lanes k and k + 4, then
// k and k + 2, then the last two.
AVX2_FUNCTION inline float finish_row(__m256 acc) {
    __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    __m128 halves = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

// The float steps, shared by both instruction sets. Q8_0, Q5_0 and Q6_K: lane i +=
// (weight scale * activation scale) * block sum i. Q4_K: see add_q4_k_group.
AVX2_FUNCTION inline __m256 add_scaled_sums(__m256 acc, __m256 w_scales, __m256 x_scales,
                                            __m256i isums) {
    return _mm256_fmadd_ps(_mm256_mul_ps(w_scales, x_scales), _mm256_cvtepi32_ps(isums), acc);
}

// Q5_0's q are stored plus 16: sum (q - 16) * x = sum q * x - 16 * x.sum.
AVX2_FUNCTION inline __m256i q5_0_remove_offset(__m256i qx, const int32_t* sums, int count) {
    return _mm256_sub_epi32(qx, _mm256_slli_epi32(activation_sums(sums, count), 4));
}

// Q4_K's eight 6-bit scales and mins (block_fields.h's unpack_k_scale_min), four bytes at a
// time: scale k+4 takes its low 4 bits from byte k+8 and its top 2 from bits 6-7 of byte k.
AVX2_FUNCTION inline void q4_k_scales_mins(const uint8_t* packed, __m256i* scales, __m256i* mins) {
    uint32_t bytes_0_3 = load_u32(packed), bytes_4_7 = load_u32(packed + 4);
    uint32_t bytes_8_11 = load_u32(packed + 8);
    uint32_t scales_0_3 = bytes_0_3 & 0x3f3f3f3f;
    uint32_t mins_0_3 = bytes_4_7 & 0x3f3f3f3f;
    uint32_t scales_4_7 = (bytes_8_11 & 0x0f0f0f0f) | ((bytes_0_3 >> 2) & 0x30303030);
    uint32_t mins_4_7 = ((bytes_8_11 >> 4) & 0x0f0f0f0f) | ((bytes_4_7 >> 2) & 0x30303030);
    *scales = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(scales_4_7) << 32 | scales_0_3));
    *mins = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(mins_4_7) << 32 | mins_0_3));
}

// Q4_K, sub-block i: y = fma(d, scale * qx, -(dmin * (min * x.sum))), lane i += x.d * y.
AVX2_FUNCTION inline __m256 add_q4_k_group(__m256 acc, const uint8_t* block, __m256i qx,
                                           const float* x_scales, const int32_t* x_sums) {
    __m256i scales, mins;
    q4_k_scales_mins(block + Q4_K::kOffsetScales, &scales, &mins);
    __m256 scaled = _mm256_cvtepi32_ps(_mm256_mullo_epi32(scales, qx));
    __m256 offsets = _mm256_cvtepi32_ps(_mm256_mullo_epi32(mins, activation_sums(x_sums, kDotLanes)));
    __m256 min_part = _mm256_mul_ps(_mm256_set1_ps(f16_scalar(block + Q4_K::kOffsetDmin)), offsets);
    __m256 y =
        _mm256_fmsub_ps(_mm256_set1_ps(f16_scalar(block + Q4_K::kOffsetD)), scaled, min_part);
    return _mm256_fmadd_ps(activation_scales(x_scales, kDotLanes), y, acc);
}

// Q6_K's sixteen signed sub-block scales, for activation block j (sub-blocks 2j and 2j + 1):
// scale 2j in the low half of the register, 2j + 1 in the high half, as int16.
AVX2_FUNCTION inline __m256i q6_k_scale_pair(__m128i scales, int j) {
    const __m128i halves = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m128i pick = _mm_add_epi8(halves, _mm_set1_epi8(char(2 * j)));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
}

// Q6_K's 6-bit q of activation block k (k < 4) of one 128-element half, in element order, from
// its 32 + 32 bytes of ql (low nibbles: blocks 0 and 1, high nibbles: 2 and 3) and 32 of qh
// (bits 2k and 2k + 1 become bits 4-5).
AVX2_FUNCTION inline __m256i q6_k_values(__m256i ql_0, __m256i ql_1, __m256i qh, int k) {
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F), bits_4_5 = _mm256_set1_epi8(0x30);
    __m256i ql = k % 2 == 0 ? ql_0 : ql_1;
    __m256i low = _mm256_and_si256(k < 2 ? ql : _mm256_srli_epi16(ql, 4), low_nibbles);
    __m256i high = k < 3 ? _mm256_slli_epi16(qh, 4 - 2 * k) : _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(low, _mm256_and_si256(high, bits_4_5));
}

// Q4_K's 32 q (0..15) of one sub-block of a pair, from the 32 bytes the pair shares: the low
// nibbles are the first sub-block's.
AVX2_FUNCTION inline __m256i q4_k_values(__m256i packed, bool high_nibbles) {
    __m256i nibbles = high_nibbles ? _mm256_srli_epi16(packed, 4) : packed;
    return _mm256_and_si256(nibbles, _mm256_set1_epi8(0x0F));
}

// Q5_0's low four bits of q in element order: qs[j] & 15 is element j, qs[j] >> 4 element j+16.
// The 16 bytes are loaded into both halves of the register at once, and the high half shifted
// by 4: no shuffle instruction, which the fifth bits need.
AVX2_FUNCTION inline __m256i q5_0_low_bits(const uint8_t* qs) {
    __m256i twice =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    __m256i shifted = _mm256_srlv_epi64(twice, _mm256_setr_epi64x(0, 0, 4, 4));
    return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// ---- AVX2 ----

// Eight int32 lanes, each the sum of four neighbouring products u[i] * s[i].
AVX2_FUNCTION inline __m256i dot_u8_s8_avx2(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Q8_0's signed q times x, as unsigned times signed bytes: |q| times x with the sign of q.
AVX2_FUNCTION inline __m256i q8_0_dot_avx2(__m256i q, __m256i xq) {
    return dot_u8_s8_avx2(_mm256_abs_epi8(q), _mm256_sign_epi8(xq, q));
}

// Q5_0's q (0..31): the fifth bit j of qh goes to byte j, as 16. Byte j of the register gets a
// copy of byte j / 8 of qh, keeps bit j % 8 and turns it into all ones, then into 16.
AVX2_FUNCTION inline __m256i q5_0_values_avx2(const uint8_t* block) {
    const __m256i byte_of_bit = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                                   0x0202020202020202, 0x0303030303030303);
    const __m256i bit_of_byte = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    __m256i copies =
        _mm256_shuffle_epi8(_mm256_set1_epi32(int(load_u32(block + Q5_0::kOffsetQh))), byte_of_bit);
    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(copies, bit_of_byte), bit_of_byte);
    __m256i fifth = _mm256_and_si256(set, _mm256_set1_epi8(0x10));
    return _mm256_or_si256(q5_0_low_bits(block + Q5_0::kOffsetQs), fifth);
}

// Q6_K, activation block j: sum over 16-element halves of (q - 32) * x times their scale.
// vpmaddubsw's pair sums of q * x and 32 * x stay within int16, and so does their difference.
AVX2_FUNCTION inline __m256i q6_k_scaled_dot_avx2(__m256i q, __m256i xq, __m256i scale_pair) {
    __m256i qx = _mm256_maddubs_epi16(q, xq);
    __m256i offset = _mm256_maddubs_epi16(_mm256_set1_epi8(32), xq);
    return _mm256_madd_epi16(_mm256_sub_epi16(qx, offset), scale_pair);
}

template <int kTokens>
AVX2_FUNCTION void q8_0_rows_avx2(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const int count = std::min(kDotLanes, n_blocks - b);
        const uint8_t* w = w_row + int64_t(b) * Q8_0::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 8
        for (int i = 0; i < kDotLanes; i++) {
            __m256i v[kTokens] = {};  // a block past the row's end adds nothing
            if (i < count) {
                __m256i q = load_256(w + i * Q8_0::kBytes + Q8_0::kOffsetQs);
#pragma GCC unroll 4
                for (int t = 0; t < kTokens; t++)
                    v[t] = q8_0_dot_avx2(q, load_256(x.blocks[int64_t(t) * n_blocks + b + i].q));
            }
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) pair_up(pairs[t], i, v[t]);
        }
        __m256 w_scales = weight_scales(w, Q8_0::kBytes, count);
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++) {
            const int64_t at = int64_t(t) * n_blocks + b;
            acc[t] = add_scaled_sums(acc[t], w_scales, activation_scales(x.scales + at, count),
                                     sum_block_pairs(pairs[t]));
        }
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

template <int kTokens>
AVX2_FUNCTION void q5_0_rows_avx2(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const int count = std::min(kDotLanes, n_blocks - b);
        const uint8_t* w = w_row + int64_t(b) * Q5_0::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 8
        for (int i = 0; i < kDotLanes; i++) {
            __m256i v[kTokens] = {};  // a block past the row's end adds nothing
            if (i < count) {
                __m256i q = q5_0_values_avx2(w + i * Q5_0::kBytes);
#pragma GCC unroll 4
                for (int t = 0; t < kTokens; t++)
                    v[t] = dot_u8_s8_avx2(q, load_256(x.blocks[int64_t(t) * n_blocks + b + i].q));
            }
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) pair_up(pairs[t], i, v[t]);
        }
        __m256 w_scales = weight_scales(w, Q5_0::kBytes, count);
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++) {
            const int64_t at = int64_t(t) * n_blocks + b;
            __m256i isums = q5_0_remove_offset(sum_block_pairs(pairs[t]), x.sums + at, count);
            acc[t] = add_scaled_sums(acc[t], w_scales, activation_scales(x.scales + at, count),
                                     isums);
        }
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

template <int kTokens>
AVX2_FUNCTION void q4_k_rows_avx2(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const uint8_t* block = w_row + int64_t(b / kDotLanes) * Q4_K::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m256i packed = load_256(block + Q4_K::kOffsetQs + 32 * c);
            __m256i q_low = q4_k_values(packed, false), q_high = q4_k_values(packed, true);
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) {
                const BlockQ8* xt = x.blocks + int64_t(t) * n_blocks + b + 2 * c;
                pairs[t][c] = _mm256_hadd_epi32(dot_u8_s8_avx2(q_low, load_256(xt[0].q)),
                                                dot_u8_s8_avx2(q_high, load_256(xt[1].q)));
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++)
            acc[t] = add_q4_k_group(acc[t], block, sum_block_pairs(pairs[t]),
                                    x.scales + int64_t(t) * n_blocks + b,
                                    x.sums + int64_t(t) * n_blocks + b);
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

template <int kTokens>
AVX2_FUNCTION void q6_k_rows_avx2(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const uint8_t* block = w_row + int64_t(b / kDotLanes) * Q6_K::kBytes;
        __m128i scales =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + Q6_K::kOffsetScales));
        __m256i pairs[kTokens][4];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i ql_0 = load_256(block + Q6_K::kOffsetQl + 64 * h);
            __m256i ql_1 = load_256(block + Q6_K::kOffsetQl + 64 * h + 32);
            __m256i qh = load_256(block + Q6_K::kOffsetQh + 32 * h);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                int j = 4 * h + k;
                __m256i q = q6_k_values(ql_0, ql_1, qh, k);
                __m256i scale_pair = q6_k_scale_pair(scales, j);
#pragma GCC unroll 4
                for (int t = 0; t < kTokens; t++) {
                    __m256i xq = load_256(x.blocks[int64_t(t) * n_blocks + b + j].q);
                    __m256i v = q6_k_scaled_dot_avx2(q, xq, scale_pair);
                    pair_up(pairs[t], j, v);
                }
            }
        }
        __m256 d = _mm256_set1_ps(f16_scalar(block + Q6_K::kOffsetD));
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++) {
            const int64_t at = int64_t(t) * n_blocks + b;
            acc[t] = add_scaled_sums(acc[t], d, activation_scales(x.scales + at, kDotLanes),
                                     sum_block_pairs(pairs[t]));
        }
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

// ---- AVX-512 VNNI, on 256-bit registers: the float steps stay eight lanes wide, and the 32
// registers and byte masks of AVX-512VL/BW come along. Q6_K keeps the AVX2 kernel (see
// simd_row_dots). ----
//
// The row kernels below repeat the AVX2 ones but for their integer dot (dot_u8_s8_vnni,
// q5_0_values_vnni). One template for both cannot be: a function's target attribute is its
// instruction set, every instantiation of a template gets the same one, and an AVX2 kernel
// compiled with AVX-512 allowed could use it on a CPU without.

// Eight int32 lanes, each the sum of four neighbouring products u[i] * s[i], in one vpdpbusd.
VNNI_FUNCTION inline __m256i dot_u8_s8_vnni(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

VNNI_FUNCTION inline __m256i q8_0_dot_vnni(__m256i q, __m256i xq) {
    return dot_u8_s8_vnni(_mm256_abs_epi8(q), _mm256_sign_epi8(xq, q));
}

// Q5_0's q (0..31): qh is a byte mask, bit j choosing whether byte j gets 16.
VNNI_FUNCTION inline __m256i q5_0_values_vnni(const uint8_t* block) {
    __m256i fifth =
        _mm256_maskz_mov_epi8(__mmask32(load_u32(block + Q5_0::kOffsetQh)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(q5_0_low_bits(block + Q5_0::kOffsetQs), fifth);
}

template <int kTokens>
VNNI_FUNCTION void q8_0_rows_vnni(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const int count = std::min(kDotLanes, n_blocks - b);
        const uint8_t* w = w_row + int64_t(b) * Q8_0::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 8
        for (int i = 0; i < kDotLanes; i++) {
            __m256i v[kTokens] = {};  // a block past the row's end adds nothing
            if (i < count) {
                __m256i q = load_256(w + i * Q8_0::kBytes + Q8_0::kOffsetQs);
#pragma GCC unroll 4
                for (int t = 0; t < kTokens; t++)
                    v[t] = q8_0_dot_vnni(q, load_256(x.blocks[int64_t(t) * n_blocks + b + i].q));
            }
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) pair_up(pairs[t], i, v[t]);
        }
        __m256 w_scales = weight_scales(w, Q8_0::kBytes, count);
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++) {
            const int64_t at = int64_t(t) * n_blocks + b;
            acc[t] = add_scaled_sums(acc[t], w_scales, activation_scales(x.scales + at, count),
                                     sum_block_pairs(pairs[t]));
        }
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

template <int kTokens>
VNNI_FUNCTION void q5_0_rows_vnni(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const int count = std::min(kDotLanes, n_blocks - b);
        const uint8_t* w = w_row + int64_t(b) * Q5_0::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 8
        for (int i = 0; i < kDotLanes; i++) {
            __m256i v[kTokens] = {};  // a block past the row's end adds nothing
            if (i < count) {
                __m256i q = q5_0_values_vnni(w + i * Q5_0::kBytes);
#pragma GCC unroll 4
                for (int t = 0; t < kTokens; t++)
                    v[t] = dot_u8_s8_vnni(q, load_256(x.blocks[int64_t(t) * n_blocks + b + i].q));
            }
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) pair_up(pairs[t], i, v[t]);
        }
        __m256 w_scales = weight_scales(w, Q5_0::kBytes, count);
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++) {
            const int64_t at = int64_t(t) * n_blocks + b;
            __m256i isums = q5_0_remove_offset(sum_block_pairs(pairs[t]), x.sums + at, count);
            acc[t] = add_scaled_sums(acc[t], w_scales, activation_scales(x.scales + at, count),
                                     isums);
        }
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

template <int kTokens>
VNNI_FUNCTION void q4_k_rows_vnni(const uint8_t* w_row, Q8Rows x, float* out) {
    const int n_blocks = x.n_blocks;
    __m256 acc[kTokens];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int b = 0; b < n_blocks; b += kDotLanes) {
        const uint8_t* block = w_row + int64_t(b / kDotLanes) * Q4_K::kBytes;
        __m256i pairs[kTokens][4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m256i packed = load_256(block + Q4_K::kOffsetQs + 32 * c);
            __m256i q_low = q4_k_values(packed, false), q_high = q4_k_values(packed, true);
#pragma GCC unroll 4
            for (int t = 0; t < kTokens; t++) {
                const BlockQ8* xt = x.blocks + int64_t(t) * n_blocks + b + 2 * c;
                pairs[t][c] = _mm256_hadd_epi32(dot_u8_s8_vnni(q_low, load_256(xt[0].q)),
                                                dot_u8_s8_vnni(q_high, load_256(xt[1].q)));
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < kTokens; t++)
            acc[t] = add_q4_k_group(acc[t], block, sum_block_pairs(pairs[t]),
                                    x.scales + int64_t(t) * n_blocks + b,
                                    x.sums + int64_t(t) * n_blocks + b);
    }
    for (int t = 0; t < kTokens; t++) out[t] = finish_row(acc[t]);
}

// A row kernel's one-token case over consecutive rows (a RowsDot). The kernel is inlined into
// the loop, so its constants are loaded once for all the rows, not once a row.
template <void (*kRowDot)(const uint8_t*, Q8Rows, float*)>
AVX2_FUNCTION void each_row_avx2(const uint8_t* w_rows, uint64_t row_bytes, int n_rows, Q8Rows x,
                                 float* out) {
    const uint64_t rows_bytes = uint64_t(n_rows) * row_bytes;
    for (int o = 0; o < n_rows; o++) {
        const uint64_t row_start = uint64_t(o) * row_bytes;
        prefetch_ahead(w_rows, row_start, row_bytes, rows_bytes);
        kRowDot(w_rows + row_start, x, out + o);
    }
}

// The same for the VNNI kernels: a function is inlined only into one allowed its instructions.
template <void (*kRowDot)(const uint8_t*, Q8Rows, float*)>
VNNI_FUNCTION void each_row_vnni(const uint8_t* w_rows, uint64_t row_bytes, int n_rows, Q8Rows x,
                                 float* out) {
    const uint64_t rows_bytes = uint64_t(n_rows) * row_bytes;
    for (int o = 0; o < n_rows; o++) {
        const uint64_t row_start = uint64_t(o) * row_bytes;
        prefetch_ahead(w_rows, row_start, row_bytes, rows_bytes);
        kRowDot(w_rows + row_start, x, out + o);
    }
}

// F16C (the f16 -> float conversion) straight from cpuid: clang's __builtin_cpu_supports does
// not know its name. In a virtual machine cpuid traps to the hypervisor, microseconds that
// matmul_q8 would pay at every call: it is asked once.
bool has_f16c() {
    static const bool has = [] {
        unsigned eax, ebx, ecx, edx;
        return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
    }();
    return has;
}

}  // namespace

bool simd_kernel_runs(DotKernel kernel) {
    switch (kernel) {
        case DotKernel::Avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
        case DotKernel::Avx512Vnni:
            return simd_kernel_runs(DotKernel::Avx2) && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vnni");
        default: return false;
    }
}

RowDots simd_row_dots(DotKernel kernel, uint32_t w_type) {
    const bool vnni = kernel == DotKernel::Avx512Vnni;
    if (kernel != DotKernel::Avx2 && !vnni) return {nullptr, nullptr};
    switch (GgmlType(w_type)) {
        case GgmlType::Q8_0:
            if (vnni) return {each_row_vnni<q8_0_rows_vnni<1>>, q8_0_rows_vnni<kRowDotTokens>};
            return {each_row_avx2<q8_0_rows_avx2<1>>, q8_0_rows_avx2<kRowDotTokens>};
        case GgmlType::Q5_0:
            if (vnni) return {each_row_vnni<q5_0_rows_vnni<1>>, q5_0_rows_vnni<kRowDotTokens>};
            return {each_row_avx2<q5_0_rows_avx2<1>>, q5_0_rows_avx2<kRowDotTokens>};
        case GgmlType::Q4_K:
            if (vnni) return {each_row_vnni<q4_k_rows_vnni<1>>, q4_k_rows_vnni<kRowDotTokens>};
            return {each_row_avx2<q4_k_rows_avx2<1>>, q4_k_rows_avx2<kRowDotTokens>};
        case GgmlType::Q6_K:
            // vpdpbusd would need an int32 multiply by the sub-block scales after it, where
            // vpmaddubsw's int16 pair sums take them in vpmaddwd: AVX2 is as fast here.
            return {each_row_avx2<q6_k_rows_avx2<1>>, q6_k_rows_avx2<kRowDotTokens>};
        default: return {nullptr, nullptr};
    }
}

#else  // not x86-64: the scalar kernel alone

bool simd_kernel_runs(DotKernel) { return false; }

RowDots simd_row_dots(DotKernel, uint32_t) { return {nullptr, nullptr}; }

#endif
