#!/usr/bin/env bash
# The assignment check that `make test` runs (see tools/make_assignment.py). For each step with
# marked regions it writes the step's student tree, compiles the files holding stubs without
# warnings, links them with this build's objects of the step's other files, and checks that
# each region's checks fail with the stub and pass with the solution (this build's own test
# binary). One check per region; a CUDA kernel's region is only compiled (for one GPU
# architecture), and a check that needs a GPU is skipped without one. Ends with the summary line
# tools/run_tests.sh adds up ("assignments: N passed, N failed, N skipped").
#
# `make test` passes its build folder and compilers: ASSIGNMENT_BUILD, ASSIGNMENT_CXX (compiler
# and flags), ASSIGNMENT_LDFLAGS, ASSIGNMENT_CUDA_LDLIBS, ASSIGNMENT_NVCC (empty without nvcc).
set -u
cd "$(dirname "$0")/.."
build=${ASSIGNMENT_BUILD:-build/release}
cxx=${ASSIGNMENT_CXX:-g++ -O2 -g -std=c++17 -Wall -Wextra -fopenmp}
nvcc=${ASSIGNMENT_NVCC-$(command -v nvcc)}
passed=0 failed=0 skipped=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

verdict() {  # verdict pass|fail|skip STEP REGION DETAIL
    case $1 in
        pass) passed=$((passed + 1)) ;;
        fail) failed=$((failed + 1)); echo "FAILED assignment step$2 $3: $4" ;;
        skip) skipped=$((skipped + 1)); echo "SKIPPED assignment step$2 $3: $4" ;;
    esac
}

# "P F S" from a test binary's summary line in file $1, or "" without one.
counts() {
    sed -nE 's/^[A-Za-z0-9_]+: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$1" |
        tail -n 1
}

check_step() {
    local number=$1 step tree objects=() stubbed=() file object compile_log
    step=$(ls -d "step${number}"_*)
    regions=$(python3 tools/make_assignment.py checks "$number") || {
        verdict fail "$number" regions "tools/make_assignment.py checks $number failed"
        return
    }
    [ -n "$regions" ] || return 0
    if [ ! -x "$build/test_step$number" ]; then
        while IFS=$'\t' read -r _ name _; do
            verdict skip "$number" "$name" "$build/test_step$number is not built (nvcc missing?)"
        done <<<"$regions"
        return
    fi
    tree="$scratch/s$number"
    python3 tools/make_assignment.py write "$number" "$tree" >/dev/null || {
        verdict fail "$number" tree "make assignment STEP=$number failed"
        return
    }
    # Compile each file the assignment changed; .cu files for one architecture, only to see
    # that the student's tree builds (the test binary keeps this build's kernels).
    declare -A broken=()
    for file in "$tree/$step"/*.cpp "$tree/$step"/*.cu; do
        cmp -s "$file" "$step/$(basename "$file")" && continue
        object="$scratch/$number-$(basename "${file%.*}").o"
        compile_log="$scratch/compile.log"
        if [[ $file == *.cu ]]; then
            if [ -z "$nvcc" ]; then
                broken[$(basename "$file")]="skip: nvcc not found, so the stubbed kernels cannot be compiled here"
                continue
            fi
            $nvcc -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
                -gencode arch=compute_75,code=sm_75 -I"$step" -Icommon -c "$file" \
                -o "$object" >"$compile_log" 2>&1
        else
            $cxx -Werror -I"$step" -Icommon -c "$file" -o "$object" >"$compile_log" 2>&1 &&
                stubbed+=("$object")
        fi || broken[$(basename "$file")]="fail: the stubbed file does not compile warning-free: $(head -c 2000 "$compile_log")"
    done
    # This build's objects of the step's other files and its checks, then the stubbed ones.
    for object in "$build/$step"/*.o; do
        file=$(basename "${object%.o}")
        [ "$file" = main ] && continue
        [ -e "$scratch/$number-$file.o" ] && [ ! -f "$tree/$step/$file.cu" ] && continue
        objects+=("$object")
    done
    local link_libs=${ASSIGNMENT_LDFLAGS:--fopenmp}
    ls "$step"/*.cu >/dev/null 2>&1 && link_libs+=" ${ASSIGNMENT_CUDA_LDLIBS:-}"
    local binary="$scratch/test_step$number"
    [ ${#stubbed[@]} -gt 0 ] && ${cxx%% *} "${objects[@]}" "${stubbed[@]}" "$build/common/test_main.o" -o "$binary" \
        $link_libs >"$scratch/link.log" 2>&1 || binary=""
    while IFS=$'\t' read -r file name filter; do
        local problem=${broken[$file]:-} log="$scratch/run.log" expected
        expected=$(($(tr -cd , <<<"$filter" | wc -c) + 1))
        if [ -n "$problem" ]; then
            verdict "${problem%%:*}" "$number" "$name" "${problem#*: }"
        elif [[ $file == *.cu ]]; then
            verdict pass "$number" "$name"  # compiled; its checks need a GPU (gpu demo script)
        elif [ -z "$binary" ]; then
            verdict fail "$number" "$name" "the stubbed checks do not link: $(head -c 2000 "$scratch/link.log")"
        else
            "$binary" "-tc=$filter" >"$log" 2>&1
            read -r p f s <<<"$(counts "$log")"
            if [ "${s:-0}" -gt 0 ] && [ "${f:-0}" -eq 0 ]; then
                verdict skip "$number" "$name" "$(sed -nE 's/^SKIPPED "[^"]*": //p' "$log" | head -n 1)"
                continue
            elif [ "${f:-0}" -eq 0 ] || ! grep -q ": not implemented yet (step$number" "$log"; then
                verdict fail "$number" "$name" "its checks do not fail naming the stub: $(tail -n 5 "$log")"
                continue
            fi
            "$build/test_step$number" "-tc=$filter" >"$log" 2>&1
            read -r p f s <<<"$(counts "$log")"
            if [ "${f:-1}" -eq 0 ] && [ $((${p:-0} + ${s:-0})) -eq "$expected" ]; then
                verdict pass "$number" "$name"
            else
                verdict fail "$number" "$name" "its $expected checks do not all pass with the solution: $(tail -n 5 "$log")"
            fi
        fi
    done <<<"$regions"
}

for step in step[0-9][0-9]_*; do
    check_step "${step:4:2}"
done
echo "assignments: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
