// Checks for nfc(): one hand-made example per rule, every text of the fixture whose NFC was
// written by Python's unicodedata2 (tools/fixtures/make_tokenizer_fixtures.py), invalid UTF-8, and
// the quick check against the full algorithm for every code point.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "nfc.h"
#include "test_tokenizer_fixtures.h"
#include "utf8.h"

// UTF-8 of the code points: the examples read as the code points the rules talk about.
static std::string utf8_of(std::initializer_list<uint32_t> code_points) {
    std::string text;
    for (uint32_t code_point : code_points) append_utf8(text, code_point);
    return text;
}

TEST_CASE("nfc: one example per rule") {
    // Compose: "e" + U+0301 COMBINING ACUTE ACCENT is U+00E9.
    CHECK(nfc(utf8_of({'e', 0x301})) == utf8_of({0xE9}));
    // Reorder: the dot below (class 220) goes before the circumflex (230), then both compose
    // into U+1EC7, as a Vietnamese keyboard that types the circumflex first expects.
    CHECK(nfc(utf8_of({'e', 0x302, 0x323})) == utf8_of({0x1EC7}));
    // Reorder is stable: marks of one class keep their order, since it says how they stack.
    // Circumflex then acute is U+1EBF; acute then circumflex is U+00E9 + U+0302.
    CHECK(nfc(utf8_of({'e', 0x302, 0x301})) == utf8_of({0x1EBF}));
    CHECK(nfc(utf8_of({'e', 0x301, 0x302})) == utf8_of({0xE9, 0x302}));
    // A long run of marks too: the ones below (220) move first, each class in its order.
    std::string run = "#", sorted_run = "#", above;
    for (uint32_t i = 0; i < 20; i++) {
        append_utf8(run, 0x300 + i);  // U+0300..U+0313, all 230
        append_utf8(run, i % 2 ? 0x316 : 0x317);
        append_utf8(sorted_run, i % 2 ? 0x316 : 0x317);
        append_utf8(above, 0x300 + i);
    }
    CHECK(nfc(run) == sorted_run + above);
    // Decompose first: U+00E9 + dot below is e, dot, acute; e + dot is U+1EB9, and with the
    // acute there is no composite, so the acute stays a mark.
    CHECK(nfc(utf8_of({0xE9, 0x323})) == utf8_of({0x1EB9, 0x301}));
    // Hangul by arithmetic: L + V is U+AC00, L + V + T U+AC01, and the LV syllable + T too.
    CHECK(nfc(utf8_of({0x1100, 0x1161})) == utf8_of({0xAC00}));
    CHECK(nfc(utf8_of({0x1100, 0x1161, 0x11A8})) == utf8_of({0xAC01}));
    CHECK(nfc(utf8_of({0xAC00, 0x11A8})) == utf8_of({0xAC01}));
    // Hangul limits: an LVT syllable takes no second T, and U+1113 is not one of the 19
    // leading consonants that compose.
    CHECK(nfc(utf8_of({0xAC01, 0x11A8})) == utf8_of({0xAC01, 0x11A8}));
    CHECK(nfc(utf8_of({0x1113, 0x1161})) == utf8_of({0x1113, 0x1161}));
    // Singletons: U+212B ANGSTROM SIGN is U+00C5, U+2126 OHM SIGN is U+03A9 GREEK OMEGA.
    CHECK(nfc(utf8_of({0x212B})) == utf8_of({0xC5}));
    CHECK(nfc(utf8_of({0x2126})) == utf8_of({0x3A9}));
    // Exclusion: U+0958 DEVANAGARI LETTER QA comes apart into KA + NUKTA, never put back.
    CHECK(nfc(utf8_of({0x958})) == utf8_of({0x915, 0x93C}));
    CHECK(nfc(utf8_of({0x915, 0x93C})) == utf8_of({0x915, 0x93C}));
    // Non-starter decomposition: U+0344 is U+0308 U+0301, and a + U+0308 composes to U+00E4.
    CHECK(nfc(utf8_of({'a', 0x344})) == utf8_of({0xE4, 0x301}));
    // Blocked: the acute (230) is blocked from "a" by U+0305 (230, composes with nothing).
    CHECK(nfc(utf8_of({'a', 0x305, 0x301})) == utf8_of({'a', 0x305, 0x301}));
    // Not blocked: a mark of a lower class in between (U+0316, 220) lets the acute through.
    CHECK(nfc(utf8_of({'a', 0x316, 0x301})) == utf8_of({0xE1, 0x316}));
    // Two starters compose when adjacent: Bengali U+09C7 + U+09BE is U+09CB.
    CHECK(nfc(utf8_of({0x9C7, 0x9BE})) == utf8_of({0x9CB}));
    CHECK(nfc(utf8_of({0x9C7, 'x', 0x9BE})) == utf8_of({0x9C7, 'x', 0x9BE}));
    // Unicode 9.0, as HF: U+0D3B (Unicode 10.0, class 9) is a starter, so it does not move
    // before U+0345 (class 240); Todhri U+105D2 + U+0307 (Unicode 16.0) does not compose.
    CHECK(nfc(utf8_of({'a', 0x345, 0xD3B})) == utf8_of({'a', 0x345, 0xD3B}));
    CHECK(nfc(utf8_of({0x105D2, 0x307})) == utf8_of({0x105D2, 0x307}));
}

TEST_CASE("nfc: invalid UTF-8 is kept byte for byte, a starter that composes with nothing") {
    // The acute after the bad byte 0xFF is not joined to the "e" before it.
    CHECK(nfc("e\xFF\xCC\x81") == "e\xFF\xCC\x81");
    // Marks after a bad byte are still put in order: dot below, then acute.
    CHECK(nfc("\xFF\xCC\x81\xCC\xA3") == "\xFF\xCC\xA3\xCC\x81");
    // Before the bad byte the text is normalized as usual.
    CHECK(nfc("e\xCC\x81\xC0") == "\xC3\xA9\xC0");
    // A character cut short at the end (the first byte of U+0301) stays as it is.
    CHECK(nfc("e\xCC") == "e\xCC");
    CHECK(nfc(std::string("\0\x80", 2)) == std::string("\0\x80", 2));
}

TEST_CASE("nfc equals Python's unicodedata2 on every fixture text") {
    std::vector<FixtureRecord> records = read_fixture_records("tests/fixtures/tokenizer/nfc.txt");
    REQUIRE(records.size() >= 1500);
    int changed = 0;
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        const std::string text = hex_to_bytes(record.get("text"));
        const std::string expected = hex_to_bytes(record.get("nfc"));
        CHECK(nfc(text) == expected);
        CHECK(nfc(expected) == expected);  // NFC of NFC text is itself
        changed += expected != text;
    }
    CHECK(changed > 1000);  // the fixture is mostly text that NFC changes
}

// The quick check may say "maybe" to NFC text, but never "certainly" to text that nfc()
// changes. Every code point is tried alone (a singleton must fail it), after a letter and a mark
// of class 230 (U+0305, which composes with nothing), and before a mark of class 1 (U+0334): a
// mark of another class between them must fail it too, being out of order.
TEST_CASE("the quick check never passes text that nfc() changes") {
    int wrong = 0, certain = 0;
    char first_wrong[16] = "none";
    for (uint32_t code_point = 0; code_point <= 0x10FFFF; code_point++) {
        if (code_point >= 0xD800 && code_point <= 0xDFFF) continue;
        for (const std::string& text : {utf8_of({code_point}), utf8_of({'a', 0x305, code_point}),
                                        utf8_of({'a', code_point, 0x334})}) {
            if (!is_certainly_nfc(text)) continue;
            certain++;
            if (nfc(text) != text && wrong++ == 0)
                std::snprintf(first_wrong, sizeof first_wrong, "U+%04X", code_point);
        }
    }
    INFO("the first code point passed wrongly: ", first_wrong);
    CHECK(wrong == 0);
    CHECK(certain > 3000000);  // and it does pass nearly everything
    for (const FixtureRecord& record : read_fixture_records("tests/fixtures/tokenizer/nfc.txt")) {
        const std::string text = hex_to_bytes(record.get("text"));
        if (is_certainly_nfc(text)) CHECK(nfc(text) == text);
    }
    CHECK(is_certainly_nfc("plain ASCII, \xC3\xA9, \xE4\xB8\xAD\xE6\x96\x87, \xEA\xB0\x81"));
    CHECK(!is_certainly_nfc("e\xCC\x81"));
}
