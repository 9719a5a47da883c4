// test_gguf_values.h - metadata values made by hand, for the checks that build a GgufMetadata
// without writing a file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf_metadata.h"

// A scalar of any numeric or BOOL type, stored in the member that `type` reads.
inline GgufValue gguf_number(GgufType type, double number) {
    GgufValue value;
    value.type = type;
    switch (type) {
        case GgufType::FLOAT32:
        case GgufType::FLOAT64: value.float_value = number; break;
        case GgufType::INT8:
        case GgufType::INT16:
        case GgufType::INT32:
        case GgufType::INT64: value.int_value = int64_t(number); break;
        default: value.uint_value = uint64_t(number); break;
    }
    return value;
}

inline GgufValue gguf_u32(uint32_t number) { return gguf_number(GgufType::UINT32, number); }
inline GgufValue gguf_f32(float number) { return gguf_number(GgufType::FLOAT32, number); }

inline GgufValue gguf_string(const std::string& text) {
    GgufValue value;
    value.type = GgufType::STRING;
    value.string_value = text;
    return value;
}

inline GgufValue gguf_array(GgufType element_type, std::vector<GgufValue> elements) {
    GgufValue value;
    value.type = GgufType::ARRAY;
    value.array_type = element_type;
    value.array = std::move(elements);
    return value;
}

inline GgufValue gguf_string_array(const std::vector<std::string>& strings) {
    std::vector<GgufValue> elements;
    for (const std::string& text : strings) elements.push_back(gguf_string(text));
    return gguf_array(GgufType::STRING, std::move(elements));
}

inline GgufValue gguf_i32_array(const std::vector<int32_t>& numbers) {
    std::vector<GgufValue> elements;
    for (int32_t number : numbers) elements.push_back(gguf_number(GgufType::INT32, number));
    return gguf_array(GgufType::INT32, std::move(elements));
}
