#!/usr/bin/env python3
"""The Python half of tools/bench/bench_tokenizer.sh (run that): times HF tokenizers on one thread,
runs the C++ bench on the same bytes, and checks that the ids are equal.

With no files it writes build/bench/mixed.txt: this repository's tracked source and text files
(git ls-files, so no virtual environment or build output creeps in) plus the tokenizer corpus (tests/fixtures/tokenizer/corpus_qwen.txt: many scripts, emoji, code,
whitespace), repeated up to about 4 MB.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

# One thread for HF, set before the library starts its thread pool.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
try:
    from tokenizers import Tokenizer
except ImportError:
    sys.exit("bench_tokenizer: Python's tokenizers is missing: run `make setup` first "
             "(it installs the Python tools into .venv)")

MIXED = Path("build/bench/mixed.txt")


def mixed_text(target_bytes=4_000_000):
    tracked = subprocess.run(["git", "ls-files", "*.cpp", "*.h", "*.py", "*.md"], check=True,
                             capture_output=True, text=True).stdout.split()
    parts = [Path(name).read_bytes() for name in sorted(tracked)]
    for line in Path("tests/fixtures/tokenizer/corpus_qwen.txt").read_text().splitlines():
        if line.startswith("text "):
            parts.append(bytes.fromhex(line[5:]) + b"\n")
    block = b"".join(parts)
    return block * max(1, target_bytes // len(block))


def best_time(function, repeats=3):
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def bench_file(path, hf, bench_binary, vocab_gguf):
    data = path.read_bytes()
    print(f"\n{path}: {len(data)} bytes")
    ids_path = Path("build/bench/ids.txt")
    out = subprocess.run([bench_binary, vocab_gguf, str(path), str(ids_path)], check=True,
                         capture_output=True, text=True).stdout
    print("  " + out.strip())
    ours = [int(x) for x in ids_path.read_text().split()]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        print("  HF:     not valid UTF-8, HF cannot take it (step04 encodes the bytes as they are)")
        return
    seconds, encoding = best_time(lambda: hf.encode(text))
    print(f"  HF:     {len(data) / 1e6 / seconds:8.2f} MB/s  {len(encoding.ids)} tokens in {seconds:.3f} s "
          f"(best of 3, one thread)")
    if ours == encoding.ids:
        print("  ids:    identical")
    else:
        first = next((i for i, (a, b) in enumerate(zip(ours, encoding.ids)) if a != b),
                     min(len(ours), len(encoding.ids)))
        print(f"  ids:    DIFFER from token {first} (step04 {len(ours)}, HF {len(encoding.ids)} tokens)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab-dir", required=True)
    parser.add_argument("--bench", required=True, help="the C++ bench binary")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    vocab_dir = Path(args.vocab_dir)
    for name in ("tokenizer.json", "qwen-bpe-vocab.gguf"):
        if not (vocab_dir / name).exists():
            sys.exit(f"bench_tokenizer: {vocab_dir / name} is missing: set QWEN_TOKENIZER_DIR "
                     "to the folder of the real Qwen vocabulary")
    hf = Tokenizer.from_file(str(vocab_dir / "tokenizer.json"))
    files = args.files
    if not files:
        MIXED.parent.mkdir(parents=True, exist_ok=True)
        MIXED.write_bytes(mixed_text())
        files = [MIXED]
    for path in files:
        bench_file(path, hf, args.bench, str(vocab_dir / "qwen-bpe-vocab.gguf"))


if __name__ == "__main__":
    sys.exit(main())
