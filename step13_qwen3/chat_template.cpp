// chat_template.cpp - ChatML rendering, Qwen2.5's way.
#include "chat_template.h"

const char* const kDefaultSystemPrompt =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

static void append_turn(std::string& prompt, const std::string& role, const std::string& content) {
    prompt += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    std::string prompt;
    if (messages.empty() || messages[0].role != "system")
        append_turn(prompt, "system", kDefaultSystemPrompt);
    for (const ChatMessage& message : messages) append_turn(prompt, message.role, message.content);
    if (add_generation_prompt) prompt += "<|im_start|>assistant\n";
    return prompt;
}
