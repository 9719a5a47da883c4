#!/usr/bin/env bash
# The speed record of step10 (docs/bench/h200-step10.md), one device call per run of it: step09,
# step10 --no-graph, step10 and llama.cpp's llama-bench on the same F16 files, after a 512-token
# and a 4096-token prompt (tools/bench/bench_prompt.txt once and eight times over, -c 8192). The
# 512-token rows of 0.5b and 1.5b come from tools/gpu_series.sh (which also runs --check).
#
#   tools/gpu_step10_record.sh OUT LLAMA_BENCH SIZE:DEPTHS...
#   e.g. tools/gpu_step10_record.sh out /tmp/llama-bench 7b:512,4096 1.5b:4096 0.5b:4096
#
# The models are written in the order given, in the background, while the steps build; each
# size is benchmarked as soon as its file is there. Needs what tools/gpu_series.sh needs.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step10_record.sh OUT LLAMA_BENCH SIZE:DEPTHS...}
llama_bench=${2:?the llama-bench binary}
shift 2
mkdir -p "$out" models
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
model_file() { random_file "$1" f16; }
write_random_files f16 $(for job in "$@"; do echo "${job%%:*}"; done)
make -s -j"$(nproc)" CUDA_ARCHS="${CUDA_ARCHS:-90}" step04 step09 step10 >"$out/build.log" 2>&1 ||
    { tail -n 20 "$out/build.log"; exit 1; }
stamp built
for job in "$@"; do
    size=${job%%:*}
    while [ ! -f "$out/written-$size" ]; do sleep 1; done
    stamp "wrote $size"
    for depth in $(echo "${job#*:}" | tr , ' '); do
        repeat=$((depth / 512))
        python3 tools/bench/bench_series.py --model "$(model_file "$size")" --append \
            --output "$out/series-$depth.md" --engines step09,step10-no-graph,step10,llama.cpp \
            --llama-bench "$llama_bench" --timeout 150 --prompt-repeat "$repeat" -c 8192 \
            >"$out/bench-$size-$depth.log" 2>&1
        stamp "benchmarked $size after $depth"
        grep -E '^\| (step|llama)' "$out/series-$depth.md" | tail -n 4 | cut -d'|' -f2,4,6,9
    done
done
