#!/usr/bin/env bash
# The step06 assignment on a GPU machine, to show a class: writes the student tree into a
# temporary folder, runs `make test-step06` there (the GPU kernel checks fail and the stubbed
# kernels say they are not implemented yet) and `make grade`, printing both.
#
#   DOCTEST_INCLUDE=DIR tools/gpu/assignment_demo.sh [STEP]     STEP defaults to 06
# CUDA_ARCHS defaults to 90 (the H200) to keep the build short. Without a GPU the kernel checks
# skip, saying so, and the grade counts them as not run.
set -u
cd "$(dirname "$0")/../.."
step=${1:-06}
export CUDA_ARCHS=${CUDA_ARCHS:-90}
[ -z "${DOCTEST_INCLUDE:-}" ] || export DOCTEST_INCLUDE=$(cd "$DOCTEST_INCLUDE" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tree="$scratch/s$step"
python3 tools/make_assignment.py write "$step" "$tree" || exit 1

echo
echo "=== make test-step$step in the student tree"
log="$scratch/test.log"
make -C "$tree" -j"$(nproc)" "step$step" >"$scratch/build.log" 2>&1 || {
    tail -n 30 "$scratch/build.log"
    echo "the student tree does not build"
    exit 1
}
make -C "$tree" --no-print-directory "test-step$step" >"$log" 2>&1
status=$?
# A stubbed kernel says so once a run (a template kernel once for each weight type it reads).
echo "messages from the stubs:"
grep -E 'not implemented yet' "$log" | sort | uniq -c
echo "checks that failed:"
grep -E '^TEST CASE:' "$log" | sort -u
grep -E '^SKIPPED' "$log"
tail -n 1 "$log"
echo "(make test-step$step exit status: $status; the full log has $(wc -l <"$log") lines)"

echo
echo "=== make grade in the student tree"
make -C "$tree" --no-print-directory grade
