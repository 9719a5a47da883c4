// test_forward_fixtures.h - reads tests/fixtures/forward/ (tools/fixtures/make_logit_fixtures.py):
// for each case NAME in cases.txt, NAME.ids.txt (the prompt's ids), NAME.logits.f32 (transformers'
// logits at every position, little-endian float32) and NAME.greedy.txt (its 16 greedy tokens).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "half.h"

static const char* kForwardFixtures = "tests/fixtures/forward/";

inline std::string read_fixture_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

inline std::vector<int32_t> read_fixture_ids(const std::string& path) {
    std::istringstream in(read_fixture_text(path));
    std::vector<int32_t> ids;
    int32_t id;
    while (in >> id) ids.push_back(id);
    return ids;
}

inline std::vector<float> read_fixture_f32(const std::string& path) {
    std::string bytes = read_fixture_text(path);
    REQUIRE(bytes.size() % 4 == 0);
    std::vector<float> values(bytes.size() / 4);
    for (size_t i = 0; i < values.size(); i++) {
        uint32_t bits = 0;
        for (int b = 0; b < 4; b++) bits |= uint32_t(uint8_t(bytes[4 * i + b])) << (8 * b);
        values[i] = f32_from_bits(bits);
    }
    return values;
}

struct ForwardFixture {
    std::string name;
    int n_tokens = 0;
    int n_vocab = 0;
};

inline std::vector<ForwardFixture> forward_fixtures() {
    std::istringstream in(read_fixture_text(std::string(kForwardFixtures) + "cases.txt"));
    std::vector<ForwardFixture> cases;
    ForwardFixture c;
    while (in >> c.name >> c.n_tokens >> c.n_vocab) cases.push_back(c);
    return cases;
}
