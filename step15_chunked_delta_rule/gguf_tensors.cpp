#include "gguf_tensors.h"

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "ggml_types.h"

// ---------------------------------------------------------------------------------------------
// The memory map

MappedFile::MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        fail("cannot read '%s': not a regular file", path.c_str());
    }
    size_ = uint64_t(info.st_size);
    // mmap refuses a length of 0; an empty file simply has no bytes to map (the header check
    // then reports it as too short).
    if (size_ > 0) {
        void* address = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (address == MAP_FAILED) {
            int error = errno;
            ::close(fd);
            fail("cannot map '%s': %s", path.c_str(), std::strerror(error));
        }
        data_ = static_cast<uint8_t*>(address);
    }
    ::close(fd);  // the mapping stays valid without the descriptor
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(data_, size_);
}

// ---------------------------------------------------------------------------------------------
// The tensor directory

// ggml keeps names in char[GGML_MAX_NAME = 64] with a terminating NUL, so it refuses names of
// 64 bytes or more; we follow ggml rather than the looser wording of the GGUF spec.
constexpr uint64_t kMaxTensorNameBytes = 63;
constexpr uint32_t kMaxTensorDims = 4;  // GGML_MAX_DIMS

// Calls `lookup` (a type-table function) and puts `prefix` in front of its failure, so the
// message also says which tensor had the bad type or row length.
template <typename Lookup>
static auto with_prefix(const std::string& prefix, Lookup lookup) -> decltype(lookup()) {
    try {
        return lookup();
    } catch (const Error& error) {
        fail("%s: %s", prefix.c_str(), error.what());
    }
}

static TensorInfo read_tensor_info(GgufReader& reader, uint64_t index) {
    uint64_t info_offset = reader.offset();
    std::string what = strprintf("name of tensor %llu", (unsigned long long)index);
    uint64_t name_length = reader.read_u64(what.c_str());
    if (name_length > kMaxTensorNameBytes)
        fail("tensor %llu (info at offset %llu): name is %llu bytes long, ggml allows at most %llu",
             (unsigned long long)index, (unsigned long long)info_offset,
             (unsigned long long)name_length, (unsigned long long)kMaxTensorNameBytes);
    TensorInfo tensor;
    tensor.name.resize(name_length);
    reader.read_bytes(tensor.name.data(), name_length, what.c_str());

    // Every later message starts with "tensor 'NAME' (info at offset N)".
    std::string where = strprintf("tensor '%s' (info at offset %llu)", tensor.name.c_str(),
                                  (unsigned long long)info_offset);
    uint32_t n_dims = reader.read_u32(where.c_str());
    if (n_dims < 1 || n_dims > kMaxTensorDims)
        fail("%s: n_dims is %u, must be 1 to %u", where.c_str(), n_dims, kMaxTensorDims);
    tensor.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t dim = reader.read_u64(where.c_str());
        if (dim == 0) fail("%s: dimension %u is 0", where.c_str(), d);
        // ggml counts elements in int64_t; refuse anything it could not count.
        if (tensor.n_elements > uint64_t(INT64_MAX) / dim)
            fail("%s: element count overflows 64 bits", where.c_str());
        tensor.n_elements *= dim;
        tensor.dims.push_back(dim);
    }
    tensor.type = reader.read_u32(where.c_str());
    tensor.offset = reader.read_u64(where.c_str());

    // Size = rows x bytes per row; a row of ne0 elements is ne0 / block_size blocks.
    uint64_t row_bytes =
        with_prefix(where, [&] { return ggml_row_bytes(tensor.type, tensor.dims[0]); });
    if (tensor.n_rows() > UINT64_MAX / row_bytes)
        fail("%s: size in bytes overflows 64 bits", where.c_str());
    tensor.n_bytes = tensor.n_rows() * row_bytes;
    return tensor;
}

std::vector<TensorInfo> read_tensor_infos(GgufReader& reader, uint64_t count) {
    std::vector<TensorInfo> tensors;
    std::unordered_map<std::string, uint64_t> index_by_name;
    // No reserve(count): the vector grows only as records are really read, so a lying count
    // costs nothing before the file runs out.
    for (uint64_t i = 0; i < count; i++) {
        tensors.push_back(read_tensor_info(reader, i));
        auto [first, inserted] = index_by_name.emplace(tensors.back().name, i);
        if (!inserted)
            fail("duplicate tensor name '%s' (tensors %llu and %llu)", tensors.back().name.c_str(),
                 (unsigned long long)first->second, (unsigned long long)i);
    }
    return tensors;
}

uint64_t data_section_offset(uint64_t end_of_infos, uint32_t alignment) {
    return end_of_infos + (alignment - end_of_infos % alignment) % alignment;
}

uint32_t read_alignment(const GgufMetadata& metadata) {
    if (!metadata.has("general.alignment")) return 32;
    uint32_t alignment = metadata.get_u32("general.alignment");
    // A power of two has exactly one bit set: clearing the lowest set bit leaves zero.
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        fail("metadata key 'general.alignment' is %u, must be a power of two", alignment);
    return alignment;
}

void place_tensors(std::vector<TensorInfo>& tensors, uint64_t data_offset, uint32_t alignment,
                   const uint8_t* file_bytes, uint64_t file_size) {
    // Bytes from the data section start to the end of the file (none if it starts past the end,
    // as it does in a file without tensors).
    uint64_t room = data_offset <= file_size ? file_size - data_offset : 0;
    for (TensorInfo& tensor : tensors) {
        if (tensor.offset % alignment != 0)
            fail("tensor '%s': data offset %llu is not a multiple of the alignment %u",
                 tensor.name.c_str(), (unsigned long long)tensor.offset, alignment);
        // Written as two comparisons so that offset + n_bytes cannot overflow.
        if (tensor.offset > room || tensor.n_bytes > room - tensor.offset)
            fail(
                "tensor '%s': its %llu bytes at offset %llu of the data section (which starts at "
                "%llu) run past the end of the file (%llu bytes)",
                tensor.name.c_str(), (unsigned long long)tensor.n_bytes,
                (unsigned long long)tensor.offset, (unsigned long long)data_offset,
                (unsigned long long)file_size);
        tensor.data = file_bytes + data_offset + tensor.offset;
    }
}

// ---------------------------------------------------------------------------------------------
// The whole file

const TensorInfo* GgufFile::find(const std::string& name) const {
    for (const TensorInfo& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

const TensorInfo& GgufFile::get(const std::string& name) const {
    const TensorInfo* tensor = find(name);
    if (!tensor) fail("tensor '%s' is missing", name.c_str());
    return *tensor;
}

GgufFile read_gguf(const uint8_t* bytes, uint64_t size) {
    InputFile input = InputFile::from_memory(bytes, size);
    GgufReader reader(input);
    GgufFile file;
    file.header = read_gguf_header(reader);
    file.metadata = read_gguf_metadata(reader, file.header.metadata_kv_count);
    file.tensors = read_tensor_infos(reader, file.header.tensor_count);
    file.alignment = read_alignment(file.metadata);
    file.data_offset = data_section_offset(reader.offset(), file.alignment);
    place_tensors(file.tensors, file.data_offset, file.alignment, bytes, size);
    return file;
}

GgufFile open_gguf(const std::string& path) {
    auto mapping = std::make_unique<MappedFile>(path);
    GgufFile file = read_gguf(mapping->data(), mapping->size());
    file.mapping = std::move(mapping);
    return file;
}
