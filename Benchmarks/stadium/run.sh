#!/usr/bin/env bash
# A stadium test (issue 30, section 4): 10,000 MotionLink controllers at 10 Hz,
# synthesised, written as JSON Lines, MCAP and zstd MCAP, then read back by
# inspect, latency and gestures eval in each form, a middle window seeked, and a
# 10 s slice replayed as two concurrent shards to a drain-only UDP receiver.
#
#   Benchmarks/stadium/run.sh [CONTROLLERS] [DURATION]
#
#   CONTROLLERS  controllers in the session (default 10000)
#   DURATION     session seconds (default 60: 10,000 × 10 Hz × 60 s = 6 M frames;
#                the issue's 600 s would be 60 M frames, 22 GB of JSON Lines,
#                and its synth and three converts alone over 10 minutes here).
#                A quick run: run.sh 1000 60
#
# Environment:
#   STADIUM_WORK=DIR  keep the inputs in DIR, reused when present (default: a
#                     temporary folder, removed on exit)
#   KINETRACE=PATH    the binary to measure (default: a release build of this
#                     checkout in .build-bench)
#
# Prints a Markdown table (step, form, wall seconds, peak RSS, notes) from
# /usr/bin/time; Benchmarks/stadium/results.md holds a run's figures. Exits 1,
# naming the step, when a command fails.
set -euo pipefail

controllers=${1:-10000}
duration=${2:-60}
[[ $controllers =~ ^[0-9]+$ && $controllers -ge 2 && $controllers -le 100000 ]] || { echo "run.sh: CONTROLLERS must be 2–100000" >&2; exit 64; }
[[ $duration =~ ^[0-9]+$ && $duration -ge 20 && $duration -le 3600 ]] || { echo "run.sh: DURATION must be 20–3600 seconds" >&2; exit 64; }

root=$(cd "$(dirname "$0")/../.." && pwd)
pids=()
cleanup() {  # every background process we started, by its own pid or group
    for p in "${pids[@]}"; do kill -- "$p" 2>/dev/null || true; done
    if [ -z "${STADIUM_WORK:-}" ]; then rm -rf "$work"; fi
}
if [ -n "${STADIUM_WORK:-}" ]; then
    work=$STADIUM_WORK; mkdir -p "$work"
else
    work=$(mktemp -d)
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -z "${KINETRACE:-}" ]; then
    (cd "$root" && swift build -c release --product kinetrace --scratch-path .build-bench >&2)
    KINETRACE=$root/.build-bench/release/kinetrace
fi
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time (GNU time) not found" >&2; exit 69; }
for tool in jq python3; do command -v $tool >/dev/null || { echo "run.sh: $tool not found" >&2; exit 69; }; done

# The middle window is a tenth of the session (one minute of ten) from its half;
# the replay slice is 10 s from the half whatever the duration, since a replay
# runs in real time and 10 s at the stadium's rate is what is being measured.
half=$((duration / 2))
win_end=$(awk -v d="$duration" 'BEGIN { print d / 2 + d / 10 }')
slice_end=$((half + 10))
jsonl=$work/stadium.jsonl mcap=$work/stadium.mcap zstd=$work/stadium-zstd.mcap
table=$work/table.md; : > "$table"
load_start=$(cut -d' ' -f1 /proc/loadavg)  # the machine is shared: say how busy it was

# Runs one step under /usr/bin/time; sets secs and mb, keeps stdout in $work/out.
measure() {  # step form -- command...
    local step=$1 form=$2; shift 3
    echo "run.sh: $step ($form)" >&2
    local status=0
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > "$work/out" 2> "$work/stderr" || status=$?
    [ $status -eq 0 ] || { echo "run.sh: step '$step' ($form) failed: exit $status: $(tail -n 1 "$work/stderr")" >&2; exit 1; }
    read -r secs kb user sys < <(tail -n 1 "$work/time")
    mb=$((kb / 1024)) cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
}
row() { printf '| %s | %s | %s | %s | %s; CPU %s s |\n' "$1" "$2" "$secs" "$mb" "$3" "$cpu" >> "$table"; }
size_mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
rate() { awk -v n="$records" -v s="$secs" 'BEGIN { printf "%.2f M records/s", (s > 0 ? n / s / 1e6 : 0) }'; }

# 1. Synthesise: frames, the host's acks and ground-truth labels (reused if kept).
if [ -s "$jsonl" ] && [ -s "$work/records" ]; then
    records=$(cat "$work/records")
    echo "run.sh: reusing $jsonl" >&2
else
    measure synth jsonl -- "$KINETRACE" synth --out "$jsonl" --controllers "$controllers" --duration "$duration" --seed 30
    records=$(sed -n 's/^wrote \([0-9]*\) records.*/\1/p' "$work/out")
    [ -n "$records" ] || { echo "run.sh: step 'synth' failed: no record count in its output" >&2; exit 1; }
    echo "$records" > "$work/records"
    row "synth ($controllers × 10 Hz × $duration s)" jsonl "$records records, $(rate)"
fi

# 2. The same records as MCAP, plain and zstd, and back: a conversion must keep
# every record exactly, so the JSON Lines it gives back is byte-identical.
measure "convert → mcap" mcap -- "$KINETRACE" convert "$jsonl" "$mcap"
row "convert jsonl → mcap" mcap "$(rate)"
measure "convert → mcap zstd" mcap-zstd -- "$KINETRACE" convert "$jsonl" "$zstd" --compression zstd
row "convert jsonl → mcap --compression zstd" mcap-zstd "$(rate)"
measure "convert mcap → jsonl" jsonl -- "$KINETRACE" convert "$mcap" "$work/back.jsonl"
cmp -s "$jsonl" "$work/back.jsonl" || { echo "run.sh: step 'round trip' failed: back.jsonl differs from stadium.jsonl" >&2; exit 1; }
rm -f "$work/back.jsonl"  # as big as the input, and not an input
row "convert mcap → jsonl (round trip)" jsonl "$(rate); cmp: byte-identical"

# 3. Reading each form: whole-file analyses, then a seek to the middle window.
forms=(jsonl mcap mcap-zstd) files=("$jsonl" "$mcap" "$zstd")
for i in 0 1 2; do
    form=${forms[$i]} file=${files[$i]}
    measure inspect "$form" -- "$KINETRACE" inspect "$file"
    row "inspect" "$form" "$(rate)"
    # latency holds every sample (about 100 bytes a frame), so its RSS grows with the file.
    measure latency "$form" -- "$KINETRACE" latency "$file"
    row "latency" "$form" "$(rate)"
    # gestures eval has no default detector (exit 64 without one): the host's rule.
    # Text, not JSON: --format json lists every outcome (34 MB here, +180 MB RSS).
    measure "gestures eval" "$form" -- "$KINETRACE" gestures eval "$file" --detector threshold-refractory
    row "gestures eval --detector threshold-refractory" "$form" "$(rate); F1 $(awk '$1 == "total" { print $(NF - 2) }' "$work/out")"
    measure "inspect window" "$form" -- "$KINETRACE" inspect "$file" --start "$half" --end "$win_end" --format json
    read_bytes=$(jq '.bytes.file' "$work/out") size=$(stat -c %s "$file")
    row "inspect --start $half --end $win_end" "$form" "$(jq '.messages.c2h.total' "$work/out") frames; read $(awk -v r="$read_bytes" -v s="$size" 'BEGIN { printf "%.1f of %.1f MB (%.1f %%)", r / 1048576, s / 1048576, 100 * r / s }')"
done

# 4. Sharded replay of a 10 s slice of the MCAP form. The plan alone first
# (--dry-run: seek, read and plan, nothing sent), then both shards for real,
# concurrently, to a UDP receiver that only drains and counts.
measure "replay --dry-run" mcap -- "$KINETRACE" replay "$mcap" --start "$half" --end "$slice_end" --shard 1/2 --dry-run
row "replay --start $half --end $slice_end --shard 1/2 --dry-run" mcap "$(sed -n 's/^plan: \([0-9]*\) message(s) from \([0-9]*\) input.*/plan: \1 of \2 messages/p' "$work/out")"
rm -f "$work/port" "$work/drained"
python3 -c '
import os, signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)  # a burst of 100k/s must not overflow it at once
s.bind(("127.0.0.1", 0))
n = 0
def done(*_):
    open(sys.argv[1] + "/drained", "w").write(str(n)); sys.exit(0)
signal.signal(signal.SIGTERM, done)
open(sys.argv[1] + "/port.tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")  # whole, or not there
while True:
    s.recv(2048); n += 1
' "$work" &
drain=$!; pids+=("$drain")
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "run.sh: step 'replay' failed: the drain receiver did not start" >&2; exit 1; }
port=$(cat "$work/port")
echo "run.sh: replay shards 1/2 and 2/2 → 127.0.0.1:$port" >&2
shard_pids=()
for k in 1 2; do
    # setsid: each shard and its time(1) in a group of their own, for the trap to end.
    setsid /usr/bin/time -f "%e %M %U %S" -o "$work/time-$k" "$KINETRACE" replay "$mcap" --start "$half" --end "$slice_end" \
        --shard "$k/2" --to "127.0.0.1:$port" --format json --out "$work/replay-$k.json" 2> "$work/stderr-$k" &
    pids+=("-$!") shard_pids+=("$!")
done
sent_total=0
for k in 1 2; do
    status=0
    wait "${shard_pids[$((k - 1))]}" || status=$?
    report=$work/replay-$k.json
    # A drain never answers, so the acks the host model predicts never come: exit 76,
    # outcome "silent". That is the expected end here, if every message was sent.
    if [ $status -ne 0 ] && ! { [ $status -eq 76 ] && [ -s "$report" ] &&
            jq -e '.outcome == "silent" and .sent == .scheduled' "$report" > /dev/null; }; then
        echo "run.sh: step 'replay shard $k/2' failed: exit $status: $(tail -n 1 "$work/stderr-$k")" >&2; exit 1
    fi
    read -r secs kb user sys < <(tail -n 1 "$work/time-$k")
    mb=$((kb / 1024)) cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    sent_total=$((sent_total + $(jq '.sent' "$report")))
    row "replay --start $half --end $slice_end --shard $k/2 --to drain" mcap "$(jq -r '"sent \(.sent) of \(.scheduled); lateness p50 \(.lateness_us.p50 | round) µs, p99 \(.lateness_us.p99 | round) µs, max \(.lateness_us.max | round) µs; exit '$status' (\(.outcome))"' "$report")"
done
kill -TERM "$drain"; wait "$drain" || true
echo "drain: received $(cat "$work/drained" 2>/dev/null || echo ?) of the $sent_total datagrams sent" > "$work/drain-note"

echo "Stadium: $(date -u +%Y-%m-%dT%H:%MZ), $controllers controllers × 10 Hz × $duration s, $records records; jsonl $(size_mb "$jsonl") MB, mcap $(size_mb "$mcap") MB, mcap zstd $(size_mb "$zstd") MB; kinetrace $(sha1sum "$KINETRACE" | cut -c1-12) built $(date -u -r "$KINETRACE" +%H:%MZ); $(nproc) cores; load average $load_start at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
echo
echo "| step | form | seconds | peak RSS MB | notes |"
echo "|---|---|---:|---:|---|"
cat "$table"
echo
echo "Replay $(cat "$work/drain-note") (loopback; a drain that falls behind loses datagrams in the kernel)."
