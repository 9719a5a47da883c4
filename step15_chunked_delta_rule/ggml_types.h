// ggml_types.h - the ggml tensor type table: for every type id, its name, how many elements
// one block holds and how many bytes one block takes; and the byte layout of the blocks this
// engine reads (block_layout).
//
// Quantized types store a row as blocks: e.g. Q8_0 packs 32 values as one f16 scale + 32 int8
// (34 bytes). A row of ne0 elements therefore takes ne0 / block_size * block_bytes bytes.
#pragma once

#include <cstdint>
#include <vector>

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

// The byte layout of each block type dequantize.cpp reads, as ggml's C structs (ggml-common.h)
// lay it out: kWeights values in kBytes bytes, each field at its kOffset. The code that reads
// blocks takes its sizes and offsets from here; ggml_types.cpp checks at compile time that
// kWeights and kBytes are the type table's, and each struct that its fields fill its bytes
// exactly. All multi-byte fields are little-endian; d, dmin and m are f16.
namespace block_layout {

struct Q4_0 {  // value = d * (q - 8)
    static constexpr GgmlType kType = GgmlType::Q4_0;
    static constexpr int kWeights = 32, kBytes = 18;
    static constexpr int kOffsetD = 0;   // f16
    static constexpr int kOffsetQs = 2;  // 16 bytes: weight j is qs[j]'s low nibble, j+16 its high
    static_assert(kOffsetQs == kOffsetD + 2 && kOffsetQs + kWeights / 2 == kBytes, "block_q4_0");
};

struct Q4_1 {  // value = d * q + m
    static constexpr GgmlType kType = GgmlType::Q4_1;
    static constexpr int kWeights = 32, kBytes = 20;
    static constexpr int kOffsetD = 0, kOffsetM = 2;  // f16 each; m is the block's minimum
    static constexpr int kOffsetQs = 4;               // 16 bytes of nibbles, as in Q4_0
    static_assert(kOffsetM == kOffsetD + 2 && kOffsetQs == kOffsetM + 2 &&
                      kOffsetQs + kWeights / 2 == kBytes,
                  "block_q4_1");
};

struct Q5_0 {  // value = d * (q - 16), q = 4 low bits | 5th bit << 4
    static constexpr GgmlType kType = GgmlType::Q5_0;
    static constexpr int kWeights = 32, kBytes = 22;
    static constexpr int kOffsetD = 0;   // f16
    static constexpr int kOffsetQh = 2;  // u32: bit j is weight j's 5th bit
    static constexpr int kOffsetQs = 6;  // 16 bytes of low nibbles, as in Q4_0
    static_assert(kOffsetQh == kOffsetD + 2 && kOffsetQs == kOffsetQh + 4 &&
                      kOffsetQs + kWeights / 2 == kBytes,
                  "block_q5_0");
};

struct Q5_1 {  // value = d * q + m, q of 5 bits as in Q5_0
    static constexpr GgmlType kType = GgmlType::Q5_1;
    static constexpr int kWeights = 32, kBytes = 24;
    static constexpr int kOffsetD = 0, kOffsetM = 2;  // f16 each
    static constexpr int kOffsetQh = 4, kOffsetQs = 8;
    static_assert(kOffsetM == kOffsetD + 2 && kOffsetQh == kOffsetM + 2 &&
                      kOffsetQs == kOffsetQh + 4 && kOffsetQs + kWeights / 2 == kBytes,
                  "block_q5_1");
};

struct Q8_0 {  // value = d * q
    static constexpr GgmlType kType = GgmlType::Q8_0;
    static constexpr int kWeights = 32, kBytes = 34;
    static constexpr int kOffsetD = 0;   // f16
    static constexpr int kOffsetQs = 2;  // 32 int8
    static_assert(kOffsetQs == kOffsetD + 2 && kOffsetQs + kWeights == kBytes, "block_q8_0");
};

// The K-quants: super-blocks of 256 weights in sub-blocks of 16 or 32, each with its own small
// integer scale (and min), which the super-block's d (and dmin) scale again.

struct Q2_K {  // 16 sub-blocks of 16; value = d * scale * q - dmin * min
    static constexpr GgmlType kType = GgmlType::Q2_K;
    static constexpr int kWeights = 256, kBytes = 84;
    static constexpr int kOffsetScales = 0;  // 16 bytes: scale in the low nibble, min in the high
    static constexpr int kOffsetQs = 16;     // 64 bytes: 2-bit q, four per byte
    static constexpr int kOffsetD = 80, kOffsetDmin = 82;  // f16 each
    static_assert(kOffsetQs == kOffsetScales + 16 && kOffsetD == kOffsetQs + kWeights / 4 &&
                      kOffsetDmin == kOffsetD + 2 && kOffsetDmin + 2 == kBytes,
                  "block_q2_K");
};

struct Q3_K {  // 16 sub-blocks of 16; value = d * (scale - 32) * q, q in -4..3
    static constexpr GgmlType kType = GgmlType::Q3_K;
    static constexpr int kWeights = 256, kBytes = 110;
    static constexpr int kOffsetHmask = 0;    // 32 bytes: each q's 3rd bit
    static constexpr int kOffsetQs = 32;      // 64 bytes: low 2 bits, four per byte
    static constexpr int kOffsetScales = 96;  // 12 bytes: 16 six-bit scales
    static constexpr int kOffsetD = 108;      // f16
    static_assert(kOffsetQs == kOffsetHmask + kWeights / 8 &&
                      kOffsetScales == kOffsetQs + kWeights / 4 && kOffsetD == kOffsetScales + 12 &&
                      kOffsetD + 2 == kBytes,
                  "block_q3_K");
};

struct Q4_K {  // 8 sub-blocks of 32; value = d * scale * q - dmin * min
    static constexpr GgmlType kType = GgmlType::Q4_K;
    static constexpr int kWeights = 256, kBytes = 144;
    static constexpr int kOffsetD = 0, kOffsetDmin = 2;  // f16 each
    static constexpr int kOffsetScales = 4;  // 12 bytes: 8 six-bit scales and 8 six-bit mins
    static constexpr int kOffsetQs = 16;     // 128 bytes of 4-bit q
    static_assert(kOffsetDmin == kOffsetD + 2 && kOffsetScales == kOffsetDmin + 2 &&
                      kOffsetQs == kOffsetScales + 12 && kOffsetQs + kWeights / 2 == kBytes,
                  "block_q4_K");
};

struct Q5_K {  // as Q4_K, with q of 5 bits
    static constexpr GgmlType kType = GgmlType::Q5_K;
    static constexpr int kWeights = 256, kBytes = 176;
    static constexpr int kOffsetD = 0, kOffsetDmin = 2;  // f16 each
    static constexpr int kOffsetScales = 4;              // 12 bytes, packed as in Q4_K
    static constexpr int kOffsetQh = 16;                 // 32 bytes of 5th bits
    static constexpr int kOffsetQs = 48;                 // 128 bytes of low 4 bits
    static_assert(kOffsetDmin == kOffsetD + 2 && kOffsetScales == kOffsetDmin + 2 &&
                      kOffsetQh == kOffsetScales + 12 && kOffsetQs == kOffsetQh + kWeights / 8 &&
                      kOffsetQs + kWeights / 2 == kBytes,
                  "block_q5_K");
};

struct Q6_K {  // 16 sub-blocks of 16; value = d * scale * (q - 32), q of 6 bits
    static constexpr GgmlType kType = GgmlType::Q6_K;
    static constexpr int kWeights = 256, kBytes = 210;
    static constexpr int kOffsetQl = 0;        // 128 bytes: low 4 bits
    static constexpr int kOffsetQh = 128;      // 64 bytes: high 2 bits, four per byte
    static constexpr int kOffsetScales = 192;  // 16 int8 scales
    static constexpr int kOffsetD = 208;       // f16
    static_assert(kOffsetQh == kOffsetQl + kWeights / 2 &&
                      kOffsetScales == kOffsetQh + kWeights / 4 && kOffsetD == kOffsetScales + 16 &&
                      kOffsetD + 2 == kBytes,
                  "block_q6_K");
};

struct IQ4_NL {  // laid out as Q4_0; value = d * table[q]
    static constexpr GgmlType kType = GgmlType::IQ4_NL;
    static constexpr int kWeights = 32, kBytes = 18;
    static constexpr int kOffsetD = 0, kOffsetQs = 2;
    static_assert(kOffsetQs == kOffsetD + 2 && kOffsetQs + kWeights / 2 == kBytes, "block_iq4_nl");
};

// Every layout above, for the checks that walk them.
struct Sizes {
    GgmlType type;
    int weights, bytes;
};
template <class Block>
constexpr Sizes sizes_of() {
    return {Block::kType, Block::kWeights, Block::kBytes};
}
constexpr Sizes kAll[] = {
    sizes_of<Q4_0>(), sizes_of<Q4_1>(), sizes_of<Q5_0>(),   sizes_of<Q5_1>(),
    sizes_of<Q8_0>(), sizes_of<Q2_K>(), sizes_of<Q3_K>(),   sizes_of<Q4_K>(),
    sizes_of<Q5_K>(), sizes_of<Q6_K>(), sizes_of<IQ4_NL>(),
};

}  // namespace block_layout

struct GgmlTypeInfo {
    const char* name;      // "Q4_K"
    uint32_t block_size;   // elements per block (1 for plain F32/F16/BF16/integers)
    uint32_t block_bytes;  // bytes per block
    bool can_dequantize;   // dequantize.cpp has a routine for it
    // Step 11: the readers that take the type's blocks as the file stores them.
    bool cpu_block_dot = false;     // quant_dot.cpp multiplies them with 8-bit activations
    bool gpu_reads_blocks = false;  // the GPU kernels read them (else the device holds F16)
    // Step 12: a prompt's products with matrices of this type run on the tensor cores.
    bool tensor_core_gemm = false;
};

// Fails with "unknown ggml type id 31" for retired or unassigned ids.
const GgmlTypeInfo& ggml_type_info(uint32_t type_id);

// Every id of the table, in increasing order: what the checks walk.
std::vector<uint32_t> ggml_type_ids();

// Whether the type stores blocks of several weights (Q8_0, Q4_K, ...), not one value each.
bool is_block_type(uint32_t type_id);

// Bytes taken by a row of `n` elements; fails unless n is a multiple of the block size.
uint64_t ggml_row_bytes(uint32_t type_id, uint64_t n);
