// Checks for chat: render_chatml equals Qwen2.5's own template as transformers renders it
// (tests/fixtures/chat_template/, written by tools/fixtures/make_chat_fixtures.py), and a scripted
// chat on the tiny model, run in-process, is repeatable and prefills only each turn's new tokens.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "chat.h"
#include "chat_template.h"
#include "test_skip.h"
#include "test_tiny_model.h"
#include "test_tokenizer_fixtures.h"

namespace {

const char* kConversations = "tests/fixtures/chat_template/conversations.txt";

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
    return render_chatml(messages_of(record), record.get("generation_prompt") == "1");
}

struct ChatRun {
    std::vector<GenerationStats> replies;
    std::string out, log;
    int cache_length = 0;
};

ChatRun chat(const std::string& input, int max_new_tokens, int capacity = 512,
             bool echo_input = false) {
    const LoadedModel& model = tiny_model();
    KVCache cache = make_kv_cache(model.config, capacity);
    RunState state;
    SamplerSettings sampling;
    sampling.seed = 42;
    Sampler sampler = make_sampler(sampling);
    std::istringstream in(input);
    std::ostringstream out, log;
    ChatRun run;
    ChatSettings settings;
    settings.system_prompt = kDefaultSystemPrompt;
    settings.max_new_tokens = max_new_tokens;
    settings.echo_input = echo_input;
    run.replies = run_chat(cpu_chat_model(model.config, model.weights, cache, state),
                           tiny_tokenizer(), sampler, settings, in, out, log);
    run.out = out.str();
    run.log = log.str();
    run.cache_length = cache.n_filled;
    return run;
}

int count_tokens(const std::string& text) { return int(tiny_tokenizer().encode(text).size()); }

}  // namespace

TEST_CASE("render_chatml renders every fixture conversation as transformers does") {
    const std::vector<FixtureRecord> records = read_fixture_records(kConversations);
    REQUIRE(records.size() >= 10);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        CHECK(rendered_of(record) == hex_to_bytes(record.get("rendered")));
    }
}

TEST_CASE("the rendered conversations tokenize to transformers' ids") {
    std::string why_not;
    const Tokenizer* real = real_tokenizer(why_not);
    if (!real) {
        skip_test(why_not);
        return;
    }
    for (const FixtureRecord& record : read_fixture_records(kConversations)) {
        INFO(record.comment);
        CHECK(real->encode(rendered_of(record)) == parse_ids(record.get("ids")));
    }
}

TEST_CASE("a scripted two-turn chat repeats with its seed and prefills only the new turn") {
    const int max_new_tokens = 12;
    const std::string first_turn = "Hello!", second_turn = "Tell me more.";
    const ChatRun run = chat(first_turn + "\n" + second_turn + "\n", max_new_tokens);
    REQUIRE(run.replies.size() == 2);
    CHECK(run.out.rfind("> ", 0) == 0);
    const ChatRun again = chat(first_turn + "\n" + second_turn + "\n", max_new_tokens);
    CHECK(again.out == run.out);

    // Turn 1 is the whole rendering; turn 2 is what rendering the longer conversation adds
    // after the first reply (whatever its text), plus that reply's last token when -n ended it.
    const std::string opening = render_chatml({{"user", first_turn}}, true);
    const std::string longer =
        render_chatml({{"user", first_turn}, {"assistant", "R"}, {"user", second_turn}}, true);
    REQUIRE(longer.rfind(opening + "R", 0) == 0);
    const std::string added = longer.substr(opening.size() + 1);
    CHECK(added.rfind("<|im_end|>\n<|im_start|>user\n", 0) == 0);
    const GenerationStats& reply1 = run.replies[0];
    const GenerationStats& reply2 = run.replies[1];
    const bool cut_short1 = reply1.n_generated == max_new_tokens;
    const bool cut_short2 = reply2.n_generated == max_new_tokens;
    CHECK(reply1.n_prompt == count_tokens(opening));
    CHECK(reply2.n_prompt == count_tokens(added) + (cut_short1 ? 1 : 0));
    // The cache holds the whole conversation, but for a last token that no pass ran.
    CHECK(run.cache_length + (cut_short2 ? 1 : 0) ==
          count_tokens(opening) + reply1.n_generated + count_tokens(added) + reply2.n_generated);
    // One stats line per reply.
    CHECK(run.log.find("prompt: " + std::to_string(reply2.n_prompt) + " tokens") !=
          std::string::npos);
}

TEST_CASE("piped turns are echoed after their marker, and a reply cut by -n says so") {
    const int max_new_tokens = 6;
    const ChatRun run = chat("Hello!\nTell me more.\n", max_new_tokens, 512, true);
    REQUIRE(run.replies.size() == 2);
    CHECK(run.out.rfind("> Hello!\n", 0) == 0);
    CHECK(run.out.find("\n> Tell me more.\n") != std::string::npos);
    CHECK(chat("Hello!\n", max_new_tokens).out.find("Hello!") == std::string::npos);  // typed
    const std::string notice = "[stopped at -n 6 tokens; raise -n for more]";
    int cut = 0;
    for (const GenerationStats& reply : run.replies) cut += reply.n_generated == max_new_tokens;
    size_t count = 0;
    for (size_t at = run.log.find(notice); at != std::string::npos;
         at = run.log.find(notice, at + 1))
        count++;
    CHECK(count == size_t(cut));
}

TEST_CASE("/reset starts over, /exit stops reading") {
    const ChatRun run = chat("Hello!\n\n/reset\nHello!\n/exit\nnever read\n", 4);
    REQUIRE(run.replies.size() == 2);
    const int opening = count_tokens(render_chatml({{"user", "Hello!"}}, true));
    CHECK(run.replies[0].n_prompt == opening);
    CHECK(run.replies[1].n_prompt == opening);  // nothing of the first conversation is left
    CHECK(run.log.find("(a new conversation)") != std::string::npos);
}

TEST_CASE("the chat names its commands, skips a line of spaces and refuses an unknown command") {
    const ChatRun run = chat("   \n/help\nHello!\n", 4);
    REQUIRE(run.replies.size() == 1);  // neither "   " nor "/help" became a turn
    CHECK(run.replies[0].n_prompt == count_tokens(render_chatml({{"user", "Hello!"}}, true)));
    CHECK(run.log.rfind(
              "chat: one message per line; /reset starts a new conversation, /exit quits\n", 0) ==
          0);
    CHECK(run.log.find("unknown command /help: /reset starts a new conversation, /exit quits\n") !=
          std::string::npos);
}

TEST_CASE("a full context says so, refuses the next turn and offers /reset") {
    const int opening = count_tokens(render_chatml({{"user", "Hello!"}}, true));
    const ChatRun run = chat("Hello!\nAgain.\n/reset\nHi\n", 20, opening + 3);
    REQUIRE(run.replies.size() == 2);
    CHECK(run.replies[0].context_full);
    CHECK(run.replies[0].n_generated == 3);
    const std::string message = "the context is full (" + std::to_string(opening + 3) +
                                " tokens): /reset starts a new conversation";
    size_t first = run.log.find(message);
    REQUIRE(first != std::string::npos);
    CHECK(run.log.find(message, first + 1) != std::string::npos);  // "Again." did not fit
    CHECK(run.replies[1].n_prompt == count_tokens(render_chatml({{"user", "Hi"}}, true)));
}
