#!/usr/bin/env bash
# The async grid of docs/results.md ("Tasks: the async grid"): benches/grid.sh --tasks, that is,
# chantest with M sender tasks x N u64 -> one receiver task through a channel of O buffers, on
# tokio's current-thread and multi-thread runtimes, ours (task, task-mt; adaptive and sem)
# beside the async peers (kanal-async, flume-async, async-channel, tokio and their -mt twins)
# as lanes of one sweep, one process per run, every value checked.
#
#   N=65536 R=5 benches/async_grid.sh
#   N=65536 R=5 PIN=none O=0,10 M=1 benches/async_grid.sh
#
# N (default 65536), R (default 5), PIN, PLACE, O, M and BIN are as for benches/grid.sh (see
# benches/grid.sh --help); BIN may name an older build, to compare.
set -euo pipefail
case ${1:-} in
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" && exit 0 ;;
    "") ;;
    *) echo "async_grid.sh: unexpected argument '$1' (try --help)" >&2 && exit 2 ;;
esac
N=${N:-65536} R=${R:-5} PIN=${PIN:-none} exec "$(dirname "$0")/grid.sh" --tasks
