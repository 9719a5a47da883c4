#!/usr/bin/env python3
"""Full-scale check of step05: its last-position logits on a real-sized model equal
transformers fp32 for the same token ids.

Run from the repository root, after `make step05`:

    python3 tools/fixtures/make_tiny_model.py --preset 0.5b --types q8_0 \
        --vocab /path/to/qwen-bpe-vocab.gguf -o models/qwen2.5-0.5b-random-q8_0.gguf
    python3 tools/check/compare_logits.py models/qwen2.5-0.5b-random-q8_0.gguf

Needs torch, transformers, gguf==0.19.0, tokenizers, numpy. It runs
`./step05 MODEL -p PROMPT -n 0 --dump-logits FILE`, tokenizes PROMPT with Hugging Face
`tokenizers` (a tokenizer built from the GGUF's own tokenizer.ggml.* keys, or --tokenizer
tokenizer.json), runs the same ids through tools/fixtures/transformers_reference.py and prints the
max absolute and relative differences and whether the top-1 tokens agree. Exit status 1 when
a logit differs by more than ATOL + RTOL * |reference| or the top-1 token differs (unless the
reference's best two logits are closer than that tolerance), 2 on a usage or run error.

Memory: the reference model is built on the meta device and filled tensor by tensor, so the
peak is about the fp32 model (4 bytes per weight: ~2 GiB for 0.5B, ~6 GiB for 1.5B) plus
step05's own use (about the file size, memory-mapped).
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from transformers_reference import all_logits, load_reference_model  # noqa: E402

DEFAULT_PROMPT = ("The history of the printing press begins in the fifteenth century, when "
                  "Johannes Gutenberg combined movable metal type with an oil-based ink.")
# Qwen2's pre-tokenizer split (tokenizer.json of Qwen2.5).
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTROL, USER_DEFINED = 3, 4


def tokenizer_from_gguf(path):
    """A byte-level BPE tokenizer from tokenizer.ggml.tokens/token_type/merges, set up the way
    Qwen2.5's tokenizer.json is (NFC, the Qwen2 split, byte-level, no BOS)."""
    reader = GGUFReader(path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    merges = [tuple(m.split(" ", 1)) for m in reader.fields["tokenizer.ggml.merges"].contents()]
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False)
                                  for token, kind in zip(tokens, types)
                                  if kind in (CONTROL, USER_DEFINED)])
    return tokenizer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a qwen2 GGUF file")
    parser.add_argument("-p", "--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--binary", default="./step05")
    parser.add_argument("--tokenizer", help="tokenizer.json (default: built from the GGUF)")
    parser.add_argument("-t", "--threads", type=int, help="passed to step05 as -t")
    # Measured: max abs diff 3.6e-5 on a random 0.5B Q8_0 model (24 layers, |logit| <= 5.7),
    # float sums in a different order than torch's; the default leaves a margin of ten.
    parser.add_argument("--atol", type=float, default=5e-4)
    parser.add_argument("--rtol", type=float, default=5e-4)
    args = parser.parse_args()

    if args.tokenizer:
        tokenizer = Tokenizer.from_file(args.tokenizer)
    else:
        tokenizer = tokenizer_from_gguf(args.model)
    ids = tokenizer.encode(args.prompt, add_special_tokens=False).ids
    print(f"prompt: {len(ids)} tokens")

    with tempfile.TemporaryDirectory() as scratch:
        dump = Path(scratch) / "logits.f32"
        command = [args.binary, args.model, "-p", args.prompt, "-n", "0", "--dump-logits", str(dump)]
        if args.threads:
            command += ["-t", str(args.threads)]
        print("running:", " ".join(command))
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            sys.exit(2)
        print(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "")
        ours = np.fromfile(dump, dtype="<f4")

    model = load_reference_model(args.model)
    reference = all_logits(model, ids)[-1]  # (n_vocab,) the last position
    del model
    if ours.shape != reference.shape:
        print(f"step05 wrote {ours.size} logits, transformers has {reference.size}")
        sys.exit(1)

    difference = np.abs(ours.astype(np.float64) - reference)
    # Relative differences only mean something away from zero.
    sizable = np.abs(reference) >= 1e-2
    relative = difference[sizable] / np.abs(reference[sizable])
    allowed = args.atol + args.rtol * np.abs(reference)
    bad = np.flatnonzero(~(difference <= allowed))  # NaN counts as bad
    worst = int(np.argmax(difference - allowed))
    top_ours, top_reference = int(np.argmax(ours)), int(np.argmax(reference))
    second_best = np.partition(reference, -2)[-2]
    close_call = reference[top_reference] - second_best <= 2 * allowed[top_reference]

    print(f"logits: {reference.size}, |reference| <= {np.abs(reference).max():.4f}")
    print(f"max abs diff: {difference.max():.3e}   "
          f"max rel diff (where |reference| >= 0.01): {relative.max():.3e}")
    print(f"tolerance: {args.atol:g} + {args.rtol:g} * |reference|; outside it: {bad.size}")
    for i in bad[:5]:
        print(f"  token {i}: step05 {ours[i]:.6f}, transformers {reference[i]:.6f}")
    if bad.size:
        print(f"  worst: token {worst}: step05 {ours[worst]:.6f}, "
              f"transformers {reference[worst]:.6f}")
    print(f"top-1: step05 {top_ours}, transformers {top_reference}: "
          f"{'agree' if top_ours == top_reference else 'DIFFER'}"
          f"{' (a close call within tolerance)' if close_call else ''}")
    top1_ok = top_ours == top_reference or close_call
    if bad.size or not top1_ok:
        print("FAIL")
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
