#!/usr/bin/env bash
# A step's checks on a GPU machine, in one go: build, `make test-stepNN` with the GPU checks
# running, then compute-sanitizer memcheck and racecheck on the check files that use the GPU
# (those that include test_gpu.h). One log per step in OUT (default build/gpu_check).
#
#   tools/gpu_check.sh 07 08
#
# Needs nvcc, a GPU and doctest (DOCTEST_INCLUDE, as for make); CUDA_ARCHS defaults to 90.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu_check}
mkdir -p "$out"
make_flags=(CUDA_ARCHS="${CUDA_ARCHS:-90}" ${DOCTEST_INCLUDE:+DOCTEST_INCLUDE="$DOCTEST_INCLUDE"})
start=$SECONDS
stamp() { echo "[$1: rc $2, $((SECONDS - start)) s since the start]"; }

{ date -u; nvidia-smi; compute-sanitizer --version; } >"$out/info.log" 2>&1
for number in "$@"; do
    step=$(ls -d step"$number"_*)
    {
        make -j"$(nproc)" "${make_flags[@]}" step"$number" build/release/test_step"$number" \
            >/dev/null
        stamp build $?
        timeout 240 make "${make_flags[@]}" test-step"$number"
        stamp test-step"$number" $?
        # The check that makes cudaMalloc fail on purpose is left out: the sanitizer reports
        # the failed call as an error.
        files=$(grep -l '"test_gpu.h"' "$step"/test_*.cpp | sed 's|.*/|*|' | paste -sd, -)
        for tool in memcheck racecheck; do
            timeout 240 compute-sanitizer --tool $tool build/release/test_step"$number" \
                "-sf=$files" '-tce=*failing CUDA call*'
            stamp "$tool" $?
        done
    } >"$out/step$number.log" 2>&1
done
