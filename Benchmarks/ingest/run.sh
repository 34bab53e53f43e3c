#!/usr/bin/env bash
# Ingest end to end (issue 17, item 1): the CLI commands that read captures and
# traces, each beside the anchor for its input measured in the same run.
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
[ -s "$trace" ] || "$KINETRACE" synth --out "$trace" --controllers "$controllers" --duration 1000 --seed 7 >&2
[ -s "$pcap" ] || "$KINETRACE" convert "$trace" "$pcap" >&2
[ -s "$half" ] || "$KINETRACE" synth --out "$half" --controllers $((controllers / 2)) --duration 1000 --seed 7 >&2
packets=$("$work/pcap-loop" "$pcap" | cut -d' ' -f1)
records=$(($(wc -l < "$trace") - 1))
half_frames=$((controllers / 2 * 10000))
head -n 100001 "$trace" | tail -n 100000 > "$work/sample.jsonl"

# Best and median wall-clock seconds of `runs` runs, and the median CPU (user + system).
measure() {
    local times=() cpus=() start end
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" > /dev/null 2> "$work/stderr" || {
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
    printf '| %s | %s / %s | %s / %s | %s | %s / %s |\n' "$name" "$(seconds "$best")" "$(seconds "$median")" \
        "$(rate "$count" "$best")" "$(rate "$count" "$median")" "$(seconds "$cpu")" \
        "$( [ "$anchor_best" = - ] && echo – || ratio "$anchor_best" "$best")" \
        "$( [ "$anchor_median" = - ] && echo – || ratio "$anchor_median" "$median")"
}

echo "Ingest end to end: $packets packets ($(du -h "$pcap" | cut -f1)), $records trace records ($(du -h "$trace" | cut -f1)), $runs runs each, $(date -u +%Y-%m-%d), $(nproc) cores"
echo
echo "| command | seconds best / median | rate best / median | CPU s (median) | anchor ÷ command (best / median) |"
echo "|---|---|---|---|---|"
read -r loop_best loop_median _ < <(measure "$work/pcap-loop" "$pcap")
row "anchor: C pcap_next_ex loop" "$packets" - - -- "$work/pcap-loop" "$pcap"
row "anchor: tcpdump -r -w /dev/null" "$packets" "$loop_best" "$loop_median" -- tcpdump -r "$pcap" -w /dev/null
row "kinetrace inspect PCAP" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" inspect "$pcap"
row "kinetrace inspect PCAP --port 47110" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" inspect "$pcap" --port 47110
row "kinetrace convert PCAP → trace" "$packets" "$loop_best" "$loop_median" -- "$KINETRACE" convert "$pcap" "$work/converted.jsonl"
read -r wc_best wc_median _ < <(measure wc -l "$trace")
row "anchor: wc -l TRACE" "$records" - - -- wc -l "$trace"
row "anchor: cat TRACE > /dev/null" "$records" - - -- cat "$trace"
read -r jq_best jq_median _ < <(measure jq -c . "$work/sample.jsonl")
printf '| anchor: jq -c . (100,000 lines, rate scaled) | %s / %s | %s / %s | – | – |\n' \
    "$(seconds $((jq_best * records / 100000)))" "$(seconds $((jq_median * records / 100000)))" \
    "$(rate 100000 "$jq_best")" "$(rate 100000 "$jq_median")"
row "kinetrace inspect TRACE" "$records" "$wc_best" "$wc_median" -- "$KINETRACE" inspect "$trace"
row "kinetrace gestures eval --sweep (100 thresholds, $half_frames frames)" "$half_frames" - - -- \
    "$KINETRACE" gestures eval "$half" --detector threshold-refractory --sweep threshold=0.2:1.19:0.01
echo
echo "anchor ÷ command: the pcap rows against the C loop, inspect TRACE against wc -l (1.00× = as fast as the anchor)."

if [ "${CALLGRIND:-0}" = 1 ]; then
    command -v valgrind >/dev/null || { echo "run.sh: valgrind not found" >&2; exit 69; }
    small=$work/small.pcap small_trace=$work/small.jsonl
    "$KINETRACE" synth --out "$small_trace" --controllers $((controllers / 10)) --duration 1000 --seed 7 >&2
    "$KINETRACE" convert "$small_trace" "$small" >&2
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
    for cmd in "inspect $small" "convert $small $work/small-out.jsonl" "inspect $small_trace"; do
        # shellcheck disable=SC2086
        n=$(count "$work/kinetrace.nodebug" $cmd)
        per=$([[ $cmd == "inspect $small_trace" ]] && echo $small_records || echo $small_packets)
        printf '| kinetrace %s | %s | %d | %s |\n' "${cmd//$work\//}" "$n" $((n / per)) "$(ratio "$loop" "$n")"
    done
fi
