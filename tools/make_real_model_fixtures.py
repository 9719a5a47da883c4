#!/usr/bin/env python3
"""Writes tests/fixtures/real_model/: what transformers computes on the real model that
`make model` fetches (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M), for the `make test-real` checks of
steps 05, 07 and 08 (test_real_model.cpp).

Run from the repository root, after `make model` and `make setup-torch`:

    .venv/bin/python3 tools/make_real_model_fixtures.py [MODEL.gguf]

The oracle is independent of our C++: the prompts are tokenized by transformers' own GGUF
tokenizer loading (chat prompts through apply_chat_template with the GGUF's template), and the
logits come from tools/transformers_reference.py, a Hugging Face Qwen2ForCausalLM in fp32 with
eager attention holding the GGUF's tensors as gguf-py dequantizes them. For each prompt NAME:

    NAME.ids.txt      the prompt's token ids, space-separated
    NAME.logits.txt   last-position logits, "id value" per line: the TOP_LOGITS largest, then
                      every LOGIT_STRIDE-th id of the vocabulary (a file of all 151,936 values
                      per prompt would be 600 kB; this sample covers the winners and the bulk)
    NAME.greedy.txt   N_GREEDY greedy ids after the prompt (the whole sequence re-run each
                      time, no stop at <|im_end|>)
    NAME.answer.txt   those ids decoded, for a reader (and the article)
    NAME.gaps.txt     at each of those greedy steps, the best logit minus the second best:
                      logits that differ from these by less than half of it, as step 11's
                      8-bit activations do, still choose the same token there

and cases.txt, one line per prompt: "NAME n_tokens smallest_top2_gap". A prompt whose greedy
choice ever hinges on a top-2 gap under MIN_GREEDY_GAP is refused, since float rounding could
then flip it. The model's sha256 heads cases.txt so a check can tell which file it was made from.
"""

import sys
from pathlib import Path

import numpy as np
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_real_model_tokenizer_fixtures import sha256_of  # noqa: E402
from transformers_reference import all_logits, greedy, load_reference_model  # noqa: E402

MODEL = Path("models/qwen2.5-coder-0.5b-instruct.gguf")
OUT = Path("tests/fixtures/real_model")
N_GREEDY = 32
TOP_LOGITS = 64
LOGIT_STRIDE = 37
MIN_GREEDY_GAP = 1e-2

# name -> a list of chat messages (rendered with the model's template) or a raw text.
PROMPTS = {
    "chat_capital": [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}],
    "chat_chinese": [{"role": "user", "content": "请用一句话介绍长城。"}],
    "chat_prime": [{"role": "system", "content": "You are a concise programming assistant."},
                   {"role": "user", "content": "Write a Python function that checks whether a number is prime."}],
    "code_fibonacci": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "code_cpp": "#include <vector>\n\n// Returns the sum of the elements of v.\nint sum(const std::vector<int>& v) {\n",
    "text_colors": "The three primary colors of light are",
}


def prompt_ids(tokenizer, prompt):
    if isinstance(prompt, str):
        return tokenizer(prompt, add_special_tokens=False).input_ids
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False).input_ids


def logit_sample(logits):
    """The ids whose logits are kept: the largest TOP_LOGITS, then a regular stride."""
    top = np.argsort(-logits, kind="stable")[:TOP_LOGITS]
    strided = np.arange(0, logits.shape[0], LOGIT_STRIDE)
    return list(top) + [i for i in strided if i not in set(top)]


def main():
    model_path = Path(sys.argv[1]) if len(sys.argv) > 1 else MODEL
    tokenizer = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
    model = load_reference_model(str(model_path))
    OUT.mkdir(parents=True, exist_ok=True)
    index = [f"# sha256 {sha256_of(model_path)}"]
    for name, prompt in PROMPTS.items():
        ids = prompt_ids(tokenizer, prompt)
        logits = all_logits(model, ids)[-1]
        continuation, gaps = greedy(model, ids, N_GREEDY)
        if min(gaps) < MIN_GREEDY_GAP:
            sys.exit(f"{name}: greedy step {int(np.argmin(gaps))} has a top-2 gap of "
                     f"{min(gaps):.2e}, too close to call; pick another prompt")
        (OUT / f"{name}.ids.txt").write_text(" ".join(map(str, ids)) + "\n")
        lines = [f"{i} {logits[i]:.9g}" for i in logit_sample(logits)]
        (OUT / f"{name}.logits.txt").write_text("\n".join(lines) + "\n")
        (OUT / f"{name}.greedy.txt").write_text(" ".join(map(str, continuation)) + "\n")
        answer = tokenizer.decode(continuation)
        (OUT / f"{name}.answer.txt").write_text(answer + "\n")
        (OUT / f"{name}.gaps.txt").write_text(" ".join(f"{gap:.4f}" for gap in gaps) + "\n")
        index.append(f"{name} {len(ids)} {min(gaps):.4f}")
        print(f"{name}: {len(ids)} tokens, best logit {logits.max():.3f}, smallest top-2 gap "
              f"{min(gaps):.4f}\n  -> {answer!r}")
    (OUT / "cases.txt").write_text("\n".join(index) + "\n")
    print(f"wrote {OUT}/")


if __name__ == "__main__":
    main()
