// Checks that step03 finds the same tensors as gguf-py's GGUFReader: every name, type, shape,
// offset and size, the data section's start, and the first and last bytes of every tensor's
// data (compared with the fixtures that tools/fixtures/make_gguf_fixtures.py wrote).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gguf_fixture.h"
#include "gguf_tensors.h"
#include "test_skip.h"

static std::string hex_bytes(const uint8_t* bytes, uint64_t count) {
    std::string text;
    for (uint64_t i = 0; i < count; i++) text += strprintf("%02x", bytes[i]);
    return text;
}

// "tensor NAME type=ID dims=A,B offset=REL bytes=N head=HEX tail=HEX", as the script writes it.
static std::string describe_tensor(const TensorInfo& tensor) {
    std::string dims;
    for (size_t i = 0; i < tensor.dims.size(); i++)
        dims += (i ? "," : "") + std::to_string(tensor.dims[i]);
    uint64_t edge = std::min<uint64_t>(8, tensor.n_bytes);
    return strprintf("tensor %s type=%u dims=%s offset=%llu bytes=%llu head=%s tail=%s",
                     tensor.name.c_str(), tensor.type, dims.c_str(),
                     (unsigned long long)tensor.offset, (unsigned long long)tensor.n_bytes,
                     hex_bytes(tensor.data, edge).c_str(),
                     hex_bytes(tensor.data + tensor.n_bytes - edge, edge).c_str());
}

static void check_tensors_against_fixture(const std::string& path, const std::string& fixture) {
    GgufFile file = open_gguf(path);
    std::vector<std::string> ours = {strprintf("data alignment=%u offset=%llu", file.alignment,
                                               (unsigned long long)file.data_offset)};
    for (const TensorInfo& tensor : file.tensors) ours.push_back(describe_tensor(tensor));

    std::vector<std::string> expected = fixture_lines(fixture, "data");
    std::vector<std::string> tensor_lines = fixture_lines(fixture, "tensor");
    expected.insert(expected.end(), tensor_lines.begin(), tensor_lines.end());
    CHECK(ours.size() == expected.size());
    for (size_t i = 0; i < ours.size() && i < expected.size(); i++) CHECK(ours[i] == expected[i]);
}

TEST_CASE("the tiny model's tensors match gguf-py") {
    check_tensors_against_fixture("models/tiny-qwen2.gguf", "tests/fixtures/gguf/tiny-qwen2.txt");
}

TEST_CASE("the real Qwen vocabulary has no tensors, as gguf-py sees it") {
    std::string why_not;
    std::string path = real_vocab_path(why_not);
    if (path.empty()) {
        skip_test(why_not);
        return;
    }
    check_tensors_against_fixture(path, "tests/fixtures/gguf/qwen-bpe-vocab.txt");
}
