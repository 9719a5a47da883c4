// chat.cpp - the chat loop: render the conversation, prefill what is new, stream the reply.
#include "chat.h"

#include "chat_template.h"
#include "error.h"

// The conversation so far and the text whose tokens are in the cache, but for `unrun`.
struct Conversation {
    std::vector<ChatMessage> messages;
    std::string cached_text;
    int n_cached = 0;  // positions of the cache in use
    // A reply ended by -n ends in a token that no pass has run yet: it goes into the cache in
    // front of the next turn.
    std::vector<int32_t> unrun;
};

ChatModel cpu_chat_model(const ModelConfig& config, const Weights& weights, KVCache& cache,
                         RunState& state) {
    ChatModel model;
    model.step = [&config, &weights, &cache, &state](const std::vector<int32_t>& new_ids,
                                                     std::vector<float>* logits) {
        return next_token(config, weights, new_ids, cache, state, logits);
    };
    model.capacity = cache.capacity;
    model.clear_cache = [&cache] { cache.clear(); };
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

std::vector<GenerationStats> run_chat(const ChatModel& model, const Tokenizer& tokenizer,
                                      Sampler& sampler, const ChatSettings& settings,
                                      std::istream& in, std::ostream& out, std::ostream& log) {
    std::vector<GenerationStats> replies;
    Conversation conversation;
    auto reset = [&] {
        conversation = Conversation();
        conversation.messages.push_back({"system", settings.system_prompt});
        model.clear_cache();
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

        conversation.messages.push_back({"user", line});
        const std::string rendered = render_chatml(conversation.messages, true);
        std::vector<int32_t> new_tokens = conversation.unrun;
        for (int32_t id : tokenizer.encode(rendered.substr(conversation.cached_text.size())))
            new_tokens.push_back(id);
        const int free_positions = model.capacity - conversation.n_cached;
        if (new_tokens.size() > size_t(free_positions)) {
            conversation.messages.pop_back();
            out << "\n";
            say_context_full(log, model);
            continue;
        }

        StreamDecoder decoder(tokenizer);
        std::vector<int32_t> reply;
        GenerationStats stats = generate(model.step, new_tokens, settings.max_new_tokens,
                                         free_positions, sampler, [&](int32_t id) {
                                             if (tokenizer.is_end_of_generation(id)) return false;
                                             out << decoder.push(id) << std::flush;
                                             reply.push_back(id);
                                             return true;
                                         });
        out << decoder.flush() << "\n" << std::flush;
        // The reply's exact bytes, as the model's tokens spell them: the cache holds those.
        const std::string reply_text = tokenizer.decode(reply);
        conversation.messages.push_back({"assistant", reply_text});
        conversation.cached_text = rendered + reply_text;
        // The prefill ran the new tokens and each decode pass one accepted token; a reply
        // that no stop token ended has a last token that no pass ran.
        conversation.n_cached += int(new_tokens.size()) + stats.n_passes;
        conversation.unrun.clear();
        if (stats.n_passes < stats.n_generated) conversation.unrun.push_back(reply.back());

        print_stats(log, stats, settings);
        if (stats.context_full) say_context_full(log, model);
        replies.push_back(stats);
    }
    out << "\n";
    return replies;
}
