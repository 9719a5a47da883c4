#!/usr/bin/env bash
# step09 on a GPU machine in one call (the device runs one command for at most ten minutes):
#   1. build steps 06-09 and their checks for sm_90;
#   2. run every check file that uses the GPU (those including test_gpu.h) of steps 06-09, and
#      step09's whole suite, the CPU checks too;
#   3. compute-sanitizer memcheck on step09's GPU check files, racecheck and synccheck on its
#      kernel checks (leaving out the check that makes cudaMalloc fail on purpose, which the
#      tools report as an error, and, under racecheck and synccheck, the 32768-position
#      attention, minutes when instrumented; memcheck runs it);
#   4. --check on the tiny model, GPU against CPU, for step09;
#   5. the kernel table, step08 against step09 (tools/bench/bench_kernels.sh; BENCH_STEPS adds
#      other versions).
# Logs go to OUT; the summary is printed last.
#
#   tools/gpu_step09.sh OUT
#
# Needs nvcc, a GPU, compute-sanitizer and doctest (DOCTEST_INCLUDE, as for make).
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step09.sh OUT}
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
gpu_start

targets=(step09)
for n in 06 07 08 09; do targets+=(build/release/test_step$n); done
make -j"$(nproc)" "${make_flags[@]}" "${targets[@]}" >"$out/build.log" 2>&1
note "build: rc $?"

for n in 06 07 08; do
    timeout 120 build/release/test_step$n "$(gpu_files $n)" -tse=real_model >"$out/test$n.log" 2>&1
    note "step$n GPU checks: rc $? | $(tail -n 1 "$out/test$n.log")"
done
timeout 200 build/release/test_step09 -tse=real_model >"$out/test09.log" 2>&1
note "step09 all checks: rc $? | $(tail -n 1 "$out/test09.log")"
grep -E "ERROR|SKIPPED" "$out/test09.log" | head -n 20 >>"$summary"

sanitize 09 150
check_tiny 09

timeout 200 tools/bench/bench_kernels.sh >"$out/bench.log" 2>&1
note "bench_kernels: rc $?"
cp build/bench/kernels*.tsv build/bench/kernels.md "$out/" 2>/dev/null
echo
cat build/bench/kernels.md 2>/dev/null || tail -n 20 "$out/bench.log"
echo
cat "$summary"
