#!/usr/bin/env bash
# Runs each test binary given, then prints the totals as one plain line: "N passed, N failed"
# (", N skipped" follows when checks were skipped). Exits non-zero if any check failed or a
# binary did not finish.
#
# The log: each binary's checks print only what failed or was skipped (a skipped check could not
# run here, and its SKIPPED line says why), then the binary's own count, "test_stepNN: N passed,
# N failed, N skipped". doctest's own summary is left out (-m -nss): its "skipped" counted the
# checks a filter left out, which is another thing. The last line is the total of all counts.
#
#   tools/check/run_tests.sh BINARY...                    every check of every binary
#   tools/check/run_tests.sh --once [--no-nvcc "06 07"] BINARY...
#       what `make test` runs: in a step's binary, the check files that the step carries
#       unchanged together with everything they test (tools/check/unchanged_checks.py) are left out,
#       since they already ran in the step before; --no-nvcc names the CUDA steps that were
#       built without nvcc (their CPU checks run, their GPU checks skip), for a note in the log.
#   tools/check/run_tests.sh [--once] --real BINARY...
#       only the checks of the doctest suite "real_model" (the real downloaded model, found
#       through QWEN_REAL_MODEL); every other run leaves that suite out.
set -u
cd "$(dirname "$0")/../.."
once=0 no_nvcc="" suite="-tse=real_model"
while [ $# -gt 0 ]; do
    case $1 in
        --once) once=1; shift ;;
        --real) suite="-ts=real_model"; shift ;;
        --no-nvcc) no_nvcc=$2; shift 2 ;;
        *) break ;;
    esac
done
passed=0 failed=0 skipped=0 broken=0
# The forward-pass checks and the articles' transcripts use OpenMP: here its idle threads sleep
# at once rather than spin (the programs keep OpenMP's default), so that a machine busy compiling
# does not slow them down (tools/bench/bench_wait_policy.sh measures both).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# "-sfe=*/test_a.cpp,*/test_b.cpp" for a step binary's carried-unchanged check files, or "".
exclusions_for() {
    local binary=$1 number step previous unchanged
    number=$(basename "$binary" | sed -nE 's/^test_step([0-9][0-9])$/\1/p')
    [ -n "$number" ] || return 0
    step=$(ls -d "step${number}"_*)
    previous=$(ls -d step[0-9][0-9]_* | grep -B1 "^$step\$" | head -n 1)
    [ "$previous" != "$step" ] || return 0
    unchanged=$(python3 tools/check/unchanged_checks.py "$(dirname "$binary")/$step" "$step" "$previous")
    [ -n "$unchanged" ] || return 0
    echo "not run again here, carried unchanged from $previous with all they test" \
        "(make test-step$number runs them): ${unchanged//,/, }" >&2
    echo "-sfe=*/${unchanged//,/,*/}"
}

for binary in "$@"; do
    echo "=== $binary"
    filter=""
    [ "$once" = 1 ] && filter=$(exclusions_for "$binary")
    # The suite choice is for the step test binaries; the check scripts take no arguments.
    case $(basename "$binary") in test_step[0-9][0-9]) filter="-m -nss $suite $filter" ;; esac
    log=$(mktemp)
    "$binary" $filter 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    summary=$(grep -E '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "$summary" ]; then
        echo "$binary ended without its summary line (exit status $status)"
        broken=$((broken + 1))
        continue
    fi
    read -r p f s <<<"$(echo "$summary" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/')"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then broken=$((broken + 1)); fi
done
failed=$((failed + broken))
echo
[ -z "$no_nvcc" ] || echo "note: nvcc was not found, so steps $no_nvcc were built for the CPU" \
    "alone (no_cuda.cpp): their CPU checks ran, their GPU checks skipped"
echo "total of the counts above (a skip is a check that could not run here; checks carried" \
    "unchanged ran in an earlier step and are not counted again):"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
# In a student tree (make assignment) a stub's checks may be among the skipped ones.
if [ -f ASSIGNMENT.md ] && [ "$skipped" -gt 0 ]; then
    echo "note: $skipped checks could not run here (the SKIPPED lines say why), and a function" \
        "to write may be among what they check: make grade says which functions were graded"
fi
[ "$failed" -eq 0 ]
