#!/usr/bin/env bash
# Instructions per message, counted by valgrind's callgrind rather than timed: the chantest
# workload (M senders x N u64 -> one receiver, O buffers) on our channels and on the peers.
#
#   benches/callgrind.sh
#   N1=10000 N2=20000 REPEAT=3 CELLS="100:1 10:1 0:1" IMPLS="adaptive kanal" benches/callgrind.sh
#
# For each implementation (IMPLS, default spin, sem and adaptive, our channel with that lock,
# and the peers crossbeam, std, flume and kanal; any chantest --via lane name works, e.g.
# kanal-async, and ours take parameters, e.g. adaptive:spin_ns=500) and cell (CELLS, O:M pairs,
# default O=100, 10, 0 with M=1) it runs chantest, one round after its warm-up round,
#   taskset -c CPU valgrind --tool=callgrind chantest --via chan --lock IMPL -O o -M m -N n -R 1
# (--via IMPL for a peer) with n = N1 and n = N2, and reports
#   (Ir(N2) - Ir(N1)) / (2 x M x (N2 - N1)),
# instructions per message (two rounds of N values per sender: the warm-up and the measured
# one), so that start-up, lock calibration and thread creation cancel out. chantest is built
# in release under $CARGO_TARGET_DIR (or target/); BIN may name another build. Ir sums every thread: with M=1, the sender's and the receiver's
# instructions per message together. Only user-space instructions count (libc included):
# what the kernel does inside futex or sched_yield is invisible, only the syscall itself is
# counted. Valgrind runs one thread at a time, so the threads take turns as on one CPU, and
# the process is pinned to one (CPU, default 0) so that no implementation spins; where
# a thread must wait for its partner, how often it yields or sleeps still depends on
# when valgrind switches threads, so those counts vary a little from run to run (a few
# percent; now and then a run of std or flume at O=10 differs by much more). Each pair is
# therefore run REPEAT times (default 3) and the median shown; the largest spreads between
# repetitions are printed under the table. Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() {
    echo "callgrind.sh: $*" >&2
    exit 2
}
for a in "$@"; do
    case $a in
        -h | --help) usage && exit 0 ;;
        *) die "unexpected argument '$a' (try --help)" ;;
    esac
done
N1=${N1:-10000}
N2=${N2:-20000}
REPEAT=${REPEAT:-3}
# Valgrind runs one thread at a time anyway; pinning the process to one CPU makes the
# implementations see that too (ours then never spin: a spin under valgrind counts the
# instructions of waiting for a thread that cannot run, not of the channel).
CPU=${CPU:-0}
CELLS=${CELLS:-100:1 10:1 0:1}
for v in N1 N2 REPEAT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[[ -z ${W:-} ]] || die "W is gone: chantest's warm-up round has N values per sender, as its measured one"
((N2 > N1)) || die "N2 ($N2) must exceed N1 ($N1)"
for c in $CELLS; do
    [[ $c =~ ^[0-9]+:[1-9][0-9]*$ ]] || die "CELLS wants O:M pairs such as '10:1', not '$c'"
done
command -v valgrind >/dev/null || die "valgrind not found (apt-get install -y valgrind)"

if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release -p chantest
    BIN=${CARGO_TARGET_DIR:-target}/release/chantest
fi
bin=$BIN
[[ -x $bin ]] || die "BIN=$bin is not an executable"
read -ra impls <<<"${IMPLS:-spin sem adaptive crossbeam std flume kanal}"
out=${CARGO_TARGET_DIR:-target}/callgrind
mkdir -p "$out"
start=$(date +%s)

# chantest's lane flags for an implementation: a backend of our channel, or a transport.
lane() {
    case ${1%%:*} in
        spin | sem | adaptive) echo "--via chan --lock $1" ;;
        *) echo "--via $1" ;;
    esac
}

# Ir of one run: chantest, lane $1, `-O $2 -M $3 -N $4 -R 1`, under callgrind.
ir() {
    local f="$out/$1.O$2.M$3.N$4.out" args
    args="$(lane "$1") -O $2 -M $3 -N $4 -R 1 --format csv"
    # shellcheck disable=SC2086 # the flags are words
    taskset -c "$CPU" valgrind -q --tool=callgrind --callgrind-out-file="$f" "$bin" $args >/dev/null ||
        { s=$?; echo "callgrind.sh: failed ($s): valgrind --tool=callgrind $bin $args" >&2; exit "$s"; }
    awk '/^(totals|summary):/ { ir = $2 } END { if (ir == "") exit 1; print ir }' "$f" ||
        { echo "callgrind.sh: no totals in $f" >&2; exit 1; }
}

# One line per (implementation, cell, repetition): impl O M Ir(N1) Ir(N2).
results=$out/results.txt
: >"$results"
for impl in "${impls[@]}"; do
    echo "callgrind.sh: $impl" >&2
    for c in $CELLS; do
        o=${c%:*} m=${c#*:}
        for ((r = 1; r <= REPEAT; r++)); do
            echo "$impl $o $m $(ir "$impl" "$o" "$m" "$N1") $(ir "$impl" "$o" "$m" "$N2")" >>"$results"
        done
    done
done
secs=$(($(date +%s) - start))

echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(uname -sr), $(valgrind --version), $(date -u +%Y-%m-%d)."
echo "Command: \`N1=$N1 N2=$N2 REPEAT=$REPEAT CELLS=\"$CELLS\" ${IMPLS:+IMPLS=\"$IMPLS\" }benches/callgrind.sh\` ($secs s)."
echo "Each cell: instructions (callgrind Ir, user space, every thread) per message,"
echo "(Ir(N=$N2) - Ir(N=$N1)) / (2 x M x $((N2 - N1))), median of $REPEAT; each run \`chantest --via chan --lock IMPL -O o -M m -N n -R 1\` (\`--via IMPL\` for a peer), a warm-up round and a measured one."
echo
N1=$N1 N2=$N2 CELLS=$CELLS python3 - "$results" "${impls[@]}" <<'PY'
import os, sys, statistics
path, impls = sys.argv[1], sys.argv[2:]
n1, n2 = int(os.environ["N1"]), int(os.environ["N2"])
cells = [tuple(map(int, c.split(":"))) for c in os.environ["CELLS"].split()]
per = {}
for line in open(path):
    impl, o, m, a, b = line.split()
    o, m = int(o), int(m)
    per.setdefault((impl, o, m), []).append((int(b) - int(a)) / (2 * m * (n2 - n1)))
med = {k: statistics.median(v) for k, v in per.items()}
ours = {"spin", "sem", "adaptive"}
print("| implementation | " + " | ".join(f"O={o} M={m}" for o, m in cells) + " |")
print("|---|" + "---:|" * len(cells))
for impl in impls:
    print(f"| {impl} | " + " | ".join(f"{med[(impl, o, m)]:.1f}" for o, m in cells) + " |")
peers = [i for i in impls if i.split(":")[0] not in ours]
if "adaptive" in impls and peers:
    best = [min(peers, key=lambda p: med[(p, o, m)]) for o, m in cells]
    print("| best peer | " + " | ".join(best) + " |")
    print("| adaptive / best peer | " + " | ".join(
        f"{med[('adaptive', o, m)] / med[(b, o, m)]:.2f}" for (o, m), b in zip(cells, best)) + " |")
spreads = sorted(((max(v) - min(v)) / abs(statistics.median(v)) if statistics.median(v) else 0.0, k)
                 for k, v in per.items())[::-1]
if max(len(v) for v in per.values()) > 1:
    print("\nLargest spreads between repetitions (max - min, % of the median): " + "; ".join(
        f"{k[0]} O={k[1]} M={k[2]} {100 * s:.1f} % (" + ", ".join(f"{x:.1f}" for x in per[k]) + ")"
        for s, k in spreads[:3]) + ".")
PY
echo "callgrind.sh: raw Ir in $results, callgrind files in $out/" >&2
