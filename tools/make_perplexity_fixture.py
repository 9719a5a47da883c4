#!/usr/bin/env python3
"""Writes tests/fixtures/real_model/perplexity.txt: the perplexity transformers (fp32) gives the
real model on tests/fixtures/real_model/perplexity_text.txt, which step11's test_real_model.cpp
checks `--perplexity` against, and llama.cpp's on the same ids beside it, as a reference.

Run from the repository root, after `make model`, `make setup-torch` and llama-cpp-python
(tools/requirements-bench.txt says how to build it):

    .venv/bin/python3 tools/make_perplexity_fixture.py [MODEL.gguf]     # about half a minute

The text is tokenized by HF tokenizers with Qwen's tokenizer.json ($QWEN_TOKENIZER_DIR, default
../shared/qwen-tokenizer), no special tokens: the text has none and Qwen adds no BOS. The ids
are one sequence, every token after the first predicted from all of those before it:

    perplexity = exp(mean over positions p < n-1 of -log softmax(logits[p])[ids[p+1]])

with the log-softmax in float64 (max subtracted first) from float32 logits, as
step11_quantized_weights/perplexity.cpp computes it. The transformers logits come from
tools/transformers_reference.py (Qwen2ForCausalLM, fp32, eager attention, the GGUF's tensors
dequantized by gguf-py): the oracle. llama.cpp computes on the quantized blocks themselves, as
step 11 does, so its number shows what such arithmetic costs; the check does not use it.

The file holds "key value" lines after "#" comments; `ids` is space-separated. The model's
sha256 is recorded so a check can tell which file it was made from, and the versions of what
computed it, since another version may round differently.
"""

import os
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_real_model_tokenizer_fixtures import sha256_of  # noqa: E402
from transformers_reference import all_logits, load_reference_model  # noqa: E402

MODEL = Path("models/qwen2.5-coder-0.5b-instruct.gguf")
FIXTURES = Path("tests/fixtures/real_model")
TEXT = FIXTURES / "perplexity_text.txt"
OUT = FIXTURES / "perplexity.txt"
# The C++ check runs the whole text on a 2-core CPU twice (exact and int8 paths): a 512-token
# bound keeps that under a minute.
MAX_TOKENS = 512
LLAMA_THREADS = 2


def text_ids():
    directory = Path(os.environ.get("QWEN_TOKENIZER_DIR", "../shared/qwen-tokenizer"))
    tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    ids = tokenizer.encode(TEXT.read_text(encoding="utf-8"), add_special_tokens=False).ids
    if not 2 <= len(ids) <= MAX_TOKENS:
        sys.exit(f"{TEXT} has {len(ids)} tokens; it must have 2 to {MAX_TOKENS}")
    return ids


def mean_nll(logits, ids):
    """The mean of -log softmax(logits[p])[ids[p+1]] over p < len(ids) - 1, in float64.
    `logits` is (>= len(ids) - 1, n_vocab); row by row, so float64 never holds them all."""
    total = 0.0
    for position in range(len(ids) - 1):
        row = logits[position].astype(np.float64)
        top = row.max()
        total += np.log(np.exp(row - top).sum()) + (top - row[ids[position + 1]])
    return total / (len(ids) - 1)


def transformers_nll(model_path, ids):
    model = load_reference_model(str(model_path))
    return mean_nll(all_logits(model, ids), ids)


def llama_cpp_nll(model_path, ids):
    """The same sum over llama.cpp's logits: one context holding the whole sequence, one batch
    asking for every position's logits. Through the C API, for one model parameter that the
    high-level Llama does not pass on: use_extra_bufts off. On a CPU with AMX (amx_int8 in
    /proc/cpuinfo, as on the Xeon this was written on) llama.cpp otherwise repacks the Q8_0, Q4_K
    and Q6_K weights for AMX tiles, and 0.3.36's llama_decode then crashes (a segfault even on
    4 tokens)."""
    import llama_cpp

    silence = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(silence, None)
    llama_cpp.llama_backend_init()
    model_params = llama_cpp.llama_model_default_params()
    model_params.use_extra_bufts = False
    model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), model_params)
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = params.n_batch = params.n_ubatch = MAX_TOKENS
    params.n_threads = params.n_threads_batch = LLAMA_THREADS
    context = llama_cpp.llama_init_from_model(model, params)
    run = ids[:-1]  # the last token predicts nothing
    batch = llama_cpp.llama_batch_init(len(run), 0, 1)
    batch.n_tokens = len(run)
    for position, token in enumerate(run):
        batch.token[position] = token
        batch.pos[position] = position
        batch.n_seq_id[position] = 1
        batch.seq_id[position][0] = 0
        batch.logits[position] = True
    status = llama_cpp.llama_decode(context, batch)
    if status != 0:
        sys.exit(f"llama_decode failed with status {status}")
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(context), shape=(len(run), n_vocab))
    nll = mean_nll(logits, ids)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(context)
    llama_cpp.llama_model_free(model)
    return nll, llama_cpp.__version__


def main():
    model_path = Path(sys.argv[1]) if len(sys.argv) > 1 else MODEL
    ids = text_ids()
    print(f"{TEXT}: {len(ids)} tokens")
    reference = transformers_nll(model_path, ids)
    print(f"transformers fp32: perplexity {np.exp(reference):.6f}")
    llama, llama_version = llama_cpp_nll(model_path, ids)
    print(f"llama.cpp: perplexity {np.exp(llama):.6f}")
    lines = [
        f"# tools/make_perplexity_fixture.py on {TEXT.name}",
        f"# sha256 {sha256_of(model_path)}",
        f"# transformers {transformers.__version__}, torch {torch.__version__}, "
        f"tokenizers {tokenizers.__version__}, llama-cpp-python {llama_version}",
        "# transformers_*: the check's oracle (fp32, eager attention, dequantized weights)",
        f"# llama_cpp_*: a reference only (quantized blocks, {LLAMA_THREADS} threads)",
        f"n_tokens {len(ids)}",
        f"n_predicted {len(ids) - 1}",
        f"transformers_mean_nll {reference:.12g}",
        f"transformers_perplexity {np.exp(reference):.12g}",
        f"llama_cpp_mean_nll {llama:.12g}",
        f"llama_cpp_perplexity {np.exp(llama):.12g}",
        "ids " + " ".join(map(str, ids)),
    ]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
