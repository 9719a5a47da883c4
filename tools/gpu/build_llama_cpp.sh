#!/usr/bin/env bash
# llama.cpp's llama-bench, llama-quantize and our llama-logits (tools/gpu/llama_oracle) for an
# H200, from the llama.cpp tree that the llama-cpp-python source package on PyPI vendors: the
# yardstick of Part 2's speed records and the second oracle of Part 3's files.
#
#   tools/gpu/build_llama_cpp.sh [OUT_DIR]      default build/llama
#   LLAMA_SOURCE=DIR tools/gpu/build_llama_cpp.sh [OUT_DIR]     from a tree already unpacked
#
# Builds for sm_90 only, statically (the binary needs the CUDA runtime and cuBLAS of the toolkit
# where it runs, nothing of llama.cpp's), with GGML_NATIVE off, so a binary built on one x86-64
# machine runs on another. On the 2-core development machine it took 56 minutes; on the H200's
# 16 cores about 6. Then it packs llama-bench, stripped and gzipped (44 MB), into
# .carry/series/llama-bench.gz, the folder a device call carries (unpacked there with
#   gunzip -c .carry/series/llama-bench.gz >/tmp/llama-bench && chmod +x /tmp/llama-bench
# and handed to tools/gpu/run.sh as LLAMA_BENCH=/tmp/llama-bench).
set -eu
cd "$(dirname "$0")/../.."
out=${1:-build/llama}
version=0.3.36  # vendors llama.cpp commit 0c1e570
mkdir -p "$out"
if [ -n "${LLAMA_SOURCE:-}" ]; then
    source=$LLAMA_SOURCE  # a tree already unpacked, e.g. from the trimmed tarball below
elif [ -n "${LLAMA_SRC_TARBALL:-}" ]; then
    # The same tree, trimmed of models, docs, tests, examples and the other backends' code
    # but keeping the converter and gguf-py (a device call carries it to the GPU machine,
    # which cannot reach PyPI); tools/gpu/pack_carry.sh makes it.
    tar xJf "$LLAMA_SRC_TARBALL" -C "$out"
    source=$out/llama-src
else
    tarball=$out/llama_cpp_python-$version.tar.gz
    [ -f "$tarball" ] || python3 -m pip download --no-deps --no-binary :all: \
        "llama-cpp-python==$version" -d "$out"
    [ -d "$out/llama_cpp_python-$version" ] || tar xzf "$tarball" -C "$out"
    source=$out/llama_cpp_python-$version/vendor/llama.cpp
fi
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
# No git above the source: the commit is given, and cmake must not ask this repository's git.
export GIT_CEILING_DIRECTORIES=$out
# Through tools/gpu/llama_oracle, which adds llama-logits (the second oracle's logits) to the tree.
cmake -S tools/gpu/llama_oracle -B "$out/build" -G "$generator" -DLLAMA_SOURCE="$(cd "$source" && pwd)" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DGGML_CUDA_NCCL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_COMMIT=0c1e570
nice cmake --build "$out/build" -j"$(nproc)" --target llama-bench llama-quantize llama-logits
mkdir -p .carry/series
strip -o "$out/llama-bench" "$out/build/bin/llama-bench"
gzip -6 -c "$out/llama-bench" >.carry/series/llama-bench.gz
echo "$out/build/bin/llama-bench built; packed into .carry/series/llama-bench.gz"
