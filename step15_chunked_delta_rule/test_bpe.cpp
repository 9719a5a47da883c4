// Checks for byte-level BPE: the byte <-> symbol map against HF's ByteLevel
// (tests/fixtures/tokenizer/byte_symbols.txt), and the merge order on small hand-made tables
// where the right answer can be worked out on paper.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bpe.h"
#include "test_tokenizer_fixtures.h"
#include "utf8.h"

TEST_CASE("byte -> symbol map equals HF's ByteLevel") {
    std::vector<FixtureRecord> records =
        read_fixture_records("tests/fixtures/tokenizer/byte_symbols.txt");
    int bytes_checked = 0;
    for (const FixtureRecord& record : records) {
        INFO(record.comment);
        if (record.has("alphabet")) {
            // All 256 stand-ins as a set, sorted by code point (UTF-8 sorts the same way).
            std::vector<std::string> ours;
            for (int byte = 0; byte < 256; byte++)
                ours.push_back(bytes_to_symbols(std::string(1, char(byte))));
            std::sort(ours.begin(), ours.end());
            std::vector<std::string> theirs;
            for (const std::string& hex : split_words(record.get("alphabet")))
                theirs.push_back(hex_to_bytes(hex));
            CHECK(ours == theirs);
            continue;
        }
        const int byte = std::stoi(record.get("byte"));
        std::string symbol;
        append_utf8(symbol, byte_to_symbol(uint8_t(byte)));
        CHECK(symbol == hex_to_bytes(record.get("symbol")));
        bytes_checked++;
    }
    CHECK(bytes_checked >= 240);  // every byte that can occur in UTF-8 text
}

TEST_CASE("the well-known stand-ins") {
    CHECK(byte_to_symbol(' ') == 0x120);   // 'Ġ'
    CHECK(byte_to_symbol('\n') == 0x10A);  // 'Ċ'
    CHECK(byte_to_symbol('\t') == 0x109);  // 'ĉ'
    CHECK(byte_to_symbol('A') == 'A');
    CHECK(byte_to_symbol(0xAD) == 0x143);                        // the last of the 68 shifted bytes
    CHECK(bytes_to_symbols(" the\n") == "\xC4\xA0the\xC4\x8A");  // "Ġthe" + "Ċ"
}

TEST_CASE("symbols -> bytes inverts the map and rejects what is not a symbol") {
    for (int byte = 0; byte < 256; byte++) {
        std::string bytes;
        REQUIRE(symbols_to_bytes(bytes_to_symbols(std::string(1, char(byte))), bytes));
        CHECK(bytes == std::string(1, char(byte)));
    }
    std::string bytes;
    CHECK(!symbols_to_bytes(" ", bytes));         // a raw space is not a stand-in (0x20 -> 'Ġ')
    CHECK(!symbols_to_bytes("\xC5\x84", bytes));  // U+0144: just past the 68 shifted bytes
    CHECK(!symbols_to_bytes("\xE4\xB8\xAD", bytes));  // '中' stands for no byte
    CHECK(!symbols_to_bytes("\xFF", bytes));          // not UTF-8 at all
}

// A table where token id b is the single byte b and merges produce ids from 256 up.
static BytePairEncoder byte_identity_encoder() {
    BytePairEncoder encoder;
    for (int byte = 0; byte < 256; byte++) encoder.set_byte_token(uint8_t(byte), byte);
    return encoder;
}

static std::vector<int32_t> encode_piece(const BytePairEncoder& encoder, const std::string& piece) {
    std::vector<int32_t> ids;
    encoder.encode(piece, ids);
    return ids;
}

TEST_CASE("lowest rank merges first, whatever the position") {
    BytePairEncoder encoder = byte_identity_encoder();
    encoder.add_merge('b', 'c', 256, 0);  // "bc" outranks "ab"
    encoder.add_merge('a', 'b', 257, 1);
    CHECK(encode_piece(encoder, "abc") == std::vector<int32_t>{'a', 256});
    CHECK(encode_piece(encoder, "ab") == std::vector<int32_t>{257});
    CHECK(encode_piece(encoder, "xyz") == std::vector<int32_t>{'x', 'y', 'z'});  // nothing to merge
    CHECK(encode_piece(encoder, "q") == std::vector<int32_t>{'q'});
}

TEST_CASE("equal ranks: the leftmost pair merges first") {
    BytePairEncoder encoder = byte_identity_encoder();
    encoder.add_merge('a', 'a', 256, 0);
    CHECK(encode_piece(encoder, "aaa") == std::vector<int32_t>{256, 'a'});
    CHECK(encode_piece(encoder, "aaaaa") == std::vector<int32_t>{256, 256, 'a'});
}

TEST_CASE("merges build on merges, and a repeated pair keeps its first rank") {
    BytePairEncoder encoder = byte_identity_encoder();
    encoder.add_merge('a', 'b', 256, 0);
    encoder.add_merge('c', 'd', 257, 1);
    encoder.add_merge(256, 257, 258, 2);  // "ab" + "cd"
    encoder.add_merge('a', 'b', 300, 3);  // ignored: "a b" is already rank 0
    CHECK(encode_piece(encoder, "abcd") == std::vector<int32_t>{258});
    CHECK(encode_piece(encoder, "abcdab") == std::vector<int32_t>{258, 256});
}

TEST_CASE("a long piece merges in O(n log n)") {
    // 2^17 bytes of 'a' with "a a" and "aa aa": rescanning after every merge would take ~10^10
    // steps; the heap takes well under a second.
    BytePairEncoder encoder = byte_identity_encoder();
    encoder.add_merge('a', 'a', 256, 0);
    encoder.add_merge(256, 256, 257, 1);
    std::vector<int32_t> ids = encode_piece(encoder, std::string(1 << 17, 'a'));
    CHECK(ids.size() == (1 << 15));
    CHECK(std::all_of(ids.begin(), ids.end(), [](int32_t id) { return id == 257; }));
}
