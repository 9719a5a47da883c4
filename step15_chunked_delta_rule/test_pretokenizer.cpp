// Checks for the pre-tokenizer: HF's own splits of the corpus (tests/fixtures/tokenizer/
// pieces.txt, from HF's Split with Qwen's regex), the Unicode classes at the places where
// Unicode and intuition disagree, and the defined handling of invalid UTF-8.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pretokenizer.h"
#include "test_tokenizer_fixtures.h"
#include "unicode_ranges.h"
#include "utf8.h"

static std::string hex_of(std::string_view bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char byte : bytes) {
        hex += digits[byte >> 4];
        hex += digits[byte & 15];
    }
    return hex;
}

static std::vector<std::string> pieces_of(const std::string& text) {
    std::vector<std::string> pieces;
    for (std::string_view piece : pretokenize(text)) pieces.emplace_back(piece);
    return pieces;
}

TEST_CASE("pre-tokenizer pieces equal HF's split of every corpus text") {
    std::vector<FixtureRecord> records =
        read_fixture_records("tests/fixtures/tokenizer/pieces.txt");
    REQUIRE(records.size() >= 300);
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        std::string joined;
        for (std::string_view piece : pretokenize(text))
            joined += (joined.empty() ? "" : " ") + hex_of(piece);
        CHECK(joined == record.get("pieces"));
    }
}

TEST_CASE("Unicode classes follow the regex engine, not str.isspace()") {
    // Verified against HF by `tools/fixtures/gen_unicode_ranges.py --verify`.
    CHECK(std::string(unicode_ranges_version()) == "16.0.0");
    CHECK(is_whitespace(0x0085));   // NEXT LINE
    CHECK(is_whitespace(0x00A0));   // NO-BREAK SPACE
    CHECK(is_whitespace(0x3000));   // IDEOGRAPHIC SPACE
    CHECK(is_whitespace(0x2028));   // LINE SEPARATOR
    CHECK(!is_whitespace(0x200B));  // ZERO WIDTH SPACE is a format character (Cf)
    CHECK(!is_whitespace(0xFEFF));  // BYTE ORDER MARK, also Cf
    CHECK(!is_whitespace(0x001C));  // FILE SEPARATOR: Python's isspace() says yes, \s says no
    CHECK(is_letter(0x1C89));       // CYRILLIC CAPITAL LETTER TJE, new in Unicode 16.0
    CHECK(is_number(0x11F50));      // KAWI DIGIT ZERO, new in Unicode 15.0
    CHECK(!is_letter(0x0301));      // combining marks are not letters (Mn)
    CHECK(is_number(0x00B2));       // SUPERSCRIPT TWO (No)
    CHECK(is_number(0x2167));       // ROMAN NUMERAL EIGHT (Nl)
    CHECK(!is_letter(0x10FFFF));
}

TEST_CASE("UTF-8 decoding: well-formed, ill-formed (maximal subpart) and truncated") {
    auto decode = [](const std::string& text) { return decode_utf8(text, 0); };
    Utf8Char euro = decode("\xE2\x82\xAC");
    CHECK(euro.status == Utf8Status::Valid);
    CHECK(euro.code_point == 0x20AC);
    CHECK(euro.length == 3);
    CHECK(decode("\xF0\x9F\x98\x80").code_point == 0x1F600);

    Utf8Char stray = decode("\x80");
    CHECK(stray.status == Utf8Status::Invalid);
    CHECK(stray.length == 1);
    CHECK(decode("\xC0\xAF").length == 1);          // overlong lead C0
    CHECK(decode("\xE0\x80\x80").length == 1);      // overlong: E0 needs A0..BF next
    CHECK(decode("\xED\xA0\x80").length == 1);      // a surrogate: ED needs 80..9F next
    CHECK(decode("\xF4\x90\x80\x80").length == 1);  // above U+10FFFF
    Utf8Char cut = decode(
        "\xE2\x82"
        "A");
    CHECK(cut.status == Utf8Status::Invalid);
    CHECK(cut.length == 2);  // E2 82 is one bad sequence, then "A"

    Utf8Char truncated = decode("\xF0\x9F\x98");
    CHECK(truncated.status == Utf8Status::Truncated);
    CHECK(truncated.length == 3);
    CHECK(is_valid_utf8("plain ascii, ünïcödé, 中文, 😀"));
    CHECK(!is_valid_utf8("\xFF"));
}

TEST_CASE("invalid UTF-8 splits as if each bad sequence were U+FFFD, bytes kept") {
    // U+FFFD is a symbol (So): it joins punctuation runs and can lead a word.
    CHECK(pieces_of("\xFF") == std::vector<std::string>{"\xFF"});
    CHECK(pieces_of("a\xFF"
                    "b") == std::vector<std::string>{"a",
                                                     "\xFF"
                                                     "b"});
    CHECK(pieces_of("\xE2\x82"
                    "A") == std::vector<std::string>{"\xE2\x82"
                                                     "A"});
    CHECK(pieces_of(" \xFF\xFE!") == std::vector<std::string>{" \xFF\xFE!"});
    CHECK(pieces_of("1\xFF"
                    "2") == std::vector<std::string>{"1", "\xFF", "2"});
    CHECK(pieces_of("x \xED\xA0\x80\n") == std::vector<std::string>{"x", " \xED\xA0\x80\n"});
    CHECK(pieces_of("end\xF0\x9F\x98") == std::vector<std::string>{"end", "\xF0\x9F\x98"});
}

TEST_CASE("pieces always cover the text exactly, even for random bytes") {
    uint32_t state = 12345;  // a fixed linear congruential sequence: the same bytes every run
    for (int round = 0; round < 200; round++) {
        std::string text;
        for (int i = 0; i < 64; i++) {
            state = state * 1664525u + 1013904223u;
            text += char(state >> 24);
        }
        std::string joined;
        for (std::string_view piece : pretokenize(text)) {
            CHECK(!piece.empty());
            joined += piece;
        }
        CHECK(joined == text);
    }
}
