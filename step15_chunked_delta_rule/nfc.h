// nfc.h - Unicode Normalization Form C, which HF tokenizers applies before it splits the text.
//
// One text can be spelled in several ways: "é" is U+00E9, or "e" + U+0301 COMBINING ACUTE
// ACCENT; "각" is U+AC01, or the three conjoining jamo U+1100 U+1161 U+11A8. Qwen's
// tokenizer.json starts with an NFC normalizer, so every spelling gets the ids of one form.
// NFC (Unicode Standard Annex #15) is three steps:
//   1. Canonical decomposition: each character is replaced by its canonical decomposition,
//      recursively (U+212B ANGSTROM SIGN -> U+00C5 -> A U+030A); a Hangul syllable is split
//      into its jamo by arithmetic.
//   2. Canonical ordering: every character has a canonical combining class; 0 for a starter (a
//      letter), otherwise a number that says where the mark sits (220 below, 230 above, ...).
//      Each run of marks is sorted by class, stably: marks on different sides can be typed in
//      either order, marks on the same side keep theirs, since that changes how they stack.
//   3. Canonical composition: left to right, each character is joined to the last starter
//      before it when the pair has a primary composite and nothing between them blocks it (a
//      starter, or a mark of the same or a higher class). Excluded composites (U+0958, U+212B,
//      ...) are never made, so NFC can also take a precomposed character apart.
//
// The tables are those of Unicode 9.0, the version HF's normalizer has (nfc_tables.inc), so a
// mark added to Unicode later is, as there, a starter that neither moves nor composes.
//
// Invalid UTF-8, which HF cannot be given: each ill-formed sequence (its maximal subpart, see
// utf8.h) is kept byte for byte and acts as a starter that composes with nothing, as U+FFFD
// would; the pre-tokenizer treats it the same way.
#pragma once

#include <string>
#include <string_view>

// True when `utf8` is NFC for certain: nfc() would return it unchanged. False when it may not
// be. One pass and no allocation, so text that is already NFC (nearly all) costs little.
bool is_certainly_nfc(std::string_view utf8);

// `utf8` in NFC.
std::string nfc(std::string_view utf8);
