#!/usr/bin/env bash
# The async grid of README.md ("Tasks: the async grid"), one process per sample: M sender tasks
# x N u64 -> one receiver task through a channel of O buffers, on tokio's current-thread and
# multi-thread runtimes, ours against the async peers.
#
#   N=65536 R=5 benches/async_grid.sh
#   N=65536 R=5 RTS=current CELLS="0:1 10:1" IMPLS="ours kanal" benches/async_grid.sh
#
# For each runtime (RTS, default "current multi"), cell (CELLS, O:M pairs, default O in
# {0,1,10,100} x M in {1,2,8}) and repetition (R, default 5) every implementation (IMPLS,
# default ours, ours-sem, flume, kanal, async-channel, tokio) runs in a fresh process
# (`async_grid -R 1`: one warm-up round, one measured), in an order rotated by one place per
# repetition, so that none always runs first and none shares a process's allocator, runtime
# or warmed caches with another. Prints the median ns per message per cell and
# implementation, and ours over the best peer. BIN (default target/release/examples/async_grid)
# may name another build, say one of an older commit, to compare. Raw samples are kept in
# target/async-grid-pp.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
for a in "$@"; do
    case $a in
        -h | --help) usage && exit 0 ;;
        *) echo "async_grid.sh: unexpected argument '$a' (try --help)" >&2 && exit 2 ;;
    esac
done
N=${N:-65536}
R=${R:-5}
RTS=${RTS:-"current multi"}
CELLS=${CELLS:-"0:1 0:2 0:8 1:1 1:2 1:8 10:1 10:2 10:8 100:1 100:2 100:8"}
IMPLS=${IMPLS:-"ours ours-sem flume kanal async-channel tokio"}
BIN=${BIN:-target/release/examples/async_grid}
[[ $N =~ ^[1-9][0-9]*$ && $R =~ ^[1-9][0-9]*$ ]] || { echo "async_grid.sh: N and R must be positive integers" >&2; exit 2; }
if [ "$BIN" = target/release/examples/async_grid ]; then
    cargo build --release -q -p benches --example async_grid
fi
read -ra impls <<<"$IMPLS"
k=${#impls[@]}
raw=target/async-grid-pp.txt
: >"$raw"
slot=0
for rt in $RTS; do
    for c in $CELLS; do
        o=${c%%:*} m=${c#*:}
        for _ in $(seq "$R"); do
            for ((j = 0; j < k; j++)); do
                i=${impls[(slot + j) % k]}
                # The row of the one cell: "| O | M | ns |", empty where the peer has no such
                # channel (no rendezvous in async-channel or tokio's mpsc).
                v=$("$BIN" -N "$N" -R 1 --rt "$rt" --impl "$i" -O "$o" -M "$m" |
                    awk -F'|' -v o="$o" -v m="$m" '$2 + 0 == o && $3 + 0 == m && $2 ~ /[0-9]/ { gsub(/ /, "", $4); print $4 }')
                [ -n "$v" ] && echo "$rt $o $m $i $v" >>"$raw"
            done
            slot=$((slot + 1))
        done
    done
done
echo "# N=$N values per sender, one process per sample, R=$R per cell and implementation, median ns per message"
python3 - "$raw" "$IMPLS" <<'PY'
import collections, statistics, sys
samples = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rt, o, m, imp, v = line.split()
    samples[(rt, int(o), int(m), imp)].append(float(v))
impls = sys.argv[2].split()
peers = [i for i in impls if not i.startswith("ours")]
for rt in dict.fromkeys(k[0] for k in samples):
    print(f"\n{rt}-thread runtime\n")
    print("| O | M | " + " | ".join(impls) + " | ours / best peer |")
    print("|---|---|" + "---:|" * (len(impls) + 1))
    for o, m in sorted({(k[1], k[2]) for k in samples if k[0] == rt}):
        med = {i: statistics.median(samples[(rt, o, m, i)]) for i in impls if samples.get((rt, o, m, i))}
        best = min((med[p] for p in peers if p in med), default=None)
        ratio = f"{med['ours'] / best:.2f}" if best and "ours" in med else ""
        cells = [f"{med[i]:.1f}" if i in med else "" for i in impls]
        print(f"| {o} | {m} | " + " | ".join(cells) + f" | {ratio} |")
PY
