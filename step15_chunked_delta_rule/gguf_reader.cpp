#include "gguf_reader.h"

#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "error.h"

InputFile::InputFile(std::FILE* handle, uint64_t size, std::string path)
    : handle_(handle), size_(size), path_(std::move(path)) {}

InputFile::InputFile(const std::string& path) : path_(path) {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
        fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    if (!S_ISREG(info.st_mode)) fail("cannot read '%s': not a regular file", path.c_str());
    handle_ = std::fopen(path.c_str(), "rb");
    if (!handle_) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    size_ = uint64_t(info.st_size);
}

InputFile InputFile::from_memory(const void* data, size_t size) {
    // fmemopen refuses a zero-sized buffer; a one-byte buffer with size 0 reported works.
    static char empty[1];
    std::FILE* handle = ::fmemopen(size ? const_cast<void*>(data) : empty, size ? size : 1, "rb");
    if (!handle) fail("cannot open an in-memory buffer of %zu bytes", size);
    return InputFile(handle, size, "<memory>");
}

InputFile::InputFile(InputFile&& other) noexcept
    : handle_(other.handle_), size_(other.size_), path_(std::move(other.path_)) {
    other.handle_ = nullptr;
}

InputFile::~InputFile() {
    if (handle_) std::fclose(handle_);
}

void GgufReader::require(uint64_t count, const char* what) const {
    if (count > bytes_left())
        fail("unexpected end of file reading %s at offset %llu: need %llu bytes, %llu left", what,
             (unsigned long long)offset_, (unsigned long long)count,
             (unsigned long long)bytes_left());
}

void GgufReader::read_bytes(void* destination, uint64_t count, const char* what) {
    require(count, what);
    // The stream position always equals offset_: we only read forward. Each reader owns its
    // stream, so the unlocked read (no lock taken per call) is safe, and it matters: the
    // robustness check parses tens of thousands of truncated files.
    if (fread_unlocked(destination, 1, count, file_.handle()) != count)
        fail("read error in %s at offset %llu", what, (unsigned long long)offset_);
    offset_ += count;
}

uint64_t GgufReader::read_le(int byte_count, const char* what) {
    uint8_t bytes[8];
    read_bytes(bytes, uint64_t(byte_count), what);
    uint64_t value = 0;
    for (int i = byte_count - 1; i >= 0; i--)
        value = (value << 8) | bytes[i];  // byte 0 is least significant
    return value;
}
