// Checks for Qwen3's chat: render_qwen3 equals transformers' apply_chat_template with Qwen3's
// template, thinking on and off (tests/fixtures/qwen3_chat/, written by
// tools/fixtures/make_qwen3_chat_fixtures.py), the ids of HF tokenizers for the rendered
// conversations and a few texts with the added tokens (--tokenize), the file's template chosen
// from its metadata, the reasoning of a stream told apart from the answer, and a chat whose
// history drops the reasoning, on a scripted model.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat.h"
#include "chat_template.h"
#include "reply_stream.h"
#include "test_gguf_values.h"
#include "test_skip.h"
#include "test_tokenizer_fixtures.h"

namespace {

const char* kConversations = "tests/fixtures/qwen3_chat/conversations.txt";
const char* kTexts = "tests/fixtures/qwen3_chat/tokenize.txt";

std::vector<ChatMessage> messages_of(const FixtureRecord& record) {
    std::vector<ChatMessage> messages;
    for (const auto& [key, value] : record.fields) {
        if (key != "message") continue;
        const size_t space = value.find(' ');  // "role hex" (the hex is empty for "")
        const std::string hex = space == std::string::npos ? "" : value.substr(space + 1);
        messages.push_back({value.substr(0, space), hex_to_bytes(hex)});
    }
    return messages;
}

std::string rendered_of(const FixtureRecord& record) {
    ChatTemplate qwen3{TemplateKind::Qwen3Thinking, record.get("enable_thinking") == "1"};
    return render_chat(qwen3, messages_of(record), record.get("generation_prompt") == "1");
}

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("render_qwen3 renders every fixture conversation as transformers does") {
    const std::vector<FixtureRecord> records = read_fixture_records(kConversations);
    REQUIRE(records.size() == 12);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        CHECK(rendered_of(record) == hex_to_bytes(record.get("rendered")));
    }
}

TEST_CASE("Qwen3's rendered conversations and texts with its added tokens have HF's ids") {
    std::string why_not;
    const Tokenizer* real = real_tokenizer(why_not);
    if (!real) {
        skip_test(why_not);
        return;
    }
    REQUIRE(real->find_token("<think>") == 151667);  // Qwen3's vocabulary
    REQUIRE(real->find_token("</think>") == 151668);
    for (const FixtureRecord& record : read_fixture_records(kConversations)) {
        INFO(record.comment);
        CHECK(real->encode(rendered_of(record)) == parse_ids(record.get("ids")));
    }
    const std::vector<FixtureRecord> texts = read_fixture_records(kTexts);
    REQUIRE(texts.size() >= 5);
    for (const FixtureRecord& record : texts) {
        INFO(record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        CHECK(real->encode(text) == parse_ids(record.get("ids")));
        CHECK(real->decode(parse_ids(record.get("ids"))) == text);  // <think> prints as itself
    }
}

TEST_CASE("the template is the file's: Qwen3's reads enable_thinking, else the architecture's") {
    auto metadata = [](const std::string& architecture, const std::string* chat_template) {
        GgufMetadata result;
        result.add("general.architecture", gguf_string(architecture));
        if (chat_template) result.add("tokenizer.chat_template", gguf_string(*chat_template));
        return result;
    };
    const std::string qwen3 = file_text("tests/fixtures/qwen3_chat/template.jinja");
    const std::string qwen25 = file_text("tests/fixtures/chat_template/template.jinja");
    CHECK(read_chat_template(metadata("qwen3", &qwen3)).kind == TemplateKind::Qwen3Thinking);
    CHECK(read_chat_template(metadata("qwen2", &qwen3)).kind == TemplateKind::Qwen3Thinking);
    CHECK(read_chat_template(metadata("qwen2", &qwen25)).kind == TemplateKind::ChatML);
    CHECK(read_chat_template(metadata("qwen3", &qwen25)).kind == TemplateKind::ChatML);
    CHECK(read_chat_template(metadata("qwen3", nullptr)).kind == TemplateKind::Qwen3Thinking);
    CHECK(read_chat_template(metadata("qwen2", nullptr)).kind == TemplateKind::ChatML);
    CHECK(read_chat_template(metadata("qwen3", nullptr)).enable_thinking);
    // Qwen2.5's rendering is render_chatml's, whatever enable_thinking says.
    const std::vector<ChatMessage> messages = {{"user", "Hi"}};
    CHECK(render_chat({TemplateKind::ChatML, false}, messages, true) ==
          render_chatml(messages, true));
}

TEST_CASE("split_reply cuts a reply as Qwen3's template does") {
    CHECK(split_reply("no tags\n").answer == "no tags\n");
    CHECK(split_reply("no tags").reasoning.empty());
    const ReplyParts parts = split_reply("<think>\n\nstep one\nstep two\n\n</think>\n\n\nAnswer\n");
    CHECK(parts.reasoning == "step one\nstep two");
    CHECK(parts.answer == "Answer\n");
    const ReplyParts several = split_reply("x<think>a<think>\nb</think>c</think>\nd");
    CHECK(several.reasoning == "b");  // before the first </think>, after the last <think>
    CHECK(several.answer == "d");     // after the last </think>
    CHECK(split_reply("<think>\ncut short").answer == "<think>\ncut short");
}

namespace {

// The events of `text` streamed in pieces of `size` bytes, text events of one kind merged.
std::vector<ReplyEvent> split_in_pieces(const std::string& text, size_t size) {
    ThinkingSplitter splitter;
    std::vector<ReplyEvent> events;
    auto add = [&](const std::vector<ReplyEvent>& more) {
        for (const ReplyEvent& event : more) {
            const bool text_event = event.kind == ReplyEventKind::ThinkingText ||
                                    event.kind == ReplyEventKind::AnswerText;
            if (text_event && !events.empty() && events.back().kind == event.kind)
                events.back().text += event.text;
            else events.push_back(event);
        }
    };
    for (size_t at = 0; at < text.size(); at += size) add(splitter.push(text.substr(at, size)));
    add(splitter.finish());
    return events;
}

}  // namespace

TEST_CASE("the splitter tells the reasoning from the answer, however the text is cut") {
    using K = ReplyEventKind;
    const std::string reply = "<think>\nAdd them: 2 < 3.\n</think>\n\nIt is <b>4</b>.";
    const std::vector<ReplyEvent> expected = {{K::ThinkingStarts, ""},
                                              {K::ThinkingText, "\nAdd them: 2 < 3.\n"},
                                              {K::AnswerStarts, ""},
                                              {K::AnswerText, "\n\nIt is <b>4</b>."}};
    for (size_t size = 1; size <= reply.size(); size++) {
        CAPTURE(size);
        CHECK(split_in_pieces(reply, size) == expected);
    }
    // No tags: all answer. An unfinished tag at the end is text; "<think>" inside the reasoning
    // and "</think>" inside the answer are text too.
    CHECK(split_in_pieces("plain <thin", 3) ==
          std::vector<ReplyEvent>{{K::AnswerText, "plain <thin"}});
    CHECK(split_in_pieces("<think>a<think>b</think>c</think>", 2) ==
          std::vector<ReplyEvent>{{K::ThinkingStarts, ""},
                                  {K::ThinkingText, "a<think>b"},
                                  {K::AnswerStarts, ""},
                                  {K::AnswerText, "c</think>"}});
    CHECK(split_in_pieces("<think></think>", 1) ==
          std::vector<ReplyEvent>{{K::ThinkingStarts, ""}, {K::AnswerStarts, ""}});
}

TEST_CASE("a printed reply is the text itself, its reasoning dimmed on a terminal") {
    const std::string reply = "<think>\nhm\n</think>\n\nYes.";
    auto print = [&](bool split_thinking, bool styled, size_t size) {
        ReplyPrinter printer(split_thinking, styled);
        std::string shown;
        for (size_t at = 0; at < reply.size(); at += size)
            shown += printer.push(reply.substr(at, size));
        return shown + printer.finish();
    };
    for (size_t size : {1, 2, 5, 100}) {
        CAPTURE(size);
        CHECK(print(true, false, size) == reply);
        CHECK(print(false, true, size) == reply);  // Qwen2.5's template: as it was
        CHECK(print(true, true, size) == "\x1b[2m<think>\nhm\n</think>\x1b[0m\n\nYes.");
    }
    ReplyPrinter cut_short(true, true);
    std::string shown = cut_short.push("<think>\nstill thin");
    shown += cut_short.finish();  // the style is reset at the end of the reply
    CHECK(shown == "\x1b[2m<think>\nstill thin\x1b[0m");
}

namespace {

// The tiny vocabulary with Qwen3's <think> and </think> added, as the converter types them.
const Tokenizer& thinking_tokenizer() {
    static const Tokenizer tokenizer = [] {
        Vocabulary vocabulary = tiny_tokenizer().vocabulary();
        for (const char* tag : {"<think>", "</think>"}) {
            vocabulary.tokens.push_back(tag);
            vocabulary.token_types.push_back(kTokenUserDefined);
        }
        return Tokenizer(vocabulary);
    }();
    return tokenizer;
}

// A model that answers from a script and keeps the tokens its cache would hold.
struct ScriptedModel {
    std::vector<std::string> replies;            // each ends with <|im_end|>
    std::vector<int32_t> script;                 // the tokens still to answer
    std::vector<int32_t> cache;                  // what the cache holds
    std::vector<std::vector<int32_t>> prefills;  // each turn's first call's tokens

    ChatModel model() {
        for (const std::string& reply : replies) {
            const std::vector<int32_t> ids = thinking_tokenizer().encode(reply + "<|im_end|>");
            script.insert(script.end(), ids.begin(), ids.end());
        }
        ChatModel chat_model;
        chat_model.step = [this](const std::vector<int32_t>& ids, std::vector<float>*) {
            if (ids.size() > 1) prefills.push_back(ids);
            cache.insert(cache.end(), ids.begin(), ids.end());
            const int32_t next = script.front();
            script.erase(script.begin());
            return next;
        };
        chat_model.capacity = 4096;
        chat_model.keep_positions = [this](int n) {
            cache.resize(std::min(cache.size(), size_t(n)));
        };
        return chat_model;
    }
};

std::string run_scripted_chat(ScriptedModel& scripted, const ChatTemplate& chat_template,
                              const std::string& input) {
    SamplerSettings sampling;
    sampling.temperature = 0;
    Sampler sampler = make_sampler(sampling);
    ChatSettings settings;
    settings.chat_template = chat_template;
    settings.max_new_tokens = 100;
    std::istringstream in(input);
    std::ostringstream out, log;
    run_chat(scripted.model(), thinking_tokenizer(), sampler, settings, in, out, log);
    return out.str();
}

}  // namespace

TEST_CASE("a thinking chat keeps the answers in its history and the reasoning out") {
    const std::string reply1 = "<think>\nGreet back.\n</think>\n\nHello!";
    const std::string reply2 = "<think>\nCount.\n</think>\n\nTwo turns.";
    for (bool thinking : {true, false}) {
        CAPTURE(thinking);
        ScriptedModel scripted;
        scripted.replies = {thinking ? reply1 : "Hello!", thinking ? reply2 : "Two turns."};
        const ChatTemplate qwen3{TemplateKind::Qwen3Thinking, thinking};
        const std::string out = run_scripted_chat(scripted, qwen3, "Hi\nHow many turns?\n");
        CHECK(out == "> " + scripted.replies[0] + "\n> " + scripted.replies[1] + "\n> \n");

        // After the second prefill the cache holds the conversation as the template renders it:
        // the first reply's answer alone, then the generation prompt.
        const std::vector<ChatMessage> messages = {
            {"user", "Hi"}, {"assistant", scripted.replies[0]}, {"user", "How many turns?"}};
        const std::string rendered = render_qwen3(messages, true, thinking);
        REQUIRE(scripted.prefills.size() == 2);
        const size_t n_prefilled = scripted.prefills[1].size();
        const size_t n_second_reply = thinking_tokenizer().encode(scripted.replies[1]).size();
        const std::vector<int32_t> before_reply2(scripted.cache.begin(),
                                                 scripted.cache.end() - n_second_reply);
        CHECK(thinking_tokenizer().decode(before_reply2) == rendered);
        // Only the last reply's turn is run again, from its "assistant\n" on.
        const size_t turn = render_qwen3({{"user", "Hi"}}, false, thinking).size();
        const std::string again = rendered.substr(turn + std::string("<|im_start|>").size());
        CHECK(n_prefilled == thinking_tokenizer().encode(again).size());
    }
}
