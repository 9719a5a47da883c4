#!/usr/bin/env bash
# The CPU record of step11 (docs/bench/cpu-step11.md): step08, step11 (each dot-product kernel,
# and --f32-activations) and llama.cpp (tools/bench/bench_llama_cpp.py) on the real 0.5B model, the
# 512-token prompt of tools/bench/bench_prompt.txt, 2 threads, three runs of each, one after another
# in one session. Prints every timing line; the record takes each row's best run.
#
#   tools/bench/bench_cpu_step11.sh [MODEL.gguf] > log      (needs llama-cpp-python in .venv)
set -u
cd "$(dirname "$0")/../.."
model=${1:-models/qwen2.5-coder-0.5b-instruct.gguf}
make -s step08 step11
prompt=tools/bench/bench_prompt.txt
date -u
grep -m1 "model name" /proc/cpuinfo
for run in 1 2 3; do
    for engine in "step08" "step11" "step11 avx2" "step11 --f32-activations"; do
        set -- $engine
        kernel=${2:-}
        flag=""
        [ "$kernel" = --f32-activations ] && { flag=$kernel; kernel=""; }
        line=$(QWEN_DOT_KERNEL=${kernel:-} ./"$1" "$model" -f $prompt -n 128 --temp 0 --device cpu \
            -t 2 $flag 2>&1 >/dev/null | grep '^prompt:')
        echo "run $run | $engine | $line"
    done
    # The rows above run with OpenMP's own wait policy (the steps set none; `--help` says that
    # OMP_WAIT_POLICY=passive makes idle threads sleep at once). Spinning, as llama.cpp's
    # threads do by default:
    line=$(OMP_WAIT_POLICY=active ./step11 "$model" -f $prompt -n 128 --temp 0 --device cpu -t 2 \
        2>&1 >/dev/null | grep '^prompt:')
    echo "run $run | step11 OMP_WAIT_POLICY=active | $line"
    for policy in unset passive; do
        for n_gen in 7 128; do
            if [ $policy = unset ]; then
                json=$(.venv/bin/python tools/bench/bench_llama_cpp.py "$model" --threads 2 --n-gen $n_gen 2>/dev/null)
            else
                json=$(OMP_WAIT_POLICY=passive .venv/bin/python tools/bench/bench_llama_cpp.py "$model" \
                    --threads 2 --n-gen $n_gen 2>/dev/null)
            fi
            echo "run $run | llama.cpp OMP_WAIT_POLICY=$policy n-gen $n_gen | $json"
        done
    done
done
