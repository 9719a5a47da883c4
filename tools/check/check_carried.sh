#!/usr/bin/env bash
# The drift check that `make test` runs: every file of step N-1 is in step N byte for byte,
# unless step N's carried_changes.txt names it as a change made on purpose, or as removed
# (`NAME  removed: why`: then step N must not have it). One check per step;
# ends with the summary line tools/check/run_tests.sh adds up ("carried_files: N passed, N failed,
# 0 skipped"). A difference means a fix that was not carried forward (run tools/carry_forward.sh)
# or a change to declare, with its reason, in carried_changes.txt.
set -u
cd "$(dirname "$0")/../.."
steps=(step[0-9][0-9]_*)
passed=0 failed=0
for ((i = 1; i < ${#steps[@]}; i++)); do
    previous=${steps[i - 1]} current=${steps[i]}
    declarations="$current/carried_changes.txt"
    problems=()
    if [ ! -f "$declarations" ]; then
        problems+=("$declarations is missing (it lists the carried files the step changes)")
    else
        while read -r name how _; do
            [ -e "$previous/$name" ] || problems+=("$declarations names '$name', which $previous does not have")
            if [ "$how" = removed: ]; then
                [ -e "$current/$name" ] &&
                    problems+=("$declarations says '$name' is removed, but $current has it")
                continue
            fi
            [ -e "$current/$name" ] && cmp -s "$previous/$name" "$current/$name" &&
                problems+=("$declarations names '$name', but it is the same as in $previous")
        done < <(grep -v '^#' "$declarations" | grep .)
    fi
    for file in "$previous"/*; do
        name=$(basename "$file")
        [ "$name" = carried_changes.txt ] && continue
        grep -qE "^$name([[:space:]]|\$)" "$declarations" 2>/dev/null && continue
        if [ ! -e "$current/$name" ]; then
            problems+=("$current/$name is missing (carried from $previous)")
        elif ! cmp -s "$file" "$current/$name"; then
            problems+=("$current/$name differs from $file and is not in $declarations")
        fi
    done
    if [ ${#problems[@]} -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $current does not carry $previous as declared:"
        printf '  %s\n' "${problems[@]}"
    fi
done
echo "carried_files: $passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
