#!/usr/bin/env bash
# Peak memory of `conform --capture` per record, beside `inspect` on the same trace in the same
# run (issue 15, finding 8).
#
#   Benchmarks/conform/capture-memory.sh [controllers] [seconds]   (default 100 × 1500 s: about 1.6 M records)
#
# Needs a release build (swift build -c release). Peak RSS comes from getrusage(RUSAGE_CHILDREN)
# of a fresh Python parent per run, so each figure is that kinetrace process's own.
set -euo pipefail
cd "$(dirname "$0")/../.."
controllers=${1:-100}
seconds=${2:-1500}
bin=${KINETRACE:-$(swift build -c release --show-bin-path)/kinetrace}
[ -x "$bin" ] || { echo "capture-memory.sh: no kinetrace at $bin (swift build -c release)" >&2; exit 69; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" synth --out "$work/session.jsonl" --controllers "$controllers" --duration "$seconds" --seed 5 >/dev/null
records=$(($(wc -l <"$work/session.jsonl") - 1))
size=$(du -m "$work/session.jsonl" | cut -f1)
echo "trace: $records records, $size MB ($controllers controllers × $seconds s, synth --seed 5)"
echo
echo "| command | exit | seconds | peak RSS (MB) | bytes per record |"
echo "|---|---|---|---|---|"
measure() {  # label, command...
    local label=$1; shift
    python3 - "$label" "$records" "$@" <<'PY'
import resource, subprocess, sys, time
label, records, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
start = time.monotonic()
done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
seconds = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(f"| {label} | {done.returncode} | {seconds:.1f} | {peak / 1048576:.0f} | {peak / records:.0f} |")
PY
}
measure "inspect (the anchor)" "$bin" inspect "$work/session.jsonl"
measure "conform --capture" "$bin" conform --capture "$work/session.jsonl"
