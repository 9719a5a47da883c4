// chat_template.h - a conversation as the one string the model was trained on: Qwen2.5's ChatML,
// or Qwen3's, which thinks.
//
// Qwen2.5 Instruct models expect every turn wrapped in markers that are single added tokens:
//
//   <|im_start|>system
//   You are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>
//   <|im_start|>user
//   Hello!<|im_end|>
//   <|im_start|>assistant
//
// i.e. "<|im_start|>" + role + "\n" + content + "<|im_end|>\n" per message. When the first
// message is not a system message, Qwen2.5's template inserts the default system prompt above.
// The generation prompt "<|im_start|>assistant\n" opens the turn the model is to write; it
// ends its answer with <|im_end|>.
//
// Qwen3 keeps the markers and adds reasoning. Its replies start with "<think>\n...\n</think>\n\n"
// and then the answer; its template
//   - inserts no default system turn;
//   - with thinking off (enable_thinking=False in transformers, --no-think here) ends the
//     generation prompt with an empty block, "<|im_start|>assistant\n<think>\n\n</think>\n\n",
//     which the model has learned to follow with the answer alone;
//   - drops the reasoning of the replies before the last user turn: only the answers stay in the
//     history ("<|im_start|>assistant\n" + answer + "<|im_end|>\n"); a reply after the last user
//     turn keeps it, and the last message, when it is a reply, is given a <think> block even if
//     it had none.
//
// The GGUF carries the real template (tokenizer.chat_template, a Jinja program). We do not run
// Jinja: we render these fixed formats, which is what those templates produce for plain
// system/user/assistant messages (tool calls and tool turns are not covered).
#pragma once

#include <string>
#include <vector>

#include "gguf_metadata.h"

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

extern const char* const
    kDefaultSystemPrompt;  // "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

// Which of the two formats a model's template is, and the one choice Qwen3's offers.
enum class TemplateKind { ChatML, Qwen3Thinking };
struct ChatTemplate {
    TemplateKind kind = TemplateKind::ChatML;
    bool enable_thinking = true;  // Qwen3's: false ends the generation prompt in an empty block
};

// The file's template: Qwen3's when tokenizer.chat_template reads enable_thinking, ChatML when it
// is another; without that key, Qwen3's for general.architecture "qwen3", else ChatML.
ChatTemplate read_chat_template(const GgufMetadata& metadata);

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_qwen3(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         bool enable_thinking);
// The conversation in the template's format.
std::string render_chat(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt);

// A reply's text cut as Qwen3's template cuts it: the answer after the last "</think>" (its
// leading newlines dropped), the reasoning before the first one, after the last "<think>" in
// that part, with its newlines at both ends dropped. A reply without "</think>" is all answer.
struct ReplyParts {
    std::string reasoning;
    std::string answer;
};
ReplyParts split_reply(const std::string& content);
