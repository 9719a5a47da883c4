// chat_template.h - a conversation as the one string the model was trained on (ChatML).
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
// The GGUF carries the real template (tokenizer.chat_template, a Jinja program). We do not run
// Jinja: we render this fixed format, which is what that template produces for plain
// system/user/assistant messages (tool calls are not covered).
#pragma once

#include <string>
#include <vector>

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

extern const char* const
    kDefaultSystemPrompt;  // "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
