#!/usr/bin/env bash
# OpenMP's idle threads spinning (OMP_WAIT_POLICY=active) against sleeping at once (passive) and
# against libgomp's default (unset: spin a while, then sleep), on one step's decode: the median
# ms/token of each policy over RUNS runs, the runs interleaved so that a change in the machine's
# load hits all three. Three cases:
#   idle    the step as it is run
#   busy    with a busy loop competing for one core (a machine that is doing something else)
#   2cores  under `taskset -c 0,1`: two cores, as on a small machine, even on a big one
#
#   tools/bench/bench_wait_policy.sh [STEP] [MODEL] [RUNS]
#   tools/bench/bench_wait_policy.sh 12 models/qwen2.5-coder-0.5b-instruct.gguf 5
#   DEVICE=cuda N=128 tools/bench/bench_wait_policy.sh 12 models/qwen2.5-coder-0.5b-instruct.gguf
# Environment: DEVICE (cpu or cuda, default cpu), N (tokens per run, default 64), CASES (default
# "idle busy 2cores"), BUILD (default 1: make stepNN first; 0 runs ./stepNN as it is).
set -eu
cd "$(dirname "$0")/../.."
step=${1:-11}
model=${2:-models/tiny-qwen2.gguf}
runs=${3:-5}
device=${DEVICE:-cpu}
n=${N:-64}
cases=${CASES:-idle busy 2cores}
if [ "${BUILD:-1}" != 0 ]; then make -s "step$step" >/dev/null; fi

# One run's decode speed: the "X ms/token" of the timing line on stderr.
ms_per_token() {
    "$@" "./step$step" "$model" -p "Once upon a time," -n "$n" --temp 0 --device "$device" \
        2>&1 >/dev/null | sed -n 's/.*generated: [0-9]* tokens, \([0-9.]*\) ms\/token.*/\1/p'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "step$step, $model, --device $device, -n $n, $runs runs each, $(nproc) cores"
for case in $cases; do
    busy_pid=
    prefix=(env)
    case $case in
    busy) (while :; do :; done) & busy_pid=$! ;;
    2cores) prefix=(taskset -c 0,1 env) ;;
    esac
    default=() active=() passive=()
    for ((run = 0; run < runs; run++)); do
        default+=("$(ms_per_token "${prefix[@]}" -u OMP_WAIT_POLICY)")
        active+=("$(ms_per_token "${prefix[@]}" OMP_WAIT_POLICY=active)")
        passive+=("$(ms_per_token "${prefix[@]}" OMP_WAIT_POLICY=passive)")
    done
    if [ -n "$busy_pid" ]; then kill "$busy_pid"; fi
    printf '%-7s ms/token, median: default %s | active %s | passive %s\n' "$case" \
        "$(printf '%s\n' "${default[@]}" | median)" "$(printf '%s\n' "${active[@]}" | median)" \
        "$(printf '%s\n' "${passive[@]}" | median)"
    printf '        runs: default %s | active %s | passive %s\n' "${default[*]}" "${active[*]}" \
        "${passive[*]}"
done
