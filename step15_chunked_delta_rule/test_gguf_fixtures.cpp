// Checks that step02 reads real files exactly as gguf-py's GGUFReader does: the header and
// every key, type and value of the tiny model and of the real Qwen vocabulary, compared with
// the fixtures that tools/fixtures/make_gguf_fixtures.py wrote.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gguf_fixture.h"
#include "gguf_header.h"
#include "gguf_metadata.h"
#include "gguf_reader.h"
#include "test_skip.h"

static void check_lines(const std::vector<std::string>& ours,
                        const std::vector<std::string>& expected) {
    CHECK(ours.size() == expected.size());
    for (size_t i = 0; i < ours.size() && i < expected.size(); i++) CHECK(ours[i] == expected[i]);
}

// Our header and "kv" lines for the file at `path`, compared with the fixture's.
static void check_metadata_against_fixture(const std::string& path, const std::string& fixture) {
    InputFile file(path);
    GgufReader reader(file);
    GgufHeader header = read_gguf_header(reader);
    GgufMetadata metadata = read_gguf_metadata(reader, header.metadata_kv_count);

    check_lines({describe_header(header)}, fixture_lines(fixture, "header"));
    std::vector<std::string> ours;
    for (const auto& [key, value] : metadata.entries()) ours.push_back(describe_pair(key, value));
    check_lines(ours, fixture_lines(fixture, "kv"));
}

TEST_CASE("the tiny model's metadata matches gguf-py") {
    check_metadata_against_fixture("models/tiny-qwen2.gguf", "tests/fixtures/gguf/tiny-qwen2.txt");
}

TEST_CASE("the real Qwen vocabulary's metadata matches gguf-py") {
    std::string why_not;
    std::string path = real_vocab_path(why_not);
    if (path.empty()) {
        skip_test(why_not);
        return;
    }
    check_metadata_against_fixture(path, "tests/fixtures/gguf/qwen-bpe-vocab.txt");
}
