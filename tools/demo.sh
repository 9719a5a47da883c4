#!/usr/bin/env bash
# `make demo`: the last step, step08, in a short scripted chat. It uses the real
# Qwen2.5-Coder-0.5B-Instruct when `make model` has fetched it, the built-in tiny model
# otherwise, and the GPU when there is one (step08 says which device it runs on).
set -eu
cd "$(dirname "$0")/.."
model=models/qwen2.5-coder-0.5b-instruct.gguf
if [ -f "$model" ]; then
    echo "demo: Qwen2.5-Coder-0.5B-Instruct ($model)"
else
    model=models/tiny-qwen2.gguf
    echo "demo: the built-in tiny model, whose random weights answer in gibberish" \
        "(make model fetches a real one)"
fi
printf '%s\n' "Write a Python function that checks whether a number is prime." \
    "Now make it faster for large numbers." |
    ./step08 "$model" -i -n 128 --seed 42
