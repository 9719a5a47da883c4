// Checks for the ggml type table: every id gguf-py knows has the same block size and bytes
// per block here (tests/fixtures/dequant/ggml_quant_sizes.txt, written by
// tools/fixtures/make_dequant_fixtures.py); an unknown id or a partial block fails with one
// clear line.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "error.h"
#include "ggml_types.h"

TEST_CASE("the type table matches gguf-py's GGML_QUANT_SIZES") {
    std::ifstream table("tests/fixtures/dequant/ggml_quant_sizes.txt");
    REQUIRE_MESSAGE(table.good(), "cannot open tests/fixtures/dequant/ggml_quant_sizes.txt");
    int compared = 0;
    std::string line;
    while (std::getline(table, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        uint32_t id = 0, block_size = 0, block_bytes = 0;
        std::string name;
        REQUIRE_MESSAGE(bool(fields >> id >> name >> block_size >> block_bytes), line);
        CAPTURE(line);
        const GgmlTypeInfo& ours = ggml_type_info(id);
        CHECK(std::string(ours.name) == name);
        CHECK(ours.block_size == block_size);
        if (name == "Q8_1") {
            // gguf-py keeps a stale f32 layout (40 bytes); ggml's block_q8_1 is two f16 + 32 int8.
            CHECK(block_bytes == 40);
            CHECK(ours.block_bytes == 36);
        } else {
            CHECK(ours.block_bytes == block_bytes);
        }
        compared++;
    }
    CHECK(compared >= 34);  // gguf-py 0.19 knows 34 types
}

TEST_CASE("type ids that are retired or never assigned are rejected") {
    CHECK_THROWS_WITH_AS(ggml_type_info(4), "unknown ggml type id 4", Error);
    CHECK_THROWS_WITH_AS(ggml_type_info(5), "unknown ggml type id 5", Error);
    CHECK_THROWS_WITH_AS(ggml_type_info(31), "unknown ggml type id 31", Error);
    CHECK_THROWS_WITH_AS(ggml_type_info(37), "unknown ggml type id 37", Error);
    CHECK_THROWS_WITH_AS(ggml_type_info(99), "unknown ggml type id 99", Error);
    CHECK_THROWS_WITH_AS(ggml_type_info(0xffffffffu), "unknown ggml type id 4294967295", Error);
    CHECK_THROWS_WITH_AS(ggml_row_bytes(31, 32), "unknown ggml type id 31", Error);
}

TEST_CASE("the enum names the ids of the table") {
    CHECK(std::string(ggml_type_info(uint32_t(GgmlType::Q4_K)).name) == "Q4_K");
    CHECK(std::string(ggml_type_info(uint32_t(GgmlType::BF16)).name) == "BF16");
    CHECK(std::string(ggml_type_info(uint32_t(GgmlType::MXFP4)).name) == "MXFP4");
    CHECK(std::string(ggml_type_info(42).name) == "Q2_0");  // newer than gguf-py 0.19
    CHECK(ggml_type_info(42).block_size == 64);
    CHECK(ggml_type_info(42).block_bytes == 18);
}

TEST_CASE("exactly the fourteen storage types this step implements can be dequantized") {
    std::string supported;
    for (uint32_t id : ggml_type_ids()) {
        const GgmlTypeInfo& type = ggml_type_info(id);
        if (type.can_dequantize) supported += std::string(type.name) + " ";
    }
    // In id order: F32 0, F16 1, Q4_0 2 ... Q6_K 14, IQ4_NL 20, BF16 30.
    CHECK(supported == "F32 F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL BF16 ");
}

TEST_CASE("ggml_type_ids lists the table's ids once each, in increasing order") {
    const std::vector<uint32_t> ids = ggml_type_ids();
    CHECK(ids.size() == 35);  // gguf-py 0.19's 34, with Q8_1, plus the three newer ids
    for (size_t i = 1; i < ids.size(); i++) CHECK(ids[i - 1] < ids[i]);
    for (uint32_t id : ids) CHECK_NOTHROW(ggml_type_info(id));
}

TEST_CASE("every block type that can be dequantized has a block layout of the table's sizes") {
    for (uint32_t id : ggml_type_ids()) {
        const GgmlTypeInfo& type = ggml_type_info(id);
        CAPTURE(type.name);
        const block_layout::Sizes* layout = nullptr;
        for (const block_layout::Sizes& sizes : block_layout::kAll)
            if (uint32_t(sizes.type) == id) layout = &sizes;
        CHECK((layout != nullptr) == (type.can_dequantize && type.block_size > 1));
        if (!layout) continue;
        CHECK(uint32_t(layout->weights) == type.block_size);
        CHECK(uint32_t(layout->bytes) == type.block_bytes);
    }
}

TEST_CASE("row bytes are whole blocks") {
    CHECK(ggml_row_bytes(uint32_t(GgmlType::F32), 7) == 28);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::F16), 1536) == 3072);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::BF16), 3) == 6);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::Q8_0), 1536) == 48 * 34);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::Q4_K), 1536) == 6 * 144);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::Q6_K), 8960) == 35 * 210);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::Q4_0), 0) == 0);
}

TEST_CASE("a row that is not a whole number of blocks is rejected") {
    CHECK_THROWS_WITH_AS(
        ggml_row_bytes(uint32_t(GgmlType::Q4_K), 896),
        "a row of 896 elements is not a whole number of Q4_K blocks (256 elements each)", Error);
    CHECK_THROWS_WITH_AS(
        ggml_row_bytes(uint32_t(GgmlType::Q8_0), 33),
        "a row of 33 elements is not a whole number of Q8_0 blocks (32 elements each)", Error);
}

TEST_CASE("a row too long to address is rejected instead of wrapping around") {
    // 2^63 F32 elements would need 2^65 bytes.
    CHECK_THROWS_WITH_AS(ggml_row_bytes(uint32_t(GgmlType::F32), uint64_t(1) << 63),
                         "a row of 9223372036854775808 F32 elements is too large to address",
                         Error);
    CHECK(ggml_row_bytes(uint32_t(GgmlType::F32), uint64_t(1) << 61) == uint64_t(1) << 63);
}
