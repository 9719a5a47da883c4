// pretokenizer.h - Qwen2's pre-tokenizer: cut text into pieces before BPE sees it.
//
// BPE never merges across a piece boundary, so this split decides, for example, that " world"
// (with its leading space) is one word and that digits are never merged with each other.
// HF tokenizers does it with this regex (tokenizer.json, "pre_tokenizer"), each match a piece:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)      1. an English contraction, any case
//   | [^\r\n\p{L}\p{N}]?\p{L}+        2. letters, with at most one leading non-letter (" the")
//   | \p{N}                           3. one digit (or other number character)
//   | ?[^\s\p{L}\p{N}]+[\r\n]*        4. punctuation, an optional space before, newlines after
//   | \s*[\r\n]+                      5. whitespace up to and including the last line break
//   | \s+(?!\S)                       6. whitespace not followed by a non-space (leaves the
//                                        last space to start the next word)
//   | \s+                             7. any other whitespace
//
// We implement the same alternatives by hand (pretokenizer.cpp), in the same order, with no
// regex library. \p{L}, \p{N} and \s come from unicode_ranges.h.
//
// Invalid UTF-8 (HF cannot even be given it) has a defined meaning here: each ill-formed
// sequence (its maximal subpart, see utf8.h) is one character of the punctuation class, as if
// it were U+FFFD. Its bytes are kept as they are, so decode(encode(bytes)) gives them back.
#pragma once

#include <string_view>
#include <vector>

// The pieces of `text`, in order; together they are exactly `text`.
std::vector<std::string_view> pretokenize(std::string_view text);
