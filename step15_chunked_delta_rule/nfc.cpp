// nfc.cpp - NFC one segment at a time: decompose, order the marks, compose.
//
// A character of combining class 0 whose NFC quick check is Yes is a boundary: it never
// composes with what comes before it, and no mark moves across it. So the text can be cut
// before every boundary and each segment (usually one character, or a letter and its marks)
// normalized alone. A segment whose characters are all quick-check Yes, with its marks already
// in order, is NFC as it stands and is copied; only the others go through the three steps.
#include "nfc.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "utf8.h"

namespace {

// NFC_Quick_Check: No, the character never survives NFC (a singleton, an excluded composite);
// Maybe, it can compose with the character before it (U+0301, a Hangul vowel, ...).
enum QuickCheck : uint8_t { kYes, kNo, kMaybe };

struct NormalizationRange {
    uint32_t first;  // inclusive
    uint32_t last;   // inclusive
    uint8_t combining_class;
    QuickCheck quick_check;
};

struct Decomposition {
    uint32_t code_point;
    uint32_t first;
    uint32_t second;  // 0 for a singleton: U+212B ANGSTROM SIGN -> U+00C5 alone
};

struct Composition {
    uint32_t first;
    uint32_t second;
    uint32_t composite;
};

#include "nfc_tables.inc"

// The 11172 Hangul syllables are every leading consonant (L) x vowel (V) x optional trailing
// consonant (T), numbered in that order (The Unicode Standard, section 3.12):
//   syllable = U+AC00 + (L index * 21 + V index) * 28 + T index      (T index 0: none)
constexpr uint32_t kSyllableBase = 0xAC00;
constexpr uint32_t kLeadingBase = 0x1100, kVowelBase = 0x1161, kTrailingBase = 0x11A7;
constexpr uint32_t kLeadingCount = 19, kVowelCount = 21, kTrailingCount = 28;
constexpr uint32_t kSyllableCount = kLeadingCount * kVowelCount * kTrailingCount;

struct Properties {
    uint8_t combining_class = 0;
    QuickCheck quick_check = kYes;

    bool is_boundary() const { return combining_class == 0 && quick_check == kYes; }
};

// A code point the table does not list (every one below U+0300, most above) is class 0 and
// quick check Yes.
Properties properties(uint32_t code_point) {
    if (code_point < kNormalizationRanges[0].first) return {};
    const NormalizationRange* after = std::upper_bound(
        std::begin(kNormalizationRanges), std::end(kNormalizationRanges), code_point,
        [](uint32_t value, const NormalizationRange& range) { return value < range.first; });
    const NormalizationRange& range = *std::prev(after);
    if (code_point > range.last) return {};
    return {range.combining_class, range.quick_check};
}

struct Char {
    uint32_t code_point;
    uint8_t combining_class;
};

// Step 1: appends the full canonical decomposition of `code_point` to `chars`.
void decompose(uint32_t code_point, std::vector<Char>& chars) {
    if (code_point - kSyllableBase < kSyllableCount) {
        const uint32_t index = code_point - kSyllableBase;
        const uint32_t trailing = index % kTrailingCount;
        chars.push_back({kLeadingBase + index / (kVowelCount * kTrailingCount), 0});
        chars.push_back({kVowelBase + index % (kVowelCount * kTrailingCount) / kTrailingCount, 0});
        if (trailing != 0) chars.push_back({kTrailingBase + trailing, 0});
        return;
    }
    const Decomposition* found = std::lower_bound(
        std::begin(kDecompositions), std::end(kDecompositions), code_point,
        [](const Decomposition& entry, uint32_t value) { return entry.code_point < value; });
    if (found == std::end(kDecompositions) || found->code_point != code_point) {
        chars.push_back({code_point, properties(code_point).combining_class});
        return;
    }
    decompose(found->first, chars);
    if (found->second != 0) decompose(found->second, chars);
}

// Step 2: sorts each run of marks by combining class, keeping the order of equal classes.
void order_marks(std::vector<Char>& chars) {
    for (size_t start = 0; start < chars.size();) {
        if (chars[start].combining_class == 0) {
            start++;
            continue;
        }
        size_t end = start;
        while (end < chars.size() && chars[end].combining_class != 0) end++;
        std::stable_sort(chars.begin() + start, chars.begin() + end,
                         [](Char a, Char b) { return a.combining_class < b.combining_class; });
        start = end;
    }
}

// The primary composite of the pair, or 0 when it has none.
uint32_t compose_pair(uint32_t first, uint32_t second) {
    if (first - kLeadingBase < kLeadingCount && second - kVowelBase < kVowelCount)  // L + V
        return kSyllableBase +
               ((first - kLeadingBase) * kVowelCount + (second - kVowelBase)) * kTrailingCount;
    const bool first_is_lv =
        first - kSyllableBase < kSyllableCount && (first - kSyllableBase) % kTrailingCount == 0;
    if (first_is_lv && second > kTrailingBase && second < kTrailingBase + kTrailingCount)
        return first + (second - kTrailingBase);  // LV + T
    const Composition* found = std::lower_bound(
        std::begin(kCompositions), std::end(kCompositions), std::pair{first, second},
        [](const Composition& entry, std::pair<uint32_t, uint32_t> pair) {
            return entry.first != pair.first ? entry.first < pair.first
                                             : entry.second < pair.second;
        });
    if (found == std::end(kCompositions) || found->first != first || found->second != second)
        return 0;
    return found->composite;
}

// Step 3, in place. After step 2 the marks kept since the last starter are in ascending class
// order, so the last of them has the highest class: a character is blocked from the starter
// exactly when that one's class is not below its own. One next to the starter is never blocked
// (that is how two starters compose: a Hangul LV syllable and a trailing consonant).
void compose(std::vector<Char>& chars) {
    size_t kept = 0;  // chars[0, kept) is the result so far
    bool have_starter = false;
    size_t starter = 0;  // index in the result of the last starter
    for (size_t i = 0; i < chars.size(); i++) {
        const Char c = chars[i];
        if (have_starter) {
            const bool adjacent = kept == starter + 1;
            if (adjacent || chars[kept - 1].combining_class < c.combining_class) {
                if (uint32_t composite = compose_pair(chars[starter].code_point, c.code_point)) {
                    chars[starter].code_point = composite;
                    continue;
                }
            }
        }
        if (c.combining_class == 0) {
            have_starter = true;
            starter = kept;
        }
        chars[kept++] = c;
    }
    chars.resize(kept);
}

// Appends the NFC of a segment of valid UTF-8 to `out`; `chars` is scratch space.
void normalize_segment(std::string_view segment, std::vector<Char>& chars, std::string& out) {
    chars.clear();
    for (size_t pos = 0; pos < segment.size();) {
        const Utf8Char c = decode_utf8(segment, pos);
        decompose(c.code_point, chars);
        pos += c.length;
    }
    order_marks(chars);
    compose(chars);
    for (const Char& c : chars) append_utf8(out, c.code_point);
}

// Whether a character with `current` properties may follow one of class `last_class` in text
// that is NFC as it stands (the quick check of UAX #15).
bool passes_quick_check(Properties current, uint8_t last_class) {
    return current.quick_check == kYes &&
           (current.combining_class == 0 || last_class <= current.combining_class);
}

}  // namespace

bool is_certainly_nfc(std::string_view text) {
    uint8_t last_class = 0;
    for (size_t pos = 0; pos < text.size();) {
        if (uint8_t(text[pos]) < 0x80) {  // ASCII: class 0, quick check Yes
            last_class = 0;
            pos++;
            continue;
        }
        const Utf8Char c = decode_utf8(text, pos);
        pos += c.length;
        const Properties current =
            c.status == Utf8Status::Valid ? properties(c.code_point) : Properties{};
        if (!passes_quick_check(current, last_class)) return false;
        last_class = current.combining_class;
    }
    return true;
}

std::string nfc(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::vector<Char> chars;
    for (size_t pos = 0; pos < text.size();) {
        const Utf8Char first = decode_utf8(text, pos);
        if (first.status != Utf8Status::Valid) {  // kept as it is; a boundary on both sides
            out.append(text, pos, first.length);
            pos += first.length;
            continue;
        }
        // The segment: `first` and every character after it up to the next boundary.
        Properties current = properties(first.code_point);
        bool unchanged = current.quick_check == kYes;
        uint8_t last_class = current.combining_class;
        size_t end = pos + first.length;
        while (end < text.size()) {
            const Utf8Char c = decode_utf8(text, end);
            if (c.status != Utf8Status::Valid) break;
            current = properties(c.code_point);
            if (current.is_boundary()) break;
            unchanged = unchanged && passes_quick_check(current, last_class);
            last_class = current.combining_class;
            end += c.length;
        }
        if (unchanged) out.append(text, pos, end - pos);
        else normalize_segment(text.substr(pos, end - pos), chars, out);
        pos = end;
    }
    return out;
}
