// Checks for the tokenizer: exact ids against HF tokenizers on the committed corpus and on text
// that NFC changes (real Qwen vocabulary when $QWEN_TOKENIZER_DIR has it, the tiny model's
// always), round trips, added tokens before normalization, streaming decode, and every
// vocabulary error.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "nfc.h"
#include "test_gguf_values.h"
#include "test_skip.h"
#include "test_tokenizer_fixtures.h"
#include "tokenizer.h"
#include "utf8.h"

static std::string ids_to_string(const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
    return text;
}

// Encodes every corpus text and compares with HF's ids; decodes them back.
static void check_corpus(const Tokenizer& tokenizer, const std::string& path) {
    std::vector<FixtureRecord> records = read_fixture_records(path);
    REQUIRE(records.size() >= 300);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        const std::vector<int32_t> ids = tokenizer.encode(text);
        CHECK(ids_to_string(ids) == record.get("ids"));
        CHECK(tokenizer.decode(ids) == text);
    }
}

TEST_CASE("real Qwen vocabulary: corpus ids equal HF tokenizers exactly") {
    std::string why_not;
    const Tokenizer* tokenizer = real_tokenizer(why_not);
    if (!tokenizer) {
        skip_test(why_not);
        return;
    }
    CHECK(tokenizer->n_vocab() == 151936);
    check_corpus(*tokenizer, "tests/fixtures/tokenizer/corpus_qwen.txt");
}

TEST_CASE("tiny model vocabulary: corpus ids equal HF tokenizers exactly") {
    check_corpus(tiny_tokenizer(), "tests/fixtures/tokenizer/corpus_tiny.txt");
}

// Random strings of code points from all planes (no surrogates), and random bytes.
static std::string random_text(std::mt19937& rng, bool valid_utf8) {
    std::string text;
    const int length = int(rng() % 40);
    for (int i = 0; i < length; i++) {
        if (!valid_utf8) {
            text += char(rng() & 0xFF);
            continue;
        }
        uint32_t code_point;
        switch (rng() % 4) {
            case 0: code_point = 0x20 + rng() % 0x5F; break;      // printable ASCII
            case 1: code_point = rng() % 0x800; break;            // C0 controls, Latin, Greek, ...
            case 2: code_point = 0x3000 + rng() % 0x6000; break;  // CJK
            default: code_point = 0x10000 + rng() % 0x100000; break;
        }
        append_utf8(text, code_point);
    }
    return text;
}

// Random text holds marks (U+0300..U+036F) and so is not always NFC: what comes back is its NFC.
TEST_CASE("decode(encode(s)) == nfc(s) for random text, valid UTF-8 or not") {
    const Tokenizer& tokenizer = tiny_tokenizer();
    std::mt19937 rng(42);
    int not_nfc = 0;
    for (int round = 0; round < 500; round++) {
        const bool valid = round % 2 == 0;
        const std::string text = random_text(rng, valid);
        if (valid) CHECK(is_valid_utf8(text));
        CHECK(tokenizer.decode(tokenizer.encode(text)) == nfc(text));
        not_nfc += nfc(text) != text;
    }
    CHECK(not_nfc > 0);
    std::string why_not;
    if (const Tokenizer* real = real_tokenizer(why_not)) {
        for (int round = 0; round < 500; round++) {
            const std::string text = random_text(rng, round % 2 == 0);
            CHECK(real->decode(real->encode(text)) == nfc(text));
        }
    }
}

// Text that NFC changes (decomposed accents, marks out of order, conjoining jamo, singletons,
// excluded composites, marks right after added tokens): HF normalizes it, so must we.
static void check_non_nfc(const Tokenizer& tokenizer, const std::string& ids_key) {
    std::vector<FixtureRecord> records =
        read_fixture_records("tests/fixtures/tokenizer/non_nfc.txt");
    REQUIRE(records.size() >= 100);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        CHECK(ids_to_string(tokenizer.encode(text)) == record.get(ids_key));
    }
}

TEST_CASE("real Qwen vocabulary: non-NFC text gets HF's ids, normalized") {
    std::string why_not;
    const Tokenizer* tokenizer = real_tokenizer(why_not);
    if (!tokenizer) {
        skip_test(why_not);
        return;
    }
    check_non_nfc(*tokenizer, "qwen_ids");
    // "e" + U+0301 is the one token of the precomposed U+00E9.
    CHECK(tokenizer->encode("e\xCC\x81") == tokenizer->encode("\xC3\xA9"));
    CHECK(tokenizer->encode("e\xCC\x81").size() == 1);
}

TEST_CASE("tiny model vocabulary: non-NFC text gets HF's ids, normalized") {
    check_non_nfc(tiny_tokenizer(), "tiny_ids");
}

TEST_CASE("invalid UTF-8 is encoded byte for byte and comes back unchanged") {
    const Tokenizer& tokenizer = tiny_tokenizer();
    // The lone byte 0xFF is the token whose text is its stand-in 'ÿ' (U+00FF).
    CHECK(tokenizer.encode("\xFF") == std::vector<int32_t>{tokenizer.find_token("\xC3\xBF")});
    for (const std::string& text : {std::string("abc\xFF\xFE"), std::string("\xE4\xB8"),
                                    std::string("\xC0\xAF<|im_end|>\x80"), std::string(1, '\0')})
        CHECK(tokenizer.decode(tokenizer.encode(text)) == text);
}

// A vocabulary of the 256 byte tokens (id = byte) plus `extra` tokens with the given types.
static Vocabulary byte_vocabulary(const std::vector<std::pair<std::string, int32_t>>& extra = {}) {
    Vocabulary vocabulary;
    for (int byte = 0; byte < 256; byte++) {
        vocabulary.tokens.push_back(bytes_to_symbols(std::string(1, char(byte))));
        vocabulary.token_types.push_back(kTokenNormal);
    }
    for (const auto& [text, type] : extra) {
        vocabulary.tokens.push_back(text);
        vocabulary.token_types.push_back(type);
    }
    return vocabulary;
}

TEST_CASE("added tokens: cut out first, longest match wins, never split by BPE") {
    Tokenizer tokenizer(byte_vocabulary(
        {{"<a>", kTokenControl}, {"<a>b", kTokenUserDefined}, {"<unused>", kTokenUnused}}));
    CHECK(tokenizer.encode("<a>b<a>") == std::vector<int32_t>{257, 256});
    CHECK(tokenizer.encode("x<a>") == std::vector<int32_t>{'x', 256});
    CHECK(tokenizer.encode("<a") == std::vector<int32_t>{'<', 'a'});
    // UNUSED tokens are not matched in text: "<unused>" is spelled out byte by byte.
    CHECK(tokenizer.encode("<unused>").size() == 8);
    CHECK(tokenizer.decode({257, 256}) == "<a>b<a>");

    const Tokenizer& tiny = tiny_tokenizer();
    CHECK(tiny.encode("<|im_start|>user\n") == std::vector<int32_t>{3001, 872, 198});
}

// HF matches Qwen's added tokens on the raw text ("normalized": false) and normalizes only the
// stretches between them; normalizing the whole text first would give other ids.
TEST_CASE("added tokens are matched before NFC, which sees each stretch alone") {
    Tokenizer tokenizer(
        byte_vocabulary({{"A\xCC\x8A", kTokenUserDefined}, {"<x>", kTokenControl}}));
    // The token is "A" + U+030A as spelled; its NFC U+00C5, or U+212B ANGSTROM SIGN (whose NFC
    // is U+00C5), are not it.
    CHECK(tokenizer.encode("A\xCC\x8A") == std::vector<int32_t>{256});
    CHECK(tokenizer.encode("\xC3\x85") == std::vector<int32_t>{0xC3, 0x85});
    CHECK(tokenizer.encode("\xE2\x84\xAB") == std::vector<int32_t>{0xC3, 0x85});
    // ">" + U+0338 COMBINING LONG SOLIDUS OVERLAY composes to U+226F, but not across a token.
    CHECK(tokenizer.encode("x>\xCC\xB8") == std::vector<int32_t>{'x', 0xE2, 0x89, 0xAF});
    CHECK(tokenizer.encode("<x>\xCC\xB8") == std::vector<int32_t>{257, 0xCC, 0xB8});
}

TEST_CASE("token lookups, token bytes and end of generation") {
    const Tokenizer& tokenizer = tiny_tokenizer();
    CHECK(tokenizer.n_vocab() == 3005);
    CHECK(tokenizer.find_token("<|im_end|>") == 3002);
    CHECK(tokenizer.find_token("\xC4\x8A") == 198);  // "Ċ", the newline byte
    CHECK(tokenizer.find_token("no such token") == -1);
    CHECK(tokenizer.token_bytes(198) == "\n");
    CHECK(tokenizer.token_bytes(3001) == "<|im_start|>");
    CHECK(tokenizer.vocabulary().bos_id == 3000);
    CHECK(tokenizer.vocabulary().eos_id == 3002);
    CHECK(tokenizer.vocabulary().pad_id == 3000);
    CHECK(tokenizer.vocabulary().merges.size() == 2744);
    CHECK(tokenizer.is_end_of_generation(3002));   // <|im_end|>
    CHECK(tokenizer.is_end_of_generation(3000));   // <|endoftext|>
    CHECK(!tokenizer.is_end_of_generation(3001));  // <|im_start|>
    CHECK(!tokenizer.is_end_of_generation(198));
    CHECK_THROWS_WITH_AS(tokenizer.decode({1, 3005}),
                         "token id 3005 is outside the vocabulary (0..3004)", Error);
    CHECK_THROWS_WITH_AS(tokenizer.token_bytes(-1),
                         "token id -1 is outside the vocabulary (0..3004)", Error);
}

TEST_CASE("streaming decode holds back a character split across tokens") {
    const Tokenizer& tokenizer = tiny_tokenizer();
    // In the tiny vocabulary an emoji is several byte tokens.
    const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600
    const std::vector<int32_t> ids = tokenizer.encode("ok " + emoji + "!");
    REQUIRE(ids.size() >= 4);
    StreamDecoder decoder(tokenizer);
    std::vector<std::string> outputs;
    for (int32_t id : ids) outputs.push_back(decoder.push(id));
    std::string joined;
    for (const std::string& output : outputs) {
        CHECK(is_valid_utf8(output));  // never half a character
        joined += output;
    }
    CHECK(joined + decoder.flush() == "ok " + emoji + "!");
    // The token that completes the emoji releases all four bytes at once.
    bool released_whole = false;
    for (const std::string& output : outputs)
        released_whole |= output.find(emoji) != std::string::npos;
    CHECK(released_whole);

    // Chinese: three bytes per character, merged in various ways.
    const std::string chinese =
        "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C";  // 你好，世界
    StreamDecoder chinese_decoder(tokenizer);
    std::string streamed;
    for (int32_t id : tokenizer.encode(chinese)) streamed += chinese_decoder.push(id);
    CHECK(streamed + chinese_decoder.flush() == chinese);
}

TEST_CASE("streaming decode replaces invalid bytes with U+FFFD") {
    const Tokenizer& tokenizer = tiny_tokenizer();
    const int32_t byte_ff = tokenizer.find_token("\xC3\xBF");  // 0xFF can never start a character
    const int32_t byte_e4 = tokenizer.find_token("\xC3\xA4");  // 0xE4 starts a 3-byte character
    const int32_t letter_a = tokenizer.find_token("a");
    StreamDecoder decoder(tokenizer);
    CHECK(decoder.push(byte_ff) == kReplacementCharacter);
    CHECK(decoder.push(byte_e4) == "");  // held: it may still complete
    CHECK(decoder.push(letter_a) == std::string(kReplacementCharacter) + "a");
    CHECK(decoder.push(byte_e4) == "");
    CHECK(decoder.flush() == kReplacementCharacter);  // the end came first
    CHECK(decoder.flush() == "");
}

// Metadata holding a small valid vocabulary, for the error checks to break one key at a time.
// Every key of a valid tokenizer except the one named `skip`, which `replacement` replaces
// when given.
static GgufMetadata vocabulary_metadata(const std::string& skip = "",
                                        const GgufValue* replacement = nullptr) {
    Vocabulary vocabulary = byte_vocabulary({{"ab", kTokenNormal}});
    std::vector<std::pair<std::string, GgufValue>> keys = {
        {"tokenizer.ggml.model", gguf_string("gpt2")},
        {"tokenizer.ggml.pre", gguf_string("qwen2")},
        {"tokenizer.ggml.tokens", gguf_string_array(vocabulary.tokens)},
        {"tokenizer.ggml.token_type", gguf_i32_array(vocabulary.token_types)},
        {"tokenizer.ggml.merges", gguf_string_array({"a b"})},
        {"tokenizer.ggml.eos_token_id", gguf_u32(256)},
    };
    GgufMetadata metadata;
    for (auto& [key, value] : keys) {
        if (key != skip) metadata.add(key, value);
        else if (replacement) metadata.add(key, *replacement);
    }
    return metadata;
}

TEST_CASE("read_vocabulary reads the keys and rejects what it cannot tokenize") {
    Vocabulary vocabulary = read_vocabulary(vocabulary_metadata());
    CHECK(vocabulary.tokens.size() == 257);
    CHECK(vocabulary.merges == std::vector<std::string>{"a b"});
    CHECK(vocabulary.eos_id == 256);
    CHECK(vocabulary.bos_id == -1);
    CHECK(Tokenizer(vocabulary).encode("abab") == std::vector<int32_t>{256, 256});

    GgufValue llama = gguf_string("llama");
    CHECK_THROWS_WITH_AS(
        read_vocabulary(vocabulary_metadata("tokenizer.ggml.model", &llama)),
        "tokenizer.ggml.model is 'llama': only 'gpt2' (byte-level BPE) is supported", Error);
    GgufValue gpt2 = gguf_string("gpt2");
    CHECK_THROWS_WITH_AS(
        read_vocabulary(vocabulary_metadata("tokenizer.ggml.pre", &gpt2)),
        "tokenizer.ggml.pre is 'gpt2': only the 'qwen2' and 'qwen35' pre-tokenizers are implemented",
        Error);
    GgufValue qwen35 = gguf_string("qwen35");
    CHECK(read_vocabulary(vocabulary_metadata("tokenizer.ggml.pre", &qwen35)).split ==
          SplitRegex::Qwen35);
    CHECK_THROWS_WITH_AS(read_vocabulary(vocabulary_metadata("tokenizer.ggml.tokens")),
                         "metadata key 'tokenizer.ggml.tokens' is missing", Error);
    CHECK_THROWS_WITH_AS(read_vocabulary(vocabulary_metadata("tokenizer.ggml.merges")),
                         "metadata key 'tokenizer.ggml.merges' is missing", Error);
    GgufValue too_big = gguf_u32(257);
    CHECK_THROWS_WITH_AS(
        read_vocabulary(vocabulary_metadata("tokenizer.ggml.eos_token_id", &too_big)),
        "tokenizer.ggml.eos_token_id is 257, outside the vocabulary (257 tokens)", Error);
    GgufValue wrong_type = gguf_string("1");
    CHECK_THROWS_WITH_AS(
        read_vocabulary(vocabulary_metadata("tokenizer.ggml.token_type", &wrong_type)),
        "metadata key 'tokenizer.ggml.token_type' has type STRING, expected ARRAY[INT32]", Error);
}

TEST_CASE("Tokenizer rejects an inconsistent vocabulary with one clear line") {
    Vocabulary short_types = byte_vocabulary();
    short_types.token_types.pop_back();
    CHECK_THROWS_WITH_AS(Tokenizer{short_types},
                         "tokenizer.ggml.token_type has 255 entries, tokenizer.ggml.tokens has 256",
                         Error);

    CHECK_THROWS_WITH_AS(Tokenizer{Vocabulary()},
                         "the vocabulary is empty (tokenizer.ggml.tokens has no entries)", Error);

    Vocabulary bad_type = byte_vocabulary();
    bad_type.token_types[7] = 9;
    CHECK_THROWS_WITH_AS(Tokenizer{bad_type}, "tokenizer.ggml.token_type[7] is 9, expected 0..6",
                         Error);

    Vocabulary no_newline = byte_vocabulary();
    no_newline.tokens[10] = "newline";
    CHECK_THROWS_WITH_AS(Tokenizer{no_newline},
                         "the vocabulary has no token for byte 0x0a ('\xC4\x8A')", Error);

    Vocabulary bad_merge = byte_vocabulary({{"ab", kTokenNormal}});
    bad_merge.merges = {"a b", "ab"};
    CHECK_THROWS_WITH_AS(
        Tokenizer{bad_merge},
        "tokenizer.ggml.merges[1] is 'ab', expected two tokens separated by one space", Error);
    bad_merge.merges = {"a  b"};
    CHECK_THROWS_WITH_AS(
        Tokenizer{bad_merge},
        "tokenizer.ggml.merges[0] is 'a  b', expected two tokens separated by one space", Error);
    bad_merge.merges = {"a xyz"};
    CHECK_THROWS_WITH_AS(Tokenizer{bad_merge},
                         "tokenizer.ggml.merges[0] 'a xyz': 'xyz' is not in the vocabulary", Error);
    bad_merge.merges = {"b a"};
    CHECK_THROWS_WITH_AS(Tokenizer{bad_merge},
                         "tokenizer.ggml.merges[0] 'b a': the result 'ba' is not in the vocabulary",
                         Error);

    Vocabulary bad_bos = byte_vocabulary();
    bad_bos.bos_id = 256;
    CHECK_THROWS_WITH_AS(Tokenizer{bad_bos},
                         "tokenizer.ggml.bos_token_id is 256, outside the vocabulary (256 tokens)",
                         Error);
}
