#!/usr/bin/env bash
# Keeps the rule "a fix in step N is carried into every later step": every file of step N
# except main.cpp is copied over the same file in step N+1, N+2, ... Run it after editing an
# earlier step, then `make test`.
#
#   tools/carry_forward.sh           copy forward (prints each file it changes)
#   tools/carry_forward.sh --check   only list carried files that differ; exit 1 if any do
set -eu
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1
steps=(step[0-9][0-9]_*)
differ=0
for ((i = 1; i < ${#steps[@]}; i++)); do
    previous=${steps[i - 1]} current=${steps[i]}
    for file in "$previous"/*; do
        name=$(basename "$file")
        [ "$name" = main.cpp ] && continue
        [ -f "$current/$name" ] && cmp -s "$file" "$current/$name" && continue
        differ=1
        if [ "$check" = 1 ]; then
            echo "differs: $file -> $current/$name"
        else
            cp "$file" "$current/$name"
            echo "carried: $file -> $current/$name"
        fi
    done
done
[ "$check" = 0 ] || [ "$differ" = 0 ]
