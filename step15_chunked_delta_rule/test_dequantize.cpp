// Checks for dequantization: random blocks of every supported type must come out exactly as
// gguf-py's numpy code dequantizes them. The blocks and gguf-py's values are committed in
// tests/fixtures/dequant/ (regenerate with: python3 tools/fixtures/make_dequant_fixtures.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dequantize.h"
#include "error.h"
#include "ggml_types.h"
#include "half.h"

namespace {

const std::string kFixtureDir = "tests/fixtures/dequant/";

std::vector<uint8_t> read_file_bytes(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) fail("cannot open fixture %s", path.c_str());
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(file),
                                std::istreambuf_iterator<char>());
}

// Fixture lines without the '#' comments.
std::vector<std::string> read_fixture_lines(const std::string& path) {
    std::ifstream file(path);
    if (!file) fail("cannot open fixture %s", path.c_str());
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(file, line))
        if (!line.empty() && line[0] != '#') lines.push_back(line);
    return lines;
}

struct DequantCase {
    std::string type_name;
    uint32_t type_id = 0;
    int64_t n = 0;
    std::string blocks_file;
    std::string expected_file;
};

std::vector<DequantCase> read_dequant_index() {
    std::vector<DequantCase> cases;
    for (const std::string& line : read_fixture_lines(kFixtureDir + "index.txt")) {
        std::istringstream fields(line);
        DequantCase c;
        if (!(fields >> c.type_name >> c.type_id >> c.n >> c.blocks_file >> c.expected_file))
            fail("bad line in %sindex.txt: %s", kFixtureDir.c_str(), line.c_str());
        cases.push_back(c);
    }
    return cases;
}

// Distance in units in the last place (ulps), for the mismatch report: floats in the order of
// the real line, as integers.
int64_t ulps_between(uint32_t a, uint32_t b) {
    auto ordered = [](uint32_t bits) {
        int64_t magnitude = bits & 0x7fffffff;
        return (bits & 0x80000000u) ? -magnitude : magnitude;
    };
    return std::llabs(ordered(a) - ordered(b));
}

// Every type must match gguf-py bit for bit (so -0 is not +0, and a NaN keeps its payload).
// Not by luck of evaluation order: each product d * scale * q needs at most 11 (f16 mantissa)
// + 7 (scale) + 5 (q) = 23 significant bits, so it is exact in float32 whichever way it is
// grouped; only the final "- dmin * min" or "+ m" rounds, once, in any implementation. Even a
// fused multiply-add gives the same bits. Returns an empty string when all elements match,
// otherwise the first few mismatches and the worst one.
std::string compare_bits(const std::vector<float>& got, const std::vector<float>& want) {
    std::string report;
    int mismatches = 0;
    int64_t worst_ulps = -1;
    size_t worst = 0;
    for (size_t i = 0; i < want.size(); i++) {
        uint32_t g = f32_to_bits(got[i]), w = f32_to_bits(want[i]);
        if (g == w) continue;
        if (++mismatches <= 5)
            report += strprintf("  [%zu] got %.9g (0x%08x), want %.9g (0x%08x)\n", i, got[i], g,
                                want[i], w);
        int64_t ulps = ulps_between(g, w);
        if (ulps > worst_ulps) worst_ulps = ulps, worst = i;
    }
    if (mismatches == 0) return report;
    return strprintf("%d of %zu elements differ; first ones:\n", mismatches, want.size()) + report +
           strprintf("  worst: [%zu] got %.9g, want %.9g (%lld ulps apart)", worst, got[worst],
                     want[worst], (long long)worst_ulps);
}

}  // namespace

TEST_CASE("every supported type dequantizes exactly as gguf-py does") {
    std::vector<DequantCase> cases = read_dequant_index();
    REQUIRE(cases.size() >= 42);  // 14 types x 3 counts
    for (const DequantCase& c : cases) {
        std::string label = c.type_name + " x " + std::to_string(c.n) + " (" + c.blocks_file + ")";
        CAPTURE(label);
        std::vector<uint8_t> blocks = read_file_bytes(kFixtureDir + c.blocks_file);
        std::vector<uint8_t> expected_bytes = read_file_bytes(kFixtureDir + c.expected_file);
        REQUIRE(blocks.size() == ggml_row_bytes(c.type_id, uint64_t(c.n)));
        REQUIRE(expected_bytes.size() == size_t(c.n) * 4);

        std::vector<float> expected(size_t(c.n));  // (n,)
        dequantize_f32(expected_bytes.data(), expected.data(), c.n);

        // One extra slot past the end must stay untouched.
        const float sentinel = -12345.0f;
        std::vector<float> got(size_t(c.n) + 1, 0.0f);  // (n + 1,)
        got[size_t(c.n)] = sentinel;
        dequantize(c.type_id, blocks.data(), got.data(), c.n);
        CHECK(got[size_t(c.n)] == sentinel);
        got.pop_back();

        std::string report = compare_bits(got, expected);
        CHECK_MESSAGE(report.empty(), label << ": " << report);
    }
}

TEST_CASE("the fixtures cover every type that claims a routine") {
    std::set<uint32_t> covered;
    for (const DequantCase& c : read_dequant_index()) covered.insert(c.type_id);
    for (uint32_t id = 0; id < 64; id++) {
        bool known = true;
        try {
            ggml_type_info(id);
        } catch (const Error&) {
            known = false;
        }
        if (!known) continue;
        CAPTURE(ggml_type_info(id).name);
        CHECK(ggml_type_info(id).can_dequantize == (covered.count(id) == 1));
    }
}

TEST_CASE("f16 special values decode to the exact float32") {
    // f16 bits -> float32 bits, by the IEEE binary16 definition.
    const uint16_t f16[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00,
                            0x7bff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01};
    const uint32_t want[] = {
        0x00000000,  // +0
        0x80000000,  // -0
        0x33800000,  // smallest subnormal, 2^-24
        0xb3800000,  // -2^-24
        0x387fc000,  // largest subnormal, 1023 * 2^-24
        0x38800000,  // smallest normal, 2^-14
        0x3f800000,  // 1
        0x477fe000,  // 65504, the largest finite f16
        0x7f800000,  // +inf
        0xff800000,  // -inf
        0x7fc00000,  // quiet NaN
        0xffc00000,  // negative quiet NaN
        0x7f802000,  // signalling NaN: the payload is kept, as numpy does
    };
    constexpr int count = int(sizeof f16 / sizeof f16[0]);
    uint8_t bytes[2 * count];  // (count, 2) little-endian
    for (int i = 0; i < count; i++)
        bytes[2 * i] = uint8_t(f16[i]), bytes[2 * i + 1] = uint8_t(f16[i] >> 8);
    float got[count];  // (count,)
    dequantize_f16(bytes, got, count);
    for (int i = 0; i < count; i++) {
        CAPTURE(i);
        CHECK(f32_to_bits(got[i]) == want[i]);
    }
    CHECK(std::ldexp(1.0f, -24) == got[2]);
    CHECK(std::signbit(got[1]));
}

TEST_CASE("bf16 special values decode to the exact float32") {
    const uint16_t bf16[] = {0x0000, 0x8000, 0x0001, 0x3f80, 0x7f80, 0xff80, 0x7fc0, 0x7f81};
    constexpr int count = int(sizeof bf16 / sizeof bf16[0]);
    uint8_t bytes[2 * count];  // (count, 2) little-endian
    for (int i = 0; i < count; i++)
        bytes[2 * i] = uint8_t(bf16[i]), bytes[2 * i + 1] = uint8_t(bf16[i] >> 8);
    float got[count];  // (count,)
    dequantize_bf16(bytes, got, count);
    for (int i = 0; i < count; i++) {
        CAPTURE(i);
        CHECK(f32_to_bits(got[i]) == uint32_t(bf16[i]) << 16);  // bf16 is the top half of an f32
    }
    CHECK(got[2] == std::ldexp(1.0f, -133));  // an f32 subnormal: 2^-126 * 2^-7
    CHECK(std::isinf(got[4]));
    CHECK(std::isnan(got[7]));
}

TEST_CASE("float32 -> f16 and bf16 rounding matches numpy and gguf-py") {
    std::vector<std::string> lines = read_fixture_lines(kFixtureDir + "half_conversions.txt");
    REQUIRE(lines.size() > 80);
    for (const std::string& line : lines) {
        CAPTURE(line);
        unsigned f32_bits = 0, want_f16 = 0, want_bf16 = 0;
        REQUIRE(std::sscanf(line.c_str(), "%x %x %x", &f32_bits, &want_f16, &want_bf16) == 3);
        float value = f32_from_bits(f32_bits);
        uint16_t f16 = f32_to_f16(value);
        if (std::isnan(value)) {
            // IEEE leaves the payload of a converted NaN open: numpy keeps its top bits, ggml
            // (and half.h) return a quiet NaN. Both must stay a NaN of the same sign.
            CHECK((f16 & 0x7c00) == 0x7c00);
            CHECK((f16 & 0x03ff) != 0);
            CHECK((f16 & 0x8000) == (want_f16 & 0x8000));
        } else {
            CHECK(f16 == want_f16);
        }
        CHECK(f32_to_bf16(value) == want_bf16);
    }
}

TEST_CASE("known types without a routine say so") {
    uint8_t block[292] = {};  // big enough for one block of any of them
    float out[256];           // (256,)
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::IQ2_XXS), block, out, 256),
                         "dequantization of IQ2_XXS is not supported", Error);
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::Q8_1), block, out, 32),
                         "dequantization of Q8_1 is not supported", Error);
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::Q8_K), block, out, 256),
                         "dequantization of Q8_K is not supported", Error);
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::IQ4_XS), block, out, 256),
                         "dequantization of IQ4_XS is not supported", Error);
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::F64), block, out, 1),
                         "dequantization of F64 is not supported", Error);
    CHECK_THROWS_WITH_AS(dequantize(uint32_t(GgmlType::MXFP4), block, out, 32),
                         "dequantization of MXFP4 is not supported", Error);
}

TEST_CASE("unknown type ids are rejected before any byte is read") {
    float out[1];  // (1,)
    CHECK_THROWS_WITH_AS(dequantize(4, nullptr, out, 1), "unknown ggml type id 4", Error);
    CHECK_THROWS_WITH_AS(dequantize(31, nullptr, out, 1), "unknown ggml type id 31", Error);
    CHECK_THROWS_WITH_AS(dequantize(99, nullptr, out, 1), "unknown ggml type id 99", Error);
}

TEST_CASE("a count that is not whole blocks is rejected") {
    uint8_t block[18] = {};
    float out[32];  // (32,)
    CHECK_THROWS_WITH_AS(
        dequantize(uint32_t(GgmlType::Q4_0), block, out, 31),
        "cannot dequantize 31 elements of Q4_0: not a whole number of blocks (32 elements each)",
        Error);
    CHECK_THROWS_WITH_AS(
        dequantize(uint32_t(GgmlType::Q4_0), block, out, -32),
        "cannot dequantize -32 elements of Q4_0: not a whole number of blocks (32 elements each)",
        Error);
}
