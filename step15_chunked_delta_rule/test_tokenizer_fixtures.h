// test_tokenizer_fixtures.h - what step04's checks share: the record files written by
// tools/fixtures/make_tokenizer_fixtures.py, and the two vocabularies (loaded once per test run).
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "gguf_tensors.h"
#include "test_skip.h"
#include "tokenizer.h"

// One record: the "# ..." comment above it and its "key value" lines, in file order.
struct FixtureRecord {
    std::string comment;
    std::vector<std::pair<std::string, std::string>> fields;

    bool has(const std::string& key) const {
        for (const auto& field : fields)
            if (field.first == key) return true;
        return false;
    }
    const std::string& get(const std::string& key) const {
        for (const auto& field : fields)
            if (field.first == key) return field.second;
        fail("fixture record '%s' has no '%s' line", comment.c_str(), key.c_str());
    }
};

// Records are separated by blank lines; a record's first comment line names it.
inline std::vector<FixtureRecord> read_fixture_records(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open fixture '%s' (tests run from the repository root)", path.c_str());
    std::vector<FixtureRecord> records;
    FixtureRecord current;
    std::string line;
    auto finish = [&]() {
        if (!current.fields.empty()) records.push_back(current);
        current = FixtureRecord();
    };
    while (std::getline(in, line)) {
        if (line.empty()) {
            finish();
        } else if (line[0] == '#') {
            if (current.comment.empty()) current.comment = line.substr(line.size() > 1 ? 2 : 1);
        } else {
            const size_t space = line.find(' ');
            if (space == std::string::npos) current.fields.emplace_back(line, "");
            else current.fields.emplace_back(line.substr(0, space), line.substr(space + 1));
        }
    }
    finish();
    return records;
}

inline std::string hex_to_bytes(const std::string& hex) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    return bytes;
}

inline std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(' ', pos);
        if (end == std::string::npos) end = text.size();
        if (end > pos) ids.push_back(int32_t(std::stol(text.substr(pos, end - pos))));
        pos = end + 1;
    }
    return ids;
}

inline std::vector<std::string> split_words(const std::string& text) {
    std::vector<std::string> words;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(' ', pos);
        if (end == std::string::npos) end = text.size();
        if (end > pos) words.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return words;
}

inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& gguf_path) {
    GgufFile file = open_gguf(gguf_path);  // the vocab-only file has no tensors: that is fine
    return std::make_unique<Tokenizer>(read_vocabulary(file.metadata));
}

inline const Tokenizer& tiny_tokenizer() {
    static std::unique_ptr<Tokenizer> tokenizer = load_tokenizer("models/tiny-qwen2.gguf");
    return *tokenizer;
}

// The real Qwen vocabulary from $QWEN_TOKENIZER_DIR/qwen-bpe-vocab.gguf, or nullptr with the
// reason in `why_not` (the caller then skips).
inline const Tokenizer* real_tokenizer(std::string& why_not) {
    static std::unique_ptr<Tokenizer> tokenizer;
    static std::string reason;
    static bool tried = false;
    if (!tried) {
        tried = true;
        std::string path = real_vocab_path(reason);
        if (!path.empty()) tokenizer = load_tokenizer(path);
    }
    why_not = reason;
    return tokenizer.get();
}
