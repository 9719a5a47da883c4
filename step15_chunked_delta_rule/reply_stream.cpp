// reply_stream.cpp - the reasoning and the answer of a streamed reply, split at the tags.
#include "reply_stream.h"

#include <algorithm>

static constexpr std::string_view kOpenTag = "<think>", kCloseTag = "</think>";
static constexpr const char* kFaint = "\x1b[2m";  // ANSI: faint on
static constexpr const char* kPlain = "\x1b[0m";  // ANSI: every style off

// How many characters at the end of `text` are the first characters of `tag` (fewer than all).
static size_t partial_tag_length(std::string_view text, std::string_view tag) {
    for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; length--)
        if (text.substr(text.size() - length) == tag.substr(0, length)) return length;
    return 0;
}

static void add_text(std::vector<ReplyEvent>& events, bool thinking, std::string_view text) {
    if (text.empty()) return;
    events.push_back(
        {thinking ? ReplyEventKind::ThinkingText : ReplyEventKind::AnswerText, std::string(text)});
}

std::vector<ReplyEvent> ThinkingSplitter::push(std::string_view piece) {
    std::vector<ReplyEvent> events;
    const std::string text = held_ + std::string(piece);
    held_.clear();
    size_t pos = 0;  // the first character not yet in an event
    while (true) {
        const std::string_view tag = thinking_ ? kCloseTag : kOpenTag;
        const size_t at = text.find(tag, pos);
        if (at == std::string::npos) break;
        add_text(events, thinking_, std::string_view(text).substr(pos, at - pos));
        thinking_ = !thinking_;
        events.push_back(
            {thinking_ ? ReplyEventKind::ThinkingStarts : ReplyEventKind::AnswerStarts, ""});
        pos = at + tag.size();
    }
    const std::string_view rest = std::string_view(text).substr(pos);
    const size_t held = partial_tag_length(rest, thinking_ ? kCloseTag : kOpenTag);
    add_text(events, thinking_, rest.substr(0, rest.size() - held));
    held_ = std::string(rest.substr(rest.size() - held));
    return events;
}

std::vector<ReplyEvent> ThinkingSplitter::finish() {
    std::vector<ReplyEvent> events;
    add_text(events, thinking_, held_);
    held_.clear();
    return events;
}

ReplyPrinter::ReplyPrinter(bool split_thinking, bool styled)
    : split_thinking_(split_thinking), styled_(styled) {}

std::string ReplyPrinter::show(const std::vector<ReplyEvent>& events) {
    std::string shown;
    for (const ReplyEvent& event : events) {
        switch (event.kind) {
            case ReplyEventKind::ThinkingStarts:
                if (styled_) shown += kFaint;
                dimmed_ = styled_;
                shown += kOpenTag;
                break;
            case ReplyEventKind::AnswerStarts:
                shown += kCloseTag;
                if (dimmed_) shown += kPlain;
                dimmed_ = false;
                break;
            case ReplyEventKind::ThinkingText:
            case ReplyEventKind::AnswerText: shown += event.text; break;
        }
    }
    return shown;
}

std::string ReplyPrinter::push(std::string_view piece) {
    if (!split_thinking_) return std::string(piece);
    return show(splitter_.push(piece));
}

std::string ReplyPrinter::finish() {
    if (!split_thinking_) return "";
    std::string shown = show(splitter_.finish());
    if (dimmed_) shown += kPlain;  // a reply cut short in its reasoning
    dimmed_ = false;
    return shown;
}
