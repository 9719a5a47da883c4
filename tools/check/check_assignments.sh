#!/usr/bin/env bash
# The assignment check that `make test` runs (see tools/make_assignment.py). For each step with
# marked regions it writes the step's student tree, compiles the files holding stubs without
# warnings, links them with this build's objects of the step's other files, and checks that
# each region's checks fail with the stub and pass with the solution (this build's own test
# binary). One check per region; a CUDA kernel's region is only compiled (for one GPU
# architecture), and a check that needs a GPU is skipped without one. Ends with the summary line
# tools/check/run_tests.sh adds up ("assignments: N passed, N failed, N skipped").
#
# `make test` passes its build folder and compilers: ASSIGNMENT_BUILD, ASSIGNMENT_CXX (compiler
# and flags), ASSIGNMENT_LDFLAGS, ASSIGNMENT_CUDA_LDLIBS, ASSIGNMENT_NVCC (empty without nvcc).
set -u
shopt -s nullglob
cd "$(dirname "$0")/../.."
build=${ASSIGNMENT_BUILD:-build/release}
cxx=${ASSIGNMENT_CXX:-g++ -O2 -g -std=c++17 -Wall -Wextra -fopenmp}
nvcc=${ASSIGNMENT_NVCC-$(command -v nvcc)}
cuda_libs=${ASSIGNMENT_CUDA_LDLIBS--L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread}
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

# "P F S" from the test binary's summary line in file $1 ("" without one).
counts() {
    sed -nE 's/^\w+: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$1" |
        tail -n 1
}

# Compiles the file $1 of the student tree, holding stubs, into $2; the log goes to $3.
compile_stubbed() {
    if [[ $1 == *.cu ]]; then
        $nvcc -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
            -gencode arch=compute_75,code=sm_75 -I"$step" -Icommon -c "$1" -o "$2" >"$3" 2>&1
    else
        $cxx -Werror -I"$step" -Icommon -c "$1" -o "$2" >"$3" 2>&1
    fi
}

check_step() {
    local number=$1 step regions tree file object binary log="$scratch/run.log"
    local objects=() stubbed=() p f s sources
    step=$(ls -d "step${number}"_*)
    regions=$(python3 tools/make_assignment.py checks "$number") || {
        verdict fail "$number" regions "tools/make_assignment.py checks $number failed"
        return
    }
    [ -n "$regions" ] || return 0
    if [ ! -x "$build/test_step$number" ]; then
        while IFS=$'\t' read -r _ name _; do
            verdict skip "$number" "$name" "$build/test_step$number is not built (no nvcc?)"
        done <<<"$regions"
        return
    fi
    tree="$scratch/s$number"
    python3 tools/make_assignment.py write "$number" "$tree" >/dev/null || {
        verdict fail "$number" tree "make assignment STEP=$number failed"
        return
    }
    # Each file the assignment changed, compiled; a .cu file only to see that the student's
    # tree builds (the test binary keeps this build's kernels), a .cuh through every .cu file
    # of the tree that includes it. Problems by the changed file's name.
    declare -A broken=()
    local changed
    for changed in "$tree/$step"/*.cpp "$tree/$step"/*.cu "$tree/$step"/*.cuh; do
        cmp -s "$changed" "$step/$(basename "$changed")" && continue
        if [[ $changed == *.cuh ]]; then
            sources=$(grep -l "#include \"$(basename "$changed")\"" "$tree/$step"/*.cu)
        else
            sources=$changed
        fi
        for file in $sources; do
            object="$scratch/$number-$(basename "${file%.*}").o"
            if [[ $file == *.cu && -z $nvcc ]]; then
                broken[$(basename "$changed")]="skip: no nvcc here to compile the stubbed kernels"
            elif ! compile_stubbed "$file" "$object" "$scratch/compile.log"; then
                broken[$(basename "$changed")]="fail: $(basename "$file") does not compile \
without warnings: $(head -c 2000 "$scratch/compile.log")"
            elif [[ $file == *.cpp ]]; then
                stubbed+=("$object")
            fi
        done
    done
    # The test binary: this build's objects of the other files and the checks, and the stubs.
    # An object whose source the step no longer has (a file split or removed since that build)
    # is left out.
    for object in "$build/$step"/*.o; do
        file=$(basename "${object%.o}")
        [ "$file" = main ] && continue
        [ -n "$(compgen -G "$step/$file.c*")" ] || continue
        [[ " ${stubbed[*]} " == *"/$number-$file.o "* ]] && continue
        objects+=("$object")
    done
    binary="$scratch/test_step$number"
    local link_flags=${ASSIGNMENT_LDFLAGS:--fopenmp}
    [ -n "$nvcc" ] && [ -n "$(echo "$step"/*.cu)" ] && link_flags+=" $cuda_libs"
    if [ ${#stubbed[@]} -gt 0 ]; then
        ${cxx%% *} "${objects[@]}" "${stubbed[@]}" "$build/common/test_main.o" -o "$binary" \
            $link_flags >"$scratch/link.log" 2>&1 || binary=""
    fi
    while IFS=$'\t' read -r file name filter named; do
        local problem=${broken[$file]:-} expected
        expected=$(($(tr -cd , <<<"$filter" | wc -c) + 1))  # a comma between test cases
        if [ -n "$problem" ]; then
            verdict "${problem%%:*}" "$number" "$name" "${problem#*: }"
            continue
        elif [[ $file == *.cu || $file == *.cuh ]]; then
            verdict pass "$number" "$name"  # it compiled; tools/gpu/assignment_demo.sh runs it
            continue
        elif [ -z "$binary" ]; then
            verdict fail "$number" "$name" "no link: $(head -c 600 "$scratch/link.log")"
            continue
        fi
        "$binary" "-tc=$filter" >"$log" 2>&1
        read -r p f s <<<"$(counts "$log")"
        if [ "${s:-0}" -gt 0 ] && [ "${f:-0}" -eq 0 ]; then
            verdict skip "$number" "$name" "$(sed -nE 's/^SKIPPED "[^"]*": //p' "$log" | head -n 1)"
            continue
        fi
        # The failure names this stub (or one tools/make_assignment.py allows instead).
        if [ "${f:-0}" -eq 0 ] || ! grep -qE "($named): not implemented yet" "$log"; then
            verdict fail "$number" "$name" "no failure naming the stub: $(tail -n 5 "$log")"
            continue
        fi
        "$build/test_step$number" "-tc=$filter" >"$log" 2>&1
        read -r p f s <<<"$(counts "$log")"
        if [ "${f:-1}" -eq 0 ] && [ $((${p:-0} + ${s:-0})) -eq "$expected" ]; then
            verdict pass "$number" "$name"
        else
            verdict fail "$number" "$name" \
                "its $expected checks do not all pass with the solution: $(tail -n 5 "$log")"
        fi
    done <<<"$regions"
}

for step in step[0-9][0-9]_*; do
    check_step "${step:4:2}"
done
echo "assignments: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
