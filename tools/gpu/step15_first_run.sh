#!/usr/bin/env bash
# Step 15's first run on a GPU and issue 31's record, in device calls of at most ten minutes:
#   1. step 15's GPU check files; ./step15 --check (GPU beside CPU) on the tiny Qwen3.5 files with
#      a 716-token prompt (11 chunks and a part); step14's and step15's greedy ids side by side;
#   2. tools/bench/bench_chunked_delta_rule.cu (the kernel table) and ncu on its two kernels;
#   3. prompt tokens/s of 512, 4096 and 16384 tokens and decode, step14 and step15, Qwen3.5 0.8B
#      and 4B random-weight files, F16 and Q4_K_M; nsys's kernel sums of a 4096-token prompt;
#   4. compute-sanitizer memcheck, racecheck and synccheck on the chunked checks, memcheck on
#      the program; llama-bench on the same files, llama.cpp built in the background meanwhile.
# Run from a device call that carries .carry with: doctest/doctest.h, vocab/ (Qwen2.5's
# tokenizer.json.gz and tokenizer_config.json) and llama-src.tar.xz (llama-cpp-python 0.3.36's
# llama.cpp, trimmed of models, docs, tests, examples and the other backends; 4.4 MB):
#   bash tools/gpu/step15_first_run.sh        (SHORT=1: no llama.cpp, no 4B or Q4_K_M files;
#                                              DEADLINE=S: later sections skipped after S seconds)
# Each section that finishes is written to build/step15-run/done, and the logs stay beside it: the
# same command in the next call, while the machine is still warm, goes on where this one stopped
# (the files written and llama.cpp's build are kept too). The logs go to $OUT/logs.tgz and the
# summary of all calls to $OUT/summary.txt.
set -u
cd "$(dirname "$0")/../.."
O=build/step15-run  # the logs, kept between calls on a warm machine
mkdir -p "$O" models build/llama
S=$O/summary.txt
# each line also to $OUT at once, so that a call cut short by its limit still returns them
log() {
    echo "[$SECONDS s] $*" | tee -a "$S"
    cp "$S" "$OUT/" 2>/dev/null
}
DEADLINE=${DEADLINE:-540}  # seconds: later sections are skipped, so the call ends inside its limit
time_left() { [ $SECONDS -lt $DEADLINE ] || { log "skipped past the deadline: $*"; return 1; }; }
# once NAME: whether section NAME is still to run (not finished in an earlier call, time left)
once() { ! grep -qxF "$1" "$O/done" 2>/dev/null && time_left "$1"; }
finished() { echo "$1" >>"$O/done"; }
export DOCTEST_INCLUDE=$PWD/.carry QWEN_TOKENIZER_DIR=$PWD/.carry/vocab CUDA_ARCHS=90
[ -d build/llama/llama-src ] || tar xJf .carry/llama-src.tar.xz -C build/llama
export PYTHONPATH=$PWD/build/llama/llama-src/gguf-py
log "call $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

# llama.cpp (tools/gpu/build_llama_cpp.sh), in the background (a build cut short by the end of
# an earlier call goes on where it stopped); SHORT=1: neither it nor the 4B and Q4_K_M files
LB=build/llama/build/bin/llama-bench LQ=build/llama/build/bin/llama-quantize
if [ -n "${SHORT:-}" ]; then
    echo "llama build rc skipped (SHORT)" >"$O/llama-build.log"
elif [ -x $LB ] && [ -x $LQ ]; then
    echo "llama build rc 0 (built in an earlier call)" >"$O/llama-build.log"
else
    (
        LLAMA_SOURCE=$PWD/build/llama/llama-src tools/gpu/build_llama_cpp.sh build/llama
        echo "llama build rc $?"
    ) >"$O/llama-build.log" 2>&1 &
    BACKGROUND="${BACKGROUND:-} $!"
fi

# random-weight Qwen3.5 files, F16 now, Q4_K_M once llama-quantize exists; FILE.ok marks a
# whole file (one cut short by the end of an earlier call is written again)
make_file() {  # type size [converter's arguments]
    local f=models/qwen35-$2-random-$1.gguf rc=0
    if [ ! -f $f.ok ]; then
        rm -f $f
        python3 tools/fixtures/make_qwen35_bench_model.py --size $2 --type $1 \
            --llama-cpp build/llama/llama-src --vocab-dir .carry/vocab "${@:3}" -o $f
        rc=$?
        [ $rc = 0 ] && touch $f.ok
    fi
    echo "$(date -u +%T) $1 $2 rc $rc"
}
(
    sizes="0.8b 4b"
    [ -n "${SHORT:-}" ] && sizes=0.8b
    for size in $sizes; do make_file f16 $size; done
    while ! grep -q "llama build rc" "$O/llama-build.log"; do sleep 2; done
    [ -n "${SHORT:-}" ] && exit 0
    for size in 0.8b 4b; do make_file q4_k_m $size --llama-quantize $LQ; done
) >"$O/models.log" 2>&1 &
BACKGROUND="${BACKGROUND:-} $!"

mkdir -p build/bench
nvcc -O2 -std=c++17 -arch=sm_90 -Istep15_chunked_delta_rule -Icommon tools/bench/bench_chunked_delta_rule.cu \
    step15_chunked_delta_rule/*.cu step15_chunked_delta_rule/ggml_types.cpp -o build/bench/bench_chunked_delta_rule >"$O/bench-build.log" 2>&1 &
BB=$!
make -j16 CUDA_ARCHS=90 DOCTEST_INCLUDE=$PWD/.carry step14 step15 build/release/test_step15 >"$O/build.log" 2>&1
log "built: rc $? $(grep -c -i ' error' "$O/build.log") error lines"
wait $BB; log "bench built: $(wc -l <"$O/bench-build.log") log lines"

# 1. step 15's GPU check files: first those of the chunked rule and the Qwen3.5 layers that call
# it; those carried unchanged from step 14 late in the call (gpu_checks "carried")
new_files='test_chunked_delta_rule_cuda.cpp test_qwen35_cuda.cpp test_qwen35_forward_cuda.cpp test_generate.cpp'
gpu_checks() {  # new|carried
    once "gpu checks $1" || return
    local files
    files=$(grep -l '"test_gpu.h"' step15_*/test_*.cpp | sed 's|.*/||' | grep -xF -f <(tr ' ' '\n' <<<"$new_files") $([ $1 = carried ] && echo -v) | sed 's|^|*|' | paste -sd, -)
    timeout 240 build/release/test_step15 "-sf=$files" -tse=real_model >"$O/tests-$1.log" 2>&1
    log "step15 gpu checks, $1 ($files): rc $? | $(tail -n 1 "$O/tests-$1.log")"
    grep -E "ERROR|FAILED|largest|MESSAGE|values differ|outside" "$O/tests-$1.log" | head -n 30 | tee -a "$S"
    finished "gpu checks $1"
}
gpu_checks new

# 2. the program, GPU beside CPU, on a 716-token prompt (11 chunks and a part)
if once program-checks; then
    for m in tiny-qwen35-h256 tiny-qwen35-wide-q8_0; do
        timeout 120 ./step15 models/$m.gguf -f tools/bench/bench_prompt.txt -n 24 -c 1024 --check --temp 0 >"$O/check-$m.log" 2>&1
        log "step15 --check $m: rc $? | $(grep -E '^check: [0-9]+ steps' "$O/check-$m.log")"
        grep -E "^check:" "$O/check-$m.log" | head -n 2 | tee -a "$S"
    done
    for st in step14 step15; do
        timeout 60 ./$st models/tiny-qwen35-h256.gguf -f tools/bench/bench_prompt.txt -n 64 -c 1024 --temp 0 --ids >"$O/ids-$st.txt" 2>"$O/ids-$st.log"
    done
    log "ids step14 vs step15 (716-token prompt, 64 greedy): $(cmp -s "$O/ids-step14.txt" "$O/ids-step15.txt" && echo equal || echo DIFFER)"
    finished program-checks
fi

# 4. the kernel table: the chunked rule beside the recurrence, one layer's heads
if once kernels; then
    for size in 0.8b 4b; do for t in 512 4096 16384; do
        timeout 60 build/bench/bench_chunked_delta_rule $size $t 2>&1 | tee -a "$O/kernels.tsv" "$S" >/dev/null
    done; done
    timeout 60 ncu --kernel-name regex:chunk_ --launch-count 2 --metrics gpu__time_duration.sum,dram__bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
        build/bench/bench_chunked_delta_rule 0.8b 4096 >"$O/ncu.log" 2>&1
    log "ncu: rc $?"; grep -E "chunk_|duration|dram__|hmma|warps_active|registers" "$O/ncu.log" | head -n 14 | tee -a "$S"
    finished kernels
fi

# 5. prompts: step14 and step15, 512/4096/16384 tokens, median of 3
export CUDA_MODULE_LOADING=EAGER
for t in 8 32; do for ((r = 0; r < t; r++)); do cat tools/bench/bench_prompt.txt; done >"$O/p$((t * 512)).txt"; done
cp tools/bench/bench_prompt.txt "$O/p512.txt"
median3() {  # step file tokens
    for r in 1 2 3; do
        timeout 100 ./$1 $2 -f "$O/p$3.txt" -n 0 -c $(($3 + 512)) 2>&1 | grep -oE '^prompt: [0-9]+ tokens in [0-9.]+ ms \([0-9.]+' | sed -E 's/.*\(//'
    done | sort -g | sed -n 2p
}
model_ready() {  # type size: waits for the file's writer in this call
    while ! grep -q "$1 $2 rc" "$O/models.log" && [ $SECONDS -lt $DEADLINE ]; do sleep 2; done
    [ -f models/qwen35-$2-random-$1.gguf.ok ] || { log "qwen35-$2-random-$1.gguf missing"; return 1; }
}
prompts() {  # type size
    local f=models/qwen35-$2-random-$1.gguf
    once "prompts $1 $2" && model_ready $1 $2 || return
    for st in step14 step15; do
        for t in 512 4096 16384; do
            log "$st $1 $2 pp$t: $(median3 $st $f $t) tokens/s"
        done
        timeout 60 ./$st $f -f "$O/p512.txt" -n 128 -c 8192 --temp 0 >"$O/decode-$st-$1-$2.log" 2>&1
        log "$st $1 $2 decode: $(grep -oE 'generated: [^|]*' "$O/decode-$st-$1-$2.log")"
    done
    finished "prompts $1 $2"
}
llama() {  # type size
    local f=models/qwen35-$2-random-$1.gguf
    once "llama.cpp $1 $2" || return
    [ -x $LB ] && [ -f $f.ok ] || { log "llama.cpp $1 $2: no binary or file"; return; }
    timeout 150 $LB -m $f -p 512,4096,16384 -n 0 -r 3 -ngl 99 -o md >"$O/llama-$1-$2.md" 2>&1
    log "llama.cpp $1 $2: $(grep -E 'pp[0-9]+' "$O/llama-$1-$2.md" | awk -F'|' '{print $(NF-2), $(NF-1)}' | paste -sd';' -)"
    finished "llama.cpp $1 $2"
}
prompts f16 0.8b
if command -v nsys >/dev/null && once nsys; then
    for st in step14 step15; do
        timeout 60 nsys profile -t cuda -o "$O/nsys-$st" ./$st models/qwen35-0.8b-random-f16.gguf -f "$O/p4096.txt" -n 0 -c 4608 >/dev/null 2>&1
        nsys stats -r cuda_gpu_kern_sum --format csv "$O/nsys-$st.nsys-rep" >"$O/kern-$st.csv" 2>/dev/null
        log "nsys $st 0.8b f16 4096: $(head -n 4 "$O/kern-$st.csv" | cut -c1-150 | tail -n 3 | paste -sd'|' -)"
        rm -f "$O/nsys-$st.nsys-rep" "$O/nsys-$st.sqlite"
    done
    finished nsys
fi
# 3. sanitizers: the chunked checks other than the long sweep, and the program
small='-tc=*nearly parallel*,*two calls*,*kernel it replaces*'
for tool in memcheck racecheck synccheck; do
    once $tool || continue
    timeout 75 compute-sanitizer --tool $tool --print-limit 10 build/release/test_step15 \
        -sf='*test_chunked_delta_rule_cuda.cpp' "$small" >"$O/san-$tool.log" 2>&1
    log "$tool chunked checks: rc $? | $(grep -E 'SUMMARY' "$O/san-$tool.log" | tail -n 1) | $(grep -E '^test_step15:' "$O/san-$tool.log")"
    finished $tool
done
if once memcheck-program; then
    timeout 45 compute-sanitizer --tool memcheck ./step15 models/tiny-qwen35-h256.gguf -f tools/bench/bench_prompt.txt -n 4 -c 1024 --temp 0 >"$O/san-prog.log" 2>&1
    log "memcheck ./step15 716-token prompt: rc $? | $(grep -E 'SUMMARY' "$O/san-prog.log" | tail -n 1)"
    finished memcheck-program
fi

gpu_checks carried
prompts f16 4b
while ! grep -q "llama build rc" "$O/llama-build.log" && [ $SECONDS -lt $DEADLINE ]; do sleep 2; done
log "$(tail -n 1 "$O/llama-build.log")"
llama f16 0.8b
prompts q4_k_m 0.8b
llama q4_k_m 0.8b
llama f16 4b
prompts q4_k_m 4b
llama q4_k_m 4b
tail -n 4 "$O/models.log" >>"$S"
log "this call done; finished so far: $(paste -sd, "$O/done")"
# A device call lasts as long as any process it started: what still runs in the background is
# stopped, children first (the next call's build goes on where this one stopped).
kill_tree() {
    local child
    for child in $(pgrep -P "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null
}
for pid in ${BACKGROUND:-}; do
    kill -0 "$pid" 2>/dev/null && { log "stopped background job $pid"; kill_tree "$pid"; }
done
rm -f "$O"/p*.txt
tar czf "$OUT/logs.tgz" -C build step15-run && cp "$S" "$OUT/"
