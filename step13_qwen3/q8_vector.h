// q8_vector.h - activations rounded to 8 bits on the GPU, as the block products read them.
//
// The CPU keeps a row of 8-bit activations as BlockQ8 blocks (quant_dot.h): a scale, a sum and
// 32 quants, 40 bytes. The GPU's decode kernels hold the same values in three arrays, the quants
// one after another, the scales and the sums apart, so that a lane reads 16 quants with one
// 16-byte load and the 32 lanes of a warp read 512 consecutive bytes. A block's sum is kept as
// the sums of its two halves of 16, which Q6_K's sub-blocks of 16 weights need (a Q4_K or Q5_0
// product takes the whole block's, their total). Plain C++: the host side only allocates and
// downloads.
#pragma once

#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "quant_dot.h"

// n activations as int8 quants and one float scale per 32: value i = d[i / 32] * q[i].
struct Q8Vector {
    int8_t* q;    // (n)
    float* d;     // (n / 32)
    int* sums;    // (n / 32): q[32b .. 32b + 15] summed in the low 16 bits (signed), the rest high
};

// A block's packed half sums, and their total.
inline int low_half_sum(int sums) { return int16_t(sums & 0xFFFF); }
inline int high_half_sum(int sums) { return (sums - low_half_sum(sums)) >> 16; }

// The device memory behind a Q8Vector of up to `n` values (n a multiple of 32).
struct DeviceQ8Vector {
    DeviceBuffer<int8_t> q;   // (n)
    DeviceBuffer<float> d;    // (n / 32)
    DeviceBuffer<int> sums;   // (n / 32)

    void resize(int n) {
        q.resize(size_t(n));
        d.resize(size_t(n) / kQ8BlockSize);
        sums.resize(size_t(n) / kQ8BlockSize);
    }
    Q8Vector view() { return Q8Vector{q.data(), d.data(), sums.data()}; }

    // The first n values as the CPU's blocks: what the checks compare with quantize_row_q8's
    // output. A block's sum is its two stored halves added, so a wrong half sum shows unless
    // the other is wrong by the opposite amount; a half sum that is not the sum of its quants
    // sets the block's sum to INT32_MIN, which no CPU block has.
    std::vector<BlockQ8> download(int n) const {
        const std::vector<int8_t> quants = q.download();
        const std::vector<float> scales = d.download();
        const std::vector<int> half_sums = sums.download();
        std::vector<BlockQ8> blocks(size_t(n) / kQ8BlockSize);
        for (size_t b = 0; b < blocks.size(); b++) {
            blocks[b].d = scales[b];
            int low = 0, high = 0;
            for (int i = 0; i < kQ8BlockSize; i++) {
                blocks[b].q[i] = quants[b * kQ8BlockSize + i];
                (i < kQ8BlockSize / 2 ? low : high) += blocks[b].q[i];
            }
            const bool halves_right =
                low == low_half_sum(half_sums[b]) && high == high_half_sum(half_sums[b]);
            blocks[b].sum = halves_right ? low + high : INT32_MIN;
        }
        return blocks;
    }
};
