// gguf_tensors.h - the tensor directory and the tensor data, memory-mapped.
//
// After the key/value pairs come `tensor_count` tensor infos:
//   name (GGUF string, at most 64 bytes) | n_dims (u32, 1..4) | n_dims x u64 dims | type (u32)
//   | offset (u64, relative to the data section, a multiple of the alignment)
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
    std::vector<uint64_t> dims;  // ne0 first (fastest varying)
    uint32_t type = 0;           // a GgmlType id
    uint64_t offset = 0;         // from the start of the data section
    uint64_t n_elements = 0;     // product of dims
    uint64_t n_bytes = 0;        // from the type table
    const uint8_t* data = nullptr;  // into the mapped file, set once the file is mapped

    uint64_t n_rows() const { return n_elements / dims[0]; }  // every dim but ne0
};

// A read-only memory map of a whole file; unmapped when destroyed.
class MappedFile {
public:
    explicit MappedFile(const std::string& path);  // fails: "cannot map 'path': ..."
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
// checks each (name length, n_dims, dims, type, overflow of the element count) and returns
// them with n_elements and n_bytes filled in.
std::vector<TensorInfo> read_tensor_infos(GgufReader& reader, uint64_t count);

// The data section's start: `end_of_infos` rounded up to `alignment`.
uint64_t data_section_offset(uint64_t end_of_infos, uint32_t alignment);

// general.alignment, 32 when absent; fails unless it is a UINT32 power of two.
uint32_t read_alignment(const GgufMetadata& metadata);

// Checks every tensor against the file: offset aligned, data inside the file, no duplicate
// names, and points `data` at the tensor's bytes in `file_bytes`.
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

// Parses the whole directory, maps the file and places every tensor.
GgufFile open_gguf(const std::string& path);
