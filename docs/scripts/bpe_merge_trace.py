#!/usr/bin/env python3
"""Prints the BPE merges applied to one pre-token, with their ranks, from Qwen's tokenizer.json.

This is the worked example of docs/en/step04.md (section "A worked merge"), computed independently
of our C++ code, and then checked against Hugging Face `tokenizers`:

    python3 docs/scripts/bpe_merge_trace.py " tokenizer"
    python3 docs/scripts/bpe_merge_trace.py " unbelievable" /path/to/tokenizer.json

The default tokenizer.json is $QWEN_TOKENIZER_DIR/tokenizer.json (../shared/qwen-tokenizer/).
"""
import json
import os
import sys

from tokenizers import Tokenizer


def byte_to_unicode():
    # GPT-2's rule: printable bytes keep their code point, the other 68 go to U+0100 upwards.
    kept = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, shifted = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


def main():
    text = sys.argv[1] if len(sys.argv) > 1 else " tokenizer"
    default_dir = os.environ.get("QWEN_TOKENIZER_DIR", "../shared/qwen-tokenizer")
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(default_dir, "tokenizer.json")
    spec = json.load(open(path, encoding="utf-8"))
    ranks = {tuple(pair): rank for rank, pair in enumerate(spec["model"]["merges"])}
    vocab = spec["model"]["vocab"]

    table = byte_to_unicode()
    parts = [table[b] for b in text.encode("utf-8")]
    print("start:", " ".join(parts))
    while True:
        candidates = [(ranks[(parts[i], parts[i + 1])], i) for i in range(len(parts) - 1)
                      if (parts[i], parts[i + 1]) in ranks]
        if not candidates:
            break
        rank, i = min(candidates)  # lowest rank; on a tie, the leftmost pair
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
        print(f"rank {rank:6d}:", " ".join(parts))
    ids = [vocab[p] for p in parts]
    print("ids:", ids)
    reference = Tokenizer.from_file(path).encode(text).ids
    print("HF tokenizers:", reference, "(same)" if reference == ids else "(DIFFERENT: text has several pre-tokens?)")


if __name__ == "__main__":
    main()
