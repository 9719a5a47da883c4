// test_bytes.h - builds little-endian byte buffers by hand, so tests can write exactly the
// (broken) GGUF files they need.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

struct ByteBuilder {
    std::vector<uint8_t> bytes;

    ByteBuilder& u8(uint8_t value) { return le(value, 1); }
    ByteBuilder& u16(uint16_t value) { return le(value, 2); }
    ByteBuilder& u32(uint32_t value) { return le(value, 4); }
    ByteBuilder& u64(uint64_t value) { return le(value, 8); }
    ByteBuilder& i32(int32_t value) { return le(uint32_t(value), 4); }
    ByteBuilder& f32(float value) {
        uint32_t bits;
        std::memcpy(&bits, &value, 4);
        return le(bits, 4);
    }
    ByteBuilder& f64(double value) {
        uint64_t bits;
        std::memcpy(&bits, &value, 8);
        return le(bits, 8);
    }
    ByteBuilder& raw(const std::string& text) {
        bytes.insert(bytes.end(), text.begin(), text.end());
        return *this;
    }
    // A GGUF string: u64 length, then the bytes.
    ByteBuilder& str(const std::string& text) { return u64(text.size()).raw(text); }
    ByteBuilder& zeros(size_t count) {
        bytes.insert(bytes.end(), count, 0);
        return *this;
    }
    // The 24-byte header.
    ByteBuilder& header(uint32_t version, uint64_t tensor_count, uint64_t kv_count) {
        return raw("GGUF").u32(version).u64(tensor_count).u64(kv_count);
    }
    size_t size() const { return bytes.size(); }

private:
    ByteBuilder& le(uint64_t value, int count) {
        for (int i = 0; i < count; i++) bytes.push_back(uint8_t(value >> (8 * i)));
        return *this;
    }
};
