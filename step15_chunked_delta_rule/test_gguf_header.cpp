// Checks for step01: the header reader accepts v2/v3 and rejects every broken header with
// one clear message.
#include <doctest/doctest.h>

#include "error.h"
#include "gguf_header.h"
#include "gguf_reader.h"
#include "test_bytes.h"

static GgufHeader parse_header(const ByteBuilder& file) {
    InputFile input = InputFile::from_memory(file.bytes.data(), file.size());
    GgufReader reader(input);
    return read_gguf_header(reader);
}

// Room for `tensors` minimal tensor infos and `pairs` minimal pairs after the header.
static ByteBuilder header_with_room(uint32_t version, uint64_t tensors, uint64_t pairs) {
    ByteBuilder file;
    file.header(version, tensors, pairs);
    file.zeros(tensors * kMinTensorInfoBytes + pairs * kMinMetadataPairBytes);
    return file;
}

TEST_CASE("reader assembles little-endian numbers byte by byte") {
    ByteBuilder file;
    file.u8(0x01).u16(0x0302).u32(0x07060504).u64(0x0f0e0d0c0b0a0908ull);
    InputFile input = InputFile::from_memory(file.bytes.data(), file.size());
    GgufReader reader(input);
    CHECK(reader.read_u8("a") == 0x01);
    CHECK(reader.read_u16("b") == 0x0302);
    CHECK(reader.read_u32("c") == 0x07060504u);
    CHECK(reader.read_u64("d") == 0x0f0e0d0c0b0a0908ull);
    CHECK(reader.offset() == 15);
    CHECK(reader.bytes_left() == 0);
    CHECK_THROWS_WITH_AS(reader.read_u8("tail"),
                         "unexpected end of file reading tail at offset 15: need 1 bytes, 0 left",
                         Error);
}

TEST_CASE("a valid v3 header is read") {
    GgufHeader header = parse_header(header_with_room(3, 2, 5));
    CHECK(header.version == 3);
    CHECK(header.tensor_count == 2);
    CHECK(header.metadata_kv_count == 5);
}

TEST_CASE("a v2 header is accepted") {
    CHECK(parse_header(header_with_room(2, 0, 1)).version == 2);
}

TEST_CASE("a file shorter than the header is rejected") {
    ByteBuilder file;
    file.raw("GGUF").u32(3);
    CHECK_THROWS_WITH_AS(parse_header(file),
                         "file is too short for a GGUF header: 8 bytes, need 24", Error);
    CHECK_THROWS_WITH_AS(parse_header(ByteBuilder()),
                         "file is too short for a GGUF header: 0 bytes, need 24", Error);
}

TEST_CASE("a wrong magic is rejected and shown") {
    ByteBuilder file;
    file.raw("GGML").u32(3).u64(0).u64(0);
    CHECK_THROWS_WITH_AS(parse_header(file),
                         "not a GGUF file: magic is 47 47 4d 4c, expected 47 47 55 46 (\"GGUF\")",
                         Error);
}

TEST_CASE("version 1 is rejected") {
    CHECK_THROWS_WITH_AS(
        parse_header(header_with_room(1, 0, 1)),
        "GGUF version 1 is not supported (it used 32-bit counts): re-convert the model", Error);
}

TEST_CASE("an unknown version is rejected") {
    CHECK_THROWS_WITH_AS(parse_header(header_with_room(4, 0, 1)),
                         "unsupported GGUF version 4 (supported: 2 and 3)", Error);
}

TEST_CASE("a byte-swapped (big-endian) file is recognised") {
    ByteBuilder file;
    file.raw("GGUF").u32(0x03000000).u64(0).u64(0);
    CHECK_THROWS_WITH_AS(parse_header(file),
                         "GGUF version 0x03000000 looks byte-swapped: this is a big-endian file, "
                         "and only little-endian files are supported",
                         Error);
}

TEST_CASE("counts that cannot fit in the file are rejected") {
    ByteBuilder file = header_with_room(3, 1, 0);  // 24 bytes of room
    file.bytes[8] = 2;                             // claim 2 tensors
    CHECK_THROWS_WITH_AS(parse_header(file),
                         "tensor count 2 cannot fit in the 24 bytes after the header "
                         "(each tensor info takes at least 24 bytes)",
                         Error);

    ByteBuilder lying;
    lying.header(3, 0, 0xffffffffffffffffull).zeros(100);
    CHECK_THROWS_WITH_AS(parse_header(lying),
                         "metadata count 18446744073709551615 cannot fit in the 100 bytes after "
                         "the header (each key/value pair takes at least 13 bytes)",
                         Error);

    ByteBuilder both = header_with_room(3, 1, 1);  // room for exactly one of each
    both.bytes[8] = 2;
    both.zeros(kMinTensorInfoBytes - 1);  // one byte short of a second tensor info
    CHECK_THROWS_WITH_AS(
        parse_header(both),
        "2 tensors and 1 metadata pairs cannot fit in the 60 bytes after the header", Error);
}

TEST_CASE("a missing file names its path") {
    CHECK_THROWS_WITH_AS(InputFile("no/such/model.gguf"),
                         "cannot open 'no/such/model.gguf': No such file or directory", Error);
}
