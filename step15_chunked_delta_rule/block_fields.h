// block_fields.h - the little-endian fields of a ggml block, read byte by byte: what
// dequantize.cpp (step 3) and step 11's block dot products (quant_dot.cpp, quant_dot_x86.cpp)
// both read.
#pragma once

#include <cstdint>

#include "half.h"

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

inline uint32_t load_u32(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

inline float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

// Q4_K and Q5_K pack 8 six-bit scales and 8 six-bit mins into 12 bytes:
//   bytes 0-3:  scale k (k < 4) in the low 6 bits; top 2 bits = bits 4-5 of scale k+4
//   bytes 4-7:  min k   (k < 4) in the low 6 bits; top 2 bits = bits 4-5 of min k+4
//   bytes 8-11: low 4 bits of scale k+4 | low 4 bits of min k+4 in the high nibble
inline void unpack_k_scale_min(const uint8_t* scales, int k, int* scale, int* min) {
    if (k < 4) {
        *scale = scales[k] & 63;
        *min = scales[k + 4] & 63;
    } else {
        *scale = (scales[k + 4] & 0x0F) | ((scales[k - 4] >> 6) << 4);
        *min = (scales[k + 4] >> 4) | ((scales[k] >> 6) << 4);
    }
}
