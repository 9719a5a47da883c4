#!/usr/bin/env bash
# `make demo`: a two-turn chat with the last step of the series, the fastest one.
#
# It runs the real Qwen2.5-Coder-0.5B-Instruct, fetching it first when it is missing (the
# sha256-checked `make model`); only when that fails, for instance with no network, does it
# fall back to the built-in tiny model, whose random weights answer in gibberish, and it says
# why. The step runs on the GPU when there is one and its build has GPU code, else on the CPU
# (the step's first lines say which). The questions are piped in, and the step echoes each one,
# so the transcript reads as the conversation it was.
#
#   LAST_STEP=08 tools/demo.sh      (make demo passes the last step's number; 12 runs step11
#                                    where there is no GPU)
set -eu
cd "$(dirname "$0")/.."
step=step${LAST_STEP:?make demo sets LAST_STEP to the last step number}
# Step 12 changed only the GPU's prompt kernels: on a machine without a GPU it is step 11's
# program, so the demo builds step11 there (no tensor-core kernels to compile for nothing).
if [ "$step" = step12 ] && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "demo: no GPU here (nvidia-smi lists none), so step11: step12 adds only GPU kernels"
    step=step11
fi
model=models/qwen2.5-coder-0.5b-instruct.gguf

make -s --no-print-directory "$step"
if [ ! -f "$model" ]; then
    echo "demo: fetching the real model first (make model, 491 MB, once)"
    if ! tools/fetch_model.sh; then
        echo "demo: the real model could not be fetched (see above); using the built-in tiny" \
            "model instead, whose random weights answer in gibberish"
        model=models/tiny-qwen2.gguf
    fi
fi
# -n 512 is room for a complete answer (a reply it cuts short says so); the tiny model's
# gibberish never ends on its own, so it gets a few lines' worth.
n_new=512
if [ "$model" = models/tiny-qwen2.gguf ]; then
    n_new=48
else
    echo "demo: Qwen2.5-Coder-0.5B-Instruct ($model)"
fi
# Short questions with short answers: on a 2-core CPU the whole chat takes about two minutes.
printf '%s\n' "Write a Python one-liner that reverses a string s." \
    "Show the same in C++." |
    "./$step" "$model" -i -n "$n_new" --seed 42
