// pretokenizer.h - Qwen's pre-tokenizers: cut text into pieces before BPE sees it.
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
// Qwen3.5 (tokenizer.ggml.pre "qwen35") adds the combining marks \p{M} to the letter classes:
//
//   [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+   2. letters and marks, with at most one leading character
//   | ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*    4. punctuation, now without marks
//
// and is otherwise the same. Under the Qwen2 regex a mark is punctuation (alternative 4), so
// "नमस्ते" (Devanagari: the virama and the vowel sign are marks) splits into "नमस", "्त", "े";
// under Qwen3.5's it is one word. In Qwen3.5's regex a mark behaves as a letter in every
// alternative: a mark may also be alternative 2's optional first character, where a letter may
// not, but the piece is then the same run of letters and marks that starts at it. So the split
// is Qwen2's with marks counted as letters. (llama.cpp writes the contractions as '[sS] ...
// instead of (?i:'s ...), which misses U+017F LONG S; tiktoken's regex folds it, as we do.)
//
// Invalid UTF-8 (HF cannot even be given it) has a defined meaning here: each ill-formed
// sequence (its maximal subpart, see utf8.h) is one character of the punctuation class, as if
// it were U+FFFD. Its bytes are kept as they are, so decode(encode(bytes)) gives them back.
#pragma once

#include <string_view>
#include <vector>

enum class SplitRegex {
    Qwen2,   // Qwen2, Qwen2.5, Qwen3: the regex above
    Qwen35,  // Qwen3.5: marks count as letters
};

// The pieces of `text`, in order; together they are exactly `text`.
std::vector<std::string_view> pretokenize(std::string_view text,
                                          SplitRegex regex = SplitRegex::Qwen2);
