// gguf_reader.h - a bounds-checked cursor that reads little-endian numbers from a file.
//
// Every number in a GGUF file is little-endian. We assemble each value byte by byte, so the
// code is correct on any host, and every read first checks that the bytes are really there:
// a file that ends early produces an Error naming what was being read and where.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

// An open, read-only file (or an in-memory buffer, for tests) and its size in bytes.
class InputFile {
public:
    explicit InputFile(const std::string& path);  // fails: "cannot open 'path': ..."
    static InputFile from_memory(const void* data, size_t size);  // a copy-free view, for tests
    ~InputFile();
    InputFile(InputFile&& other) noexcept;
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    InputFile& operator=(InputFile&&) = delete;

    std::FILE* handle() const { return handle_; }
    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    InputFile(std::FILE* handle, uint64_t size, std::string path);
    std::FILE* handle_ = nullptr;
    uint64_t size_ = 0;
    std::string path_;
};

class GgufReader {
public:
    explicit GgufReader(const InputFile& file) : file_(file) {}

    uint64_t offset() const { return offset_; }
    uint64_t file_size() const { return file_.size(); }
    uint64_t bytes_left() const { return file_.size() - offset_; }

    // `what` names the field in the error message, e.g. "tensor count".
    uint8_t read_u8(const char* what) { return uint8_t(read_le(1, what)); }
    uint16_t read_u16(const char* what) { return uint16_t(read_le(2, what)); }
    uint32_t read_u32(const char* what) { return uint32_t(read_le(4, what)); }
    uint64_t read_u64(const char* what) { return read_le(8, what); }
    void read_bytes(void* destination, uint64_t count, const char* what);

    // Fails unless `count` more bytes exist after the cursor.
    void require(uint64_t count, const char* what) const;

private:
    uint64_t read_le(int byte_count, const char* what);

    const InputFile& file_;
    uint64_t offset_ = 0;
};
