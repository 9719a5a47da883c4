// reply_stream.h - a thinking model's reply as it streams in: its reasoning, between "<think>"
// and "</think>", told apart from its answer.
//
// A Qwen3 reply with thinking on reads
//
//   <think>\nThe user adds two and two.\n</think>\n\n2 + 2 = 4.
//
// and arrives a token's text at a time. <think> and </think> are single added tokens, but the
// model may also spell a tag with ordinary ones ("</", "think", ">"), so the split is made on the
// text, as the template splits a reply (chat_template.h: split_reply): a piece that ends in the
// first characters of a tag is held back until the next one says whether the tag is complete.
// Outside the reasoning only "<think>" opens it, inside only "</think>" closes it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

enum class ReplyEventKind {
    ThinkingStarts,  // "<think>" was read
    ThinkingText,
    AnswerStarts,  // "</think>" was read
    AnswerText,
};

struct ReplyEvent {
    ReplyEventKind kind;
    std::string text;  // empty for ThinkingStarts and AnswerStarts

    bool operator==(const ReplyEvent& other) const {
        return kind == other.kind && text == other.text;
    }
};

// Turns the pieces of one reply into events, in order; the tags become the *Starts events, the
// text between them ThinkingText or AnswerText. A reply with no tags is all AnswerText.
class ThinkingSplitter {
public:
    std::vector<ReplyEvent> push(std::string_view piece);
    std::vector<ReplyEvent> finish();  // the text held back, at the end of the reply

private:
    bool thinking_ = false;
    std::string held_;  // text that may be the first characters of the tag awaited
};

// What the terminal shows of a reply: the model's text as it is, the reasoning dimmed when
// `styled` (on a terminal: the ANSI "faint" style, from "<think>" to "</think>" included).
// Unstyled, and for a template that does not think (split_thinking false, Qwen2.5's), the output
// is the text itself, byte for byte.
class ReplyPrinter {
public:
    ReplyPrinter(bool split_thinking, bool styled);
    std::string push(std::string_view piece);  // what to print now
    std::string finish();                      // what is left, the style reset

private:
    std::string show(const std::vector<ReplyEvent>& events);

    bool split_thinking_, styled_;
    bool dimmed_ = false;
    ThinkingSplitter splitter_;
};
