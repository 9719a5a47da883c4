// quant_dot_x86.h - the SIMD kernels behind quant_dot.h: AVX2 and AVX-512 VNNI, on x86-64.
//
// quant_dot.cpp holds the scalar kernel and picks among the three; this is all it needs from
// quant_dot_x86.cpp. Off x86-64 that file compiles to stand-ins that report no SIMD kernel.
#pragma once

#include <cstdint>

#include "quant_dot.h"

// Rows of quantized activations as the row dots read them: the blocks, and each block's scale
// and sum once more in arrays of their own, so that a SIMD kernel reads eight neighbouring
// blocks' scales (or sums) with one load, where BlockQ8's 40-byte stride would need a gather.
struct Q8Rows {
    const BlockQ8* blocks;  // (tokens, n_blocks)
    const float* scales;    // (tokens, n_blocks) blocks[i].d
    const int32_t* sums;    // (tokens, n_blocks) blocks[i].sum
    int n_blocks;           // blocks a token's row
};

// One row of W, in its file type, against kTokens rows of x: out[t] = the row's dot product
// with token t's.
using RowDot = void (*)(const uint8_t* w_row, Q8Rows x, float* out);

// n_rows consecutive rows of W, row_bytes apart, against one row of x: out[o] = row o's dot
// product. One call takes a thread's whole share of a decode step's product, so the kernel's
// constants are set up once, not once a row.
using RowsDot = void (*)(const uint8_t* w_rows, uint64_t row_bytes, int n_rows, Q8Rows x,
                         float* out);

// A kernel's row dots for one weight type. During a prefill a weight row is unpacked once for
// four tokens (matmul_q8 takes the tokens four at a time); a decode step has one.
constexpr int kRowDotTokens = 4;
struct RowDots {
    RowsDot one_token;   // out: (n_rows)
    RowDot four_tokens;  // out: (kRowDotTokens)
};

// The hardware prefetchers stop at every 4 KB page, and the kernels, faster than memory, would
// wait there for the first lines of each page. Asking for a row's worth of bytes kPrefetchBytes
// ahead as each row starts keeps the reads flowing: 30-50% more GB/s on one thread, where 1-2 KB
// ahead measured best. The row starts at byte row_start of `rows`, which end at rows_bytes.
constexpr uint64_t kPrefetchBytes = 2048, kCacheLineBytes = 64;
inline void prefetch_ahead(const uint8_t* rows, uint64_t row_start, uint64_t row_bytes,
                           uint64_t rows_bytes) {
    const uint64_t ahead_end = row_start + kPrefetchBytes + row_bytes;
    for (uint64_t at = row_start + kPrefetchBytes; at < ahead_end && at < rows_bytes;
         at += kCacheLineBytes)
        __builtin_prefetch(rows + at);
}

// Whether this CPU, and the operating system's saving of its registers, runs the kernel's
// instructions. False for DotKernel::Scalar, which is not a SIMD kernel, and off x86-64.
bool simd_kernel_runs(DotKernel kernel);

// The SIMD kernel's row dots for w_type; {nullptr, nullptr} for a type without a block dot
// product, for DotKernel::Scalar and off x86-64.
RowDots simd_row_dots(DotKernel kernel, uint32_t w_type);
