#!/usr/bin/env bash
# The result tables of docs/results.md, made by chantest itself: the chantest workload (M senders x N
# u64 -> one receiver through a channel of O buffers) on our channel, one lane per lock backend,
# beside the peers as lanes of the same sweep, every value checked (a lost, duplicated or
# reordered value stops the script with chantest's exit status 3).
#
#   N=16384 R=3 [PIN=0|none] [PLACE=spread|apart] [O=0,1,10,100] [M=1,2,8] benches/grid.sh [--tasks] [--write]
#
# Threads (the default): chantest --via chan,kanal,crossbeam,flume,std --lock spin,sem,adaptive
# --ref kanal. Tasks (--tasks; benches/async_grid.sh): chantest --via task,kanal-async,
# flume-async,async-channel,tokio --lock adaptive,sem --ref kanal-async on tokio's
# current-thread runtime, then the same with task-mt and the -mt peers on its multi-thread
# runtime (async-channel and tokio have no rendezvous channel: O=0 runs them with one buffer).
#
# One process per run (chantest --per-process): for each cell and each of R repetitions every
# lane runs in a fresh chantest process (a warm-up round, then three measured rounds whose
# median is the sample), in an order rotated by one place per repetition, so that no lane
# always runs first and none shares a process's allocator, thread stacks, lock calibration or
# warmed caches with another. Each table cell: the median over the R processes of wall ns per
# message, its ratio to kanal (kanal-async, kanal-async-mt) in brackets; the last column names
# the fastest lane. PIN unset: all CPUs, then every process under `taskset -c 0`; PIN=c: pinned
# to CPU c only; PIN=none: all CPUs only. PLACE pins each thread within those CPUs
# (chantest --pin, or --pin=apart: the receiver alone on the first CPU); unset, the scheduler
# places them. Prints the block; with --write (or WRITE=1) the
# threads' block also replaces docs/results.md's grid block. BIN may name another chantest build
# (default: this checkout's, built in release under $CARGO_TARGET_DIR or target/).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() {
    echo "grid.sh: $*" >&2
    exit 2
}

tasks=0
write=${WRITE:-0}
for a in "$@"; do
    case $a in
        --tasks) tasks=1 ;;
        --write) write=1 ;;
        -h | --help) usage && exit 0 ;;
        *) die "unexpected argument '$a' (try --help)" ;;
    esac
done
positive() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"; }
N=${N:-16384}
R=${R:-3}
O=${O:-0,1,10,100}
M=${M:-1,2,8}
positive N "$N"
positive R "$R"
((tasks == 0 || write == 0)) || die "--write rewrites the threads' block: leave out --tasks"
if [[ -z ${PIN+set} ]]; then
    modes=(all 0)
elif [[ $PIN == none || -z $PIN ]]; then
    modes=(all)
elif [[ $PIN =~ ^[0-9]+$ ]]; then
    taskset -c "$PIN" true 2>/dev/null || die "PIN=$PIN: no such CPU here"
    modes=("$PIN")
else
    die "PIN must be a CPU number or 'none', not '$PIN'"
fi
case ${PLACE:-} in
    '') place="" ;;
    spread) place=" --pin" ;;
    apart) place=" --pin=apart" ;;
    *) die "PLACE must be spread or apart, not '$PLACE'" ;;
esac
[[ $place != " --pin=apart" || ${modes[*]} == all ]] ||
    die "PLACE=apart keeps a CPU for the receiver: it needs all CPUs, so set PIN=none"

if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release -p chantest
    BIN=${CARGO_TARGET_DIR:-target}/release/chantest
fi
[[ -x $BIN ]] || die "BIN=$BIN is not an executable"

# The sweeps: a title and chantest's lane flags each.
if ((tasks)); then
    titles=("Tasks, tokio's current-thread runtime" "Tasks, tokio's multi-thread runtime")
    sweeps=("--via task,kanal-async,flume-async,async-channel,tokio --lock adaptive,sem --ref kanal-async"
        "--via task-mt,kanal-async-mt,flume-async-mt,async-channel-mt,tokio-mt --lock adaptive,sem --ref kanal-async-mt")
else
    titles=("Threads")
    sweeps=("--via chan,kanal,crossbeam,flume,std --lock spin,sem,adaptive --ref kanal")
fi

machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(uname -sr), $(date -u +%Y-%m-%d)"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
start=$(date +%s)
load0=$(loadavg)
common="--per-process --format markdown -O $O -M $M -N $N -R $R$place"

body=""
for i in "${!sweeps[@]}"; do
    for mode in "${modes[@]}"; do
        prefix=()
        where="all CPUs"
        if [[ $mode != all ]]; then
            prefix=(taskset -c "$mode")
            where="pinned to one CPU (every process under \`taskset -c $mode\`)"
        fi
        echo "grid.sh: ${titles[$i]}, $where" >&2
        # shellcheck disable=SC2086 # the flags are words
        table=$("${prefix[@]}" "$BIN" $common ${sweeps[$i]}) ||
            { s=$?; echo "grid.sh: failed ($s): ${prefix[*]} $BIN $common ${sweeps[$i]}" >&2; exit "$s"; }
        body+="

${titles[$i]}, $where: \`chantest $common ${sweeps[$i]}\`

$table"
    done
done
secs=$(($(date +%s) - start))
cmd="N=$N R=$R${PIN+ PIN=$PIN}${PLACE:+ PLACE=$PLACE}$([[ $O == 0,1,10,100 ]] || echo " O=$O")$([[ $M == 1,2,8 ]] || echo " M=$M") benches/grid.sh$([[ $tasks == 0 ]] || echo " --tasks")"
block="<!-- grid:begin (generated by benches/grid.sh; do not edit by hand) -->
Machine: $machine. Command: \`$cmd\` ($secs s; load average $load0 before, $(loadavg) after).
Made by chantest, one process per run: each lane of each cell ran R = $R times, each time in a
fresh process (a warm-up round, then three measured rounds of M senders x $N u64 each -> one
receiver through a channel of O buffers, every value checked; their median is the sample),
the lanes in an order rotated by one place per repetition. Each cell: the median over the $R
processes of wall ns per message, from the senders' common start to the last value's arrival,
with its ratio to the reference lane in brackets.$body
<!-- grid:end -->"
echo "$block"
if ((write)); then
    BLOCK="$block" python3 - <<'PY'
import os, re
path = "docs/results.md"
text = open(path).read()
pattern = re.compile(r"<!-- grid:begin.*?<!-- grid:end -->", re.S)
if not pattern.search(text):
    raise SystemExit("docs/results.md has no grid markers")
open(path, "w").write(pattern.sub(lambda _: os.environ["BLOCK"], text))
PY
    echo "docs/results.md updated" >&2
fi
