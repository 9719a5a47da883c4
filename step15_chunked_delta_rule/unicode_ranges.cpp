// unicode_ranges.cpp - membership tests by binary search over generated range tables.
#include "unicode_ranges.h"

#include <algorithm>
#include <iterator>

namespace {

struct CodePointRange {
    uint32_t first;  // inclusive
    uint32_t last;   // inclusive
};

#include "unicode_ranges.inc"

// A few hundred sorted, disjoint ranges: find the last range starting at or before the code
// point, then check that it reaches it. O(log n), about 10 comparisons for the letter table.
template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], uint32_t code_point) {
    const CodePointRange* after = std::upper_bound(
        std::begin(ranges), std::end(ranges), code_point,
        [](uint32_t value, const CodePointRange& range) { return value < range.first; });
    return after != std::begin(ranges) && code_point <= std::prev(after)->last;
}

}  // namespace

bool is_letter(uint32_t code_point) {
    // ASCII is most of most text: answer it without the search.
    if (code_point < 0x80) return (code_point | 0x20) >= 'a' && (code_point | 0x20) <= 'z';
    return in_ranges(kLetterRanges, code_point);
}

bool is_number(uint32_t code_point) {
    if (code_point < 0x80) return code_point >= '0' && code_point <= '9';
    return in_ranges(kNumberRanges, code_point);
}

bool is_mark(uint32_t code_point) {
    if (code_point < 0x80) return false;  // the first mark is U+0300
    return in_ranges(kMarkRanges, code_point);
}

bool is_whitespace(uint32_t code_point) {
    if (code_point < 0x80) return code_point == ' ' || (code_point >= '\t' && code_point <= '\r');
    return in_ranges(kWhitespaceRanges, code_point);
}

const char* unicode_ranges_version() { return kUnicodeVersion; }
