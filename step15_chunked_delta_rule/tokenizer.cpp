// tokenizer.cpp - the vocabulary, added tokens, encode/decode and the streaming decoder.
#include "tokenizer.h"

#include <algorithm>
#include <climits>

#include "error.h"
#include "nfc.h"
#include "utf8.h"

static int32_t read_special_id(const GgufMetadata& metadata, const char* key, size_t n_tokens) {
    if (!metadata.has(key)) return -1;
    uint32_t id = metadata.get_u32(key);
    if (id >= n_tokens) fail("%s is %u, outside the vocabulary (%zu tokens)", key, id, n_tokens);
    return int32_t(id);
}

Vocabulary read_vocabulary(const GgufMetadata& metadata) {
    const std::string& model = metadata.get_string("tokenizer.ggml.model");
    if (model != "gpt2")
        fail("tokenizer.ggml.model is '%s': only 'gpt2' (byte-level BPE) is supported",
             model.c_str());
    // llama.cpp gives these names to the same split rules as "qwen2".
    const std::string& pre = metadata.get_string("tokenizer.ggml.pre");
    const bool qwen2 = pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "megrez";
    if (!qwen2 && pre != "qwen35")
        fail("tokenizer.ggml.pre is '%s': only the 'qwen2' and 'qwen35' pre-tokenizers are "
             "implemented", pre.c_str());

    Vocabulary vocabulary;
    vocabulary.split = qwen2 ? SplitRegex::Qwen2 : SplitRegex::Qwen35;
    vocabulary.tokens = metadata.get_string_array("tokenizer.ggml.tokens");
    vocabulary.token_types = metadata.get_i32_array("tokenizer.ggml.token_type");
    vocabulary.merges = metadata.get_string_array("tokenizer.ggml.merges");
    const size_t n = vocabulary.tokens.size();
    vocabulary.bos_id = read_special_id(metadata, "tokenizer.ggml.bos_token_id", n);
    vocabulary.eos_id = read_special_id(metadata, "tokenizer.ggml.eos_token_id", n);
    vocabulary.pad_id = read_special_id(metadata, "tokenizer.ggml.padding_token_id", n);
    return vocabulary;
}

Tokenizer::Tokenizer(Vocabulary vocabulary) : vocabulary_(std::move(vocabulary)) {
    const std::vector<std::string>& tokens = vocabulary_.tokens;
    const std::vector<int32_t>& types = vocabulary_.token_types;
    if (tokens.empty()) fail("the vocabulary is empty (tokenizer.ggml.tokens has no entries)");
    if (tokens.size() > size_t(INT32_MAX))
        fail("the vocabulary has %zu tokens, too many", tokens.size());
    if (types.size() != tokens.size())
        fail("tokenizer.ggml.token_type has %zu entries, tokenizer.ggml.tokens has %zu",
             types.size(), tokens.size());
    const struct {
        const char* key;
        int32_t id;
    } specials[] = {
        {"tokenizer.ggml.bos_token_id", vocabulary_.bos_id},
        {"tokenizer.ggml.eos_token_id", vocabulary_.eos_id},
        {"tokenizer.ggml.padding_token_id", vocabulary_.pad_id},
    };
    for (const auto& special : specials)
        if (special.id < -1 || special.id >= n_vocab())
            fail("%s is %d, outside the vocabulary (%d tokens)", special.key, special.id,
                 n_vocab());

    token_bytes_.resize(tokens.size());
    for (int32_t id = 0; id < n_vocab(); id++) {
        const std::string& text = tokens[size_t(id)];
        const int32_t type = types[size_t(id)];
        if (type < kTokenUndefined || type > kTokenByte)
            fail("tokenizer.ggml.token_type[%d] is %d, expected 0..6", id, type);
        id_of_text_.emplace(text, id);
        // Added tokens are stored as the text they match, not as byte-level symbols. A normal
        // token that is not made of byte symbols also stands for its own text (as HF decodes it).
        const bool added = type == kTokenControl || type == kTokenUserDefined;
        if (added || !symbols_to_bytes(text, token_bytes_[size_t(id)]))
            token_bytes_[size_t(id)] = text;
        if (added && !text.empty()) added_by_first_byte_[uint8_t(text[0])].push_back(id);
        if (vocabulary_.split == SplitRegex::Qwen35 && type == kTokenNormal)
            id_of_whole_piece_.emplace(token_bytes_[size_t(id)], id);
    }
    for (std::vector<int32_t>& candidates : added_by_first_byte_)  // longest first; then by id
        std::sort(candidates.begin(), candidates.end(), [&](int32_t a, int32_t b) {
            const size_t length_a = tokens[size_t(a)].size(), length_b = tokens[size_t(b)].size();
            return length_a != length_b ? length_a > length_b : a < b;
        });

    for (int byte = 0; byte < 256; byte++) {
        const std::string symbol = bytes_to_symbols(std::string(1, char(byte)));
        const int32_t id = find_token(symbol);
        if (id < 0)
            fail("the vocabulary has no token for byte 0x%02x ('%s')", byte, symbol.c_str());
        bpe_.set_byte_token(uint8_t(byte), id);
    }

    for (size_t rank = 0; rank < vocabulary_.merges.size(); rank++) {
        const std::string& merge = vocabulary_.merges[rank];
        const size_t space = merge.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
            merge.find(' ', space + 1) != std::string::npos)
            fail("tokenizer.ggml.merges[%zu] is '%s', expected two tokens separated by one space",
                 rank, merge.c_str());
        const std::string left = merge.substr(0, space), right = merge.substr(space + 1);
        const int32_t left_id = find_token(left), right_id = find_token(right);
        const int32_t merged_id = find_token(left + right);
        for (const auto& [part, id] : {std::pair{&left, left_id}, {&right, right_id}})
            if (id < 0)
                fail("tokenizer.ggml.merges[%zu] '%s': '%s' is not in the vocabulary", rank,
                     merge.c_str(), part->c_str());
        if (merged_id < 0)
            fail("tokenizer.ggml.merges[%zu] '%s': the result '%s' is not in the vocabulary", rank,
                 merge.c_str(), (left + right).c_str());
        bpe_.add_merge(left_id, right_id, merged_id, int32_t(rank));
    }

    for (const char* text : {"<|im_end|>", "<|endoftext|>"})
        if (int32_t id = find_token(text); id >= 0) end_of_generation_ids_.push_back(id);
    if (vocabulary_.eos_id >= 0) end_of_generation_ids_.push_back(vocabulary_.eos_id);
}

int32_t Tokenizer::match_added_token(std::string_view text, size_t pos) const {
    for (int32_t id : added_by_first_byte_[uint8_t(text[pos])]) {
        const std::string& token = vocabulary_.tokens[size_t(id)];
        if (text.compare(pos, token.size(), token) == 0) return id;  // longest first
    }
    return -1;
}

// Steps 2-4 for one stretch. Nearly all text is NFC already; the quick check sees that without
// making a copy.
void Tokenizer::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
    std::string normalized;
    if (!is_certainly_nfc(text)) {
        normalized = nfc(text);
        text = normalized;
    }
    for (std::string_view piece : pretokenize(text, vocabulary_.split)) encode_piece(piece, ids);
}

// Qwen3.5: a piece that is a normal token as a whole is that token (see tokenizer.h).
void Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
    if (!id_of_whole_piece_.empty()) {
        auto it = id_of_whole_piece_.find(std::string(piece));
        if (it != id_of_whole_piece_.end()) {
            ids.push_back(it->second);
            return;
        }
    }
    bpe_.encode(piece, ids);
}

// Added tokens are found by scanning left to right; at each position the longest one wins
// (so "<|im_start|>" is never read as a shorter token that happens to be its prefix). Qwen3.5
// normalizes the whole text first; each stretch of that NFC text is NFC on its own, so the
// stretches' own normalization then changes nothing.
std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
    std::vector<int32_t> ids;
    std::string normalized;
    std::string_view view(text);
    if (vocabulary_.split == SplitRegex::Qwen35 && !is_certainly_nfc(view)) {
        normalized = nfc(view);
        view = normalized;
    }
    size_t stretch_start = 0;  // first byte not yet encoded
    for (size_t pos = 0; pos < view.size();) {
        const int32_t id = match_added_token(view, pos);
        if (id < 0) {
            pos++;
            continue;
        }
        encode_text(view.substr(stretch_start, pos - stretch_start), ids);
        ids.push_back(id);
        pos += vocabulary_.tokens[size_t(id)].size();
        stretch_start = pos;
    }
    encode_text(view.substr(stretch_start), ids);
    return ids;
}

void Tokenizer::check_id(int32_t id) const {
    if (id < 0 || id >= n_vocab())
        fail("token id %d is outside the vocabulary (0..%d)", id, n_vocab() - 1);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string bytes;
    for (int32_t id : ids) {
        check_id(id);
        bytes += token_bytes_[size_t(id)];
    }
    return bytes;
}

std::string Tokenizer::token_bytes(int32_t id) const {
    check_id(id);
    return token_bytes_[size_t(id)];
}

int32_t Tokenizer::n_vocab() const { return int32_t(vocabulary_.tokens.size()); }

int32_t Tokenizer::find_token(const std::string& token_text) const {
    auto it = id_of_text_.find(token_text);
    return it == id_of_text_.end() ? -1 : it->second;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::find(end_of_generation_ids_.begin(), end_of_generation_ids_.end(), id) !=
           end_of_generation_ids_.end();
}

bool Tokenizer::is_added(int32_t id) const {
    check_id(id);
    const int32_t type = vocabulary_.token_types[size_t(id)];
    return type == kTokenControl || type == kTokenUserDefined;
}

const Vocabulary& Tokenizer::vocabulary() const { return vocabulary_; }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

// Moves the finished characters of `pending` to the result. An ill-formed sequence becomes
// U+FFFD; an unfinished one at the end stays in `pending` unless `final`.
static std::string take_complete_text(std::string& pending, bool final) {
    std::string text;
    size_t pos = 0;
    while (pos < pending.size()) {
        const Utf8Char c = decode_utf8(pending, pos);
        if (c.status == Utf8Status::Truncated && !final) break;
        if (c.status == Utf8Status::Valid) text.append(pending, pos, c.length);
        else text += kReplacementCharacter;
        pos += c.length;
    }
    pending.erase(0, pos);
    return text;
}

std::string StreamDecoder::push(int32_t id) {
    pending_ += tokenizer_.token_bytes(id);
    return take_complete_text(pending_, false);
}

std::string StreamDecoder::flush() { return take_complete_text(pending_, true); }
