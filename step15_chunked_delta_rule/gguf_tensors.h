// gguf_tensors.h - the tensor directory and the tensor data, memory-mapped.
//
// After the key/value pairs come `tensor_count` tensor infos:
//   name (GGUF string, at most 63 bytes) | n_dims (u32, 1..4) | n_dims x u64 dims | type (u32)
//   | offset (u64, relative to the data section, a multiple of the alignment)
// The name limit is ggml's: it stores names in char[64] with a terminating NUL.
// The data section starts at the first multiple of general.alignment (default 32) after the
// last tensor info. dims[0] (ne0) is the row length: an HF Linear weight [out, in] is stored
// with dims = [in, out], i.e. `out` rows of `in` elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf_header.h"
#include "gguf_metadata.h"

struct TensorInfo {
    std::string name;
    std::vector<uint64_t> dims;     // ne0 first (fastest varying)
    uint32_t type = 0;              // a GgmlType id
    uint64_t offset = 0;            // from the start of the data section
    uint64_t n_elements = 0;        // product of dims
    uint64_t n_bytes = 0;           // from the type table
    const uint8_t* data = nullptr;  // into the mapped file, set once the file is mapped

    uint64_t n_rows() const { return n_elements / dims[0]; }  // every dim but ne0
};

// A read-only memory map of a whole file; unmapped when destroyed.
class MappedFile {
public:
    explicit MappedFile(const std::string& path);  // fails: "cannot open 'path': ..."
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }

private:
    uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
};

// Reads `count` tensor infos starting at the reader's offset (right after the metadata),
// checks each (name length, n_dims, dims > 0, type, row length a whole number of blocks,
// overflow of the element and byte counts, no duplicate names) and returns them with
// n_elements and n_bytes filled in. Errors name the tensor and its info's offset.
std::vector<TensorInfo> read_tensor_infos(GgufReader& reader, uint64_t count);

// The data section's start: `end_of_infos` rounded up to `alignment`.
uint64_t data_section_offset(uint64_t end_of_infos, uint32_t alignment);

// general.alignment, 32 when absent; fails unless it is a UINT32 power of two.
uint32_t read_alignment(const GgufMetadata& metadata);

// Checks every tensor against the file: offset aligned, data inside the file; then points
// `data` at the tensor's bytes in `file_bytes`.
void place_tensors(std::vector<TensorInfo>& tensors, uint64_t data_offset, uint32_t alignment,
                   const uint8_t* file_bytes, uint64_t file_size);

// Everything step03 knows about a file: header, metadata, tensors, and the mapping that keeps
// the tensor data readable.
struct GgufFile {
    GgufHeader header;
    GgufMetadata metadata;
    std::vector<TensorInfo> tensors;
    uint32_t alignment = 32;
    uint64_t data_offset = 0;
    std::unique_ptr<MappedFile> mapping;

    const TensorInfo* find(const std::string& name) const;  // nullptr when absent
    const TensorInfo& get(const std::string& name) const;   // fails: "tensor 'NAME' is missing"
};

// Parses a whole GGUF image already in memory and places every tensor in it (`mapping` stays
// empty; the caller keeps `bytes` alive). The robustness checks feed it mutated copies.
GgufFile read_gguf(const uint8_t* bytes, uint64_t size);

// Maps the file, then parses it with read_gguf(); the mapping lives as long as the GgufFile.
GgufFile open_gguf(const std::string& path);
