#!/usr/bin/env bash
# Tokenizer speed: step04 next to HF tokenizers (one thread each) on the same text, with the
# ids compared. Not a test. Run from anywhere:
#
#   tools/bench/bench_tokenizer.sh              # a few MB of mixed text built from this repository
#   tools/bench/bench_tokenizer.sh FILE...      # your own files
#
# Needs the real vocabulary ($QWEN_TOKENIZER_DIR, default ../shared/qwen-tokenizer: its
# qwen-bpe-vocab.gguf and tokenizer.json) and Python's tokenizers.
set -eu
cd "$(dirname "$0")/../.."
# The project's Python (make setup) where it exists, else the machine's (as on the GPU machine).
python=.venv/bin/python3
[ -x "$python" ] || python=python3
vocab_dir=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}
mkdir -p build/bench
sources=$(ls step04_tokenizer/*.cpp | grep -v -e '/main\.cpp$' -e '/test_')
echo "building build/bench/bench_tokenizer (-O2)"
${CXX:-g++} -O2 -std=c++17 -Wall -Wextra -Istep04_tokenizer -Icommon tools/bench/bench_tokenizer.cpp $sources \
    -fopenmp -o build/bench/bench_tokenizer
"$python" tools/bench/bench_tokenizer.py --vocab-dir "$vocab_dir" --bench build/bench/bench_tokenizer "$@"
