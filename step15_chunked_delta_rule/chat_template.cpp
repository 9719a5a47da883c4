// chat_template.cpp - ChatML rendering, Qwen2.5's way and Qwen3's.
#include "chat_template.h"

const char* const kDefaultSystemPrompt =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

ChatTemplate read_chat_template(const GgufMetadata& metadata) {
    ChatTemplate chat_template;
    const char* key = "tokenizer.chat_template";
    const bool thinks = metadata.has(key)
                            ? metadata.get_string(key).find("enable_thinking") != std::string::npos
                            : metadata.has("general.architecture") &&
                                  metadata.get_string("general.architecture") == "qwen3";
    if (thinks) chat_template.kind = TemplateKind::Qwen3Thinking;
    return chat_template;
}

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

static bool starts_with(const std::string& text, const std::string& start) {
    return text.compare(0, start.size(), start) == 0;
}

static bool ends_with(const std::string& text, const std::string& end) {
    return text.size() >= end.size() &&
           text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// Python's str.lstrip("\n") and str.rstrip("\n").
static std::string without_leading_newlines(const std::string& text) {
    const size_t first = text.find_first_not_of('\n');
    return first == std::string::npos ? "" : text.substr(first);
}

static std::string without_trailing_newlines(const std::string& text) {
    const size_t last = text.find_last_not_of('\n');
    return last == std::string::npos ? "" : text.substr(0, last + 1);
}

ReplyParts split_reply(const std::string& content) {
    const std::string close = "</think>", open = "<think>";
    const size_t first_close = content.find(close);
    if (first_close == std::string::npos) return {"", content};
    const std::string before = without_trailing_newlines(content.substr(0, first_close));
    const size_t last_open = before.rfind(open);
    const std::string reasoning =
        last_open == std::string::npos ? before : before.substr(last_open + open.size());
    const size_t last_close = content.rfind(close);
    return {without_leading_newlines(reasoning),
            without_leading_newlines(content.substr(last_close + close.size()))};
}

// The last user turn that asks something: a user turn holding a tool's response is none. The
// replies after it keep their reasoning. Without one, the last message's index.
static size_t last_query_index(const std::vector<ChatMessage>& messages) {
    for (size_t i = messages.size(); i-- > 0;) {
        const std::string& content = messages[i].content;
        const bool tool_response =
            starts_with(content, "<tool_response>") && ends_with(content, "</tool_response>");
        if (messages[i].role == "user" && !tool_response) return i;
    }
    return messages.empty() ? 0 : messages.size() - 1;
}

// Qwen3's template, the tools' parts left out: a reply before the last query keeps its answer
// alone; one after it keeps its reasoning in a <think> block, and so does the last message
// when it is a reply, with an empty block if it had no reasoning.
std::string render_qwen3(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         bool enable_thinking) {
    const size_t last_query = last_query_index(messages);
    std::string prompt;
    for (size_t i = 0; i < messages.size(); i++) {
        const ChatMessage& message = messages[i];
        if (message.role == "user" || message.role == "system") {
            append_turn(prompt, message.role, message.content);
            continue;
        }
        if (message.role != "assistant") continue;  // a tool's turn: not covered
        const ReplyParts parts = split_reply(message.content);
        const bool last = i + 1 == messages.size();
        prompt += "<|im_start|>assistant\n";
        if (i > last_query && (last || !parts.reasoning.empty()))
            prompt += "<think>\n" + parts.reasoning + "\n</think>\n\n" +
                      without_leading_newlines(parts.answer);
        else prompt += parts.answer;
        prompt += "<|im_end|>\n";
    }
    if (add_generation_prompt) {
        prompt += "<|im_start|>assistant\n";
        if (!enable_thinking) prompt += "<think>\n\n</think>\n\n";
    }
    return prompt;
}

std::string render_chat(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt) {
    if (chat_template.kind == TemplateKind::Qwen3Thinking)
        return render_qwen3(messages, add_generation_prompt, chat_template.enable_thinking);
    return render_chatml(messages, add_generation_prompt);
}
