#!/usr/bin/env bash
# Memory per controller and per waiting TCP segment (issue 24, findings 7 and 8):
# peak RSS of the commands that analyse a capture, at 10,000 and 100,000
# controllers, and of reassembly behind holes; then each again under a 2 GiB
# address-space limit (ulimit -v 2097152), which must not abort.
#
#   Benchmarks/controller-memory/run.sh [CONTROLLERS...]
#
#   CONTROLLERS  sizes to measure (default: 10000 100000); each controller
#                sends 10 MotionLink frames (kinetrace synth, 1 s at 10 Hz)
#
# Environment:
#   MEMORY_WORK=DIR   keep the inputs in DIR (default: a temporary folder, removed)
#   KINETRACE=PATH    the binary to measure (default: a release build of this checkout)
#   HOLES=C×S         connections × one-byte segments behind a hole (default 1000×4096)
#
# Prints a Markdown table: command, input, peak RSS (MB), and the exit status
# under the limit.
set -euo pipefail

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
for n in "${sizes[@]}"; do
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 100000 ]] || { echo "run.sh: CONTROLLERS must be 1–100000" >&2; exit 64; }
done
holes=${HOLES:-1000×4096}
hole_connections=${holes%×*} hole_segments=${holes#*×}
[[ $hole_connections =~ ^[0-9]+$ && $hole_segments =~ ^[0-9]+$ ]] || { echo "run.sh: HOLES must be C×S" >&2; exit 64; }

root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${MEMORY_WORK:-}" ]; then
    work=$MEMORY_WORK; mkdir -p "$work"
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
if [ -z "${KINETRACE:-}" ]; then
    (cd "$root" && swift build -c release --product kinetrace >&2)
    KINETRACE=$root/.build/release/kinetrace
fi
[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time (GNU time) not found" >&2; exit 69; }

# Peak RSS in MB of one run, and its exit status under the address-space limit.
peak() {
    /usr/bin/time -f "%M" -o "$work/rss" "$@" > /dev/null 2> "$work/stderr" || {
        echo "run.sh: failed: $* ($(tail -n 1 "$work/stderr"))" >&2; exit 1; }
    awk '{ printf "%.0f", $1 / 1024 }' "$work/rss"
}
limited() {
    local status=0
    bash -c 'ulimit -v 2097152; exec "$@"' limited "$@" > /dev/null 2> "$work/stderr" || status=$?
    if [ $status -eq 0 ]; then echo "0"
    elif [ $status -gt 128 ]; then echo "$status (signal $((status - 128)))"
    else echo "$status ($(tail -n 1 "$work/stderr" | cut -c1-60))"; fi
}
row() {  # name input -- command...
    local name=$1 input=$2; shift 3
    printf '| %s | %s | %s | %s |\n' "$name" "$input" "$(peak "$@")" "$(limited "$@")"
}

echo "| Command | Input | Peak RSS (MB) | Exit status under ulimit -v 2 GiB |"
echo "|---|---|---|---|"
for n in "${sizes[@]}"; do
    trace=$work/c$n.jsonl pcap=$work/c$n.pcap one=$work/c$n-one.pcap
    [ -s "$trace" ] || "$KINETRACE" synth --out "$trace" --controllers "$n" --duration 1 --seed 7 >&2
    [ -s "$pcap" ] || "$KINETRACE" convert "$trace" "$pcap" >&2
    # One frame per controller: what latency was first measured on (10,000 controllers in 940 KB).
    [ -s "$one" ] || { "$KINETRACE" synth --out "$work/c$n-one.jsonl" --controllers "$n" --duration 0.1 --seed 7 >&2
                       "$KINETRACE" convert "$work/c$n-one.jsonl" "$one" >&2; }
    size=$(du -m "$pcap" | cut -f1)
    row "inspect" "$n controllers × 10 frames ($size MB pcap)" -- "$KINETRACE" inspect --format json "$pcap"
    row "latency" "$n controllers × 10 frames ($size MB pcap)" -- "$KINETRACE" latency --format json "$pcap"
    row "latency" "$n controllers × 1 frame ($(du -k "$one" | cut -f1) KB pcap)" -- "$KINETRACE" latency --format json "$one"
    row "convert" "$n controllers × 10 frames ($size MB pcap)" -- "$KINETRACE" convert "$pcap" "$work/back.jsonl"
done

# Finding 8: one-byte segments behind a hole that never fills, in every connection.
holes_pcap=$work/holes-$hole_connections-$hole_segments.pcap
[ -s "$holes_pcap" ] || python3 "$root/Benchmarks/reassembly/make-hole-pcap.py" "$holes_pcap" "$hole_connections" "$hole_segments"
input="$hole_connections connections × $hole_segments one-byte segments behind a hole"
row "convert" "$input" -- "$KINETRACE" convert --protocol attitude-stream "$holes_pcap" "$work/holes.jsonl"
row "inspect" "$input" -- "$KINETRACE" inspect --protocol attitude-stream --format json "$holes_pcap"
