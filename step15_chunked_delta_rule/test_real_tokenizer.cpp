// Checks of step04's tokenizer on the real model's vocabulary (doctest suite "real_model", run
// by `make test-real`): every text of tests/fixtures/real_model/tokenizer.txt must get exactly
// the ids transformers gives it with the tokenizer it builds from the same GGUF
// (tools/fixtures/make_real_model_tokenizer_fixtures.py), and decode must give the text back. The
// one correction the oracle needs (its converter leaves out 19 of the 22 added tokens) is explained
// in that script.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "chat_template.h"
#include "gguf_tensors.h"
#include "test_skip.h"
#include "test_tokenizer_fixtures.h"
#include "tokenizer.h"

static const char* const kFixture = "tests/fixtures/real_model/tokenizer.txt";

static std::string ids_text(const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
    return text;
}

// The tokenizer read from $QWEN_REAL_MODEL, loaded once for all test cases (the vocabulary has
// 151,936 tokens and 151,387 merges); nullptr with the reason in `why_not` when there is none.
static const Tokenizer* real_model_tokenizer(std::string& why_not) {
    static std::unique_ptr<Tokenizer> tokenizer;
    static std::string reason;
    static bool tried = false;
    if (!tried) {
        tried = true;
        const std::string path = real_model_path(reason);
        if (!path.empty()) tokenizer = load_tokenizer(path);
    }
    why_not = reason;
    return tokenizer.get();
}

// The conversation a chat record was rendered from ("message ROLE HEX" lines), if it has one.
static std::vector<ChatMessage> messages_of(const FixtureRecord& record) {
    std::vector<ChatMessage> messages;
    for (const auto& [key, value] : record.fields) {
        if (key != "message") continue;
        const size_t space = value.find(' ');  // no space: the content is ""
        messages.push_back({value.substr(0, space), space == std::string::npos
                                                        ? ""
                                                        : hex_to_bytes(value.substr(space + 1))});
    }
    return messages;
}

TEST_SUITE("real_model") {
    TEST_CASE("real model: the vocabulary's size, its special tokens and eos") {
        std::string why_not;
        const Tokenizer* tokenizer = real_model_tokenizer(why_not);
        if (!tokenizer) {
            skip_test(why_not);
            return;
        }
        // The numbers the oracle reports too (the fixture's header lists them).
        CHECK(tokenizer->n_vocab() == 151936);
        CHECK(tokenizer->find_token("<|endoftext|>") == 151643);
        CHECK(tokenizer->find_token("<|im_start|>") == 151644);
        CHECK(tokenizer->find_token("<|im_end|>") == 151645);
        // The instruct model ends its turn with <|im_end|>: that is the eos its metadata names,
        // though transformers' converter reports <|endoftext|>. Both stop generation.
        const GgufFile file = open_gguf(real_model_path(why_not));
        CHECK(file.metadata.get_u32("tokenizer.ggml.eos_token_id") == 151645);
        CHECK(tokenizer->vocabulary().eos_id == 151645);
        CHECK(tokenizer->is_end_of_generation(151645));
        CHECK(tokenizer->is_end_of_generation(151643));
        CHECK(!tokenizer->is_end_of_generation(151644));
        // Qwen prepends no BOS: the file says so, and encode adds nothing.
        CHECK(!file.metadata.get_bool("tokenizer.ggml.add_bos_token"));
        CHECK(tokenizer->encode("") == std::vector<int32_t>{});
    }

    TEST_CASE("real model: every fixture text gets transformers' ids and decodes back") {
        std::string why_not;
        const Tokenizer* tokenizer = real_model_tokenizer(why_not);
        if (!tokenizer) {
            skip_test(why_not);
            return;
        }
        const std::vector<FixtureRecord> records = read_fixture_records(kFixture);
        REQUIRE(records.size() >= 60);
        int wrong_ids = 0, wrong_text = 0;
        for (const FixtureRecord& record : records) {
            const std::string text = hex_to_bytes(record.get("text"));
            const std::string ids = ids_text(tokenizer->encode(text));
            // Only the first text with other ids is shown in full: one is enough to debug, and
            // a broken tokenizer would otherwise print a hundred of them.
            if (ids != record.get("ids") && wrong_ids++ == 0)
                FAIL_CHECK("the first text with other ids: "
                           << record.comment << "\n  step04:       " << ids
                           << "\n  transformers: " << record.get("ids"));
            // Text that is not NFC comes back as its NFC, which the record holds as `decoded`.
            const std::string expected =
                record.has("decoded") ? hex_to_bytes(record.get("decoded")) : text;
            const std::string decoded = tokenizer->decode(parse_ids(record.get("ids")));
            if (decoded != expected && wrong_text++ == 0)
                FAIL_CHECK("the first text decode does not give back: "
                           << record.comment << "\n  decoded:  " << decoded
                           << "\n  expected: " << expected);
            // A conversation of plain messages: step04 renders the template's text itself.
            if (record.has("message")) {
                INFO("conversation: " << record.comment);
                CHECK(render_chatml(messages_of(record), record.get("generation_prompt") == "1") ==
                      text);
            }
        }
        CHECK_MESSAGE(wrong_ids == 0, wrong_ids << " of " << records.size()
                                                << " texts get other ids than transformers'");
        CHECK_MESSAGE(wrong_text == 0,
                      wrong_text << " of " << records.size() << " texts do not decode back");
    }
}
