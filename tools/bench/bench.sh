#!/usr/bin/env bash
# Benchmarks step05 (the CPU reference forward pass): prompt and generation speed, at one
# thread and at every core. Not a test: the numbers depend on the machine.
#
#   tools/bench/bench.sh                          the tiny model only
#   tools/bench/bench.sh MODEL.gguf [MODEL.gguf]  also these, e.g. a 0.5B-shaped model from
#       python3 tools/fixtures/make_tiny_model.py --preset 0.5b --types q8_0 -o models/qwen2.5-0.5b-random-q8_0.gguf
#
# step05 has no KV cache, so generating token n re-runs all n positions: the generation rate
# falls as the sequence grows. N_NEW (default 16) sets how many tokens each run generates.
set -eu
cd "$(dirname "$0")/../.."
make -s step05

prompt="The history of the printing press begins in the fifteenth century, when Johannes \
Gutenberg combined movable metal type with an oil-based ink and a screw press."
n_new=${N_NEW:-16}
cores=$(nproc)

for model in models/tiny-qwen2.gguf "$@"; do
    echo "== $model ($(du -h "$model" | cut -f1))"
    for threads in $(printf '%s\n' 1 "$cores" | sort -nu); do
        # step05 prints the continuation on stdout and the timing line last on stderr.
        timing=$(./step05 "$model" -p "$prompt" -n "$n_new" -t "$threads" 2>&1 >/dev/null | tail -n 1)
        echo "  $timing"
    done
done
