#!/usr/bin/env bash
# The speed record of step11 (docs/bench/h200-step11.md), one device call per run of it: step10
# (which turns every matrix into F16 at load), step11 (which keeps the file's blocks) and
# llama.cpp's llama-bench on the same random-weight files laid out as Qwen's published Q4_K_M
# files, after a 512-token prompt (tools/bench/bench_prompt.txt), -c 8192.
#
#   tools/gpu_step11_record.sh OUT LLAMA_BENCH SIZE...      e.g. ... out /tmp/llama-bench 0.5b 1.5b 7b
#
# ENGINES (default step10,step11,llama.cpp) names the rows; any stepNN in it is built first
# (tools/gpu_step11_variants.sh adds variants of step11 that way).
#
# The models are written in the order given, in the background, while the steps build; each
# size is benchmarked as soon as its file is there. Needs what tools/gpu_series.sh needs.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step11_record.sh OUT LLAMA_BENCH SIZE...}
llama_bench=${2:?the llama-bench binary}
shift 2
mkdir -p "$out" models
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*"; }
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
model_file() { random_file "$1" q4_k_m; }
write_random_files q4_k_m "$@"
engines=${ENGINES:-step10,step11,llama.cpp}
steps=$(echo "$engines" | tr , '\n' | grep '^step' | sed 's/-no-graph$//' | sort -u)
# shellcheck disable=SC2086
make -s -j"$(nproc)" CUDA_ARCHS="${CUDA_ARCHS:-90}" step04 $steps >"$out/build.log" 2>&1 ||
    { tail -n 20 "$out/build.log"; exit 1; }
stamp built
for size in "$@"; do
    while [ ! -f "$out/written-$size" ]; do sleep 1; done
    stamp "wrote $size"
    python3 tools/bench/bench_series.py --model "$(model_file "$size")" --append \
        --output "$out/series-512.md" --engines "$engines" \
        --llama-bench "$llama_bench" --timeout 150 -c 8192 >"$out/bench-$size.log" 2>&1
    stamp "benchmarked $size"
    grep -E '^\| (step|llama)' "$out/series-512.md" | tail -n "$(echo "$engines" | tr , '\n' | wc -l)" |
        cut -d'|' -f2,4,6,9
done
