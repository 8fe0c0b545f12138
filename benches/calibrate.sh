#!/usr/bin/env bash
# The calibration figures of docs/results.md ("Calibration: what this machine can
# catch"): how often `chantest --against` flags an unchanged build (false alarms) and a
# build whose adaptive lock is slower (detection), on the machine at hand,
# for `-O 10 -M 1,8` (or the cells given).
#
#   benches/calibrate.sh                 20 A/A and 10 A/A' comparisons at --threshold 0.10
#   AA=20 AB=20 HOLD=1 THRESHOLD=0.05 BUDGET=60s benches/calibrate.sh
#                                        a smaller slowdown at a 5 % threshold
#
# Settings (environment): AA, AB (comparisons of each kind; default 20, 10), HOLD (ns the
# slowed lock busy-waits in each critical section; default 4), O and M (the cells; default
# 10 and 1,8), N (default 16384), R (the
# first look, repetitions a side; default 5), BUDGET (default 45s, so that every verdict takes
# under 60 s), THRESHOLD (default 0.10), PIN (1 adds --pin; default 0: on a loaded 2-vCPU
# machine a pinned thread cannot escape a busy CPU, and the figures were noisier).
#
# Each comparison is what `chantest --against OLD` does, with this build on both sides (A/A)
# or with `adaptive:hold_ns=HOLD` on the new side (A/A'): every repetition of every cell is a
# fresh process per side, the sides taking turns. The binary is copied first, so rebuilding
# during the run changes nothing. The full output goes to target/calibrate/LOG; the summary
# (the last four lines) is what docs/results.md quotes.
set -euo pipefail
cd "$(dirname "$0")/.."

AA=${AA:-20} AB=${AB:-10} HOLD=${HOLD:-4} O=${O:-10} M=${M:-1,8} N=${N:-16384} R=${R:-5}
BUDGET=${BUDGET:-45s} THRESHOLD=${THRESHOLD:-0.10} PIN=${PIN:-0}
pin=()
[ "$PIN" = 1 ] && pin=(--pin)

cargo build --release -p chantest --features test-aids >&2
mkdir -p target/calibrate
bin=target/calibrate/chantest
cp target/release/chantest "$bin"
log=target/calibrate/$(date -u +%Y%m%dT%H%M%SZ).log
cmd=("$bin" --calibrate --lock adaptive -O "$O" -M "$M" -N "$N" -R "$R" --budget "$BUDGET"
    --threshold "$THRESHOLD" --hold-ns "$HOLD" --runs "$AA,$AB" "${pin[@]}")
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# ${cmd[*]}"
} | tee "$log"
start=$(date +%s)
"${cmd[@]}" | tee -a "$log"
echo "# $(($(date +%s) - start)) s in all; load average $(cut -d' ' -f1-3 /proc/loadavg) after" | tee -a "$log"
echo "calibrate.sh: log in $log" >&2
