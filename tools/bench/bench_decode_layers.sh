#!/usr/bin/env bash
# The decode step's kernels on the block matrices of Qwen's published Q4_K_M layout, at 0.5B,
# 1.5B and 7B sizes: microseconds a launch and weight GB/s of each kind of kernel, then a whole
# layer in the decode step's order (tools/bench/bench_decode_layers.cu says how each is timed).
# Not a test, and only where there is a GPU: it says why it skips otherwise.
#
#   tools/bench/bench_decode_layers.sh [SHAPE [POSITIONS]]   step 11's kernels; SHAPE: 0.5B, 1.5B
#       or 7B; POSITIONS: the cached positions the attention reads (default 512)
#   BENCH_STEPS="DIR step11_quantized_weights" tools/bench/bench_decode_layers.sh
#       versions side by side, the first the baseline (DIR: a step's directory as an earlier
#       commit had it, for a worklog)
#
# CUDA_ARCHS (default: native) sets what nvcc builds for. Tables go to build/bench/decode_layers.md.
set -eu
cd "$(dirname "$0")/../.."
source tools/bench/gpu_bench_setup.sh bench_decode_layers
mkdir -p build/bench
tables=() binaries=()
for step in ${BENCH_STEPS:-step11_quantized_weights}; do  # built side by side, run one by one
    binary=build/bench/bench_decode_layers_$(basename "$step")
    echo "building $binary (-O2)"
    # shellcheck disable=SC2086
    "$nvcc" -O2 -std=c++17 $archs -I"$step" -Icommon tools/bench/bench_decode_layers.cu \
        "$step"/*.cu "$step"/ggml_types.cpp -o "$binary" &
    binaries+=("$binary")
done
wait
for binary in "${binaries[@]}"; do
    [ -x "$binary" ] || { echo "bench_decode_layers: $binary did not build"; exit 1; }
    echo "running $binary"
    "$binary" "$@" | tee "${binary/bench_decode_layers_/decode_layers_}.tsv"
    tables+=("${binary/bench_decode_layers_/decode_layers_}.tsv")
done
python3 - "${tables[@]}" <<'PY' | tee build/bench/decode_layers.md
import sys
runs = []
for path in sys.argv[1:]:
    lines = [l.rstrip("\n").split("\t") for l in open(path)]
    copy = next(float(l[2]) for l in lines if l[0] == "copy")
    rows = {(l[2], l[1]): (float(l[3]), float(l[4])) for l in lines if l[0] == "row"}
    runs.append((path.split("decode_layers_")[1][:-4], copy, rows))
names = [r[0] for r in runs]
print("| model | kernel | " + " | ".join(f"{n}: us, GB/s (% copy)" for n in names) + " |")
print("|---|---|" + "---|" * len(names))
for key in runs[0][2]:
    cells = []
    for _, copy, rows in runs:
        us, nbytes = rows.get(key, (float("nan"), 0.0))
        rate = nbytes / us / 1e3 if us else 0.0
        cells.append(f"{us:.2f}" + (f", {rate:.0f} ({100 * rate / copy:.0f}%)" if nbytes else ""))
    print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
print("\ncopy GB/s: " + ", ".join(f"{n} {c:.0f}" for n, c, _ in runs))
PY
