// gguf_metadata.h - the key/value section that follows the header.
//
// Each pair is: key (GGUF string), value type (u32), value. A GGUF string is a u64 byte
// length followed by that many UTF-8 bytes (no NUL). An ARRAY value is: element type (u32),
// element count (u64), then the elements packed back to back.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf_reader.h"

enum class GgufType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

// "UINT32", "STRING", ...; "type 99" for an id outside the table.
std::string gguf_type_name(GgufType type);

// One value of any type. Only the member that matches `type` is meaningful.
struct GgufValue {
    GgufType type = GgufType::UINT8;
    uint64_t uint_value = 0;                // UINT8, UINT16, UINT32, UINT64, BOOL (0 or 1)
    int64_t int_value = 0;                  // INT8, INT16, INT32, INT64
    double float_value = 0.0;               // FLOAT32, FLOAT64
    std::string string_value;               // STRING
    GgufType array_type = GgufType::UINT8;  // ARRAY: the element type
    std::vector<GgufValue> array;           // ARRAY: the elements (may be arrays themselves)
};

// A value's type as listings and error messages show it: "UINT32", or "ARRAY[STRING]".
std::string gguf_value_type_name(const GgufValue& value);

// Prints a value the way step02 lists it: numbers, "quoted strings", and arrays previewed as
// [a, b, c, ... (151933 more)] showing at most `max_items` elements. Strings longer than 60
// bytes are cut and followed by their length: "{%- if ..."... (2507 bytes).
std::string format_gguf_value(const GgufValue& value, size_t max_items = 3);

class GgufMetadata {
public:
    void add(std::string key, GgufValue value);  // fails on a duplicate key

    size_t size() const { return entries_.size(); }
    // In file order, for printing.
    const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }

    bool has(const std::string& key) const { return index_.count(key) != 0; }
    // Fails with "metadata key 'KEY' is missing".
    const GgufValue& get(const std::string& key) const;

    // Typed getters fail with "metadata key 'KEY' is missing" or
    // "metadata key 'KEY' has type INT32, expected UINT32" (ARRAY types print as ARRAY[STRING]).
    uint32_t get_u32(const std::string& key) const;
    float get_f32(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    const std::string& get_string(const std::string& key) const;
    std::vector<std::string> get_string_array(const std::string& key) const;
    std::vector<int32_t> get_i32_array(const std::string& key) const;

    // Number of elements of an array value (fails like the getters if it is not an array).
    size_t array_length(const std::string& key) const;
    // Number of elements of an ARRAY[STRING] value, without copying the strings.
    size_t string_array_length(const std::string& key) const;

private:
    std::vector<std::pair<std::string, GgufValue>> entries_;
    std::unordered_map<std::string, size_t> index_;  // key -> position in entries_
};

// Reads `count` key/value pairs starting at the reader's offset. Every length is checked
// against the bytes left in the file before anything is allocated. Errors name the key (or
// the pair's index while the key itself is unreadable) and the offset.
GgufMetadata read_gguf_metadata(GgufReader& reader, uint64_t count);
