#!/usr/bin/env python3
"""The second oracle of a step's model file: llama.cpp reads the same GGUF and computes the same
logits as transformers did for the committed fixtures (tests/fixtures/qwen3/ and the like).

    python3 tools/check/compare_llama_logits.py --llama-logits build/llama/build/bin/llama-logits \\
        --model models/tiny-qwen3.gguf --fixtures tests/fixtures/qwen3 [--gpu]
    ... --model models/tiny-qwen3-q8_0.gguf --suffix .q8_0 --quantized

For each case of FIXTURES/cases.txt ("NAME n_tokens n_vocab"; with --prefix, those whose NAME
starts with it) it gives llama-logits
(tools/gpu/llama_oracle) the ids of NAME.ids.txt and sets its last-position logits and 16 greedy
ids beside NAME{SUFFIX}.logits.f32 and NAME{SUFFIX}.greedy.txt, one line a case: the largest
difference, the bound, whether the greedy ids are equal.

The bound, for a file of F32 weights: 1e-4 + 1e-4 * |logit|, step 5's bound for two fp32
computations that sum in different orders (logits reach ~25 on the tiny models). With
--quantized (a file of 8-bit blocks) llama.cpp rounds its activations to 8 bits where
transformers does not, so the differences and the greedy ids are printed, not judged (on random
weights the rounding changes close greedy choices, and a changed choice changes every later one).
Exit status 1 when an F32 case is out of bounds or its greedy ids differ.
"""

import argparse
import subprocess
import sys
import tempfile
from array import array
from pathlib import Path

ATOL, RTOL = 1e-4, 1e-4


def read_floats(path):
    values = array("f")
    values.frombytes(Path(path).read_bytes())
    if sys.byteorder != "little":
        values.byteswap()
    return values


def compare_case(args, name, n_vocab, scratch):
    ids = args.fixtures / f"{name}.ids.txt"
    out = scratch / f"{name}.logits.f32"
    command = [str(args.llama_logits), str(args.model), str(ids), str(out), "--greedy", "16"]
    if args.gpu:
        command.append("--gpu")
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        return False, f"{name}: llama-logits failed: {run.stderr.strip()[:300]}"
    ours, theirs = read_floats(out), read_floats(args.fixtures / f"{name}{args.suffix}.logits.f32")
    if len(ours) != n_vocab or len(theirs) != n_vocab:
        return False, f"{name}: {len(ours)} and {len(theirs)} logits, cases.txt says {n_vocab}"
    worst, worst_excess = 0.0, -1.0
    for a, b in zip(ours, theirs):
        worst = max(worst, abs(a - b))
        worst_excess = max(worst_excess, abs(a - b) - (ATOL + RTOL * abs(b)))
    greedy = run.stdout.split()
    expected = (args.fixtures / f"{name}{args.suffix}.greedy.txt").read_text().split()
    same = greedy == expected
    bounded = not args.quantized
    ok = not bounded or (same and worst_excess <= 0)
    bound = f"bound {ATOL:g} + {RTOL:g}|x| {'kept' if worst_excess <= 0 else 'EXCEEDED'}" \
        if bounded else "not bounded (8-bit activations)"
    return ok, (f"{name}{args.suffix}: largest difference {worst:.3g}, {bound}; 16 greedy ids "
                f"{'equal' if same else 'DIFFER: ' + ' '.join(greedy)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llama-logits", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--fixtures", type=Path, required=True)
    parser.add_argument("--suffix", default="", help="e.g. .q8_0: NAME.q8_0.logits.f32")
    parser.add_argument("--quantized", action="store_true",
                        help="a file of 8-bit blocks: differences reported, not judged")
    parser.add_argument("--gpu", action="store_true", help="llama.cpp on the GPU")
    parser.add_argument("--prefix", default="",
                        help="only the cases whose NAME starts with it (e.g. tiny-qwen35-wide.)")
    args = parser.parse_args()
    for path in (args.llama_logits, args.model, args.fixtures / "cases.txt"):
        if not path.is_file():
            sys.exit(f"error: {path} is not there")
    cases = [line.split() for line in (args.fixtures / "cases.txt").read_text().splitlines()
             if line.strip() and line.startswith(args.prefix)]
    where = "GPU" if args.gpu else "CPU"
    print(f"llama.cpp ({where}) on {args.model} against {args.fixtures} (transformers fp32):")
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, _, n_vocab in cases:
            ok, line = compare_case(args, name, int(n_vocab), Path(scratch))
            failures += not ok
            print(("  " if ok else "  FAILED ") + line)
    print(f"{len(cases) - failures} of {len(cases)} cases agree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
