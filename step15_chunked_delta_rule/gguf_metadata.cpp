#include "gguf_metadata.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "error.h"
#include "half.h"

std::string gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::UINT8: return "UINT8";
        case GgufType::INT8: return "INT8";
        case GgufType::UINT16: return "UINT16";
        case GgufType::INT16: return "INT16";
        case GgufType::UINT32: return "UINT32";
        case GgufType::INT32: return "INT32";
        case GgufType::FLOAT32: return "FLOAT32";
        case GgufType::BOOL: return "BOOL";
        case GgufType::STRING: return "STRING";
        case GgufType::ARRAY: return "ARRAY";
        case GgufType::UINT64: return "UINT64";
        case GgufType::INT64: return "INT64";
        case GgufType::FLOAT64: return "FLOAT64";
    }
    return "type " + std::to_string(uint32_t(type));
}

std::string gguf_value_type_name(const GgufValue& value) {
    if (value.type != GgufType::ARRAY) return gguf_type_name(value.type);
    return "ARRAY[" + gguf_type_name(value.array_type) + "]";
}

// ---------------------------------------------------------------------------------------------
// Printing

// Floats print in the shortest form that reads back as the same number ("1e-06", "0.1"), and
// whole numbers keep a ".0" so a float never looks like an integer ("1000000.0").
static std::string format_float(double value, bool is_float32) {
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e16)
        return strprintf("%.1f", value);
    int max_digits = is_float32 ? 9 : 17;  // enough digits to round-trip any float / double
    for (int digits = 1; digits < max_digits; digits++) {
        std::string text = strprintf("%.*g", digits, value);
        double back = std::strtod(text.c_str(), nullptr);
        if (is_float32 ? float(back) == float(value) : back == value) return text;
    }
    return strprintf("%.*g", max_digits, value);
}

// A string is shown quoted, with control characters, quotes and backslashes escaped, and cut
// after kMaxStringPreviewBytes (at a UTF-8 character boundary) with its full length appended.
constexpr size_t kMaxStringPreviewBytes = 60;

static std::string format_string(const std::string& text) {
    size_t shown = text.size();
    if (shown > kMaxStringPreviewBytes) {
        shown = kMaxStringPreviewBytes;
        // 10xxxxxx bytes continue a UTF-8 character: back up to the byte that starts it.
        while (shown > 0 && (uint8_t(text[shown]) & 0xc0) == 0x80) shown--;
    }
    std::string out = "\"";
    for (size_t i = 0; i < shown; i++) {
        uint8_t c = uint8_t(text[i]);
        if (c == '"' || c == '\\') out += '\\', out += char(c);
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7f) out += strprintf("\\x%02x", c);
        else out += char(c);
    }
    out += '"';
    if (shown < text.size()) out += strprintf("... (%zu bytes)", text.size());
    return out;
}

std::string format_gguf_value(const GgufValue& value, size_t max_items) {
    switch (value.type) {
        case GgufType::UINT8:
        case GgufType::UINT16:
        case GgufType::UINT32:
        case GgufType::UINT64: return std::to_string(value.uint_value);
        case GgufType::INT8:
        case GgufType::INT16:
        case GgufType::INT32:
        case GgufType::INT64: return std::to_string(value.int_value);
        case GgufType::FLOAT32: return format_float(value.float_value, true);
        case GgufType::FLOAT64: return format_float(value.float_value, false);
        case GgufType::BOOL: return value.uint_value ? "true" : "false";
        case GgufType::STRING: return format_string(value.string_value);
        case GgufType::ARRAY: break;
    }
    std::string out = "[";
    size_t shown = std::min(max_items, value.array.size());
    for (size_t i = 0; i < shown; i++) {
        if (i > 0) out += ", ";
        out += format_gguf_value(value.array[i], max_items);
    }
    if (shown < value.array.size())
        out += strprintf("%s... (%zu more)", shown > 0 ? ", " : "", value.array.size() - shown);
    return out + "]";
}

// ---------------------------------------------------------------------------------------------
// The index and the typed getters

void GgufMetadata::add(std::string key, GgufValue value) {
    if (has(key)) fail("duplicate metadata key '%s'", key.c_str());
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
}

const GgufValue& GgufMetadata::get(const std::string& key) const {
    auto found = index_.find(key);
    if (found == index_.end()) fail("metadata key '%s' is missing", key.c_str());
    return entries_[found->second].second;
}

// Returns the value if it has the expected type (and, for arrays, element type).
static const GgufValue& expect_type(const GgufValue& value, const std::string& key, GgufType type,
                                    GgufType element_type = GgufType::UINT8) {
    bool matches =
        value.type == type && (type != GgufType::ARRAY || value.array_type == element_type);
    if (!matches) {
        std::string expected = gguf_type_name(type);
        if (type == GgufType::ARRAY) expected += "[" + gguf_type_name(element_type) + "]";
        fail("metadata key '%s' has type %s, expected %s", key.c_str(),
             gguf_value_type_name(value).c_str(), expected.c_str());
    }
    return value;
}

uint32_t GgufMetadata::get_u32(const std::string& key) const {
    return uint32_t(expect_type(get(key), key, GgufType::UINT32).uint_value);
}

float GgufMetadata::get_f32(const std::string& key) const {
    return float(expect_type(get(key), key, GgufType::FLOAT32).float_value);
}

bool GgufMetadata::get_bool(const std::string& key) const {
    return expect_type(get(key), key, GgufType::BOOL).uint_value != 0;
}

const std::string& GgufMetadata::get_string(const std::string& key) const {
    return expect_type(get(key), key, GgufType::STRING).string_value;
}

std::vector<std::string> GgufMetadata::get_string_array(const std::string& key) const {
    const GgufValue& value = expect_type(get(key), key, GgufType::ARRAY, GgufType::STRING);
    std::vector<std::string> strings;
    strings.reserve(value.array.size());
    for (const GgufValue& element : value.array) strings.push_back(element.string_value);
    return strings;
}

std::vector<int32_t> GgufMetadata::get_i32_array(const std::string& key) const {
    const GgufValue& value = expect_type(get(key), key, GgufType::ARRAY, GgufType::INT32);
    std::vector<int32_t> numbers;
    numbers.reserve(value.array.size());
    for (const GgufValue& element : value.array) numbers.push_back(int32_t(element.int_value));
    return numbers;
}

size_t GgufMetadata::string_array_length(const std::string& key) const {
    return expect_type(get(key), key, GgufType::ARRAY, GgufType::STRING).array.size();
}

size_t GgufMetadata::array_length(const std::string& key) const {
    const GgufValue& value = get(key);
    if (value.type != GgufType::ARRAY)
        fail("metadata key '%s' has type %s, expected ARRAY", key.c_str(),
             gguf_type_name(value.type).c_str());
    return value.array.size();
}

// ---------------------------------------------------------------------------------------------
// Reading the key/value section

// Arrays of arrays are legal GGUF (ggml itself refuses them); a limit on the nesting keeps a
// lying file from recursing without end. 1 = a plain array.
constexpr int kMaxArrayNesting = 4;

// The fewest bytes one value of `type` occupies in the file: a string is at least its u64
// length, an array at least its element type (u32) and count (u64).
static uint64_t min_value_bytes(GgufType type) {
    switch (type) {
        case GgufType::UINT8:
        case GgufType::INT8:
        case GgufType::BOOL: return 1;
        case GgufType::UINT16:
        case GgufType::INT16: return 2;
        case GgufType::UINT32:
        case GgufType::INT32:
        case GgufType::FLOAT32: return 4;
        case GgufType::UINT64:
        case GgufType::INT64:
        case GgufType::FLOAT64:
        case GgufType::STRING: return 8;
        case GgufType::ARRAY: return 12;
    }
    return 1;
}

// Reads a u32 type id; `what` names the pair ("metadata key 'x'") for the error message.
static GgufType read_type(GgufReader& reader, const std::string& what, const char* role) {
    uint64_t offset = reader.offset();
    uint32_t id = reader.read_u32(what.c_str());
    if (id > uint32_t(GgufType::FLOAT64))
        fail("%s at offset %llu: unknown %s %u", what.c_str(), (unsigned long long)offset, role,
             id);
    return GgufType(id);
}

// A GGUF string: u64 length, then the bytes. The length is checked before the allocation.
static std::string read_string(GgufReader& reader, const std::string& what) {
    uint64_t offset = reader.offset();
    uint64_t length = reader.read_u64(what.c_str());
    if (length > reader.bytes_left())
        fail("%s at offset %llu: string length %llu exceeds the %llu bytes left in the file",
             what.c_str(), (unsigned long long)offset, (unsigned long long)length,
             (unsigned long long)reader.bytes_left());
    std::string text(length, '\0');
    reader.read_bytes(text.data(), length, what.c_str());
    return text;
}

// Sign-extends the low `bits` bits of `raw`.
static int64_t sign_extend(uint64_t raw, int bits) {
    uint64_t sign_bit = uint64_t(1) << (bits - 1);
    return int64_t((raw ^ sign_bit) - sign_bit);
}

static double f64_from_bits(uint64_t bits) {
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

static GgufValue read_value(GgufReader& reader, GgufType type, const std::string& what,
                            int nesting);

// ARRAY: element type (u32), element count (u64), then the elements back to back.
// `nesting` is this array's depth: 1 for a value that is an array, 2 for its element arrays.
static void read_array(GgufReader& reader, GgufValue& value, const std::string& what, int nesting) {
    uint64_t offset = reader.offset();
    if (nesting > kMaxArrayNesting)
        fail("%s at offset %llu: arrays nested deeper than %d levels", what.c_str(),
             (unsigned long long)offset, kMaxArrayNesting);
    value.array_type = read_type(reader, what, "array element type");
    uint64_t count = reader.read_u64(what.c_str());
    uint64_t min_bytes = min_value_bytes(value.array_type);
    if (count > reader.bytes_left() / min_bytes)
        fail(
            "%s at offset %llu: %llu %s elements cannot fit in the %llu bytes left "
            "(each takes at least %llu bytes)",
            what.c_str(), (unsigned long long)offset, (unsigned long long)count,
            gguf_type_name(value.array_type).c_str(), (unsigned long long)reader.bytes_left(),
            (unsigned long long)min_bytes);
    // A count that fits (a string takes at least 8 bytes) may still mean 11x more bytes of
    // parsed values than the file holds: reserve at most the bytes left, and grow past that
    // only as elements are really read.
    value.array.reserve(std::min(count, reader.bytes_left() / sizeof(GgufValue)));
    for (uint64_t i = 0; i < count; i++)
        value.array.push_back(read_value(reader, value.array_type, what, nesting));
}

static GgufValue read_value(GgufReader& reader, GgufType type, const std::string& what,
                            int nesting) {
    GgufValue value;
    value.type = type;
    const char* name = what.c_str();
    switch (type) {
        case GgufType::UINT8: value.uint_value = reader.read_u8(name); break;
        case GgufType::UINT16: value.uint_value = reader.read_u16(name); break;
        case GgufType::UINT32: value.uint_value = reader.read_u32(name); break;
        case GgufType::UINT64: value.uint_value = reader.read_u64(name); break;
        case GgufType::INT8: value.int_value = sign_extend(reader.read_u8(name), 8); break;
        case GgufType::INT16: value.int_value = sign_extend(reader.read_u16(name), 16); break;
        case GgufType::INT32: value.int_value = sign_extend(reader.read_u32(name), 32); break;
        case GgufType::INT64: value.int_value = int64_t(reader.read_u64(name)); break;
        case GgufType::FLOAT32: value.float_value = f32_from_bits(reader.read_u32(name)); break;
        case GgufType::FLOAT64: value.float_value = f64_from_bits(reader.read_u64(name)); break;
        case GgufType::BOOL: {
            uint64_t offset = reader.offset();
            value.uint_value = reader.read_u8(name);
            if (value.uint_value > 1)
                fail("%s at offset %llu: BOOL value is %llu, must be 0 or 1", name,
                     (unsigned long long)offset, (unsigned long long)value.uint_value);
            break;
        }
        case GgufType::STRING: value.string_value = read_string(reader, what); break;
        case GgufType::ARRAY: read_array(reader, value, what, nesting + 1); break;
    }
    return value;
}

GgufMetadata read_gguf_metadata(GgufReader& reader, uint64_t count) {
    GgufMetadata metadata;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t pair_offset = reader.offset();
        std::string key =
            read_string(reader, strprintf("key of metadata pair %llu", (unsigned long long)i));
        if (metadata.has(key))
            fail("duplicate metadata key '%s' (pair %llu at offset %llu)", key.c_str(),
                 (unsigned long long)i, (unsigned long long)pair_offset);
        std::string what = "metadata key '" + key + "'";
        GgufType type = read_type(reader, what, "value type");
        metadata.add(std::move(key), read_value(reader, type, what, 0));
    }
    return metadata;
}
