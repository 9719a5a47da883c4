// quant_dot.cpp - activations rounded to 8-bit blocks, the scalar block dot products, the
// choice of kernel, and matmul_q8.
//
// The scalar kernel is the reference that defines every kernel's result (quant_dot.h): each
// function below states its block layout (ggml's C struct, whose byte offsets it reads from
// block_layout in ggml_types.h), the exact integer sums it takes per activation block, and the
// float operations that combine them. Every multiply that feeds an add is written as one fused
// multiply-add (std::fma here, vfmadd in the SIMD kernels), rounding once. Written as two, the
// kernels would differ: GCC's default -ffp-contract=fast fuses them where FMA instructions are
// allowed (the SIMD functions' targets) and cannot where they are not (this file, built for
// plain x86-64).
#include "quant_dot.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>
#include <vector>

#include "block_fields.h"
#include "error.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "quant_dot_x86.h"

namespace {

// Round to nearest, ties to even, for |v| < 2^22: after adding 1.5 * 2^23 no bits are left for
// a fraction, so the addition itself rounds (the default rounding mode is to nearest even) and
// the subtraction gives the integer back exactly. Two adds the compiler can vectorize, where
// std::nearbyint is a library call per value.
float round_half_even(float v) {
    constexpr float kShift = 0x1.8p23f;
    return (v + kShift) - kShift;
}

// max |v[i]| of a block, found on the bits: without its sign, a float's bits order as its value
// does, and infinities and NaNs come after every finite value; those give NaN. Integer
// maxima, unlike float ones (which drop NaNs), the compiler vectorizes.
float largest_magnitude(const float* v) {  // v: (32)
    uint32_t largest = 0;
    for (int i = 0; i < kQ8BlockSize; i++)
        largest = std::max(largest, f32_to_bits(v[i]) & 0x7fffffffu);
    return largest < 0x7f800000u ? f32_from_bits(largest) : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

void quantize_row_q8(const float* x, BlockQ8* blocks, int n) {
    if (n < 0 || n % kQ8BlockSize != 0)
        fail("cannot quantize %d activations: not a whole number of 32-value blocks", n);
    for (int b = 0; b < n / kQ8BlockSize; b++) {
        const float* values = x + int64_t(b) * kQ8BlockSize;  // (32)
        const float d = largest_magnitude(values) / 127.0f;   // NaN for an infinity or a NaN
        int8_t q[kQ8BlockSize] = {};  // (32) local, so the compiler need not fear aliasing
        int32_t sum = 0;
        if (d > 0.0f) {  // not zeros, not NaN
            // Division, not a multiply by 1/d: q is then exactly the rounded x / d the header
            // promises. Only a subnormal d (amax below 2^-126 * 127) makes |x / d| exceed 127.5.
            for (int i = 0; i < kQ8BlockSize; i++) {
                float rounded = round_half_even(values[i] / d);
                q[i] = int8_t(std::min(std::max(rounded, -127.0f), 127.0f));
                sum += q[i];
            }
        }
        blocks[b].d = d;
        blocks[b].sum = sum;
        std::memcpy(blocks[b].q, q, sizeof q);
    }
}

float sum_dot_lanes(const float* lanes) {
    float quarters[4];  // (4)
    for (int k = 0; k < 4; k++) quarters[k] = lanes[k] + lanes[k + 4];
    float halves[2];  // (2)
    for (int k = 0; k < 2; k++) halves[k] = quarters[k] + quarters[k + 2];
    return halves[0] + halves[1];
}

namespace {

// Partial sum b % kDotLanes += scale * value, rounded once: the step every kernel takes for
// activation block b (a SIMD kernel's vfmadd231ps takes it for eight blocks at once).
void add_to_lane(float* lanes, int b, float scale, float value) {
    float& lane = lanes[b % kDotLanes];
    lane = std::fma(scale, value, lane);
}

// The four block dot products. Each takes a row of n_blocks * 32 weights and the row's
// n_blocks activation blocks x, and returns sum_dot_lanes of its lanes.

// block_q8_0 (34 bytes, 32 elements): f16 d at offset 0, int8 qs[32] at offset 2; value = d * q.
// Block b:  isum = sum_i qs[i] * x[b].q[i];  lane b % 8 = fma(d * x[b].d, float(isum), lane).
float block_dot_q8_0_scalar(const uint8_t* w_row, const BlockQ8* x, int n_blocks) {
    // BEGIN SOLUTION step11 block_dot_q8_0_scalar
    using Block = block_layout::Q8_0;
    float lanes[kDotLanes] = {};
    for (int b = 0; b < n_blocks; b++) {
        const uint8_t* block = w_row + int64_t(b) * Block::kBytes;
        const int8_t* qs = reinterpret_cast<const int8_t*>(block + Block::kOffsetQs);
        int32_t isum = 0;
        for (int i = 0; i < 32; i++) isum += qs[i] * x[b].q[i];
        add_to_lane(lanes, b, load_f16(block + Block::kOffsetD) * x[b].d, float(isum));
    }
    return sum_dot_lanes(lanes);
    // END SOLUTION
}

// block_q5_0 (22 bytes, 32 elements): f16 d at 0, u32 qh at 2 (bit j = 5th bit of element j),
// qs[16] at 6 (element j: low nibble of qs[j], element j + 16: high nibble); value = d * (q - 16).
// Block b:  isum = sum_j (q[j] - 16) * x[b].q[j];  lane b % 8 = fma(d * x[b].d, float(isum), lane).
float block_dot_q5_0_scalar(const uint8_t* w_row, const BlockQ8* x, int n_blocks) {
    // BEGIN SOLUTION step11 block_dot_q5_0_scalar
    using Block = block_layout::Q5_0;
    float lanes[kDotLanes] = {};
    for (int b = 0; b < n_blocks; b++) {
        const uint8_t* block = w_row + int64_t(b) * Block::kBytes;
        uint32_t qh = load_u32(block + Block::kOffsetQh);
        const uint8_t* qs = block + Block::kOffsetQs;
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int low = (qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
            int high = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            isum += (low - 16) * x[b].q[j] + (high - 16) * x[b].q[j + 16];
        }
        add_to_lane(lanes, b, load_f16(block + Block::kOffsetD) * x[b].d, float(isum));
    }
    return sum_dot_lanes(lanes);
    // END SOLUTION
}

// block_q4_K (144 bytes, 256 elements = 8 sub-blocks of 32, one activation block each): f16 d
// at 0, f16 dmin at 2, scales[12] at 4 (unpack_k_scale_min), qs[128] at 16 (sub-block 2c: low
// nibbles of qs[32c..32c+31], sub-block 2c + 1: their high nibbles); value = d*scale*q - dmin*min.
// Sub-block j of super-block s, against x[b], b = 8s + j:
//   A = scale * sum_i q[i] * x[b].q[i],  B = min * x[b].sum        (integers below 2^22)
//   y = fma(d, float(A), -(dmin * float(B)));  lane b % 8 = fma(x[b].d, y, lane).
float block_dot_q4_k_scalar(const uint8_t* w_row, const BlockQ8* x, int n_blocks) {
    // BEGIN SOLUTION step11 block_dot_q4_k_scalar
    using Block = block_layout::Q4_K;
    float lanes[kDotLanes] = {};
    for (int s = 0; s < n_blocks / 8; s++) {
        const uint8_t* block = w_row + int64_t(s) * Block::kBytes;
        float d = load_f16(block + Block::kOffsetD);
        float dmin = load_f16(block + Block::kOffsetDmin);
        for (int j = 0; j < 8; j++) {
            const BlockQ8& xb = x[8 * s + j];
            const uint8_t* qs = block + Block::kOffsetQs + 32 * (j / 2);
            int shift = 4 * (j % 2);  // the even sub-blocks are the low nibbles
            int32_t qx = 0;
            for (int i = 0; i < 32; i++) qx += ((qs[i] >> shift) & 0x0F) * xb.q[i];
            int scale, min;
            unpack_k_scale_min(block + Block::kOffsetScales, j, &scale, &min);
            float y = std::fma(d, float(scale * qx), -(dmin * float(min * xb.sum)));
            add_to_lane(lanes, 8 * s + j, xb.d, y);
        }
    }
    return sum_dot_lanes(lanes);
    // END SOLUTION
}

// block_q6_K (210 bytes, 256 elements = 16 sub-blocks of 16): ql[128] at 0 (low 4 bits),
// qh[64] at 128 (high 2 bits), int8 scales[16] at 192, f16 d at 208; value = d*scale*(q - 32).
// Element 128h + 32k + l (half h, k < 4, l < 32): low bits = nibble k / 2 of ql[64h + 32(k%2) + l],
// high bits = bits 2k, 2k+1 of qh[32h + l]. Activation block j = 4h + k of super-block s, x[b]
// with b = 8s + j, covers sub-blocks 2j and 2j + 1:
//   I = scales[2j] * sum_{l<16} (q - 32) * x[b].q[l] + scales[2j+1] * sum_{l>=16} (same)
//   lane b % 8 = fma(d * x[b].d, float(I), lane)          (|I| < 2^24: float(I) is exact)
float block_dot_q6_k_scalar(const uint8_t* w_row, const BlockQ8* x, int n_blocks) {
    // BEGIN SOLUTION step11 block_dot_q6_k_scalar
    using Block = block_layout::Q6_K;
    float lanes[kDotLanes] = {};
    for (int s = 0; s < n_blocks / 8; s++) {
        const uint8_t* block = w_row + int64_t(s) * Block::kBytes;
        const int8_t* scales = reinterpret_cast<const int8_t*>(block + Block::kOffsetScales);
        float d = load_f16(block + Block::kOffsetD);
        for (int j = 0; j < 8; j++) {
            const BlockQ8& xb = x[8 * s + j];
            int h = j / 4, k = j % 4;
            const uint8_t* ql = block + Block::kOffsetQl + 64 * h + 32 * (k % 2);
            const uint8_t* qh = block + Block::kOffsetQh + 32 * h;
            int32_t sub_sums[2] = {0, 0};  // the two 16-element sub-blocks
            for (int l = 0; l < 32; l++) {
                int q = ((ql[l] >> (4 * (k / 2))) & 0x0F) | (((qh[l] >> (2 * k)) & 3) << 4);
                sub_sums[l / 16] += (q - 32) * xb.q[l];
            }
            int32_t isum = scales[2 * j] * sub_sums[0] + scales[2 * j + 1] * sub_sums[1];
            add_to_lane(lanes, 8 * s + j, d * xb.d, float(isum));
        }
    }
    return sum_dot_lanes(lanes);
    // END SOLUTION
}

// A scalar block dot as a RowDot: the tokens one after another.
template <float (*kBlockDot)(const uint8_t*, const BlockQ8*, int)>
void scalar_tokens(const uint8_t* w_row, Q8Rows x, float* out) {
    for (int t = 0; t < kRowDotTokens; t++)
        out[t] = kBlockDot(w_row, x.blocks + int64_t(t) * x.n_blocks, x.n_blocks);
}

// And as a RowsDot: the rows one after another.
template <float (*kBlockDot)(const uint8_t*, const BlockQ8*, int)>
void scalar_rows(const uint8_t* w_rows, uint64_t row_bytes, int n_rows, Q8Rows x, float* out) {
    for (int o = 0; o < n_rows; o++)
        out[o] = kBlockDot(w_rows + o * row_bytes, x.blocks, x.n_blocks);
}

template <float (*kBlockDot)(const uint8_t*, const BlockQ8*, int)>
RowDots scalar_row_dots() {
    return {scalar_rows<kBlockDot>, scalar_tokens<kBlockDot>};
}

// The kernel's row dots for w_type (one with a block dot product); fails for a kernel this
// CPU cannot run, which would otherwise stop the program with an illegal instruction.
RowDots row_dots(uint32_t w_type, DotKernel kernel) {
    if (!cpu_supports(kernel))
        fail("the %s dot kernel does not run on this CPU", dot_kernel_name(kernel));
    if (kernel != DotKernel::Scalar) return simd_row_dots(kernel, w_type);
    switch (GgmlType(w_type)) {
        case GgmlType::Q8_0: return scalar_row_dots<block_dot_q8_0_scalar>();
        case GgmlType::Q5_0: return scalar_row_dots<block_dot_q5_0_scalar>();
        case GgmlType::Q4_K: return scalar_row_dots<block_dot_q4_k_scalar>();
        case GgmlType::Q6_K: return scalar_row_dots<block_dot_q6_k_scalar>();
        default: fail("%s weights have no block dot product", ggml_type_info(w_type).name);
    }
}

// Rows of in_dim weights that the block dot products take: whole weight blocks and whole
// activation blocks.
bool whole_blocks(uint32_t w_type, int in_dim) {
    return in_dim >= 0 && in_dim % ggml_type_info(w_type).block_size == 0 &&
           in_dim % kQ8BlockSize == 0;
}

// Rows of x quantized (quantize_row_q8), with each block's scale and sum copied beside them.
struct QuantizedRows {
    std::vector<BlockQ8> blocks;  // (n_tokens, n_blocks)
    std::vector<float> scales;    // (n_tokens, n_blocks)
    std::vector<int32_t> sums;    // (n_tokens, n_blocks)
    int n_blocks = 0;

    Q8Rows from(int64_t token) const {
        const int64_t at = token * n_blocks;
        return {blocks.data() + at, scales.data() + at, sums.data() + at, n_blocks};
    }
};

// The blocks, rows of n_blocks each, with their scales and sums copied beside them.
QuantizedRows with_scales_sums(std::vector<BlockQ8> blocks, int n_blocks) {
    QuantizedRows x{std::move(blocks), {}, {}, n_blocks};
    x.scales.reserve(x.blocks.size());
    x.sums.reserve(x.blocks.size());
    for (const BlockQ8& block : x.blocks) {
        x.scales.push_back(block.d);
        x.sums.push_back(block.sum);
    }
    return x;
}

// x (n_tokens, in_dim) quantized a row at a time; a prompt's rows by all threads (about 1.5
// ns a value on one).
QuantizedRows quantize_rows(const float* x, int n_tokens, int in_dim) {
    const int n_blocks = in_dim / kQ8BlockSize;
    std::vector<BlockQ8> blocks(size_t(n_tokens) * n_blocks);  // (n_tokens, n_blocks)
#pragma omp parallel for schedule(static) if (n_tokens > 1)
    for (int t = 0; t < n_tokens; t++)
        quantize_row_q8(x + int64_t(t) * in_dim, blocks.data() + int64_t(t) * n_blocks, in_dim);
    return with_scales_sums(std::move(blocks), n_blocks);
}

struct KernelName {
    DotKernel kernel;
    const char* variable_value;  // QWEN_DOT_KERNEL's spelling
    const char* shown;           // dot_kernel_name's
};
constexpr KernelName kKernelNames[] = {{DotKernel::Scalar, "scalar", "scalar"},
                                       {DotKernel::Avx2, "avx2", "AVX2"},
                                       {DotKernel::Avx512Vnni, "avx512vnni", "AVX-512 VNNI"}};

}  // namespace

bool cpu_supports(DotKernel kernel) {
    return kernel == DotKernel::Scalar || simd_kernel_runs(kernel);
}

const char* dot_kernel_name(DotKernel kernel) {
    for (const KernelName& name : kKernelNames)
        if (name.kernel == kernel) return name.shown;
    return "unknown";
}

DotKernel best_dot_kernel() {
    const char* forced = std::getenv("QWEN_DOT_KERNEL");
    if (forced && *forced) {
        for (const KernelName& name : kKernelNames) {
            if (std::strcmp(forced, name.variable_value) != 0) continue;
            if (!cpu_supports(name.kernel))
                fail("QWEN_DOT_KERNEL=%s: this CPU cannot run the %s kernel", forced, name.shown);
            return name.kernel;
        }
        fail("QWEN_DOT_KERNEL=%s: not a kernel (scalar, avx2 or avx512vnni)", forced);
    }
    for (DotKernel kernel : {DotKernel::Avx512Vnni, DotKernel::Avx2})
        if (cpu_supports(kernel)) return kernel;
    return DotKernel::Scalar;
}

float block_dot(uint32_t w_type, const void* w_row, const BlockQ8* x, int n, DotKernel kernel) {
    if (!ggml_type_info(w_type).cpu_block_dot)
        fail("%s weights have no block dot product", ggml_type_info(w_type).name);
    if (!whole_blocks(w_type, n))
        fail("a row of %d %s weights is not a whole number of its blocks and of 32", n,
             ggml_type_info(w_type).name);
    const int n_blocks = n / kQ8BlockSize;
    const QuantizedRows rows = with_scales_sums(std::vector<BlockQ8>(x, x + n_blocks), n_blocks);
    const uint8_t* row = static_cast<const uint8_t*>(w_row);
    const uint64_t row_bytes = ggml_row_bytes(w_type, uint64_t(n));
    float sum;
    row_dots(w_type, kernel).one_token(row, row_bytes, 1, rows.from(0), &sum);
    return sum;
}

namespace {

// Thread `me` of `threads` takes rows [first, end) of out_dim: a contiguous share.
struct RowShare {
    int first, end;
};
RowShare row_share(int out_dim) {
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
    return {int(int64_t(out_dim) * me / threads), int(int64_t(out_dim) * (me + 1) / threads)};
}

// One token: each thread streams through its own contiguous share of W's rows, a row read from
// memory once, in one call of the row kernel.
void matvec_q8(float* out, const QuantizedRows& xq, const uint8_t* rows, uint64_t row_bytes,
               int out_dim, RowsDot one_token) {
    // An exception must not leave an OpenMP region (it would end the program): the assignment's
    // stubs fail in there, so the first failure is carried out and thrown after it.
    std::exception_ptr failure;
#pragma omp parallel
    {
        const RowShare share = row_share(out_dim);
        try {
            one_token(rows + uint64_t(share.first) * row_bytes, row_bytes, share.end - share.first,
                      xq.from(0), out + share.first);
        } catch (...) {
#pragma omp critical(matmul_q8_failure)
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

// A prompt's tokens: each thread takes its contiguous share of W's rows in tiles of rows that
// stay in the core's L2 cache, and runs every group of kRowDotTokens tokens through a whole
// tile before the next group. A group's activation blocks (kRowDotTokens rows of x, 4.5 KB at
// 896 inputs) then come from L1 for every row of the tile, where a loop over all the tokens
// row by row would stream all of x (570 KB for 512 tokens of 896) from L3 again for each row.
// The last tokens short of a group go one at a time, a tile's rows in one call.
void matmul_q8_tiled(float* out, const QuantizedRows& xq, const uint8_t* rows, uint64_t row_bytes,
                     int n_tokens, int out_dim, RowDots dots) {
    const int tile_rows = std::max<int>(1, int(kMatmulTileBytes / row_bytes));
    std::exception_ptr failure;
#pragma omp parallel
    {
        const RowShare share = row_share(out_dim);
        float sums[kRowDotTokens];  // (kRowDotTokens) a row's dot with each token of a group
        try {
            for (int tile = share.first; tile < share.end; tile += tile_rows) {
                const int tile_end = std::min(share.end, tile + tile_rows);
                const uint8_t* tile_rows_start = rows + uint64_t(tile) * row_bytes;
                int t0 = 0;
                for (; n_tokens - t0 >= kRowDotTokens; t0 += kRowDotTokens) {
                    for (int o = tile; o < tile_end; o++) {
                        dots.four_tokens(rows + uint64_t(o) * row_bytes, xq.from(t0), sums);
                        for (int t = 0; t < kRowDotTokens; t++)
                            out[int64_t(t0 + t) * out_dim + o] = sums[t];
                    }
                }
                for (; t0 < n_tokens; t0++)
                    dots.one_token(tile_rows_start, row_bytes, tile_end - tile, xq.from(t0),
                                   out + int64_t(t0) * out_dim + tile);
            }
        } catch (...) {
#pragma omp critical(matmul_q8_failure)
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace

void matmul_q8(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
               int out_dim, DotKernel kernel) {
    if (!ggml_type_info(w_type).cpu_block_dot || !whole_blocks(w_type, in_dim))
        return matmul(out, x, w, w_type, n_tokens, in_dim, out_dim);
    const RowDots dots = row_dots(w_type, kernel);
    const QuantizedRows xq = quantize_rows(x, n_tokens, in_dim);
    const uint8_t* rows = static_cast<const uint8_t*>(w);
    const uint64_t row_bytes = ggml_row_bytes(w_type, uint64_t(in_dim));
    if (n_tokens == 1)
        matvec_q8(out, xq, rows, row_bytes, out_dim, dots.one_token);
    else
        matmul_q8_tiled(out, xq, rows, row_bytes, n_tokens, out_dim, dots);
}
