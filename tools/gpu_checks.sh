# gpu_checks.sh - what the GPU check scripts of steps 09 and 10 (tools/gpu_stepNN.sh) share,
# sourced by them after `cd` to the repository root and setting `out`, the logs' folder:
#   gpu_start              the summary file, `note`, info.log (the GPU, the tools' versions)
#   gpu_files NN           doctest's -sf filter for step NN's check files that use the GPU
#   sanitize NN SECONDS [FILES]
#                          compute-sanitizer memcheck over those files, racecheck and synccheck
#                          over the kernel checks (test_ops_cuda.cpp), each under SECONDS; with
#                          FILES (a doctest -sf pattern) all three over those files alone
#   check_tiny NN          ./stepNN --check on the tiny model, GPU against CPU
#   write_random_files TYPE SIZE...
#                          writes random_file SIZE TYPE for each size in the background (a file
#                          already there is kept), touching OUT/written-SIZE after each
# make_flags builds for sm_90 (CUDA_ARCHS) with DOCTEST_INCLUDE passed on.

make_flags=(CUDA_ARCHS="${CUDA_ARCHS:-90}" ${DOCTEST_INCLUDE:+DOCTEST_INCLUDE="$DOCTEST_INCLUDE"})

gpu_start() {
    mkdir -p "$out"
    start=$SECONDS
    summary="$out/summary.txt"
    : >"$summary"
    { date -u; nvidia-smi; compute-sanitizer --version; nvcc --version; command -v nsys ncu; } \
        >"$out/info.log" 2>&1
    note "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
}

note() { echo "[$((SECONDS - start)) s] $*" | tee -a "$summary"; }

gpu_files() {
    echo "-sf=$(grep -l '"test_gpu.h"' step"$1"_*/test_*.cpp | sed 's|.*/|*|' | paste -sd, -)"
}

sanitize() {
    local step=$1 seconds=$2 only=${3:-} tool files exclude
    for tool in memcheck racecheck synccheck; do
        # memcheck: every GPU check file; racecheck and synccheck, which watch shared memory and
        # barriers, the kernels' own checks (test_ops_cuda.cpp), whose shapes cover every
        # kernel. Left out: the check that makes a CUDA call fail on purpose (the tools report
        # it as an error), and under racecheck and synccheck the 32768-position attention,
        # minutes when instrumented (memcheck runs it).
        files=$(gpu_files "$step") exclude='*failing CUDA call*'
        [ "$tool" = memcheck ] || { files='-sf=*test_ops_cuda.cpp'; exclude+=',*32768*'; }
        [ -z "$only" ] || files="-sf=$only"
        timeout "$seconds" compute-sanitizer --tool $tool --print-limit 20 \
            build/release/test_step"$step" "$files" -tse=real_model "-tce=$exclude" \
            >"$out/$tool.log" 2>&1
        note "$tool: rc $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY' \
            "$out/$tool.log" | tail -n 1) | $(grep -E "^test_step$step:" "$out/$tool.log" | tail -n 1)"
    done
}

check_tiny() {
    timeout 60 ./step"$1" models/tiny-qwen2.gguf -p "Once upon a time," -n 24 --check --temp 0 \
        >"$out/check-tiny.log" 2>&1
    note "step$1 --check tiny: rc $? | $(grep -E '^check: [0-9]+ steps' "$out/check-tiny.log")"
}

# A random-weight file laid out as Qwen's published ones (make_tiny_model.py --as-published).
random_file() { echo "models/qwen2.5-$1-random-published-$2.gguf"; }

write_random_files() {
    local type=$1 vocab=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}/qwen-bpe-vocab.gguf
    shift
    mkdir -p models
    (for size in "$@"; do
        [ -f "$(random_file "$size" "$type")" ] ||
            python3 tools/fixtures/make_tiny_model.py --preset "$size" --types "$type" --as-published \
                --vocab "$vocab" -o "$(random_file "$size" "$type")" >>"$out/make-$size.log" 2>&1
        touch "$out/written-$size"
    done) &
}
