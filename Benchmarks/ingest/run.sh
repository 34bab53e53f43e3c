#!/usr/bin/env bash
# Ingest end to end (issue 17, item 1; the MCAP rows, issue 30 section 2): the
# CLI commands that read captures and traces, each beside the anchor for its
# input measured in the same run.
#
#   Benchmarks/ingest/run.sh [FRAMES] [RUNS]
#
#   FRAMES  MotionLink frames in the synthetic session (default 2000000; the
#           gesture sweep reads half as many)
#   RUNS    runs of each command; the best and the median are reported (default 5)
#
# Environment:
#   INGEST_WORK=DIR   keep the inputs in DIR (default: a temporary folder, removed)
#   KINETRACE=PATH    the binary to measure (default: a release build of this checkout)
#   CALLGRIND=1       also count instructions (valgrind --tool=callgrind) for each
#                     command on a tenth of the frames: counts that noise doesn't move
#
# Anchors:
#   pcap   a plain C loop over pcap_next_ex (Benchmarks/reassembly/pcap-loop.c),
#          and tcpdump -r FILE -w /dev/null
#   trace  wc -l, cat > /dev/null, and jq -c . on the first 100,000 lines
#          (its rate scaled to the whole file)
#   mcap   cat > /dev/null of the plain and the zstd file, and the `mcap` Python
#          package iterating the messages (undecoded) of a 100,000-record MCAP
#          of each kind, its import time subtracted and its rate scaled to the
#          whole file; left out when python3 lacks mcap (or zstandard) or takes
#          more than a minute on the sample
#
# The session trace is converted to session.mcap and session-zstd.mcap
# (`convert --compression zstd`) before anything is timed.
#
# CPU s is user + system of the whole process; "per CPU s" is the count over
# it, a per-core rate (inspect and convert parse on a second thread, so their
# CPU seconds exceed their wall-clock seconds).
#
# Prints a Markdown table; the figures in Benchmarks/RESULTS.md come from it.
set -euo pipefail

frames=${1:-2000000}
runs=${2:-5}
[[ $frames =~ ^[0-9]+$ && $frames -ge 100000 && $frames -le 100000000 ]] || { echo "run.sh: FRAMES must be 100000–100000000" >&2; exit 64; }
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 && $runs -le 50 ]] || { echo "run.sh: RUNS must be 1–50" >&2; exit 64; }

root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${INGEST_WORK:-}" ]; then
    work=$INGEST_WORK; mkdir -p "$work"
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
if [ -z "${KINETRACE:-}" ]; then
    (cd "$root" && swift build -c release --product kinetrace >&2)
    KINETRACE=$root/.build/release/kinetrace
fi
for tool in cc jq tcpdump; do command -v $tool >/dev/null || { echo "run.sh: $tool not found (scripts/bootstrap installs it)" >&2; exit 69; }; done
cc -O2 -o "$work/pcap-loop" "$root/Benchmarks/reassembly/pcap-loop.c" -lpcap

# Inputs: 10 Hz controllers for 1000 s make FRAMES frames (plus acks and labels).
controllers=$((frames / 10000))
trace=$work/session.jsonl pcap=$work/session.pcap half=$work/half.jsonl
mcap=$work/session.mcap zmcap=$work/session-zstd.mcap
[ -s "$trace" ] || "$KINETRACE" synth --out "$trace" --controllers "$controllers" --duration 1000 --seed 7 >&2
[ -s "$pcap" ] || "$KINETRACE" convert "$trace" "$pcap" >&2
[ -s "$mcap" ] || "$KINETRACE" convert "$trace" "$mcap" >&2
[ -s "$zmcap" ] || "$KINETRACE" convert "$trace" "$zmcap" --compression zstd >&2
[ -s "$half" ] || "$KINETRACE" synth --out "$half" --controllers $((controllers / 2)) --duration 1000 --seed 7 >&2
packets=$("$work/pcap-loop" "$pcap" | cut -d' ' -f1)
records=$(($(wc -l < "$trace") - 1))
half_frames=$((controllers / 2 * 10000))
head -n 100001 "$trace" | tail -n 100000 > "$work/sample.jsonl"
head -n 100001 "$trace" > "$work/sample-header.jsonl"  # the header and 100,000 records
"$KINETRACE" convert "$work/sample-header.jsonl" "$work/sample.mcap" >&2
"$KINETRACE" convert "$work/sample-header.jsonl" "$work/sample-zstd.mcap" --compression zstd >&2

# Best and median wall-clock seconds of `runs` runs, and the median CPU (user + system,
# to the millisecond: bash's time, where /usr/bin/time -f %U rounds to 10 ms).
measure() {
    local times=() cpus=() start end TIMEFORMAT='%3U %3S'
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        { time "$@" > /dev/null 2> "$work/stderr"; } 2> "$work/cpu" || {
            echo "run.sh: failed: $* ($(tail -n 1 "$work/stderr"))" >&2; exit 1; }
        end=$(date +%s%N)
        times+=($(( (end - start) / 1000 )))
        cpus+=("$(awk '{ printf "%d", ($1 + $2) * 1e6 }' "$work/cpu")")
    done
    local sorted=($(printf '%s\n' "${times[@]}" | sort -n)) cpu_sorted=($(printf '%s\n' "${cpus[@]}" | sort -n))
    echo "${sorted[0]} ${sorted[$((runs / 2))]} ${cpu_sorted[$((runs / 2))]}"
}

seconds() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1e6 }'; }
rate() { awk -v n="$1" -v us="$2" 'BEGIN { printf "%.2f M/s", n / us }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }

row() {  # name count anchor-best anchor-median -- command...
    local name=$1 count=$2 anchor_best=$3 anchor_median=$4; shift 5
    read -r best median cpu < <(measure "$@")
    printf '| %s | %s / %s | %s / %s | %s | %s | %s / %s |\n' "$name" "$(seconds "$best")" "$(seconds "$median")" \
        "$(rate "$count" "$best")" "$(rate "$count" "$median")" "$(seconds "$cpu")" \
        "$( [ "$cpu" -gt 0 ] && rate "$count" "$cpu" || echo –)" \
        "$( [ "$anchor_best" = - ] && echo – || ratio "$anchor_best" "$best")" \
        "$( [ "$anchor_median" = - ] && echo – || ratio "$anchor_median" "$median")"
}

# A row for a command timed on 100,000 records, its rate scaled to `records`;
# `base` (best median cpu of what it costs to start) is subtracted first.
# Sets scaled_best and scaled_median (microseconds, whole file).
scaled_row() {  # name base-best base-median base-cpu -- command...
    local name=$1 base_best=$2 base_median=$3 base_cpu=$4; shift 5
    local best median cpu
    read -r best median cpu < <(measure "$@")
    best=$((best - base_best)) median=$((median - base_median)) cpu=$((cpu - base_cpu))
    scaled_best=$((best * records / 100000)) scaled_median=$((median * records / 100000))
    printf '| %s | %s / %s | %s / %s | %s | %s | – |\n' "$name" \
        "$(seconds "$scaled_best")" "$(seconds "$scaled_median")" \
        "$(rate 100000 "$best")" "$(rate 100000 "$median")" \
        "$(seconds $((cpu * records / 100000)))" "$( [ "$cpu" -gt 0 ] && rate 100000 "$cpu" || echo –)"
}

echo "Ingest end to end: $packets packets ($(du -h "$pcap" | cut -f1)), $records trace records ($(du -h "$trace" | cut -f1); MCAP $(du -h "$mcap" | cut -f1), zstd $(du -h "$zmcap" | cut -f1)), $runs runs each, $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| command | seconds best / median | rate best / median | CPU s (median) | per CPU s (median) | anchor ÷ command (best / median) |"
echo "|---|---|---|---|---|---|"
read -r loop_best loop_median _ < <(measure "$work/pcap-loop" "$pcap")
row "anchor: C pcap_next_ex loop" "$packets" - - -- "$work/pcap-loop" "$pcap"
row "anchor: tcpdump -r -w /dev/null" "$packets" "$loop_best" "$loop_median" -- tcpdump -r "$pcap" -w /dev/null
row "kinetrace inspect PCAP" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" inspect "$pcap"
row "kinetrace inspect PCAP --port 47110" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" inspect "$pcap" --port 47110
row "kinetrace convert PCAP → .jsonl" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" convert "$pcap" "$work/converted.jsonl"
row "kinetrace convert PCAP → .mcap" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" convert "$pcap" "$work/converted.mcap"
read -r wc_best wc_median _ < <(measure wc -l "$trace")
row "anchor: wc -l TRACE" "$records" - - -- wc -l "$trace"
row "anchor: cat TRACE > /dev/null" "$records" - - -- cat "$trace"
read -r jq_best jq_median _ < <(measure jq -c . "$work/sample.jsonl")
printf '| anchor: jq -c . (100,000 lines, rate scaled) | %s / %s | %s / %s | – | – | – |\n' \
    "$(seconds $((jq_best * records / 100000)))" "$(seconds $((jq_median * records / 100000)))" \
    "$(rate 100000 "$jq_best")" "$(rate 100000 "$jq_median")"
row "kinetrace inspect TRACE" "$records" "$wc_best" "$wc_median" -- "$KINETRACE" inspect "$trace"
row "kinetrace convert TRACE → .mcap" "$records" "$wc_best" "$wc_median" -- "$KINETRACE" convert "$trace" "$work/converted-trace.mcap"
read -r cat_best cat_median _ < <(measure cat "$mcap")
row "anchor: cat MCAP > /dev/null" "$records" - - -- cat "$mcap"
row "anchor: cat MCAP (zstd) > /dev/null" "$records" - - -- cat "$zmcap"
# The mcap package's reader, every message undecoded (MCAP's own anchor for a zstd file).
py_read='import sys
from mcap.reader import make_reader
with open(sys.argv[1], "rb") as f:
    n = sum(1 for _ in make_reader(f).iter_messages())
print(n)'
py_best=- py_median=- zpy_best=- zpy_median=-
if python3 -c 'import mcap.reader, zstandard' 2>/dev/null &&
    [ "$(timeout 60 python3 -c "$py_read" "$work/sample-zstd.mcap" 2>/dev/null)" = 100000 ]; then
    read -r imp_best imp_median imp_cpu < <(measure python3 -c 'import sys
from mcap.reader import make_reader
import zstandard')
    scaled_row "anchor: python mcap iter_messages MCAP (100,000 records, import subtracted, rate scaled)" \
        "$imp_best" "$imp_median" "$imp_cpu" -- python3 -c "$py_read" "$work/sample.mcap"
    py_best=$scaled_best py_median=$scaled_median
    scaled_row "anchor: python mcap iter_messages MCAP (zstd) (100,000 records, import subtracted, rate scaled)" \
        "$imp_best" "$imp_median" "$imp_cpu" -- python3 -c "$py_read" "$work/sample-zstd.mcap"
    zpy_best=$scaled_best zpy_median=$scaled_median
else
    echo "| anchor: python mcap iter_messages (left out: no mcap/zstandard module, or over a minute on 100,000 records) | – | – | – | – | – |"
fi
row "kinetrace inspect MCAP" "$records" "$cat_best" "$cat_median" -- "$KINETRACE" inspect "$mcap"
row "kinetrace inspect MCAP (zstd)" "$records" "$zpy_best" "$zpy_median" -- "$KINETRACE" inspect "$zmcap"
row "kinetrace convert MCAP → .jsonl" "$records" "$cat_best" "$cat_median" -- "$KINETRACE" convert "$mcap" "$work/converted-mcap.jsonl"
row "kinetrace gestures eval --sweep (100 thresholds, $half_frames frames)" "$half_frames" - - -- \
    "$KINETRACE" gestures eval "$half" --detector threshold-refractory --sweep threshold=0.2:1.19:0.01
echo
echo "anchor ÷ command: the pcap rows against the C loop; inspect TRACE and convert TRACE → .mcap against wc -l;"
echo "inspect MCAP and convert MCAP → .jsonl against cat MCAP; inspect MCAP (zstd) against the python mcap reader"
echo "of the zstd file (1.00× = as fast as the anchor). per CPU s: the count over the median CPU seconds (user + system)."

if [ "${CALLGRIND:-0}" = 1 ]; then
    command -v valgrind >/dev/null || { echo "run.sh: valgrind not found" >&2; exit 69; }
    small=$work/small.pcap small_trace=$work/small.jsonl small_mcap=$work/small.mcap small_zmcap=$work/small-zstd.mcap
    "$KINETRACE" synth --out "$small_trace" --controllers $((controllers / 10)) --duration 1000 --seed 7 >&2
    "$KINETRACE" convert "$small_trace" "$small" >&2
    "$KINETRACE" convert "$small_trace" "$small_mcap" >&2
    "$KINETRACE" convert "$small_trace" "$small_zmcap" --compression zstd >&2
    objcopy --strip-debug "$KINETRACE" "$work/kinetrace.nodebug"  # valgrind 3.19 can't read Swift 6's debug info
    count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p' | tr -d ,; }
    small_packets=$("$work/pcap-loop" "$small" | cut -d' ' -f1)
    small_records=$(($(wc -l < "$small_trace") - 1))
    loop=$(count "$work/pcap-loop" "$small")
    echo
    echo "Instructions (callgrind) on $small_packets packets / $small_records records:"
    echo
    echo "| command | instructions | per packet or record | anchor ÷ command |"
    echo "|---|---|---|---|"
    printf '| anchor: C pcap_next_ex loop | %s | %d | – |\n' "$loop" $((loop / small_packets))
    for cmd in "inspect $small" "convert $small $work/small-out.jsonl" "convert $small $work/small-out.mcap" \
        "inspect $small_trace" "inspect $small_mcap" "inspect $small_zmcap"; do
        # shellcheck disable=SC2086
        n=$(count "$work/kinetrace.nodebug" $cmd)
        per=$small_records  # the pcap commands per packet, the trace and MCAP ones per record
        [[ $cmd == "inspect $small" || $cmd == "convert $small "* ]] && per=$small_packets
        printf '| kinetrace %s | %s | %d | %s |\n' "${cmd//$work\//}" "$n" $((n / per)) "$(ratio "$loop" "$n")"
    done
fi
