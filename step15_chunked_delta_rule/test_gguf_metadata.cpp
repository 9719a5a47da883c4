// Checks for step02's metadata reader on hand-built files: every value type, arrays, nested
// arrays, the typed getters, the previews, and every way a file can lie.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "error.h"
#include "gguf_header.h"
#include "gguf_metadata.h"
#include "gguf_reader.h"
#include "test_bytes.h"
#include "test_gguf_values.h"

static GgufMetadata parse_metadata(const ByteBuilder& file) {
    InputFile input = InputFile::from_memory(file.bytes.data(), file.size());
    GgufReader reader(input);
    GgufHeader header = read_gguf_header(reader);
    return read_gguf_metadata(reader, header.metadata_kv_count);
}

// A file holding one pair: key "a" (its type id at offset 33, its value from offset 37) and the
// value bytes that `write_value` appends.
template <typename WriteValue>
static ByteBuilder one_pair(uint32_t type, WriteValue write_value) {
    ByteBuilder file;
    file.header(3, 0, 1).str("a").u32(type);
    write_value(file);
    return file;
}

TEST_CASE("every scalar value type is read") {
    ByteBuilder file;
    file.header(3, 0, 13);
    file.str("u8").u32(0).u8(200);
    file.str("i8").u32(1).u8(0x80);
    file.str("u16").u32(2).u16(65535);
    file.str("i16").u32(3).u16(0xfffe);
    file.str("u32").u32(4).u32(4000000000u);
    file.str("i32").u32(5).i32(-123456);
    file.str("f32").u32(6).f32(0.1f);
    file.str("bool").u32(7).u8(1);
    file.str("string").u32(8).str("héllo");
    file.str("u64").u32(10).u64(18446744073709551615ull);
    file.str("i64").u32(11).u64(uint64_t(-5));
    file.str("f64").u32(12).f64(-2.5e300);
    file.str("empty").u32(8).str("");
    GgufMetadata metadata = parse_metadata(file);

    REQUIRE(metadata.size() == 13);
    CHECK(metadata.get("u8").type == GgufType::UINT8);
    CHECK(metadata.get("u8").uint_value == 200);
    CHECK(metadata.get("i8").int_value == -128);
    CHECK(metadata.get("u16").uint_value == 65535);
    CHECK(metadata.get("i16").int_value == -2);
    CHECK(metadata.get_u32("u32") == 4000000000u);
    CHECK(metadata.get("i32").int_value == -123456);
    CHECK(metadata.get_f32("f32") == 0.1f);
    CHECK(metadata.get_bool("bool") == true);
    CHECK(metadata.get_string("string") == "h\xc3\xa9llo");
    CHECK(metadata.get("u64").uint_value == 18446744073709551615ull);
    CHECK(metadata.get("i64").int_value == -5);
    CHECK(metadata.get("f64").float_value == -2.5e300);
    CHECK(metadata.get_string("empty").empty());
    // entries() keeps file order
    CHECK(metadata.entries()[0].first == "u8");
    CHECK(metadata.entries()[12].first == "empty");
}

TEST_CASE("arrays, empty arrays and nested arrays are read") {
    ByteBuilder file;
    file.header(3, 0, 4);
    file.str("words").u32(9).u32(8).u64(3).str("a").str("").str("ccc");
    file.str("numbers").u32(9).u32(5).u64(2).i32(-1).i32(7);
    file.str("nothing").u32(9).u32(6).u64(0);
    // [[1, 2], [3]] as ARRAY of ARRAY of UINT16
    file.str("nested").u32(9).u32(9).u64(2);
    file.u32(2).u64(2).u16(1).u16(2);
    file.u32(2).u64(1).u16(3);
    GgufMetadata metadata = parse_metadata(file);

    CHECK(metadata.get_string_array("words") == std::vector<std::string>{"a", "", "ccc"});
    CHECK(metadata.get_i32_array("numbers") == std::vector<int32_t>{-1, 7});
    CHECK(metadata.array_length("nothing") == 0);
    CHECK(metadata.get("nothing").array_type == GgufType::FLOAT32);
    const GgufValue& nested = metadata.get("nested");
    CHECK(gguf_value_type_name(nested) == "ARRAY[ARRAY]");
    REQUIRE(nested.array.size() == 2);
    CHECK(gguf_value_type_name(nested.array[0]) == "ARRAY[UINT16]");
    REQUIRE(nested.array[0].array.size() == 2);
    CHECK(nested.array[0].array[1].uint_value == 2);
    CHECK(nested.array[1].array[0].uint_value == 3);
}

// value type ARRAY, then `levels` x (element type ARRAY, count 1), then an empty UINT8 array.
static ByteBuilder nested_arrays(int levels) {
    ByteBuilder file;
    file.header(3, 0, 1).str("a").u32(9);
    for (int i = 0; i < levels; i++) file.u32(9).u64(1);
    file.u32(0).u64(0);
    return file;
}

TEST_CASE("nesting is limited to 4 levels of arrays") {
    CHECK(parse_metadata(nested_arrays(3)).get("a").array[0].array[0].array[0].array.empty());
    // levels start at 37 and take 12 bytes each; the 5th array starts at 37 + 4 * 12 = 85
    CHECK_THROWS_WITH_AS(parse_metadata(nested_arrays(4)),
                         "metadata key 'a' at offset 85: arrays nested deeper than 4 levels",
                         Error);
    CHECK_THROWS_WITH_AS(parse_metadata(nested_arrays(100)),
                         "metadata key 'a' at offset 85: arrays nested deeper than 4 levels",
                         Error);
}

TEST_CASE("the typed getters name the key and both types") {
    ByteBuilder file;
    file.header(3, 0, 3);
    file.str("count").u32(5).i32(3);
    file.str("ids").u32(9).u32(5).u64(1).i32(3);
    file.str("name").u32(8).str("x");
    GgufMetadata metadata = parse_metadata(file);

    CHECK(metadata.has("count"));
    CHECK_FALSE(metadata.has("nope"));
    CHECK_THROWS_WITH_AS(metadata.get("nope"), "metadata key 'nope' is missing", Error);
    CHECK_THROWS_WITH_AS(metadata.get_u32("nope"), "metadata key 'nope' is missing", Error);
    CHECK_THROWS_WITH_AS(metadata.get_u32("count"),
                         "metadata key 'count' has type INT32, expected UINT32", Error);
    CHECK_THROWS_WITH_AS(metadata.get_f32("count"),
                         "metadata key 'count' has type INT32, expected FLOAT32", Error);
    CHECK_THROWS_WITH_AS(metadata.get_bool("name"),
                         "metadata key 'name' has type STRING, expected BOOL", Error);
    CHECK_THROWS_WITH_AS(metadata.get_string("ids"),
                         "metadata key 'ids' has type ARRAY[INT32], expected STRING", Error);
    CHECK_THROWS_WITH_AS(metadata.get_string_array("ids"),
                         "metadata key 'ids' has type ARRAY[INT32], expected ARRAY[STRING]", Error);
    CHECK_THROWS_WITH_AS(metadata.get_i32_array("name"),
                         "metadata key 'name' has type STRING, expected ARRAY[INT32]", Error);
    CHECK_THROWS_WITH_AS(metadata.array_length("count"),
                         "metadata key 'count' has type INT32, expected ARRAY", Error);
    CHECK(metadata.array_length("ids") == 1);
}

TEST_CASE("add() refuses a duplicate key") {
    GgufMetadata metadata;
    metadata.add("k", GgufValue());
    CHECK_THROWS_WITH_AS(metadata.add("k", GgufValue()), "duplicate metadata key 'k'", Error);
}

TEST_CASE("a duplicate key in the file is named with its pair and offset") {
    ByteBuilder file;
    file.header(3, 0, 2).str("a").u32(4).u32(1).str("a").u32(4).u32(2);
    CHECK_THROWS_WITH_AS(parse_metadata(file), "duplicate metadata key 'a' (pair 1 at offset 41)",
                         Error);
}

TEST_CASE("unknown type ids are rejected") {
    CHECK_THROWS_WITH_AS(parse_metadata(one_pair(13, [](ByteBuilder& f) { f.u64(0); })),
                         "metadata key 'a' at offset 33: unknown value type 13", Error);
    CHECK_THROWS_WITH_AS(parse_metadata(one_pair(9, [](ByteBuilder& f) { f.u32(99).u64(0); })),
                         "metadata key 'a' at offset 37: unknown array element type 99", Error);
    CHECK(gguf_type_name(GgufType(99)) == "type 99");
}

TEST_CASE("a string length larger than the file is rejected before allocating") {
    ByteBuilder key;
    key.header(3, 0, 1).u64(1000).raw("abcdefghijklm");
    CHECK_THROWS_WITH_AS(parse_metadata(key),
                         "key of metadata pair 0 at offset 24: string length 1000 exceeds the 13 "
                         "bytes left in the file",
                         Error);
    ByteBuilder value =
        one_pair(8, [](ByteBuilder& f) { f.u64(0xffffffffffffffffull).raw("xyz"); });
    CHECK_THROWS_WITH_AS(parse_metadata(value),
                         "metadata key 'a' at offset 37: string length 18446744073709551615 "
                         "exceeds the 3 bytes left in the file",
                         Error);
}

TEST_CASE("an array count larger than the file is rejected before allocating") {
    ByteBuilder small = one_pair(9, [](ByteBuilder& f) { f.u32(4).u64(3).u32(1).u32(2); });
    CHECK_THROWS_WITH_AS(parse_metadata(small),
                         "metadata key 'a' at offset 37: 3 UINT32 elements cannot fit in the 8 "
                         "bytes left (each takes at least 4 bytes)",
                         Error);
    // count x element size would overflow 64 bits
    ByteBuilder huge =
        one_pair(9, [](ByteBuilder& f) { f.u32(8).u64(0x2000000000000001ull).u64(0); });
    CHECK_THROWS_WITH_AS(parse_metadata(huge),
                         "metadata key 'a' at offset 37: 2305843009213693953 STRING elements "
                         "cannot fit in the 8 bytes left (each takes at least 8 bytes)",
                         Error);
    ByteBuilder nested = one_pair(9, [](ByteBuilder& f) { f.u32(9).u64(2).u32(0).u64(0).u64(0); });
    CHECK_THROWS_WITH_AS(parse_metadata(nested),
                         "metadata key 'a' at offset 37: 2 ARRAY elements cannot fit in the 20 "
                         "bytes left (each takes at least 12 bytes)",
                         Error);
}

TEST_CASE("a truncated value names the key and offset") {
    CHECK_THROWS_WITH_AS(parse_metadata(one_pair(4, [](ByteBuilder& f) { f.u16(7); })),
                         "unexpected end of file reading metadata key 'a' at offset 37: need 4 "
                         "bytes, 2 left",
                         Error);
    // the second element of a u64 array is cut short
    ByteBuilder cut = one_pair(9, [](ByteBuilder& f) { f.u32(10).u64(2).u64(1).u32(0); });
    cut.bytes.resize(cut.size() - 1);
    CHECK_THROWS_WITH_AS(parse_metadata(cut),
                         "metadata key 'a' at offset 37: 2 UINT64 elements cannot fit in the 11 "
                         "bytes left (each takes at least 8 bytes)",
                         Error);
    ByteBuilder pairs;
    // the second pair, at 38, is 12 zero bytes: key "" (8), type UINT8 (4), and no value
    pairs.header(3, 0, 2).str("a").u32(0).u8(1).zeros(12);
    CHECK_THROWS_WITH_AS(parse_metadata(pairs),
                         "unexpected end of file reading metadata key '' at offset 50: need 1 "
                         "bytes, 0 left",
                         Error);
}

TEST_CASE("a BOOL must be 0 or 1") {
    CHECK_THROWS_WITH_AS(parse_metadata(one_pair(7, [](ByteBuilder& f) { f.u8(2).zeros(8); })),
                         "metadata key 'a' at offset 37: BOOL value is 2, must be 0 or 1", Error);
}

// ---------------------------------------------------------------------------------------------
// Previews

static GgufValue counting_array(int count) {
    std::vector<GgufValue> elements;
    for (int i = 1; i <= count; i++) elements.push_back(gguf_number(GgufType::INT32, i));
    return gguf_array(GgufType::INT32, elements);
}

TEST_CASE("numbers print plainly, floats in their shortest exact form") {
    CHECK(format_gguf_value(gguf_number(GgufType::UINT8, 255)) == "255");
    CHECK(format_gguf_value(gguf_number(GgufType::INT64, -9)) == "-9");
    CHECK(format_gguf_value(gguf_number(GgufType::BOOL, 1)) == "true");
    CHECK(format_gguf_value(gguf_number(GgufType::BOOL, 0)) == "false");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT32, double(1e-6f))) == "1e-06");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT32, double(0.1f))) == "0.1");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT32, 1000000.0)) == "1000000.0");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT64, 0.1)) == "0.1");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT64, 1.0 / 3.0)) == "0.3333333333333333");
    CHECK(format_gguf_value(gguf_number(GgufType::FLOAT32, double(NAN))) == "nan");
}

TEST_CASE("strings are quoted, escaped and shortened with their length") {
    CHECK(format_gguf_value(gguf_string("a\"b\\c\nd\te\x01")) == "\"a\\\"b\\\\c\\nd\\te\\x01\"");
    CHECK(format_gguf_value(gguf_string(std::string(60, 'x'))) ==
          "\"" + std::string(60, 'x') + "\"");
    CHECK(format_gguf_value(gguf_string(std::string(100, 'x'))) ==
          "\"" + std::string(60, 'x') + "\"... (100 bytes)");
    // a cut never splits a UTF-8 character: "é" (c3 a9) at bytes 59-60 moves to after the cut
    std::string accented = std::string(59, 'x') + "\xc3\xa9" + std::string(10, 'y');
    CHECK(format_gguf_value(gguf_string(accented)) ==
          "\"" + std::string(59, 'x') + "\"... (71 bytes)");
}

TEST_CASE("arrays are previewed with a count of what is not shown") {
    CHECK(format_gguf_value(counting_array(3)) == "[1, 2, 3]");
    CHECK(format_gguf_value(counting_array(151936)) == "[1, 2, 3, ... (151933 more)]");
    CHECK(format_gguf_value(counting_array(5), 0) == "[... (5 more)]");
    CHECK(format_gguf_value(counting_array(5), 10) == "[1, 2, 3, 4, 5]");
    CHECK(format_gguf_value(counting_array(0)) == "[]");
    CHECK(format_gguf_value(gguf_array(GgufType::STRING, {gguf_string("!"), gguf_string("\"")})) ==
          "[\"!\", \"\\\"\"]");
    GgufValue nested = gguf_array(GgufType::ARRAY, {counting_array(2), counting_array(4)});
    CHECK(format_gguf_value(nested, 2) == "[[1, 2], [1, 2, ... (2 more)]]");
}
