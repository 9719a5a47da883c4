#!/usr/bin/env bash
# step11 on a GPU machine in one call (the device runs one command for at most ten minutes):
#   1. build steps 10 and 11 and step11's checks for sm_90;
#   2. every check of step11 (CPU and GPU);
#   3. compute-sanitizer memcheck on step11's GPU check files, racecheck and synccheck on its
#      kernel checks (tools/gpu_checks.sh says what is left out);
#   4. --check, the GPU against the CPU (8-bit activations there), on the tiny model and on
#      random-weight files laid out as Qwen's published Q4_K_M files at 0.5B, 1.5B and 7B.
# Logs go to OUT; the summary is printed last.
#
#   tools/gpu_step11.sh OUT [SIZE...]      SIZE of 0.5b 1.5b 7b (default: all three)
#
# Needs nvcc, a GPU, compute-sanitizer, doctest (DOCTEST_INCLUDE, as for make), gguf-py and the
# Qwen vocabulary ($QWEN_TOKENIZER_DIR) for the random-weight files.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_step11.sh OUT [SIZE...]}
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0.5b 1.5b 7b)
# shellcheck source=tools/gpu_checks.sh
source tools/gpu_checks.sh
gpu_start
write_random_files q4_k_m "${sizes[@]}"

make -j"$(nproc)" "${make_flags[@]}" step10 step11 build/release/test_step11 \
    >"$out/build.log" 2>&1
note "build: rc $?"

timeout 240 build/release/test_step11 -tse=real_model >"$out/test11.log" 2>&1
note "step11 all checks: rc $? | $(tail -n 1 "$out/test11.log")"
grep -E "ERROR|SKIPPED|FAILED" "$out/test11.log" | head -n 20 >>"$summary"

sanitize 11 150
check_tiny 11
for size in "${sizes[@]}"; do
    while [ ! -f "$out/written-$size" ]; do sleep 1; done
    timeout 150 ./step11 "$(random_file "$size" q4_k_m)" -p "Once upon a time," -n 8 --check --temp 0 \
        >"$out/check-$size.log" 2>&1
    note "step11 --check $size Q4_K_M: rc $? | $(grep -E '^(check: [0-9]+ steps|device:|decode:)' \
        "$out/check-$size.log" | paste -sd' ' - | cut -c1-300)"
done
echo
cat "$summary"
