// half.h - IEEE binary16 ("f16") and bfloat16 ("bf16") <-> float32, bit by bit.
//
// Written out by hand (no _Float16, no intrinsics) so the same code compiles everywhere and a
// reader can see the format: f16 = 1 sign, 5 exponent (bias 15), 10 mantissa bits;
// bf16 = the top 16 bits of a float32.
#pragma once

#include <cstdint>
#include <cstring>

inline float f32_from_bits(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

inline uint32_t f32_to_bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h >> 15) << 31;
    uint32_t exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    if (exponent == 0x1f)  // infinity or NaN: keep the payload
        return f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        if (mantissa == 0) return f32_from_bits(sign);  // signed zero
        // subnormal: value = mantissa * 2^-24, exact in float32
        float magnitude = float(mantissa) * (1.0f / 16777216.0f);
        return sign ? -magnitude : magnitude;
    }
    return f32_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));  // 112 = 127 - 15
}

// Round to nearest, ties to even; overflow becomes infinity; NaN stays NaN.
inline uint16_t f32_to_f16(float value) {
    uint32_t bits = f32_to_bits(value);
    uint32_t sign = (bits >> 16) & 0x8000;
    uint32_t magnitude = bits & 0x7fffffff;
    if (magnitude >= 0x7f800000u)  // infinity or NaN
        return uint16_t(sign | 0x7c00 | (magnitude > 0x7f800000u ? 0x200 : 0));
    if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds past 65504
    if (magnitude < 0x38800000u) {               // below the smallest normal f16: subnormal or zero
        int shift = 126 - int(magnitude >> 23);  // 113 - exponent + 13
        if (shift > 24) return uint16_t(sign);
        uint32_t mant = (magnitude & 0x7fffff) | 0x800000;
        uint32_t half_mant = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half_mant & 1))) half_mant++;
        return uint16_t(sign | half_mant);
    }
    uint32_t rounded = magnitude - 0x38000000u;  // rebias exponent: (127 - 15) << 23
    uint32_t rest = rounded & 0x1fff;
    uint32_t half = rounded >> 13;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
    return uint16_t(sign | half);
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float value) {
    uint32_t bits = f32_to_bits(value);
    if ((bits & 0x7fffffff) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fff + ((bits >> 16) & 1);
    return uint16_t(bits >> 16);
}
