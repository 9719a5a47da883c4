// bpe.h - byte-level byte-pair encoding (GPT-2 style, as Qwen uses it).
//
// Two ideas:
//
// 1. Byte-level symbols. BPE works on bytes, so any text (any language, emoji, even invalid
//    UTF-8) can be encoded with no "unknown" token. But vocabulary files store tokens as
//    printable text, so each byte 0..255 is given a printable stand-in character (GPT-2's
//    rule): bytes 0x21..0x7E, 0xA1..0xAC and 0xAE..0xFF stand for themselves (as code points
//    U+0021.., U+00A1.., U+00AE..); the other 68 bytes (control characters, space, 0x7F..0xA0,
//    0xAD), in ascending order, become U+0100, U+0101, ... So space 0x20 is 'Ġ' (U+0120),
//    newline 0x0A is 'Ċ' (U+010A), and the token " the" is stored as "Ġthe".
//
// 2. Merges. The vocabulary comes with an ordered list of merges "left right"; rank = position
//    in the list. To encode one pre-token piece: start from its single bytes, then repeatedly
//    merge the adjacent pair whose merge has the lowest rank (the leftmost pair on a tie) into
//    one token, until no adjacent pair has a merge. The tokens left are the encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// GPT-2's byte -> stand-in character, as a code point.
uint32_t byte_to_symbol(uint8_t byte);

// The stored form of raw bytes: each byte replaced by its stand-in, UTF-8 encoded.
std::string bytes_to_symbols(std::string_view bytes);

// The inverse: false if `symbols` is not valid UTF-8 or holds a character that stands for no byte.
bool symbols_to_bytes(std::string_view symbols, std::string& bytes);

// The merge table and the merge loop, on token ids.
class BytePairEncoder {
public:
    // The token that stands for the single byte `byte`. Every byte needs one before encode().
    void set_byte_token(uint8_t byte, int32_t id) { byte_tokens_[byte] = id; }

    // Merge number `rank`: tokens `left` + `right` become `merged`. Lower rank merges first; a
    // pair added twice keeps its first (lowest) rank.
    void add_merge(int32_t left, int32_t right, int32_t merged, int32_t rank);

    // Appends the ids of one pre-token piece (raw bytes, non-empty) to `ids`.
    void encode(std::string_view piece, std::vector<int32_t>& ids) const;

private:
    struct Merge {
        int32_t rank;
        int32_t merged;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
    }
    const Merge* find_merge(int32_t left, int32_t right) const;

    std::vector<int32_t> byte_tokens_ = std::vector<int32_t>(256, -1);  // (256) byte -> token id
    std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, result
};
