// utf8.cpp - strict UTF-8 decoding with the maximal-subpart rule for bad bytes.
#include "utf8.h"

const char* const kReplacementCharacter = "\xEF\xBF\xBD";

Utf8Char decode_utf8(std::string_view text, size_t pos) {
    const uint8_t lead = uint8_t(text[pos]);
    Utf8Char result;
    if (lead < 0x80) {
        result.code_point = lead;
        return result;
    }
    // From the lead byte: total length, the payload bits it carries, and the allowed range of
    // the second byte (narrower than 80..BF for E0, ED, F0, F4: that excludes overlongs,
    // surrogates and values above U+10FFFF).
    size_t length = 0;
    uint32_t code_point = 0;
    uint8_t second_low = 0x80, second_high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, code_point = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, code_point = lead & 0x0F;
        if (lead == 0xE0) second_low = 0xA0;
        if (lead == 0xED) second_high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, code_point = lead & 0x07;
        if (lead == 0xF0) second_low = 0x90;
        if (lead == 0xF4) second_high = 0x8F;
    } else {  // 80..BF (a stray continuation), C0, C1, F5..FF: never valid
        result.status = Utf8Status::Invalid;
        return result;
    }
    for (size_t i = 1; i < length; i++) {
        if (pos + i >= text.size()) {
            result.length = i;
            result.status = Utf8Status::Truncated;
            return result;
        }
        const uint8_t byte = uint8_t(text[pos + i]);
        const uint8_t low = i == 1 ? second_low : 0x80;
        const uint8_t high = i == 1 ? second_high : 0xBF;
        if (byte < low || byte > high) {
            result.length = i;
            result.status = Utf8Status::Invalid;
            return result;
        }
        code_point = (code_point << 6) | (byte & 0x3F);
    }
    result.code_point = code_point;
    result.length = length;
    return result;
}

void append_utf8(std::string& out, uint32_t code_point) {
    if (code_point < 0x80) {
        out += char(code_point);
    } else if (code_point < 0x800) {
        out += char(0xC0 | (code_point >> 6));
        out += char(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += char(0xE0 | (code_point >> 12));
        out += char(0x80 | ((code_point >> 6) & 0x3F));
        out += char(0x80 | (code_point & 0x3F));
    } else {
        out += char(0xF0 | (code_point >> 18));
        out += char(0x80 | ((code_point >> 12) & 0x3F));
        out += char(0x80 | ((code_point >> 6) & 0x3F));
        out += char(0x80 | (code_point & 0x3F));
    }
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        Utf8Char c = decode_utf8(text, pos);
        if (c.status != Utf8Status::Valid) return false;
        pos += c.length;
    }
    return true;
}
