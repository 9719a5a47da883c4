#!/usr/bin/env bash
# Carries a fix forward: "a fix in step N is in every later step". Edit the earliest step that
# has the file, then run this before committing. For each pair of consecutive steps, in order:
#   - a file the later step carries unchanged is copied over (or added, if it is new);
#   - a file the later step changes on purpose (named in its carried_changes.txt) is never
#     overwritten: the edit made to the earlier step's copy since BASE is merged into it with
#     `git merge-file`; if the two edits touch the same lines, the file is left as it was and
#     listed as a conflict to merge by hand;
#   - a file the later step removes (its carried_changes.txt line reads `NAME  removed: why`)
#     is left out: a fix to it belongs in the files that replace it, by hand.
#
#   tools/carry_forward.sh               carry the edits made since the last commit
#   tools/carry_forward.sh --base REV    carry the edits made since commit REV
#   tools/check/check_carried.sh         only check (what `make test` runs)
set -eu
cd "$(dirname "$0")/.."
base=HEAD
if [ "${1:-}" = "--base" ]; then base=${2:?--base needs a commit}; fi
steps=(step[0-9][0-9]_*)
conflicts=0
for ((i = 1; i < ${#steps[@]}; i++)); do
    previous=${steps[i - 1]} current=${steps[i]}
    for file in "$previous"/*; do
        name=$(basename "$file")
        target="$current/$name"
        [ "$name" = carried_changes.txt ] && continue
        grep -qE "^$name[[:space:]]+removed:" "$current/carried_changes.txt" 2>/dev/null && continue
        [ -e "$target" ] && cmp -s "$file" "$target" && continue
        if ! grep -qE "^$name([[:space:]]|\$)" "$current/carried_changes.txt" 2>/dev/null; then
            cp "$file" "$target"
            echo "carried: $file -> $target"
            continue
        fi
        # A deliberate change: merge the earlier step's edit into it, three ways.
        old=$(mktemp) merged=$(mktemp)
        if ! git show "$base:$file" >"$old" 2>/dev/null || cmp -s "$old" "$file"; then
            rm -f "$old" "$merged"
            continue  # the earlier step's copy has no edit since $base
        fi
        if git merge-file -p "$target" "$old" "$file" >"$merged"; then
            cp "$merged" "$target"
            echo "merged:  $file -> $target (a file $current changes on purpose)"
        else
            echo "CONFLICT: $target changes on purpose and so does $file since $base: merge by hand"
            conflicts=$((conflicts + 1))
        fi
        rm -f "$old" "$merged"
    done
done
[ "$conflicts" -eq 0 ]
