#!/usr/bin/env bash
# The git-ignored folder .carry that a device call carries (run's `carry: [".carry"]`): what the
# GPU machine lacks and cannot fetch, in about 7 MB (the call's working tree may hold 64 MiB, the
# repository itself about 36):
#   .carry/doctest/doctest.h    the checks' one dependency (DOCTEST_INCLUDE=$PWD/.carry)
#   .carry/vocab/               Qwen2.5's tokenizer.json.gz and tokenizer_config.json, from
#                               $QWEN_TOKENIZER_DIR (default ../shared/qwen-tokenizer)
#   .carry/llama-src.tar.xz     llama.cpp as llama-cpp-python 0.3.36 vendors it, less its models,
#                               docs, tests, examples, web UI and the backends other than CPU and
#                               CUDA: the converter, gguf-py and the source of llama-bench
#                               (tools/gpu/build_llama_cpp.sh with LLAMA_SRC_TARBALL)
#
#   tools/gpu/pack_carry.sh
set -eu
cd "$(dirname "$0")/../.."
vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}
version=0.3.36
mkdir -p .carry/doctest .carry/vocab build/llama
cp "${DOCTEST_H:-/usr/include/doctest/doctest.h}" .carry/doctest/
gzip -9 -c "$vocab/tokenizer.json" >.carry/vocab/tokenizer.json.gz
cp "$vocab/tokenizer_config.json" .carry/vocab/
tarball=build/llama/llama_cpp_python-$version.tar.gz
[ -f "$tarball" ] || python3 -m pip download --no-deps --no-binary :all: \
    "llama-cpp-python==$version" -d build/llama
work=$(mktemp -d)
tar xzf "$tarball" -C "$work"
mv "$work/llama_cpp_python-$version/vendor/llama.cpp" "$work/llama-src"
(
    cd "$work/llama-src"
    rm -rf models docs media benches tests examples .github tools/ui tools/server/public*
    for backend in virtgpu cann openvino webgpu et metal hexagon sycl vulkan opencl zdnn rpc \
        blas musa hip zendnn; do
        rm -rf "ggml/src/ggml-$backend"
    done
)
tar cJf .carry/llama-src.tar.xz -C "$work" llama-src
rm -rf "$work"
du -sh .carry
