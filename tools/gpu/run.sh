#!/usr/bin/env bash
# The GPU work of one or more steps, in one call of a GPU machine (the device runs one command
# for at most ten minutes): the actions tools/gpu/steps.txt lists for those steps and WHAT.
#
#   tools/gpu/run.sh STEPS WHAT OUT
#     STEPS  step numbers: 09, 09,10 or 06-09
#     WHAT   checks (check binaries, --check runs), sanitize (compute-sanitizer), kernels
#            (kernel tables), record (the speed records of docs/bench), all (the first three),
#            or several as a comma-separated list, e.g. checks,sanitize
#     OUT    the folder for the logs and OUT/summary.txt, one line per action, printed last
#   e.g. tools/gpu/run.sh 12 all out; LLAMA_BENCH=/tmp/llama-bench tools/gpu/run.sh 11 record out
#
# Environment: SIZES (e.g. "0.5b 1.5b") keeps only the random-weight files of those sizes;
# LLAMA_BENCH, llama.cpp's llama-bench (tools/gpu/build_llama_cpp.sh), for the llama.cpp rows;
# REPEAT (default 3) runs per prompt in `record prompts`; CUDA_ARCHS (default 90) and
# DOCTEST_INCLUDE as for make. Needs nvcc, a GPU, compute-sanitizer, and for the random-weight
# files gguf-py and the Qwen vocabulary ($QWEN_TOKENIZER_DIR); for the Qwen3 and Qwen3.5 files
# (qwen3-SIZE, qwen35-SIZE) torch, transformers, llama.cpp's source tree with its converter
# (LLAMA_SOURCE, default build/llama/llama-src) and LLAMA_QUANTIZE for Q4_K_M.
set -u
cd "$(dirname "$0")/../.." || exit 1
usage="usage: tools/gpu/run.sh STEPS WHAT OUT   (WHAT: checks sanitize kernels record all, or a
       comma-separated list of them such as checks,sanitize)"
[ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
steps_arg=$1 out=$3 whats=""
for what in ${2//,/ }; do
    case $what in checks | sanitize | kernels | record) whats+=" $what" ;;
        all) whats+=" checks sanitize kernels" ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
[ -n "$whats" ] || { echo "$usage" >&2; exit 2; }
make_flags=(CUDA_ARCHS="${CUDA_ARCHS:-90}" ${DOCTEST_INCLUDE:+DOCTEST_INCLUDE="$DOCTEST_INCLUDE"})
vocab_dir=${QWEN_TOKENIZER_DIR:-../shared/qwen-tokenizer}
tiny=models/tiny-qwen2.gguf
mkdir -p "$out" models
start=$SECONDS
summary=$out/summary.txt
: >"$summary"

note() { echo "[$((SECONDS - start)) s] $*" | tee -a "$summary"; }

# The step numbers STEPS names, one a line.
step_numbers() {
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq -w "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}

# steps.txt's lines for the selected steps and WHATs, in the file's order, comments dropped.
selected_lines() {
    local numbers
    numbers=$(step_numbers "$steps_arg" | paste -sd'|' -)
    sed 's/#.*//' tools/gpu/steps.txt | awk -v n="^($numbers)$" -v w=" $whats " \
        'NF >= 3 && $1 ~ n && index(w, " " $2 " ") { print }'
}

build() {  # build TARGET...: make, with the log in OUT/build.log
    make -j"$(nproc)" "${make_flags[@]}" "$@" >>"$out/build.log" 2>&1 ||
        note "build of $*: FAILED (see build.log)"
}

# ---- random-weight files, written in the background while the steps build and check ----

model_file() {  # model_file TYPE:SIZE (SIZE 0.5b, a Qwen2.5 shape, qwen3-0.6b or qwen35-0.8b)
    case ${1#*:} in
        qwen3-* | qwen35-*) echo "models/${1#*:}-random-${1%%:*}.gguf" ;;
        *) echo "models/qwen2.5-${1#*:}-random-published-${1%%:*}.gguf" ;;
    esac
}

wanted() {  # wanted TYPE:SIZE: whether SIZES (when set) includes its size
    [ -z "${SIZES:-}" ] || [[ " $SIZES " == *" ${1#*:} "* ]]
}

write_models() {
    local file vocab=$vocab_dir/tokenizer.json spec
    [ -f "$vocab" ] || vocab=$vocab_dir/qwen-bpe-vocab.gguf
    for spec in "$@"; do
        file=$(model_file "$spec")
        if [ -f "$file" ]; then
            :
        elif [[ ${spec#*:} == qwen3-* || ${spec#*:} == qwen35-* ]]; then
            # transformers and llama.cpp's converter (LLAMA_SOURCE), llama-quantize for Q4_K_M
            local family=${spec#*:}
            family=${family%%-*}  # qwen3 or qwen35
            python3 "tools/fixtures/make_${family}_bench_model.py" --size "${spec#*:$family-}" \
                --type "${spec%%:*}" --llama-cpp "${LLAMA_SOURCE:-build/llama/llama-src}" \
                --vocab-dir "$vocab_dir" ${LLAMA_QUANTIZE:+--llama-quantize "$LLAMA_QUANTIZE"} \
                -o "$file" >>"$out/make-models.log" 2>&1
        else
            python3 tools/fixtures/make_tiny_model.py --preset "${spec#*:}" \
                --types "${spec%%:*}" --as-published --vocab "$vocab" -o "$file" \
                >>"$out/make-models.log" 2>&1
        fi
        touch "$out/written-${spec/:/-}"
    done
}

wait_for() {  # wait_for TYPE:SIZE
    while [ ! -f "$out/written-${1/:/-}" ]; do sleep 1; done
    [ -f "$(model_file "$1")" ] || { note "$(model_file "$1"): not written (make-models.log)"; return 1; }
}

# Every TYPE:SIZE the selected lines name (a record's @DEPTHS dropped), each once.
models_named() {
    selected_lines | tr ' ' '\n' | grep -E '^[a-z0-9_]+:(qwen35?-)?[0-9.]+b(@|$)' | sed 's/@.*//' |
        awk '!seen[$0]++' | while read -r spec; do wanted "$spec" && echo "$spec"; done
}

# ---- checks ----

# doctest's -sf filter for step NN's check files that use the GPU (those including test_gpu.h).
gpu_files() {
    echo "-sf=$(grep -l '"test_gpu.h"' step"$1"_*/test_*.cpp | sed 's|.*/|*|' | paste -sd, -)"
}

checks_tests() {  # NN all|gpu
    local filter=() log=$out/step$1-tests.log
    build "step$1" "build/release/test_step$1"
    [ "$2" = gpu ] && filter=("$(gpu_files "$1")")
    timeout 300 "build/release/test_step$1" "${filter[@]}" -tse=real_model >"$log" 2>&1
    note "step$1 checks ($2): rc $? | $(tail -n 1 "$log")"
    grep -E "ERROR|SKIPPED|FAILED|values differ|outputs outside" "$log" | head -n 20 >>"$summary"
}

checks_tiny() {  # NN
    local log=$out/step$1-check-tiny.log
    build "step$1"
    timeout 60 "./step$1" $tiny -p "Once upon a time," -n 24 --check --temp 0 >"$log" 2>&1
    note "step$1 --check tiny: rc $? | $(grep -E '^check: [0-9]+ steps' "$log")"
}

checks_models() {  # NN TYPE:SIZE...
    local step=step$1 spec log
    shift
    build "$step"
    for spec in "$@"; do
        wanted "$spec" && wait_for "$spec" || continue
        log=$out/$step-check-${spec/:/-}.log
        timeout 180 "./$step" "$(model_file "$spec")" -p "Once upon a time," -n 8 --check \
            --temp 0 >"$log" 2>&1
        note "$step --check $spec: rc $? | $(grep -E '^(check: [0-9]+ steps|decode:)' "$log" |
            paste -sd' ' - | cut -c1-200)"
    done
}

checks_same_ids() {  # NN RUN|RUN|...: the first two runs must give the same ids
    local runs run name names=()
    IFS='|' read -r -a runs <<<"${*:2}"
    for run in "${runs[@]}"; do
        build "${run%% *}"
        name=${run// /}
        names+=("$name")
        # shellcheck disable=SC2086
        timeout 60 ./$run $tiny -p "Once upon a time," -n 400 -c 420 --temp 0 --ids \
            >"$out/ids-$name.txt" 2>"$out/ids-$name.log"
        note "./$run -n 400: rc $? | $(md5sum <"$out/ids-$name.txt" | cut -c1-12)"
    done
    if cmp -s "$out/ids-${names[0]}.txt" "$out/ids-${names[1]}.txt"; then
        note "${runs[0]} = ${runs[1]}: equal ids"
    else
        note "${runs[0]} = ${runs[1]}: the ids DIFFER"
    fi
}

# ---- sanitizers ----

sanitize() {  # NN TOOL FILES
    local step=$1 tool=$2 files exclude='*failing CUDA call*' log=$out/step$1-$2.log
    build "build/release/test_step$step"
    # Left out: the check that makes a CUDA call fail on purpose (the tools report it as an
    # error) and, under racecheck and synccheck, the 32768-position attention, minutes when
    # instrumented (memcheck runs it).
    [ "$tool" = memcheck ] || exclude+=',*32768*'
    case $3 in gpu) files=$(gpu_files "$step") ;;
        kernels) files='-sf=*test_ops_cuda.cpp' ;;
        *) files="-sf=$3" ;;
    esac
    timeout 240 compute-sanitizer --tool "$tool" --print-limit 20 "build/release/test_step$step" \
        "$files" -tse=real_model "-tce=$exclude" >"$log" 2>&1
    note "step$step $tool ($3): rc $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY' \
        "$log" | tail -n 1) | $(grep -E "^test_step$step:" "$log" | tail -n 1)"
}

# ---- kernel tables ----

kernels_ops() {  # NN TYPE:SIZE...: bench_kernels.sh, the step before beside this one
    local step previous files=() spec log=$out/step$1-kernels.log
    step=$(ls -d step"$1"_*)
    # shellcheck disable=SC2010
    previous=$(ls -d step[0-9][0-9]_* | grep -B1 "^$step\$" | head -n 1)
    # A step before the first CUDA step has no kernels to set beside.
    ls "$previous"/*.cu >/dev/null 2>&1 || previous=""
    shift
    for spec in "$@"; do wanted "$spec" && wait_for "$spec" && files+=("$(model_file "$spec")"); done
    BENCH_STEPS="${BENCH_STEPS:-$previous $step}" timeout 300 tools/bench/bench_kernels.sh \
        "${files[@]}" >"$log" 2>&1
    note "kernel table of ${previous:+$previous and }$step: rc $? (OUT/kernels.md)"
    cp build/bench/kernels*.tsv build/bench/kernels.md "$out/" 2>/dev/null
}

build_kernel_bench() {  # NN NAME: tools/bench/NAME.cu with step NN's CUDA files, build/bench/NAME
    local step
    step=$(ls -d step"$1"_*)
    mkdir -p build/bench
    nvcc -O2 -std=c++17 -arch=sm_"${CUDA_ARCHS:-90}" -I"$step" -Icommon \
        tools/bench/"$2".cu "$step"/*.cu "$step"/ggml_types.cpp -o build/bench/"$2" \
        >>"$out/build.log" 2>&1 || { note "$2: build FAILED"; return 1; }
}

kernels_tensor_cores() {  # NN: the step's GEMM and attention kernels next to cuBLAS
    local size tokens tsv=$out/kernels.tsv
    build_kernel_bench "$1" bench_tensor_cores || return
    for size in 0.5b 1.5b 7b; do
        for tokens in 512 4096; do
            timeout 60 build/bench/bench_tensor_cores "$size" "$tokens" >>"$tsv" 2>&1
            timeout 60 python3 tools/bench/bench_cublas.py "$size" "$tokens" >>"$tsv" 2>&1
        done
    done
    note "kernels timed: $(wc -l <"$tsv") rows (OUT/kernels.tsv)"
}

kernels_chunked() {  # NN: the chunked delta rule beside step 14's recurrence, one layer's heads
    local size tokens tsv=$out/kernels.tsv
    build_kernel_bench "$1" bench_chunked_delta_rule || return
    for size in 0.8b 4b; do
        for tokens in 512 4096 16384; do
            timeout 60 build/bench/bench_chunked_delta_rule "$size" "$tokens" >>"$tsv" 2>&1
        done
    done
    note "kernels timed: $(wc -l <"$tsv") rows (OUT/kernels.tsv)"
}

# ---- speed records ----

engine_steps() {  # the steps an ENGINES list runs
    echo "$1" | tr , '\n' | grep '^step' | sed -E 's/-no-(graph|pdl)$//' | sort -u
}

engines_here() {  # ENGINES less llama.cpp when LLAMA_BENCH is not set
    if [ -n "${LLAMA_BENCH:-}" ]; then echo "$1"; else echo "$1" | sed 's/,*llama\.cpp//'; fi
}

record_series() {  # NN ENGINES TYPE:SIZE@DEPTHS... [-- bench_series.py flags]
    local engines spec depth files=() flags=()
    engines=$(engines_here "$2")
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
    [ $# -gt 0 ] && flags=("${@:2}")
    # shellcheck disable=SC2046
    build step04 $(engine_steps "$engines")
    for spec in "${files[@]}"; do
        wanted "${spec%@*}" && wait_for "${spec%@*}" || continue
        for depth in $(echo "${spec#*@}" | tr , ' '); do
            python3 tools/bench/bench_series.py --model "$(model_file "${spec%@*}")" --append \
                --output "$out/series-$depth.md" --engines "$engines" \
                ${LLAMA_BENCH:+--llama-bench "$LLAMA_BENCH"} --timeout 150 \
                --prompt-repeat $((depth / 512)) -c 8192 "${flags[@]}" \
                >"$out/bench-${spec%@*}-$depth.log" 2>&1
            note "series ${spec%@*} after $depth tokens: rc $? | $(grep -E '^\| (step|llama)' \
                "$out/series-$depth.md" | tail -n 1 | cut -d'|' -f2,4,6,9)"
        done
    done
}

# One prompt's tokens/s: the median of REPEAT runs (one at 7B and 8B, 15 GB a run).
prompt_median() {  # STEP FILE PROMPT SIZE CONTEXT
    local runs=() reps=${REPEAT:-3} r log
    case $4 in 7b | *8b) reps=1 ;; esac
    for ((r = 0; r < reps; r++)); do
        log=$out/$1-$(basename "$2" .gguf)-$(basename "$3" .txt)-$r.log
        timeout 120 "./$1" "$2" -f "$3" -n 0 -c "$5" >"$log" 2>&1
        runs+=("$(grep -oE '^prompt: [0-9]+ tokens in [0-9.]+ ms \([0-9.]+' "$log" | sed -E 's/.*\(//')")
    done
    printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p"
}

prompt_file() {  # TOKENS: tools/bench/bench_prompt.txt (512 tokens) repeated TOKENS / 512 times
    local file=$out/prompt-$1.txt r
    [ "$1" = 512 ] && { echo tools/bench/bench_prompt.txt; return; }
    [ -f "$file" ] || for ((r = 0; r < $1 / 512; r++)); do cat tools/bench/bench_prompt.txt; done >"$file"
    echo "$file"
}

record_prompts() {  # NN ENGINES TYPE:SIZE[@TOKENS]...: OUT/prompts.tsv
    local engines step spec file tokens tps context tsv=$out/prompts.tsv
    engines=$(engines_here "$2")
    shift 2
    # shellcheck disable=SC2046
    build $(engine_steps "$engines")
    # Every program loads its kernels at start, as llama-bench's warm-up run does: a prompt's
    # time is then its kernels', not the driver's first-call loading.
    export CUDA_MODULE_LOADING=EAGER
    [ -f "$tsv" ] || printf 'engine\tsize\ttype\ttokens\ttokens_per_s\n' >"$tsv"
    for spec in "$@"; do
        local lengths=512,4096
        [[ $spec == *@* ]] && lengths=${spec#*@}
        spec=${spec%@*}
        wanted "$spec" && wait_for "$spec" || continue
        file=$(model_file "$spec")
        for step in $(engine_steps "$engines"); do
            for tokens in ${lengths//,/ }; do
                context=$((tokens + 512 > 8192 ? tokens + 512 : 8192))
                tps=$(prompt_median "$step" "$file" "$(prompt_file "$tokens")" "${spec#*:}" "$context")
                printf '%s\t%s\t%s\t%s\t%s\n' "$step" "${spec#*:}" "${spec%%:*}" "$tokens" "$tps" >>"$tsv"
                note "$step $spec $tokens tokens: $tps tokens/s"
            done
        done
        [[ ,$engines, == *,llama.cpp,* ]] || continue
        timeout 300 "$LLAMA_BENCH" -m "$file" -p "$lengths" -n 0 -r 5 -ngl 99 -o md \
            >"$out/llama-${spec/:/-}.md" 2>"$out/llama-${spec/:/-}.log"
        for tokens in ${lengths//,/ }; do
            tps=$(grep -E "\| +pp$tokens +\|" "$out/llama-${spec/:/-}.md" | awk -F'|' '{print $(NF-1)}' | tr -d ' ')
            printf 'llama.cpp\t%s\t%s\t%s\t%s\n' "${spec#*:}" "${spec%%:*}" "$tokens" "$tps" >>"$tsv"
            note "llama.cpp $spec pp$tokens: $tps tokens/s"
        done
    done
    unset CUDA_MODULE_LOADING
}

# ---- the run ----

{ date -u; nvidia-smi; compute-sanitizer --version; nvcc --version; } >"$out/info.log" 2>&1
note "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
[ -n "$(selected_lines)" ] || { note "steps.txt has no${whats} line for step(s) $steps_arg"; exit 2; }
mapfile -t models < <(models_named)
[ ${#models[@]} -eq 0 ] || { write_models "${models[@]}" & }

mapfile -t lines < <(selected_lines)
for text in "${lines[@]}"; do
    read -r -a line <<<"$text"
    step=${line[0]} action=${line[2]} args=("${line[@]:3}")
    case ${line[1]}:$action in
        checks:tests) checks_tests "$step" "${args[@]}" ;;
        checks:tiny) checks_tiny "$step" ;;
        checks:models) checks_models "$step" "${args[@]}" ;;
        checks:same-ids) checks_same_ids "$step" "${args[@]}" ;;
        sanitize:*) sanitize "$step" "$action" "${args[@]}" ;;
        kernels:ops) kernels_ops "$step" "${args[@]}" ;;
        kernels:tensor-cores) kernels_tensor_cores "$step" ;;
        kernels:chunked) kernels_chunked "$step" ;;
        record:series) record_series "$step" "${args[@]}" ;;
        record:prompts) record_prompts "$step" "${args[@]}" ;;
        *) note "steps.txt: unknown action '${line[*]}'" ;;
    esac </dev/null
done
wait
echo
cat "$summary"
