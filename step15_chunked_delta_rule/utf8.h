// utf8.h - decoding UTF-8 one character at a time, strictly.
//
// A character is 1 to 4 bytes (Unicode Table 3-7, "well-formed UTF-8 byte sequences"):
//   U+0000..U+007F     0xxxxxxx
//   U+0080..U+07FF     110xxxxx 10xxxxxx                       lead C2..DF
//   U+0800..U+FFFF     1110xxxx 10xxxxxx 10xxxxxx              lead E0..EF
//   U+10000..U+10FFFF  11110xxx 10xxxxxx 10xxxxxx 10xxxxxx     lead F0..F4
// Overlong forms (C0, C1, E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values above
// U+10FFFF (F4 90.., F5..FF) are ill-formed: the second byte's allowed range depends on the lead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

enum class Utf8Status {
    Valid,      // a complete, well-formed character
    Invalid,    // ill-formed: `length` bytes (at least 1) can never start a character
    Truncated,  // well-formed so far but the text ends before the character does
};

struct Utf8Char {
    uint32_t code_point = 0;  // meaningful only when Valid
    size_t length = 1;        // bytes consumed; for Invalid/Truncated the "maximal subpart"
    Utf8Status status = Utf8Status::Valid;
};

// Decodes the character that starts at text[pos] (pos < text.size()). An ill-formed sequence
// consumes its maximal well-formed prefix (at least one byte), as Unicode recommends for
// replacement with U+FFFD: "\xE2\x82" then "A" is one bad sequence, then "A".
Utf8Char decode_utf8(std::string_view text, size_t pos);

void append_utf8(std::string& out, uint32_t code_point);
bool is_valid_utf8(std::string_view text);

extern const char* const kReplacementCharacter;  // U+FFFD as UTF-8: "\xEF\xBF\xBD"
