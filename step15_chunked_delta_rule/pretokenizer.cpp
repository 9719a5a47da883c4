// pretokenizer.cpp - the Qwen2 and Qwen3.5 split regexes written out as plain code.
//
// We first decode the text into characters, each with its class, then walk them: at each
// position the alternatives are tried in the regex's order and the first that matches gives
// the piece. None of them can match the empty string and every character belongs to one of
// them, so each step advances.
#include "pretokenizer.h"

#include <cstdint>

#include "error.h"
#include "unicode_ranges.h"
#include "utf8.h"

namespace {

enum class CharClass : uint8_t {
    Letter,      // \p{L}; with SplitRegex::Qwen35 also \p{M}
    Number,      // \p{N}
    LineBreak,   // \r or \n: whitespace that the regex also names on its own
    Whitespace,  // \s other than \r, \n
    Other,       // anything else: punctuation, symbols, emoji, invalid bytes (Qwen2: marks)
};

struct Char {
    uint32_t code_point;  // U+FFFD for an invalid sequence
    uint32_t offset;      // byte offset in the text (32 bits: 12 bytes per character)
    CharClass cls;
};

CharClass classify(uint32_t code_point, SplitRegex regex) {
    if (code_point == '\r' || code_point == '\n') return CharClass::LineBreak;
    if (is_letter(code_point)) return CharClass::Letter;
    if (regex == SplitRegex::Qwen35 && is_mark(code_point)) return CharClass::Letter;
    if (is_number(code_point)) return CharClass::Number;
    if (is_whitespace(code_point)) return CharClass::Whitespace;
    return CharClass::Other;
}

bool is_space_class(CharClass cls) {
    return cls == CharClass::Whitespace || cls == CharClass::LineBreak;
}

// Lower-cases the few letters a contraction can contain. The regex engine compares with Unicode
// case folding, under which U+017F LATIN SMALL LETTER LONG S also equals 's'.
uint32_t fold_case(uint32_t code_point) {
    if (code_point >= 'A' && code_point <= 'Z') return code_point + ('a' - 'A');
    if (code_point == 0x017F) return 's';
    return code_point;
}

// Alternative 1: how many characters the contraction at `i` spans ('s -> 2, 're -> 3), or 0.
size_t match_contraction(const std::vector<Char>& chars, size_t i) {
    if (chars[i].code_point != '\'' || i + 1 >= chars.size()) return 0;
    const uint32_t first = fold_case(chars[i + 1].code_point);
    if (first == 's' || first == 't' || first == 'm' || first == 'd') return 2;
    if (i + 2 >= chars.size()) return 0;
    const uint32_t second = fold_case(chars[i + 2].code_point);
    if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e') ||
        (first == 'l' && second == 'l'))
        return 3;
    return 0;
}

// The end of the run of characters of class `cls` that starts at `i`.
size_t run_end(const std::vector<Char>& chars, size_t i, CharClass cls) {
    while (i < chars.size() && chars[i].cls == cls) i++;
    return i;
}

// The length in characters of the piece that starts at `i` (at least 1).
size_t match_piece(const std::vector<Char>& chars, size_t i) {
    // BEGIN SOLUTION step04 match_piece
    const size_t n = chars.size();
    const CharClass cls = chars[i].cls;
    const bool next_exists = i + 1 < n;

    if (size_t length = match_contraction(chars, i)) return length;

    // 2. [^\r\n\p{L}\p{N}]?\p{L}+
    if (cls == CharClass::Letter) return run_end(chars, i, CharClass::Letter) - i;
    if (cls != CharClass::Number && cls != CharClass::LineBreak && next_exists &&
        chars[i + 1].cls == CharClass::Letter)
        return run_end(chars, i + 1, CharClass::Letter) - i;

    // 3. \p{N}: one at a time
    if (cls == CharClass::Number) return 1;

    // 4. ` ?[^\s\p{L}\p{N}]+[\r\n]*`: the optional prefix is U+0020 only, not any whitespace.
    size_t start = i;
    if (chars[i].code_point == ' ' && next_exists && chars[i + 1].cls == CharClass::Other)
        start = i + 1;
    if (chars[start].cls == CharClass::Other) {
        size_t end = run_end(chars, start, CharClass::Other);
        return run_end(chars, end, CharClass::LineBreak) - i;
    }

    // Only whitespace is left. Find its run (line breaks included).
    size_t end = i;
    while (end < n && is_space_class(chars[end].cls)) end++;

    // 5. \s*[\r\n]+: \s* first takes the whole run, then gives characters back until [\r\n]+
    // can match; so the piece ends just after the run's last line break.
    for (size_t k = end; k > i; k--)
        if (chars[k - 1].cls == CharClass::LineBreak) return k - i;

    // 6. \s+(?!\S): all of it at the end of the text; otherwise all but the last whitespace
    // character, which then joins the word after it (" world" via alternative 2 or 4).
    if (end == n) return end - i;
    if (end - i >= 2) return end - 1 - i;

    // 7. \s+: a single whitespace character before a non-space.
    return 1;
    // END SOLUTION
}

}  // namespace

std::vector<std::string_view> pretokenize(std::string_view text, SplitRegex regex) {
    if (text.size() > UINT32_MAX)
        fail("text of %zu bytes is too long to tokenize at once", text.size());
    std::vector<Char> chars;  // (n_chars) the decoded text
    chars.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        Utf8Char c = decode_utf8(text, pos);
        // An ill-formed sequence stands in the text as U+FFFD would: class Other.
        const uint32_t code_point = c.status == Utf8Status::Valid ? c.code_point : 0xFFFD;
        chars.push_back({code_point, uint32_t(pos), classify(code_point, regex)});
        pos += c.length;
    }

    std::vector<std::string_view> pieces;
    for (size_t i = 0; i < chars.size();) {
        const size_t end = i + match_piece(chars, i);
        const size_t begin_byte = chars[i].offset;
        const size_t end_byte = end < chars.size() ? chars[end].offset : text.size();
        pieces.push_back(text.substr(begin_byte, end_byte - begin_byte));
        i = end;
    }
    return pieces;
}
