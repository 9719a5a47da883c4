#!/usr/bin/env bash
# What the KV cache buys (a benchmark, not a test): step06 (no cache: each token re-runs the
# sequence) against step07 (cache: one position per token) on the same model and device, with
# prompts of about 10, 256 and 1000 tokens. Each run's timing line gives the prefill's tokens/s
# and the ms per generated token at that length, so the table shows how each step's cost per
# token grows with the sequence. Also step07's prefill of a 512-token prompt.
#
#   tools/bench/bench_kv_cache.sh MODEL.gguf [DEVICE]      DEVICE: cuda (default) or cpu
set -u
cd "$(dirname "$0")/../.."
model=$1
device=${2:-cuda}
sentence="The printing press spread across Europe within a few decades, and with it came cheap \
books, newspapers, and a new public that could read them. "
# ~44 tokens a sentence: repeated to about n tokens (the timing line prints the exact count).
prompt_of() { local text=""; for ((i = 0; i < ($1 + 43) / 44; i++)); do text+=$sentence; done; echo "$text"; }
short="The history of the printing press"

run() {  # step, prompt, new tokens
    local line
    line=$(timeout 300 ./"$1" "$model" --device "$device" -p "$2" -n "$3" 2>&1 >/dev/null |
        grep '^prompt:')
    echo "$1 -n $3: ${line:-(no timing line: timed out or failed)}"
}

echo "== $model on $device, $(date -u)"
run step07 "$short" 64
run step07 "$(prompt_of 256)" 16
run step07 "$(prompt_of 512)" 1
run step07 "$(prompt_of 1000)" 16
run step06 "$short" 16
run step06 "$(prompt_of 256)" 4
run step06 "$(prompt_of 1000)" 2
