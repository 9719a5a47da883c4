// ggml_types.h - the ggml tensor type table: for every type id, its name, how many elements
// one block holds and how many bytes one block takes.
//
// Quantized types store a row as blocks: e.g. Q8_0 packs 32 values as one f16 scale + 32 int8
// (34 bytes). A row of ne0 elements therefore takes ne0 / block_size * block_bytes bytes.
#pragma once

#include <cstdint>

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

struct GgmlTypeInfo {
    const char* name;      // "Q4_K"
    uint32_t block_size;   // elements per block (1 for plain F32/F16/BF16/integers)
    uint32_t block_bytes;  // bytes per block
    bool can_dequantize;   // dequantize.cpp has a routine for it
};

// Fails with "unknown ggml type id 31" for retired or unassigned ids.
const GgmlTypeInfo& ggml_type_info(uint32_t type_id);

// Bytes taken by a row of `n` elements; fails unless n is a multiple of the block size.
uint64_t ggml_row_bytes(uint32_t type_id, uint64_t n);
