#!/usr/bin/env bash
# What step NN adds to the step before it: `make diff STEP=NN`.
#
# Prints the step's own account of itself (the files it adds; from its carried_changes.txt the
# files it removes and the carried files it changes on purpose, each with the reason), then the
# unified diff of the two directories. New files are shown whole (diff -N), so the reader sees
# every added line; a removed file's lines are shown as removed.
set -eu
cd "$(dirname "$0")/.."
step=${1:-}
steps=$(echo $(ls -d step[0-9][0-9]_* | cut -c5-6))
if [ -z "$step" ]; then
    echo "usage: make diff STEP=NN (NN one of: $steps)" >&2
    exit 2
fi
# STEP=5 means step 05.
[[ "$step" =~ ^[0-9]$ ]] && step=0$step
current=$(ls -d "step${step}"_* 2>/dev/null || true)
if ! [[ "$step" =~ ^[0-9][0-9]$ ]] || [ -z "$current" ]; then
    echo "error: there is no step '$step' (the steps are: $steps)" >&2
    exit 2
fi
previous=$(ls -d step[0-9][0-9]_* | grep -B1 "^$current\$" | head -n 1)
if [ "$previous" = "$current" ]; then
    echo "error: step $step is the first: there is nothing before it to diff against" >&2
    exit 2
fi

echo "# $current adds to $previous"
echo "#"
added=$(cd "$current" && for f in *; do
    [ -e "../$previous/$f" ] || [ "$f" = carried_changes.txt ] || echo "$f"
done)
echo "# new files:"
if [ -n "$added" ]; then
    echo $added | fold -s -w 94 | sed -e 's/ *$//' -e 's/^/#   /'
else
    echo "#   (none: the step changes carried files only)"
fi
# A removed file is declared in carried_changes.txt as `NAME  removed: why`.
removed='^[^#[:space:]]+[[:space:]]+removed:'
if grep -qE "$removed" "$current/carried_changes.txt"; then
    echo "# removed files (from $current/carried_changes.txt):"
    grep -E "$removed" "$current/carried_changes.txt" | sed 's/^/#   /'
fi
echo "# carried files changed on purpose (from $current/carried_changes.txt):"
grep -v '^#' "$current/carried_changes.txt" | grep . | grep -vE "$removed" | sed 's/^/#   /'
echo
diff -ruN --exclude=carried_changes.txt "$previous" "$current" || [ $? -eq 1 ]
