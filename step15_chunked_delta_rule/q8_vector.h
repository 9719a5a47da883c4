// q8_vector.h - activations rounded to 8 bits on the GPU, as the block products read them.
//
// The CPU keeps a row of 8-bit activations as BlockQ8 blocks (quant_dot.h): a scale, a sum and
// 32 quants, 40 bytes. The GPU's decode kernels hold the same values in two arrays, the quants
// one after another and the scales apart, so that a lane reads 16 quants with one 16-byte load
// and the 32 lanes of a warp read 512 consecutive bytes. The sums are not stored: a kernel that
// needs one adds the quants with a dp4a. Plain C++: the host side only allocates and downloads.
#pragma once

#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "quant_dot.h"

// n activations as int8 quants and one float scale per 32: value i = d[i / 32] * q[i].
struct Q8Vector {
    int8_t* q;  // (n)
    float* d;   // (n / 32)
};

// The device memory behind a Q8Vector of up to `n` values (n a multiple of 32).
struct DeviceQ8Vector {
    DeviceBuffer<int8_t> q;  // (n)
    DeviceBuffer<float> d;   // (n / 32)

    void resize(int n) {
        q.resize(size_t(n));
        d.resize(size_t(n) / kQ8BlockSize);
    }
    Q8Vector view() { return Q8Vector{q.data(), d.data()}; }

    // The first n values as the CPU's blocks, their sums added here: what the checks compare
    // with quantize_row_q8's output.
    std::vector<BlockQ8> download(int n) const {
        const std::vector<int8_t> quants = q.download();
        const std::vector<float> scales = d.download();
        std::vector<BlockQ8> blocks(size_t(n) / kQ8BlockSize);
        for (size_t b = 0; b < blocks.size(); b++) {
            blocks[b].d = scales[b];
            blocks[b].sum = 0;
            for (int i = 0; i < kQ8BlockSize; i++) {
                blocks[b].q[i] = quants[b * kQ8BlockSize + i];
                blocks[b].sum += blocks[b].q[i];
            }
        }
        return blocks;
    }
};
