#!/usr/bin/env bash
# step10 on a GPU machine in one call (the device runs one command for at most ten minutes):
#   1. build steps 09 and 10 and their checks for sm_90;
#   2. every check of step10 (CPU and GPU), and step09's GPU checks;
#   3. compute-sanitizer memcheck on step10's GPU check files, racecheck and synccheck on its
#      kernel checks (test_ops_cuda.cpp, less the check that makes a CUDA call fail on purpose
#      and the 32768-position attention, minutes when instrumented; memcheck runs it);
#   4. the tiny model: --check against the CPU, and the generated ids of step10, step10
#      --no-graph and step09 side by side (graph and no graph must be equal).
# Logs go to OUT; the summary is printed last.
#
#   tools/gpu_step10.sh OUT
#
# Needs nvcc, a GPU, compute-sanitizer and doctest (DOCTEST_INCLUDE, as for make).
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step10.sh OUT}
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
gpu_start

make -j"$(nproc)" "${make_flags[@]}" step09 step10 build/release/test_step09 \
    build/release/test_step10 >"$out/build.log" 2>&1
note "build: rc $?"

timeout 120 build/release/test_step09 "$(gpu_files 09)" -tse=real_model >"$out/test09.log" 2>&1
note "step09 GPU checks: rc $? | $(tail -n 1 "$out/test09.log")"
timeout 240 build/release/test_step10 -tse=real_model >"$out/test10.log" 2>&1
note "step10 all checks: rc $? | $(tail -n 1 "$out/test10.log")"
grep -E "ERROR|SKIPPED|FAILED" "$out/test10.log" | head -n 20 >>"$summary"

sanitize 10 170
check_tiny 10
tiny=models/tiny-qwen2.gguf
for run in "step10" "step10 --no-graph" "step09"; do
    # shellcheck disable=SC2086
    timeout 60 ./$run $tiny -p "Once upon a time," -n 400 -c 420 --temp 0 --ids \
        >"$out/ids-${run// /}.txt" 2>"$out/ids-${run// /}.log"
    note "./$run -n 400 -c 420: rc $? | $(md5sum <"$out/ids-${run// /}.txt" | cut -c1-12) | $(grep -E '^(context full|prompt:)' "$out/ids-${run// /}.log" | paste -sd' ' - | cut -c1-160)"
done
cmp -s "$out/ids-step10.txt" "$out/ids-step10--no-graph.txt" && note "graph = no graph: equal ids" ||
    note "graph = no graph: the ids DIFFER"
cmp -s "$out/ids-step10.txt" "$out/ids-step09.txt" && note "step10 = step09: equal ids" ||
    note "step10 = step09: the ids differ (rounding; see the logs)"
echo
cat "$summary"
