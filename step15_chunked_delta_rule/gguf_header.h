// gguf_header.h - the first 24 bytes of a GGUF file.
//
//   offset  size  field
//   0       4     magic "GGUF" (47 47 55 46)
//   4       4     version (u32, 2 or 3)
//   8       8     tensor count (u64)
//   16      8     metadata key/value count (u64)
#pragma once

#include <cstdint>

#include "gguf_reader.h"

struct GgufHeader {
    uint32_t version = 0;
    uint64_t tensor_count = 0;
    uint64_t metadata_kv_count = 0;
};

constexpr uint64_t kGgufHeaderBytes = 24;
// The smallest possible records, used to reject counts that cannot fit in the file:
// a tensor info is name length (8) + n_dims (4) + type (4) + offset (8);
// a key/value pair is key length (8) + value type (4) + a 1-byte value.
constexpr uint64_t kMinTensorInfoBytes = 24;
constexpr uint64_t kMinMetadataPairBytes = 13;

// Reads and validates the header; leaves the reader at offset 24.
GgufHeader read_gguf_header(GgufReader& reader);
