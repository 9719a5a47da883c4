// gguf_fixture.h - (checks only) reads the fixtures that tools/fixtures/make_gguf_fixtures.py
// writes from gguf-py's view of a GGUF file, and describes our own parse in the same line format,
// so a check can compare the two line by line. The script's docstring defines the format.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "error.h"
#include "gguf_header.h"
#include "gguf_metadata.h"
#include "half.h"

// The fixture's lines that start with `kind` ("header", "kv", "data", "tensor").
inline std::vector<std::string> fixture_lines(const std::string& path, const std::string& kind) {
    std::ifstream in(path);
    if (!in)
        fail("cannot open fixture '%s' (run tools/fixtures/make_gguf_fixtures.py)", path.c_str());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (line.compare(0, kind.size() + 1, kind + " ") == 0) lines.push_back(line);
    return lines;
}

// CRC-32 (the zlib / PNG one: reflected polynomial 0xEDB88320), continued from `crc`.
inline uint32_t crc32_update(uint32_t crc, const void* data, size_t size) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < size; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

// A value's bytes as the file stores them (little-endian numbers; a string as u64 length +
// bytes), rebuilt from what we parsed.
inline void append_stored_bytes(const GgufValue& value, std::string& out) {
    auto append_le = [&out](uint64_t number, int byte_count) {
        for (int i = 0; i < byte_count; i++) out += char(uint8_t(number >> (8 * i)));
    };
    switch (value.type) {
        case GgufType::UINT8:
        case GgufType::BOOL: append_le(value.uint_value, 1); break;
        case GgufType::INT8: append_le(uint64_t(value.int_value), 1); break;
        case GgufType::UINT16: append_le(value.uint_value, 2); break;
        case GgufType::INT16: append_le(uint64_t(value.int_value), 2); break;
        case GgufType::UINT32: append_le(value.uint_value, 4); break;
        case GgufType::INT32: append_le(uint64_t(value.int_value), 4); break;
        case GgufType::UINT64: append_le(value.uint_value, 8); break;
        case GgufType::INT64: append_le(uint64_t(value.int_value), 8); break;
        case GgufType::FLOAT32: append_le(f32_to_bits(float(value.float_value)), 4); break;
        case GgufType::FLOAT64: {
            uint64_t bits;
            std::memcpy(&bits, &value.float_value, 8);
            append_le(bits, 8);
            break;
        }
        case GgufType::STRING:
            append_le(value.string_value.size(), 8);
            out += value.string_value;
            break;
        case GgufType::ARRAY: fail("nested arrays have no fixture description");
    }
}

// "kv KEY TYPE VALUE" exactly as the script writes it.
inline std::string describe_pair(const std::string& key, const GgufValue& value) {
    std::string line = "kv " + key + " " + gguf_value_type_name(value) + " ";
    switch (value.type) {
        case GgufType::UINT8:
        case GgufType::UINT16:
        case GgufType::UINT32:
        case GgufType::UINT64:
        case GgufType::BOOL: return line + std::to_string(value.uint_value);
        case GgufType::INT8:
        case GgufType::INT16:
        case GgufType::INT32:
        case GgufType::INT64: return line + std::to_string(value.int_value);
        case GgufType::FLOAT32:
            return line + strprintf("bits=%08x", f32_to_bits(float(value.float_value)));
        case GgufType::FLOAT64: {
            uint64_t bits;
            std::memcpy(&bits, &value.float_value, 8);
            return line + strprintf("bits=%016llx", (unsigned long long)bits);
        }
        case GgufType::STRING:
            return line +
                   strprintf("bytes=%zu crc32=%08x", value.string_value.size(),
                             crc32_update(0, value.string_value.data(), value.string_value.size()));
        case GgufType::ARRAY: break;
    }
    uint32_t crc = 0;
    std::string stored;
    for (const GgufValue& element : value.array) {
        stored.clear();
        append_stored_bytes(element, stored);
        crc = crc32_update(crc, stored.data(), stored.size());
    }
    return line + strprintf("count=%zu crc32=%08x", value.array.size(), crc);
}

inline std::string describe_header(const GgufHeader& header) {
    return strprintf("header version=%u tensors=%llu kv=%llu", header.version,
                     (unsigned long long)header.tensor_count,
                     (unsigned long long)header.metadata_kv_count);
}
