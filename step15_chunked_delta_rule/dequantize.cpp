// dequantize.cpp - every supported ggml storage type, turned back into float32.
//
// Each routine walks the blocks one at a time and reads the fields at the byte offsets of
// ggml's C struct for that block: block_layout (ggml_types.h) holds them, the table at the top
// of each function draws them. All multi-byte fields are little-endian; scales marked f16 are
// IEEE half floats (common/half.h).
//
// The arithmetic is the reference's: (d * scale) * q, then - dmin * min or + m. Every product
// fits in float32's 24-bit mantissa, so only the last add rounds and the results match
// gguf-py's numpy code bit for bit (test_dequantize.cpp checks this).
#include "dequantize.h"

#include "block_fields.h"
#include "error.h"
#include "ggml_types.h"
#include "half.h"

void dequantize_f32(const void* src, float* dst, int64_t n) {
    const uint8_t* bytes = static_cast<const uint8_t*>(src);  // (n, 4)
    for (int64_t i = 0; i < n; i++) dst[i] = f32_from_bits(load_u32(bytes + 4 * i));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
    const uint8_t* bytes = static_cast<const uint8_t*>(src);  // (n, 2)
    for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(load_u16(bytes + 2 * i));
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
    const uint8_t* bytes = static_cast<const uint8_t*>(src);  // (n, 2)
    for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(load_u16(bytes + 2 * i));
}

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
    // block_q4_0 (18 bytes, 32 elements)
    //   d       f16    2 bytes  offset 0
    //   qs[16]  u8    16 bytes  offset 2   element j: low nibble of qs[j]; element j+16: high
    // value = d * (q - 8)
    using Block = block_layout::Q4_0;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        const uint8_t* qs = block + Block::kOffsetQs;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * float((qs[j] & 0x0F) - 8);
            dst[j + 16] = d * float((qs[j] >> 4) - 8);
        }
    }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
    // block_q4_1 (20 bytes, 32 elements)
    //   d       f16    2 bytes  offset 0
    //   m       f16    2 bytes  offset 2   the block's minimum
    //   qs[16]  u8    16 bytes  offset 4   element j: low nibble of qs[j]; element j+16: high
    // value = d * q + m
    using Block = block_layout::Q4_1;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        float m = load_f16(block + Block::kOffsetM);
        const uint8_t* qs = block + Block::kOffsetQs;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * float(qs[j] & 0x0F) + m;
            dst[j + 16] = d * float(qs[j] >> 4) + m;
        }
    }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
    // block_q5_0 (22 bytes, 32 elements)
    //   d       f16    2 bytes  offset 0
    //   qh      u32    4 bytes  offset 2   bit j = 5th (high) bit of element j
    //   qs[16]  u8    16 bytes  offset 6   low 4 bits: element j low nibble, j+16 high nibble
    // value = d * (q - 16), q = 5 bits
    using Block = block_layout::Q5_0;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        uint32_t qh = load_u32(block + Block::kOffsetQh);
        const uint8_t* qs = block + Block::kOffsetQs;
        for (int j = 0; j < 16; j++) {
            int low = (qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
            int high = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * float(low - 16);
            dst[j + 16] = d * float(high - 16);
        }
    }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
    // block_q5_1 (24 bytes, 32 elements)
    //   d       f16    2 bytes  offset 0
    //   m       f16    2 bytes  offset 2   the block's minimum
    //   qh      u32    4 bytes  offset 4   bit j = 5th (high) bit of element j
    //   qs[16]  u8    16 bytes  offset 8   low 4 bits: element j low nibble, j+16 high nibble
    // value = d * q + m, q = 5 bits
    using Block = block_layout::Q5_1;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        float m = load_f16(block + Block::kOffsetM);
        uint32_t qh = load_u32(block + Block::kOffsetQh);
        const uint8_t* qs = block + Block::kOffsetQs;
        for (int j = 0; j < 16; j++) {
            int low = (qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
            int high = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            dst[j] = d * float(low) + m;
            dst[j + 16] = d * float(high) + m;
        }
    }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
    // block_q8_0 (34 bytes, 32 elements)
    //   d       f16    2 bytes  offset 0
    //   qs[32]  int8  32 bytes  offset 2
    // value = d * q
    // BEGIN SOLUTION step03 dequantize_q8_0
    using Block = block_layout::Q8_0;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        const int8_t* qs = reinterpret_cast<const int8_t*>(block + Block::kOffsetQs);
        for (int j = 0; j < 32; j++) dst[j] = d * float(qs[j]);
    }
    // END SOLUTION
}

// The K-quants: "super-blocks" of 256 elements split into 16 or 8 sub-blocks, each with its
// own small integer scale (and min), which the super-block's f16 d (and dmin) scale again.

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
    // block_q2_K (84 bytes, 256 elements = 16 sub-blocks of 16)
    //   scales[16]  u8    16 bytes  offset 0    sub-block s: scale = low nibble, min = high nibble
    //   qs[64]      u8    64 bytes  offset 16   2-bit q, four per byte
    //   d           f16    2 bytes  offset 80
    //   dmin        f16    2 bytes  offset 82
    // Element 128*half + 32*shift + 16*h + l (half 0-1, shift 0-3, h 0-1, l 0-15) is
    // q = (qs[32*half + 16*h + l] >> 2*shift) & 3 in sub-block s = 8*half + 2*shift + h.
    // value = d * scale * q - dmin * min
    using Block = block_layout::Q2_K;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        const uint8_t* scales = block + Block::kOffsetScales;
        float d = load_f16(block + Block::kOffsetD);
        float dmin = load_f16(block + Block::kOffsetDmin);
        for (int half = 0; half < 2; half++) {
            const uint8_t* qs = block + Block::kOffsetQs + 32 * half;
            float* y = dst + 128 * half;  // (128,)
            for (int shift = 0; shift < 4; shift++) {
                for (int h = 0; h < 2; h++) {
                    uint8_t scale_min = scales[8 * half + 2 * shift + h];
                    float scale = d * float(scale_min & 0x0F);
                    float min = dmin * float(scale_min >> 4);
                    for (int l = 0; l < 16; l++) {
                        int q = (qs[16 * h + l] >> (2 * shift)) & 3;
                        y[32 * shift + 16 * h + l] = scale * float(q) - min;
                    }
                }
            }
        }
    }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
    // block_q3_K (110 bytes, 256 elements = 16 sub-blocks of 16)
    //   hmask[32]   u8    32 bytes  offset 0    3rd bit of each q:
    //                                           bit k of hmask[m] is element 32k + m
    //   qs[64]      u8    64 bytes  offset 32   low 2 bits of q, four per byte (order as in Q2_K)
    //   scales[12]  u8    12 bytes  offset 96   16 six-bit scales, stored + 32:
    //                                           low 4 bits of s: scales[s] & 15 (s < 8),
    //                                           scales[s-8] >> 4 (s >= 8);
    //                                           high 2 bits: (scales[8 + s%4] >> 2*(s/4)) & 3
    //   d           f16    2 bytes  offset 108
    // q = low 2 bits - 4 when its hmask bit is CLEAR (so q is in -4..3).
    // value = d * (scale - 32) * q
    using Block = block_layout::Q3_K;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        const uint8_t* hmask = block + Block::kOffsetHmask;
        const uint8_t* packed = block + Block::kOffsetScales;
        float d = load_f16(block + Block::kOffsetD);
        for (int half = 0; half < 2; half++) {
            const uint8_t* qs = block + Block::kOffsetQs + 32 * half;
            float* y = dst + 128 * half;  // (128,)
            for (int shift = 0; shift < 4; shift++) {
                int hmask_bit = 4 * half + shift;
                for (int h = 0; h < 2; h++) {
                    int s = 8 * half + 2 * shift + h;
                    int low4 = s < 8 ? packed[s] & 0x0F : packed[s - 8] >> 4;
                    int high2 = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
                    float scale = d * float((low4 | (high2 << 4)) - 32);
                    for (int l = 0; l < 16; l++) {
                        int m = 16 * h + l;
                        int low2 = (qs[m] >> (2 * shift)) & 3;
                        int high_bit = (hmask[m] >> hmask_bit) & 1;
                        int q = low2 - 4 + 4 * high_bit;  // minus 4 unless the hmask bit is set
                        y[32 * shift + m] = scale * float(q);
                    }
                }
            }
        }
    }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
    // block_q4_K (144 bytes, 256 elements = 8 sub-blocks of 32)
    //   d           f16     2 bytes  offset 0
    //   dmin        f16     2 bytes  offset 2
    //   scales[12]  u8     12 bytes  offset 4    8 six-bit scales + 8 six-bit mins
    //   qs[128]     u8    128 bytes  offset 16   per 64 elements: 32 bytes, low nibbles first
    // Elements 64c + l (l < 32) are the low nibbles of qs[32c + l], sub-block 2c;
    // elements 64c + 32 + l are the high nibbles, sub-block 2c + 1.
    // value = d * scale * q - dmin * min
    // BEGIN SOLUTION step03 dequantize_q4_k
    using Block = block_layout::Q4_K;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        float dmin = load_f16(block + Block::kOffsetDmin);
        for (int c = 0; c < 4; c++) {
            const uint8_t* qs = block + Block::kOffsetQs + 32 * c;
            float* y = dst + 64 * c;  // (64,)
            int scale_low, min_low, scale_high, min_high;
            unpack_k_scale_min(block + Block::kOffsetScales, 2 * c, &scale_low, &min_low);
            unpack_k_scale_min(block + Block::kOffsetScales, 2 * c + 1, &scale_high, &min_high);
            float d_low = d * float(scale_low), m_low = dmin * float(min_low);
            float d_high = d * float(scale_high), m_high = dmin * float(min_high);
            for (int l = 0; l < 32; l++) {
                y[l] = d_low * float(qs[l] & 0x0F) - m_low;
                y[l + 32] = d_high * float(qs[l] >> 4) - m_high;
            }
        }
    }
    // END SOLUTION
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
    // block_q5_K (176 bytes, 256 elements = 8 sub-blocks of 32)
    //   d           f16     2 bytes  offset 0
    //   dmin        f16     2 bytes  offset 2
    //   scales[12]  u8     12 bytes  offset 4    packed as in Q4_K
    //   qh[32]      u8     32 bytes  offset 16   5th bits: bit k of qh[l] is element 32k + l
    //   qs[128]     u8    128 bytes  offset 48   low 4 bits, laid out as in Q4_K
    // value = d * scale * q - dmin * min, q = 5 bits
    using Block = block_layout::Q5_K;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        float dmin = load_f16(block + Block::kOffsetDmin);
        const uint8_t* qh = block + Block::kOffsetQh;
        for (int c = 0; c < 4; c++) {
            const uint8_t* qs = block + Block::kOffsetQs + 32 * c;
            float* y = dst + 64 * c;  // (64,)
            int scale_low, min_low, scale_high, min_high;
            unpack_k_scale_min(block + Block::kOffsetScales, 2 * c, &scale_low, &min_low);
            unpack_k_scale_min(block + Block::kOffsetScales, 2 * c + 1, &scale_high, &min_high);
            float d_low = d * float(scale_low), m_low = dmin * float(min_low);
            float d_high = d * float(scale_high), m_high = dmin * float(min_high);
            for (int l = 0; l < 32; l++) {
                int q_low = (qs[l] & 0x0F) | (((qh[l] >> (2 * c)) & 1) << 4);
                int q_high = (qs[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
                y[l] = d_low * float(q_low) - m_low;
                y[l + 32] = d_high * float(q_high) - m_high;
            }
        }
    }
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
    // block_q6_K (210 bytes, 256 elements = 16 sub-blocks of 16)
    //   ql[128]     u8    128 bytes  offset 0     low 4 bits of q
    //   qh[64]      u8     64 bytes  offset 128   high 2 bits of q, four per byte
    //   scales[16]  int8   16 bytes  offset 192   one signed scale per 16 elements
    //   d           f16     2 bytes  offset 208
    // Each 128-element half uses 64 bytes of ql and 32 of qh. Within a half, for l < 32:
    //   element l      = ql[l]    low nibble  | qh[l] bits 0-1 << 4
    //   element l + 32 = ql[l+32] low nibble  | qh[l] bits 2-3 << 4
    //   element l + 64 = ql[l]    high nibble | qh[l] bits 4-5 << 4
    //   element l + 96 = ql[l+32] high nibble | qh[l] bits 6-7 << 4
    // value = d * scale * (q - 32), scale = scales[element / 16]
    // BEGIN SOLUTION step03 dequantize_q6_k
    using Block = block_layout::Q6_K;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        const int8_t* scales = reinterpret_cast<const int8_t*>(block + Block::kOffsetScales);
        float sub_scale[16];  // (16,) d * scale of each 16-element sub-block
        for (int s = 0; s < 16; s++) sub_scale[s] = d * float(scales[s]);
        for (int half = 0; half < 2; half++) {
            const uint8_t* ql = block + Block::kOffsetQl + 64 * half;
            const uint8_t* qh = block + Block::kOffsetQh + 32 * half;
            float* y = dst + 128 * half;             // (128,)
            const float* ys = sub_scale + 8 * half;  // (8,) scales of this half
            for (int l = 0; l < 32; l++) {
                int q0 = (ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4);
                int q1 = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
                int q2 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                int q3 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                int s = l / 16;
                y[l] = ys[s] * float(q0 - 32);
                y[l + 32] = ys[s + 2] * float(q1 - 32);
                y[l + 64] = ys[s + 4] * float(q2 - 32);
                y[l + 96] = ys[s + 6] * float(q3 - 32);
            }
        }
    }
    // END SOLUTION
}

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
    // block_iq4_nl (18 bytes, 32 elements), laid out like Q4_0
    //   d       f16    2 bytes  offset 0
    //   qs[16]  u8    16 bytes  offset 2   element j: low nibble of qs[j]; element j+16: high
    // value = d * kValues[q]: the nibble indexes a fixed table (ggml's kvalues_iq4nl) instead
    // of being the value. Its levels crowd around zero, where most weights of a bell-shaped
    // row lie, and spread out in the tails, so 4 bits lose less than Q4_0's evenly spaced
    // q - 8 do.
    static constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                           1,    13,   25,  38,  53,  69,  89,  113};
    using Block = block_layout::IQ4_NL;
    const uint8_t* block = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < n / Block::kWeights;
         b++, block += Block::kBytes, dst += Block::kWeights) {
        float d = load_f16(block + Block::kOffsetD);
        const uint8_t* qs = block + Block::kOffsetQs;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * float(kValues[qs[j] & 0x0F]);
            dst[j + 16] = d * float(kValues[qs[j] >> 4]);
        }
    }
}

void dequantize(uint32_t type_id, const void* src, float* dst, int64_t n) {
    const GgmlTypeInfo& type = ggml_type_info(type_id);  // fails for an unknown id
    if (n < 0 || n % type.block_size != 0)
        fail(
            "cannot dequantize %lld elements of %s: not a whole number of blocks (%u elements "
            "each)",
            (long long)n, type.name, type.block_size);
    switch (GgmlType(type_id)) {
        case GgmlType::F32: return dequantize_f32(src, dst, n);
        case GgmlType::F16: return dequantize_f16(src, dst, n);
        case GgmlType::BF16: return dequantize_bf16(src, dst, n);
        case GgmlType::Q4_0: return dequantize_q4_0(src, dst, n);
        case GgmlType::Q4_1: return dequantize_q4_1(src, dst, n);
        case GgmlType::Q5_0: return dequantize_q5_0(src, dst, n);
        case GgmlType::Q5_1: return dequantize_q5_1(src, dst, n);
        case GgmlType::Q8_0: return dequantize_q8_0(src, dst, n);
        case GgmlType::Q2_K: return dequantize_q2_k(src, dst, n);
        case GgmlType::Q3_K: return dequantize_q3_k(src, dst, n);
        case GgmlType::Q4_K: return dequantize_q4_k(src, dst, n);
        case GgmlType::Q5_K: return dequantize_q5_k(src, dst, n);
        case GgmlType::Q6_K: return dequantize_q6_k(src, dst, n);
        case GgmlType::IQ4_NL: return dequantize_iq4_nl(src, dst, n);
        default: fail("dequantization of %s is not supported", type.name);
    }
}
