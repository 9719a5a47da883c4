// test_random_weights.h - random weight matrices of every type the kernels read, and poisoned
// output buffers, for the GPU kernel checks (test_ops_cuda.cpp and, from step 12,
// test_tensor_cores.cpp, which is why they moved here).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "device_buffer.h"
#include "ggml_types.h"
#include "half.h"
#include "test_gpu.h"

// Weights rounded to `type` (F32, F16 or BF16), as the bytes both sides read.
inline std::vector<uint8_t> encode(const std::vector<float>& values, GgmlType type) {
    std::vector<uint8_t> bytes;
    const int n_bytes = type == GgmlType::F32 ? 4 : 2;
    for (float value : values) {
        uint32_t bits = f32_to_bits(value);
        if (type == GgmlType::F16) bits = f32_to_f16(value);
        if (type == GgmlType::BF16) bits = f32_to_bf16(value);
        for (int b = 0; b < n_bytes; b++) bytes.push_back(uint8_t(bits >> (8 * b)));
    }
    return bytes;
}

// ---- Step 11: the block types, as random blocks ----

// The block types the GPU reads as stored (quant_blocks_cuda.cuh).
inline const GgmlType kBlockTypes[] = {GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_K,
                                       GgmlType::Q6_K};

// Where a block keeps its f16 scales, and how large the largest |quant * scale| of the block can
// be without them: every weight is then at most `limit` in size when they are limit / that.
struct BlockScales {
    int offsets[2];  // of d and (Q4_K) dmin; -1: none
    float largest;   // Q8_0: |q| <= 128; Q5_0: |q - 16| <= 16; Q4_K: 63 * 15; Q6_K: 128 * 32
};
inline BlockScales block_scales(GgmlType type) {
    switch (type) {
        case GgmlType::Q8_0: return {{0, -1}, 128.0f};
        case GgmlType::Q5_0: return {{0, -1}, 16.0f};
        case GgmlType::Q4_K: return {{0, 2}, 63.0f * 15.0f};
        default: return {{208, -1}, 128.0f * 32.0f};  // Q6_K
    }
}

// rows x cols weights of a block type: random bytes (quants, 6-bit and int8 sub-block scales,
// 5th bits: every bit pattern is a valid block), then each block's f16 scales set to random
// values in [limit/4, limit] / largest, so every weight lies within +-limit. Both sides read
// these bytes: the CPU through dequantize(), the GPU in its kernels.
inline std::vector<uint8_t> random_blocks(GgmlType type, int rows, int cols, float limit,
                                          uint32_t seed) {
    const GgmlTypeInfo& info = ggml_type_info(uint32_t(type));
    const size_t n_blocks = size_t(rows) * cols / info.block_size;
    std::vector<uint8_t> bytes(n_blocks * info.block_bytes);
    std::mt19937 generator(seed);
    for (uint8_t& byte : bytes) byte = uint8_t(generator());
    const BlockScales scales = block_scales(type);
    std::uniform_real_distribution<float> scale(0.25f * limit / scales.largest,
                                                limit / scales.largest);
    for (size_t b = 0; b < n_blocks; b++)
        for (int offset : scales.offsets) {
            if (offset < 0) continue;
            const uint16_t bits = f32_to_f16(scale(generator));
            bytes[b * info.block_bytes + offset] = uint8_t(bits);
            bytes[b * info.block_bytes + offset + 1] = uint8_t(bits >> 8);
        }
    return bytes;
}

// A (rows, cols) matrix of `type` whose weights are at most 1/sqrt(cols), so each product of
// a row with values of order 1 is of order 1: random_matrix() rounded to F32, F16 or BF16, or
// random blocks.
inline std::vector<uint8_t> random_weights(GgmlType type, int rows, int cols, uint32_t seed) {
    const float limit = 1.0f / std::sqrt(float(cols));
    if (ggml_type_info(uint32_t(type)).block_size > 1)
        return random_blocks(type, rows, cols, limit, seed);
    return encode(random_values(size_t(rows) * cols, seed, -limit, limit), type);
}

// Whether rows of `cols` weights are whole blocks of `type`.
inline bool whole_blocks(GgmlType type, int cols) {
    return cols % int(ggml_type_info(uint32_t(type)).block_size) == 0;
}

// n NaNs on the device: an output buffer that fails every comparison until it is written.
inline DeviceBuffer<float> poisoned(size_t n) {
    return DeviceBuffer<float>(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
}
