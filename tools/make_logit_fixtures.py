#!/usr/bin/env python3
"""Writes tests/fixtures/forward/: what transformers computes on the tiny model, for step05's
checks (step05_cpu_forward/test_forward_cpu.cpp).

Run from the repository root (needs torch, transformers, gguf==0.19.0, tokenizers, numpy):

    python3 tools/make_logit_fixtures.py

The oracle (tools/transformers_reference.py) is a Hugging Face Qwen2ForCausalLM in fp32 with
eager attention, configured from the GGUF metadata and holding the GGUF's tensors as gguf-py
dequantizes them. Prompts are tokenized by Hugging Face `tokenizers` from
models/tiny-qwen2.tokenizer.json. For each prompt NAME it writes:

    NAME.prompt.txt   the prompt text, exact bytes
    NAME.ids.txt      its token ids, space-separated
    NAME.logits.f32   logits of every position: n_tokens x n_vocab little-endian float32
    NAME.greedy.txt   16 greedy ids after the prompt (whole sequence re-run each time, no stop
                      at end-of-generation tokens)

and cases.txt, one line per prompt: "NAME n_tokens n_vocab". A greedy step whose best two
logits are closer than MIN_GREEDY_GAP is refused: rounding could flip it, and the C++ check
would then fail for no real reason.
"""

import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transformers_reference import all_logits, greedy, load_reference_model  # noqa: E402

MODEL = Path("models/tiny-qwen2.gguf")
TOKENIZER = Path("models/tiny-qwen2.tokenizer.json")
OUT = Path("tests/fixtures/forward")
N_GREEDY = 16
MIN_GREEDY_GAP = 1e-3  # ten times the logit tolerance of the C++ check

SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def chatml(user_text):
    """ChatML with the default system prompt and the generation prompt (Qwen2.5's template)."""
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
            f"<|im_start|>user\n{user_text}<|im_end|>\n"
            f"<|im_start|>assistant\n")


PROMPTS = {
    "one_token": "The",
    "short": "Once upon a time,",
    "numbers": "In 1999 there were 42 cats and 7 dogs.",
    "paragraph": "The quick brown fox jumps over the lazy dog. It was a bright cold day in April.",
    "chat": chatml("What is the capital of France?"),
}
# How long each prompt must be, so a change in the tokenizer cannot silently shrink a case.
EXPECTED_LENGTHS = {"one_token": (1, 1), "short": (2, 10), "numbers": (8, 30),
                    "paragraph": (25, 45), "chat": (40, 60)}


def main():
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    model = load_reference_model(str(MODEL))
    OUT.mkdir(parents=True, exist_ok=True)
    index = []
    for name, text in PROMPTS.items():
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        low, high = EXPECTED_LENGTHS[name]
        if not low <= len(ids) <= high:
            sys.exit(f"{name}: {len(ids)} tokens, expected {low}..{high}")
        logits = all_logits(model, ids)  # (n_tokens, n_vocab)
        continuation, gaps = greedy(model, ids, N_GREEDY)
        if min(gaps) < MIN_GREEDY_GAP:
            sys.exit(f"{name}: greedy step {int(np.argmin(gaps))} has a top-2 gap of "
                     f"{min(gaps):.2e}, too close to call; pick another prompt")
        (OUT / f"{name}.prompt.txt").write_bytes(text.encode("utf-8"))
        (OUT / f"{name}.ids.txt").write_text(" ".join(map(str, ids)) + "\n")
        logits.astype("<f4").tofile(OUT / f"{name}.logits.f32")
        (OUT / f"{name}.greedy.txt").write_text(" ".join(map(str, continuation)) + "\n")
        index.append(f"{name} {len(ids)} {logits.shape[1]}")
        print(f"{name}: {len(ids)} tokens, |logit| <= {np.abs(logits).max():.3f}, "
              f"greedy {continuation}, smallest top-2 gap {min(gaps):.4f}")
    (OUT / "cases.txt").write_text("\n".join(index) + "\n")
    print(f"wrote {OUT}/")


if __name__ == "__main__":
    main()
