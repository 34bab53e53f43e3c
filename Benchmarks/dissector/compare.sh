#!/usr/bin/env bash
# The generated Wireshark dissector against the hand-written one, in one run on one capture:
# tshark's wall time over a MotionLink v1 capture (synthesised: CONTROLLERS controllers for
# SECONDS s) with no Lua (the anchor), with tools/wireshark/motionlink.lua, and with
# `kinetrace protocol dissector motionlink-v1`; the median of RUNS runs each, and the ratios.
#
#   Benchmarks/dissector/compare.sh [RUNS] [SECONDS] [CONTROLLERS]
#   KINETRACE=path/to/kinetrace Benchmarks/dissector/compare.sh 5 60 20
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}" seconds="${2:-60}" controllers="${3:-20}"
if [[ -z "${KINETRACE:-}" ]]; then
  swift build --product kinetrace >/dev/null
  KINETRACE="$(swift build --show-bin-path)/kinetrace"
fi
dir="$(mktemp -d /tmp/kinetrace-dissector-bench.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
"$KINETRACE" synth --protocol motionlink-v1 --out "$dir/s.jsonl" --duration "$seconds" --controllers "$controllers" --seed 26 >/dev/null
"$KINETRACE" convert "$dir/s.jsonl" "$dir/s.pcap" >/dev/null
"$KINETRACE" protocol dissector motionlink-v1 > "$dir/generated.lua"
port="$(tshark -r "$dir/s.pcap" -c 1 -T fields -e udp.dstport 2>/dev/null)"
packets="$(tshark -r "$dir/s.pcap" -T fields -e frame.number 2>/dev/null | wc -l)"
time_one() {  # median seconds of RUNS runs of tshark with the given arguments, output discarded
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, args = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(["tshark"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times.append(time.perf_counter() - t)
print(f"{statistics.median(times):.3f}")
PY
}
fields=(-T fields -e frame.number)
anchor="$(time_one -r "$dir/s.pcap" "${fields[@]}" -e udp.length)"
hand="$(time_one -r "$dir/s.pcap" -X "lua_script:tools/wireshark/motionlink.lua" -d "udp.port==$port,motionlink" "${fields[@]}" -e motionlink.ay -e motionlink.valid)"
generated="$(time_one -r "$dir/s.pcap" -X "lua_script:$dir/generated.lua" -d "udp.port==$port,motionlink_v1" "${fields[@]}" -e motionlink_v1.ay -e motionlink_v1.valid)"
python3 - "$packets" "$anchor" "$hand" "$generated" <<'PY'
import sys
packets, anchor, hand, generated = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"capture: {packets} packets")
for name, t in [("tshark, no Lua (anchor)", anchor), ("hand-written motionlink.lua", hand), ("generated motionlink_v1.lua", generated)]:
    print(f"{name:<30} {t:7.3f} s  {t / anchor:5.2f}x anchor  {packets / t / 1000:7.1f} k packets/s")
print(f"generated / hand-written: {generated / hand:.2f}x")
PY
