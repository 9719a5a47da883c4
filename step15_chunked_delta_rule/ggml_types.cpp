// ggml_types.cpp - the table of every ggml type id a GGUF tensor info may name.
//
// A tensor's byte size follows from this table alone: a row of ne0 elements is
// ne0 / block_size blocks of block_bytes each. The sizes are those of ggml's C block structs
// (ggml-common.h); the comment on each quantized type spells out its struct.
#include "ggml_types.h"

#include "error.h"

namespace {

struct TypeEntry {
    uint32_t id;
    GgmlTypeInfo info;
};

// Ids 4-5 (the old Q4_2/Q4_3), 31-33 and 36-38 (repacked Q4_0/IQ4_NL layouts, now chosen by
// the CPU backend at load time) are retired: no current file may use them.
constexpr TypeEntry kTypes[] = {
    // {id, {name, block size, bytes per block, can_dequantize,
    //       cpu_block_dot, gpu_reads_blocks, tensor_core_gemm}}
    {0, {"F32", 1, 4, true}},
    {1, {"F16", 1, 2, true, false, false, true}},
    {2, {"Q4_0", 32, 18, true}},  // f16 d, 16 bytes of 4-bit q
    {3, {"Q4_1", 32, 20, true}},  // f16 d, f16 m, 16 bytes of 4-bit q
    // f16 d, 4 bytes of 5th bits, 16 bytes of 4-bit q
    {6, {"Q5_0", 32, 22, true, true, true, true}},
    {7, {"Q5_1", 32, 24, true}},  // f16 d, f16 m, 4 bytes of 5th bits, 16 bytes of 4-bit q
    {8, {"Q8_0", 32, 34, true, true, true, true}},  // f16 d, 32 int8
    // Q8_1 is f16 d, f16 s (= d * sum of q), 32 int8 = 36 bytes, as ggml's C struct says.
    // gguf-py's GGML_QUANT_SIZES still lists 40, from an older layout with f32 d and s.
    {9, {"Q8_1", 32, 36, false}},
    {10, {"Q2_K", 256, 84, true}},  // 16 scale/min bytes, 64 bytes of 2-bit q, f16 d, f16 dmin
    // 32 bytes high bits, 64 bytes of 2-bit q, 12 scale bytes, f16 d
    {11, {"Q3_K", 256, 110, true}},
    // f16 d, f16 dmin, 12 scale bytes, 128 bytes of 4-bit q
    {12, {"Q4_K", 256, 144, true, true, true, true}},
    {13, {"Q5_K", 256, 176, true}},  // as Q4_K plus 32 bytes of 5th bits
    // 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, f16 d
    {14, {"Q6_K", 256, 210, true, true, true, true}},
    {15, {"Q8_K", 256, 292, false}},  // f32 d, 256 int8, 16 int16 sums: a dot-product intermediate
    {16, {"IQ2_XXS", 256, 66, false}},
    {17, {"IQ2_XS", 256, 74, false}},
    {18, {"IQ3_XXS", 256, 98, false}},
    {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, true}},  // f16 d, 16 bytes of 4-bit indices into a fixed table
    {21, {"IQ3_S", 256, 110, false}},
    {22, {"IQ2_S", 256, 82, false}},
    {23, {"IQ4_XS", 256, 136, false}},
    {24, {"I8", 1, 1, false}},
    {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},
    {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, false}},
    {29, {"IQ1_M", 256, 56, false}},
    {30, {"BF16", 1, 2, true, false, false, true}},
    {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}},
    {39, {"MXFP4", 32, 17, false}},
    // Newer than GgmlType in ggml_types.h; listed so that a file using them gets "not supported"
    // rather than "unknown".
    {40, {"NVFP4", 64, 36, false}},
    {41, {"Q1_0", 128, 18, false}},
    {42, {"Q2_0", 64, 18, false}},
};

constexpr const GgmlTypeInfo* find_type(uint32_t type_id) {
    for (const TypeEntry& entry : kTypes)
        if (entry.id == type_id) return &entry.info;
    return nullptr;
}

// Each block layout of ggml_types.h is a type of this table with its block size and bytes.
constexpr bool layouts_match_table() {
    for (const block_layout::Sizes& layout : block_layout::kAll) {
        const GgmlTypeInfo* type = find_type(uint32_t(layout.type));
        if (!type || int(type->block_size) != layout.weights ||
            int(type->block_bytes) != layout.bytes)
            return false;
    }
    return true;
}
static_assert(layouts_match_table(), "a block_layout's kWeights or kBytes is not the table's");

// Step 11's block readers take their fields at block_layout's offsets: a type they read has one.
constexpr bool has_layout(uint32_t type_id) {
    for (const block_layout::Sizes& layout : block_layout::kAll)
        if (uint32_t(layout.type) == type_id) return true;
    return false;
}
constexpr bool block_readers_have_layouts() {
    for (const TypeEntry& entry : kTypes)
        if ((entry.info.cpu_block_dot || entry.info.gpu_reads_blocks) && !has_layout(entry.id))
            return false;
    return true;
}
static_assert(block_readers_have_layouts(), "a type read as blocks has no block_layout");

}  // namespace

const GgmlTypeInfo& ggml_type_info(uint32_t type_id) {
    if (const GgmlTypeInfo* type = find_type(type_id)) return *type;
    fail("unknown ggml type id %u", type_id);
}

std::vector<uint32_t> ggml_type_ids() {
    std::vector<uint32_t> ids;
    for (const TypeEntry& entry : kTypes) ids.push_back(entry.id);
    return ids;
}

bool is_block_type(uint32_t type_id) { return ggml_type_info(type_id).block_size > 1; }

uint64_t ggml_row_bytes(uint32_t type_id, uint64_t n) {
    const GgmlTypeInfo& type = ggml_type_info(type_id);
    if (n % type.block_size != 0)
        fail("a row of %llu elements is not a whole number of %s blocks (%u elements each)",
             (unsigned long long)n, type.name, type.block_size);
    uint64_t blocks = n / type.block_size;
    // A lying dimension must not wrap the byte count around to something small.
    if (blocks > UINT64_MAX / type.block_bytes)
        fail("a row of %llu %s elements is too large to address", (unsigned long long)n, type.name);
    return blocks * type.block_bytes;
}
