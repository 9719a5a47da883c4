#!/usr/bin/env bash
# Runs each test binary given, then prints the totals as one plain line: "N passed, N failed"
# (", N skipped" follows when checks were skipped). Exits non-zero if any check failed or a
# binary did not finish.
set -u
passed=0 failed=0 skipped=0 broken=0
for binary in "$@"; do
    echo "=== $binary"
    log=$(mktemp)
    "$binary" 2>&1 | tee "$log"
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
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
