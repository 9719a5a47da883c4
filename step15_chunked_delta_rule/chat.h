// chat.h - a multi-turn conversation on one KV cache.
//
// The conversation is kept as messages, and the cache holds the tokens of its text: the last
// rendering (chat_template.h), then the reply as the model wrote it. A new turn renders the
// longer conversation and only prefills what it adds, e.g. after a first reply in ChatML:
//
//   <|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n
//
// The <|im_end|> that ended the reply was chosen by the model but never run (a stop token does
// not enter the cache), so it comes first here; a reply cut short by -n is closed the same way,
// and its last token, chosen but not yet run either, goes in front.
// The earlier turns are not run again, so the wait before an answer does not grow with the
// length of the conversation, only the attention over the cache does.
//
// Qwen3's template takes text out: the new rendering keeps the last reply's answer but not its
// "<think>...</think>" (nor the empty block of --no-think's generation prompt). Where the new
// rendering parts from the cached text, the cache goes back to the last added token before that
// point (the tokens after it are forgotten) and the rendering is prefilled from there: for a
// reply, from its "<|im_start|>", so the answer is run again, without the reasoning.
// Step 14: a model with recurrent layers (qwen35) cannot go back: its states hold every position
// run, mixed together. Where the new rendering parts from the cached text, it runs the whole
// kept history again from the start, so the cache holds exactly what one prompt of the rendered
// conversation would. A snapshot of the states could save that prefill, but it would have to be
// taken where the renderings part, the last reply's "<|im_start|>", which lies inside the turn's
// prefill: that prefill cut in two and the states copied at every turn. Running the history
// again costs one prefill of it per such turn (with Qwen3's template: every turn whose last
// reply had a reasoning block, or --no-think's empty one), and needs no code beyond this.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chat_template.h"
#include "generate.h"
#include "sampler.h"
#include "tokenizer.h"

// The model as the chat sees it, on whichever device runs it: a model step over new tokens
// on a KV cache of `capacity` positions (one or two caches with --check), and a way to forget
// every position from n on (all of them for n = 0).
struct ChatModel {
    NextTokenFn step;
    int capacity = 0;
    std::function<void(int n)> keep_positions;
    // Step 14: false when keep_positions can only go back to 0 (recurrent states).
    bool can_rewind = true;
};

struct ChatSettings {
    ChatTemplate chat_template;  // how the conversation is rendered (--no-think: Qwen3's off)
    // The content of the system turn ("" is an empty system turn); none: the template's default
    // (Qwen2.5's inserts its system prompt, Qwen3's none).
    std::optional<std::string> system_prompt;
    int max_new_tokens = 0;  // the longest reply
    // Dims a thinking reply's reasoning (reply_stream.h): for a terminal.
    bool styled = false;
    // Writes each line read after its "> ", as a terminal would have shown it while it was
    // typed: with input from a pipe or a file, the transcript then shows the questions too.
    bool echo_input = false;
    // Appended to each reply's statistics line, e.g. the GPU's bandwidth; may be empty.
    std::function<std::string(const GenerationStats&)> more_stats;
};

// The commands, as the chat names them when it starts and after an unknown /command.
constexpr const char* kChatCommands = "/reset starts a new conversation, /exit quits";

// Reads the user's turns from `in`, one line each, until /exit or the end of the input, and
// writes "> " before each and the reply as it is generated to `out`. `/reset` starts a new
// conversation (and is the way on when the context is full). The first line on `log` names the
// commands; a line of spaces is skipped, and any other line that starts with "/" is refused
// there as an unknown command. After each reply the timing line (format_stats) goes to `log`,
// with any message about the context or the -n limit. Returns each reply's stats.
std::vector<GenerationStats> run_chat(const ChatModel& model, const Tokenizer& tokenizer,
                                      Sampler& sampler, const ChatSettings& settings,
                                      std::istream& in, std::ostream& out, std::ostream& log);

// A ChatModel for the CPU path on `cache`.
ChatModel cpu_chat_model(const ModelConfig& config, const Weights& weights, KVCache& cache,
                         RunState& state);
