// Checks for step03's tensor directory on hand-built files: a happy path with the data found at
// the right place, and one check per way a tensor info can be wrong.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error.h"
#include "gguf_tensors.h"
#include "test_bytes.h"

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;    // ggml type id
    uint64_t offset;  // from the data section start
};

static void write_tensor_info(ByteBuilder& file, const TensorSpec& tensor) {
    file.str(tensor.name).u32(uint32_t(tensor.dims.size()));
    for (uint64_t dim : tensor.dims) file.u64(dim);
    file.u32(tensor.type).u64(tensor.offset);
}

// Header, an optional general.alignment pair, the tensor infos, zero padding up to the data
// section, then `data_bytes` bytes counting 0, 1, 2, ... (mod 251) so that a check can tell
// where a tensor's data pointer landed.
static ByteBuilder tensor_file(const std::vector<TensorSpec>& tensors, uint64_t data_bytes,
                               uint32_t alignment = 0) {
    ByteBuilder file;
    file.header(3, tensors.size(), alignment ? 1 : 0);
    if (alignment) file.str("general.alignment").u32(4).u32(alignment);
    for (const TensorSpec& tensor : tensors) write_tensor_info(file, tensor);
    uint64_t align = alignment ? alignment : 32;
    while (file.size() % align != 0) file.u8(0);
    for (uint64_t i = 0; i < data_bytes; i++) file.u8(uint8_t(i % 251));
    return file;
}

static GgufFile parse(const ByteBuilder& file) { return read_gguf(file.bytes.data(), file.size()); }

TEST_CASE("tensors are read, sized from the type table and placed in the data section") {
    // an info takes 8 + name + 4 + 8 x n_dims + 4 + 8 bytes: the two end at 24 + 33 + 48 = 105,
    // so the data section starts at 128
    ByteBuilder bytes = tensor_file({{"a", {4}, 0, 0}, {"b.weight", {32, 3}, 8, 32}}, 32 + 3 * 34);
    GgufFile file = parse(bytes);
    REQUIRE(file.tensors.size() == 2);
    CHECK(file.alignment == 32);
    CHECK(file.data_offset == 128);

    const TensorInfo& a = file.get("a");
    CHECK(a.dims == std::vector<uint64_t>{4});
    CHECK(a.type == 0);
    CHECK(a.n_elements == 4);
    CHECK(a.n_rows() == 1);
    CHECK(a.n_bytes == 16);  // 4 x F32
    CHECK(a.data == bytes.bytes.data() + 128);

    const TensorInfo& b = file.get("b.weight");
    CHECK(b.dims == std::vector<uint64_t>{32, 3});
    CHECK(b.n_elements == 96);
    CHECK(b.n_rows() == 3);
    CHECK(b.n_bytes == 3 * 34);  // 3 rows of one Q8_0 block (32 values in 34 bytes)
    CHECK(b.offset == 32);
    CHECK(b.data[0] == 32);  // the data bytes count up from the section start
    CHECK(b.data == bytes.bytes.data() + 128 + 32);

    CHECK(file.find("nope") == nullptr);
    CHECK_THROWS_WITH_AS(file.get("nope"), "tensor 'nope' is missing", Error);
    CHECK(file.mapping == nullptr);  // read_gguf works on the caller's bytes
}

TEST_CASE("general.alignment moves the data section") {
    // the alignment pair ends at 57, the info at 57 + 33 = 90; aligned to 64 that is 128
    ByteBuilder bytes = tensor_file({{"a", {4}, 0, 64}}, 80, 64);  // outlives the data pointers
    GgufFile file = parse(bytes);
    CHECK(file.alignment == 64);
    CHECK(file.data_offset == 128);
    CHECK(file.tensors[0].data[0] == 64);
    CHECK(data_section_offset(57, 32) == 64);
    CHECK(data_section_offset(64, 32) == 64);
    CHECK(data_section_offset(0, 32) == 0);
    CHECK(data_section_offset(5, 1) == 5);
}

TEST_CASE("a file without tensors has nothing to place, even past its end") {
    ByteBuilder file;
    file.header(3, 0, 1).str("k").u32(0).u8(7);  // 38 bytes; the data section would start at 64
    GgufFile parsed = parse(file);
    CHECK(parsed.tensors.empty());
    CHECK(parsed.data_offset == 64);
}

static GgufFile parse_with_alignment(uint32_t alignment) {
    ByteBuilder file;
    file.header(3, 0, 1).str("general.alignment").u32(4).u32(alignment);
    return parse(file);
}

TEST_CASE("general.alignment must be a UINT32 power of two") {
    CHECK(parse_with_alignment(1).alignment == 1);
    CHECK(parse_with_alignment(0x80000000u).alignment == 0x80000000u);
    CHECK_THROWS_WITH_AS(parse_with_alignment(48),
                         "metadata key 'general.alignment' is 48, must be a power of two", Error);
    CHECK_THROWS_WITH_AS(parse_with_alignment(0xffffffffu),
                         "metadata key 'general.alignment' is 4294967295, must be a power of two",
                         Error);
    CHECK_THROWS_WITH_AS(parse_with_alignment(0),
                         "metadata key 'general.alignment' is 0, must be a power of two", Error);
    ByteBuilder wide;
    wide.header(3, 0, 1).str("general.alignment").u32(10).u64(32);
    CHECK_THROWS_WITH_AS(
        parse(wide), "metadata key 'general.alignment' has type UINT64, expected UINT32", Error);
}

// Most tensor-info errors are found while reading the one info at offset 24.
static std::string first_info_error(const TensorSpec& tensor) {
    ByteBuilder file = tensor_file({tensor}, 4096);
    try {
        parse(file);
    } catch (const Error& error) {
        return error.what();
    }
    return "no error";
}

TEST_CASE("n_dims must be 1 to 4") {
    CHECK(first_info_error({"w", {}, 0, 0}) ==
          "tensor 'w' (info at offset 24): n_dims is 0, must be 1 to 4");
    CHECK(first_info_error({"w", {1, 1, 1, 1, 1}, 0, 0}) ==
          "tensor 'w' (info at offset 24): n_dims is 5, must be 1 to 4");
    CHECK(first_info_error({"w", {1, 1, 1, 1}, 0, 0}) == "no error");
}

TEST_CASE("every dimension must be positive") {
    CHECK(first_info_error({"w", {4, 0}, 0, 0}) ==
          "tensor 'w' (info at offset 24): dimension 1 is 0");
    CHECK(first_info_error({"w", {0}, 0, 0}) == "tensor 'w' (info at offset 24): dimension 0 is 0");
}

TEST_CASE("element and byte counts must not overflow") {
    CHECK(first_info_error({"w", {1ull << 32, 1ull << 32}, 0, 0}) ==
          "tensor 'w' (info at offset 24): element count overflows 64 bits");
    CHECK(first_info_error({"w", {1ull << 62, 2}, 0, 0}) ==
          "tensor 'w' (info at offset 24): element count overflows 64 bits");
    // 2^62 F32 elements fit in int64_t, but their 2^64 bytes do not fit in uint64_t
    CHECK(first_info_error({"w", {1ull << 31, 1ull << 31}, 0, 0}) ==
          "tensor 'w' (info at offset 24): size in bytes overflows 64 bits");
}

TEST_CASE("the type must be in the table and the row a whole number of blocks") {
    CHECK(first_info_error({"w", {4}, 31, 0}) ==
          "tensor 'w' (info at offset 24): unknown ggml type id 31");
    CHECK(first_info_error({"w", {4}, 4, 0}) ==
          "tensor 'w' (info at offset 24): unknown ggml type id 4");
    CHECK(first_info_error({"w", {33, 2}, 2, 0}) ==
          "tensor 'w' (info at offset 24): a row of 33 elements is not a whole number of Q4_0 "
          "blocks (32 elements each)");
    CHECK(first_info_error({"w", {256}, 12, 0}) == "no error");  // one Q4_K block
}

TEST_CASE("names are at most 63 bytes, as ggml requires") {
    CHECK(first_info_error({std::string(63, 'n'), {4}, 0, 0}) == "no error");
    CHECK(first_info_error({std::string(64, 'n'), {4}, 0, 0}) ==
          "tensor 0 (info at offset 24): name is 64 bytes long, ggml allows at most 63");
    ByteBuilder lying;
    lying.header(3, 1, 0).u64(0xffffffffffffffffull).zeros(40);
    CHECK_THROWS_WITH_AS(parse(lying),
                         "tensor 0 (info at offset 24): name is 18446744073709551615 bytes long, "
                         "ggml allows at most 63",
                         Error);
}

TEST_CASE("tensor names are unique") {
    CHECK_THROWS_WITH_AS(
        parse(tensor_file({{"w", {4}, 0, 0}, {"v", {4}, 0, 32}, {"w", {4}, 0, 64}}, 96)),
        "duplicate tensor name 'w' (tensors 0 and 2)", Error);
}

TEST_CASE("a truncated tensor info names the tensor") {
    ByteBuilder file;
    file.header(3, 1, 0);
    write_tensor_info(file, {"w", {4, 4}, 0, 0});
    file.bytes.resize(file.size() - 3);  // cut into the offset field, which starts at 57
    CHECK_THROWS_WITH_AS(parse(file),
                         "unexpected end of file reading tensor 'w' (info at offset 24) at offset "
                         "57: need 8 bytes, 5 left",
                         Error);
}

TEST_CASE("data offsets must be aligned") {
    CHECK(first_info_error({"w", {4}, 0, 4}) ==
          "tensor 'w': data offset 4 is not a multiple of the alignment 32");
    CHECK_THROWS_WITH_AS(parse(tensor_file({{"w", {4}, 0, 64}}, 128, 64 * 2)),
                         "tensor 'w': data offset 64 is not a multiple of the alignment 128",
                         Error);
}

TEST_CASE("tensor data must lie inside the file") {
    // the info ends at 24 + 41 = 65: the data section starts at 96, the file ends at 96 + 40
    CHECK_THROWS_WITH_AS(parse(tensor_file({{"w", {4, 3}, 0, 0}}, 40)),
                         "tensor 'w': its 48 bytes at offset 0 of the data section (which starts "
                         "at 96) run past the end of the file (136 bytes)",
                         Error);
    CHECK_THROWS_WITH_AS(parse(tensor_file({{"w", {4}, 0, 64}}, 64)),
                         "tensor 'w': its 16 bytes at offset 64 of the data section (which starts "
                         "at 64) run past the end of the file (128 bytes)",
                         Error);
    // an offset near 2^64 must not wrap around to a small file position
    CHECK_THROWS_WITH_AS(parse(tensor_file({{"w", {4}, 0, 0xffffffffffffffe0ull}}, 64)),
                         "tensor 'w': its 16 bytes at offset 18446744073709551584 of the data "
                         "section (which starts at 64) run past the end of the file (128 bytes)",
                         Error);
    CHECK_NOTHROW(parse(tensor_file({{"w", {4}, 0, 32}}, 48)));  // ends exactly at the end
}

TEST_CASE("place_tensors checks a data section that starts past the end of the file") {
    std::vector<TensorInfo> tensors(1);
    tensors[0].name = "w";
    tensors[0].dims = {1};
    tensors[0].n_elements = 1;
    tensors[0].n_bytes = 4;
    uint8_t bytes[16] = {};
    CHECK_THROWS_WITH_AS(place_tensors(tensors, 32, 32, bytes, sizeof bytes),
                         "tensor 'w': its 4 bytes at offset 0 of the data section (which starts at "
                         "32) run past the end of the file (16 bytes)",
                         Error);
}

TEST_CASE("open_gguf maps the file and keeps the mapping") {
    CHECK_THROWS_WITH_AS(open_gguf("no/such/model.gguf"),
                         "cannot open 'no/such/model.gguf': No such file or directory", Error);
    CHECK_THROWS_WITH_AS(MappedFile("step03_tensors"),
                         "cannot read 'step03_tensors': not a regular file", Error);
    GgufFile file = open_gguf("models/tiny-qwen2.gguf");
    REQUIRE(file.mapping != nullptr);
    CHECK(file.tensors.size() == file.header.tensor_count);
    const TensorInfo& embedding = file.get("token_embd.weight");
    CHECK(embedding.data == file.mapping->data() + file.data_offset + embedding.offset);
}
