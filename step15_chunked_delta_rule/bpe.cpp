// bpe.cpp - the byte <-> symbol map and the merge loop.
#include "bpe.h"

#include <cstdint>
#include <queue>

#include "error.h"
#include "utf8.h"

uint32_t byte_to_symbol(uint8_t byte) {
    // Printable Latin-1 bytes keep their value; count the others below `byte` to find the
    // offset of its stand-in after U+0100.
    auto printable = [](int b) {
        return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    };
    if (printable(byte)) return byte;
    uint32_t shifted = 0;
    for (int b = 0; b < byte; b++)
        if (!printable(b)) shifted++;
    return 0x100 + shifted;
}

namespace {

// The two directions of the map, built once.
struct SymbolTable {
    uint32_t symbol_of_byte[256];
    int16_t byte_of_symbol[0x144];  // the stand-ins are all below U+0144; -1: stands for no byte
    SymbolTable() {
        for (int16_t& b : byte_of_symbol) b = -1;
        for (int b = 0; b < 256; b++) {
            symbol_of_byte[b] = byte_to_symbol(uint8_t(b));
            byte_of_symbol[symbol_of_byte[b]] = int16_t(b);
        }
    }
};

const SymbolTable& symbol_table() {
    static const SymbolTable table;
    return table;
}

}  // namespace

std::string bytes_to_symbols(std::string_view bytes) {
    std::string symbols;
    for (char byte : bytes) append_utf8(symbols, symbol_table().symbol_of_byte[uint8_t(byte)]);
    return symbols;
}

bool symbols_to_bytes(std::string_view symbols, std::string& bytes) {
    bytes.clear();
    for (size_t pos = 0; pos < symbols.size();) {
        Utf8Char c = decode_utf8(symbols, pos);
        if (c.status != Utf8Status::Valid || c.code_point >= 0x144) return false;
        const int16_t byte = symbol_table().byte_of_symbol[c.code_point];
        if (byte < 0) return false;
        bytes += char(byte);
        pos += c.length;
    }
    return true;
}

void BytePairEncoder::add_merge(int32_t left, int32_t right, int32_t merged, int32_t rank) {
    merges_.emplace(pair_key(left, right), Merge{rank, merged});
}

const BytePairEncoder::Merge* BytePairEncoder::find_merge(int32_t left, int32_t right) const {
    auto it = merges_.find(pair_key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
}

// The merge loop. The piece is a doubly linked list of symbols (a merge removes one node), and
// the candidate merges wait in a min-heap ordered by (rank, position): popping gives the
// lowest rank, leftmost first. A merge changes its neighbours' pairs, so instead of updating
// the heap we push the two new pairs and, when popping, skip entries whose symbols have changed
// since they were pushed. Each merge costs O(log n): a piece of n bytes takes O(n log n), where
// rescanning all pairs after each merge would take O(n^2).
void BytePairEncoder::encode(std::string_view piece, std::vector<int32_t>& ids) const {
    // BEGIN SOLUTION step04 bpe_encode
    if (piece.size() == 1) {  // most common piece of all: a lone byte has nothing to merge
        ids.push_back(byte_tokens_[uint8_t(piece[0])]);
        return;
    }
    struct Symbol {
        int32_t id;
        int32_t prev;  // index in `symbols`, -1 at the start
        int32_t next;  // index in `symbols`, -1 at the end
    };
    struct Candidate {
        int32_t rank;
        int32_t left;     // index of the left symbol (its position in the piece)
        int32_t left_id;  // the two ids when pushed, to detect a stale entry
        int32_t right_id;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : left > other.left;
        }
    };

    if (piece.size() > size_t(INT32_MAX))
        fail("a pre-token piece of %zu bytes is too long", piece.size());
    const int32_t n = int32_t(piece.size());
    std::vector<Symbol> symbols;  // (n) one per byte at first
    symbols.reserve(piece.size());
    for (int32_t i = 0; i < n; i++)
        symbols.push_back({byte_tokens_[uint8_t(piece[i])], i - 1, i + 1 < n ? i + 1 : -1});

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> candidates;
    auto push_pair = [&](int32_t left) {
        if (left < 0) return;
        int32_t right = symbols[left].next;
        if (right < 0) return;
        const Merge* merge = find_merge(symbols[left].id, symbols[right].id);
        if (merge) candidates.push({merge->rank, left, symbols[left].id, symbols[right].id});
    };
    for (int32_t i = 0; i + 1 < n; i++) push_pair(i);

    while (!candidates.empty()) {
        Candidate top = candidates.top();
        candidates.pop();
        Symbol& left = symbols[top.left];
        // Stale: the left symbol was merged into its neighbour (id -1), or either side changed.
        if (left.id != top.left_id || left.next < 0 || symbols[left.next].id != top.right_id)
            continue;
        Symbol& right = symbols[left.next];
        left.id = find_merge(top.left_id, top.right_id)->merged;
        right.id = -1;  // removed from the list
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = top.left;
        push_pair(left.prev);
        push_pair(top.left);
    }
    for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
    // END SOLUTION
}
