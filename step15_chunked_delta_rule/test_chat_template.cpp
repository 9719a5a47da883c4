// Checks for ChatML rendering: the text jinja2 renders from the tiny model's chat template
// (tests/fixtures/tokenizer/chat.txt), and its ids from HF tokenizers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "chat_template.h"
#include "test_skip.h"
#include "test_tokenizer_fixtures.h"

static std::string ids_to_string(const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
    return text;
}

static std::vector<ChatMessage> messages_of(const FixtureRecord& record) {
    std::vector<ChatMessage> messages;
    for (const auto& [key, value] : record.fields) {
        if (key != "message") continue;
        const size_t space = value.find(' ');  // "role hex" (the hex is empty for "")
        const std::string role = value.substr(0, space);
        messages.push_back(
            {role, space == std::string::npos ? "" : hex_to_bytes(value.substr(space + 1))});
    }
    return messages;
}

TEST_CASE("render_chatml matches the model's template, and the ids match HF") {
    std::string why_not;
    const Tokenizer* real = real_tokenizer(why_not);
    std::vector<FixtureRecord> records = read_fixture_records("tests/fixtures/tokenizer/chat.txt");
    REQUIRE(records.size() >= 8);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        const std::string rendered =
            render_chatml(messages_of(record), record.get("generation_prompt") == "1");
        CHECK(rendered == hex_to_bytes(record.get("rendered")));
        CHECK(ids_to_string(tiny_tokenizer().encode(rendered)) == record.get("tiny_ids"));
        if (real) CHECK(ids_to_string(real->encode(rendered)) == record.get("qwen_ids"));
    }
}

TEST_CASE("the default system prompt, and a conversation with no messages") {
    CHECK(std::string(kDefaultSystemPrompt) ==
          "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    CHECK(render_chatml({}, true) ==
          "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
          "assistant.<|im_end|>\n<|im_start|>assistant\n");
}
