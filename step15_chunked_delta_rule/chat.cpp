// chat.cpp - the chat loop: render the conversation, prefill what is new, stream the reply.
#include "chat.h"

#include <algorithm>

#include "error.h"
#include "reply_stream.h"

// The conversation so far, and the tokens of its text (chat.h).
struct Conversation {
    std::vector<ChatMessage> messages;
    std::vector<int32_t> ids;  // the text's tokens: the cache's, then at most one not yet run
    std::string text;          // what `ids` spell: the last rendering, then the reply
    // How many of `ids` the cache holds: all, or all but a reply's last token when -n ended it.
    int n_cached = 0;
};

// The first `n` tokens of the conversation, and of the cache, in front of a new rendering.
struct TurnStart {
    size_t n_kept = 0;     // tokens of the conversation kept
    size_t text_kept = 0;  // the bytes they spell
};

// How much of the conversation a new rendering keeps: all of it when the rendering goes on from
// its text, else up to the last added token before the point where the two part. The text
// after an added token is encoded on its own anyway (tokenizer.h), so from there the rendering
// is tokenized as a whole would be.
static TurnStart turn_start(const Conversation& conversation, const std::string& rendered,
                            const Tokenizer& tokenizer) {
    const std::string& text = conversation.text;
    if (rendered.compare(0, text.size(), text) == 0) return {conversation.ids.size(), text.size()};
    size_t common = 0;
    while (common < text.size() && common < rendered.size() && text[common] == rendered[common])
        common++;
    TurnStart start;
    size_t end = 0;  // where the i-th token's text ends
    for (size_t i = 0; i < conversation.ids.size(); i++) {
        end += tokenizer.token_bytes(conversation.ids[i]).size();
        if (end > common) break;
        if (tokenizer.is_added(conversation.ids[i])) start = {i + 1, end};
    }
    return start;
}

ChatModel cpu_chat_model(const ModelConfig& config, const Weights& weights, KVCache& cache,
                         RunState& state) {
    ChatModel model;
    model.step = [&config, &weights, &cache, &state](const std::vector<int32_t>& new_ids,
                                                     std::vector<float>* logits) {
        return next_token(config, weights, new_ids, cache, state, logits);
    };
    model.capacity = cache.capacity;
    model.keep_positions = [&cache](int n) { keep_positions(cache, n); };
    model.can_rewind = cache.can_rewind();
    return model;
}

static void print_stats(std::ostream& log, const GenerationStats& stats,
                        const ChatSettings& settings) {
    log << format_stats(stats);
    if (settings.more_stats) log << settings.more_stats(stats);
    log << "\n";
    const std::string notice = stopped_by_limit_notice(stats);
    if (!notice.empty()) log << notice << "\n";
}

// The line without the spaces around it: what is left is a turn, or a command if it starts with /.
static std::string trimmed(const std::string& line) {
    const char* spaces = " \t\r\f\v";
    const size_t first = line.find_first_not_of(spaces);
    if (first == std::string::npos) return "";
    return line.substr(first, line.find_last_not_of(spaces) - first + 1);
}

static void say_context_full(std::ostream& log, const ChatModel& model) {
    log << strprintf("the context is full (%d tokens): /reset starts a new conversation\n",
                     model.capacity);
}

// What a turn needs besides the conversation.
struct TurnContext {
    const ChatModel& model;
    const Tokenizer& tokenizer;
    Sampler& sampler;
    const ChatSettings& settings;
    std::ostream& out;
    std::ostream& log;
};

// The user's turn `line`: renders the conversation with it, prefills what the cache lacks,
// streams the reply. Returns false, the conversation unchanged, when the turn does not fit.
static bool run_turn(const TurnContext& turn, Conversation& conversation, const std::string& line,
                     GenerationStats& stats) {
    conversation.messages.push_back({"user", line});
    const std::string rendered =
        render_chat(turn.settings.chat_template, conversation.messages, true);
    const TurnStart start = turn_start(conversation, rendered, turn.tokenizer);
    int n_kept_cached = std::min(conversation.n_cached, int(start.n_kept));
    // Step 14: a cache that cannot forget its last positions runs the kept history again (chat.h).
    if (!turn.model.can_rewind && n_kept_cached < conversation.n_cached) n_kept_cached = 0;
    std::vector<int32_t> new_tokens(conversation.ids.begin() + n_kept_cached,
                                    conversation.ids.begin() + start.n_kept);  // a reply's last
    for (int32_t id : turn.tokenizer.encode(rendered.substr(start.text_kept)))
        new_tokens.push_back(id);
    const int free_positions = turn.model.capacity - n_kept_cached;
    if (new_tokens.size() > size_t(free_positions)) {
        conversation.messages.pop_back();
        return false;
    }
    turn.model.keep_positions(n_kept_cached);

    StreamDecoder decoder(turn.tokenizer);
    ReplyPrinter printer(turn.settings.chat_template.kind == TemplateKind::Qwen3Thinking,
                         turn.settings.styled);
    std::vector<int32_t> reply;
    stats = generate(turn.model.step, new_tokens, turn.settings.max_new_tokens, free_positions,
                     turn.sampler, [&](int32_t id) {
                         if (turn.tokenizer.is_end_of_generation(id)) return false;
                         turn.out << printer.push(decoder.push(id)) << std::flush;
                         reply.push_back(id);
                         return true;
                     });
    turn.out << printer.push(decoder.flush()) << printer.finish() << "\n" << std::flush;
    // The reply's exact bytes, as the model's tokens spell them: the cache holds those. The
    // template takes out what the next rendering no longer shows.
    const std::string reply_text = turn.tokenizer.decode(reply);
    conversation.messages.push_back({"assistant", reply_text});
    conversation.ids.resize(start.n_kept);
    conversation.ids.insert(conversation.ids.end(),
                            new_tokens.begin() + (start.n_kept - n_kept_cached), new_tokens.end());
    conversation.ids.insert(conversation.ids.end(), reply.begin(), reply.end());
    conversation.text = rendered + reply_text;
    // The prefill ran the new tokens and each decode pass one accepted token; a reply
    // that no stop token ended has a last token that no pass ran.
    conversation.n_cached = n_kept_cached + int(new_tokens.size()) + stats.n_passes;
    return true;
}

std::vector<GenerationStats> run_chat(const ChatModel& model, const Tokenizer& tokenizer,
                                      Sampler& sampler, const ChatSettings& settings,
                                      std::istream& in, std::ostream& out, std::ostream& log) {
    const TurnContext turn{model, tokenizer, sampler, settings, out, log};
    std::vector<GenerationStats> replies;
    Conversation conversation;
    auto reset = [&] {
        conversation = Conversation();
        if (settings.system_prompt)
            conversation.messages.push_back({"system", *settings.system_prompt});
        model.keep_positions(0);
        sampler.recent.clear();
    };
    reset();
    log << "chat: one message per line; " << kChatCommands << "\n";
    std::string line;
    while (true) {
        out << "> " << std::flush;
        if (!std::getline(in, line)) break;
        if (settings.echo_input) out << line << "\n" << std::flush;
        const std::string command = trimmed(line);
        if (command.empty()) continue;  // a line of spaces is no turn
        if (command == "/exit") break;
        if (command == "/reset") {
            reset();
            log << "(a new conversation)\n";
            continue;
        }
        if (command[0] == '/') {
            log << strprintf("unknown command %s: %s\n", command.c_str(), kChatCommands);
            continue;
        }
        GenerationStats stats;
        if (!run_turn(turn, conversation, line, stats)) {
            out << "\n";
            say_context_full(log, model);
            continue;
        }
        print_stats(log, stats, settings);
        if (stats.context_full) say_context_full(log, model);
        replies.push_back(stats);
    }
    out << "\n";
    return replies;
}
