#!/usr/bin/env bash
# The researcher's loop, end to end with real processes, per network:
#   1. an "event": a host's recording of a replay through NETWORK (seed 1);
#   2. `network fit --segment auto --lab-baseline` of it (the baseline: a replay through
#      perfect, what this machine's own path adds);
#   3. a "lab" recording: the same replay through the fitted network (seed 2);
#   4. `network compare` of the two: the KS distance, loss intervals, bursts and verdict.
# The session is synthesised (4 controllers at 10 Hz, seed 9; crowded-event fans it out to
# 21). The networks: crowded-event (bursty loss, a long tail), step (a quiet path whose link
# drops from 10 Mbit/s to 64 kbit/s at 1/3 of the run and recovers at 2/3) and harsh (every
# impairment at once: the fit's limits show). Fit and compare are timed against `inspect`
# of the same recording (the trace reader alone), run in the same round.
#
#   Benchmarks/network-loop/run.sh [SECONDS] [NETWORK...]   (defaults: 60; crowded-event step harsh)
#
# KINETRACE chooses the binary (default: the release build in .build-release). Writes
# OUT/loop.txt and OUT/NETWORK-compare.svg (OUT default Benchmarks/network-loop/results).
# Takes about 2 × SECONDS per network.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
networks=("$@")
(( ${#networks[@]} )) || networks=(crowded-event step harsh)
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 30 && $seconds -le 3600 ]] || { echo "run.sh: SECONDS must be 30 to 3600" >&2; exit 64; }
kinetrace=${KINETRACE:-.build-release/release/kinetrace}
[[ -x $kinetrace ]] || { echo "run.sh: no executable at $kinetrace (swift build -c release --product kinetrace --scratch-path .build-release)" >&2; exit 66; }
out=${OUT:-Benchmarks/network-loop/results}
mkdir -p "$out"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The step network: lab-like delay and loss, the link's rate falling and recovering.
third=$(( seconds / 3 ))
cat > "$work/step.json" <<JSON
{"kinetrace_network": 1, "name": "step", "description": "A quiet path whose link slows for a third of the run.",
 "provenance": "Assumed: a benchmark network for Benchmarks/network-loop/run.sh.", "basis": "assumed",
 "delay": {"distribution": "normal", "mean_ms": 20, "sd_ms": 2}, "loss": {"model": "bernoulli", "p": 0.02},
 "rate": [{"from_s": 0, "bits_per_s": 10000000}, {"from_s": $third, "bits_per_s": 64000}, {"from_s": $(( 2 * third )), "bits_per_s": 10000000}]}
JSON

# The session replayed: 4 controllers at 10 Hz, no corrupt frames, so every loss the host sees is the network's.
"$kinetrace" synth --out "$work/session.jsonl" --controllers 4 --duration $(( seconds + 5 )) --seed 9 > /dev/null

record() {  # NETWORK SEED OUT: the host's recording of a SECONDS replay through NETWORK
  "$kinetrace" host --port 0 --trace "$3" > "$work/host.log" &
  local host=$!
  until grep -qs '^listening' "$work/host.log"; do sleep 0.1; done
  local port
  port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/host.log")
  "$kinetrace" replay "$work/session.jsonl" --to "127.0.0.1:$port" --network "$1" --seed "$2" \
    --timestamps wallclock --duration "$seconds" > "$work/replay.log"
  kill -INT "$host" && wait "$host" || true
}

wall() {  # COMMAND...: its wall time in seconds on stdout (its own output discarded)
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}

# The lab's own path (what loopback and the host add), taken out of every fitted delay.
record perfect 3 "$work/baseline.jsonl"

{
  echo "# network loop, $(date -u +%Y-%m-%dT%H:%M:%SZ), $seconds s per recording, $("$kinetrace" --version)"
  printf '%-14s %8s %7s %8s %16s %16s %12s %8s %9s %9s %9s\n' network samples KS_D KS_p "loss A %" "loss B %" "bursts A/B" verdict fit_s inspect_s fit/insp
} > "$out/loop.txt"

for network in "${networks[@]}"; do
  source=$network
  [[ $network == step ]] && source=$work/step.json
  record "$source" 1 "$work/$network-event.jsonl"
  "$kinetrace" network fit "$work/$network-event.jsonl" -o "$work/$network-fitted.json" --name "$network-fitted" --segment auto \
    --lab-baseline "$work/baseline.jsonl" > "$out/$network-fit.txt"
  fit_s=$(wall "$kinetrace" network fit "$work/$network-event.jsonl" -o "$work/scratch.json" --segment auto)
  inspect_s=$(wall "$kinetrace" inspect "$work/$network-event.jsonl")
  record "$work/$network-fitted.json" 2 "$work/$network-lab.jsonl"
  status=0
  "$kinetrace" network compare "$work/$network-event.jsonl" "$work/$network-lab.jsonl" --format json \
    --plot "$out/$network-compare.svg" > "$work/compare.json" || status=$?
  (( status <= 1 )) || { echo "run.sh: network compare failed ($status) for $network" >&2; exit 70; }
  python3 - "$work/compare.json" "$network" "$fit_s" "$inspect_s" >> "$out/loop.txt" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
a, b = c["a"], c["b"]
bursts = f'{a.get("mean_burst", 0):.2f}/{b.get("mean_burst", 0):.2f}'
fit, inspect = float(sys.argv[3]), float(sys.argv[4])
print(f'{sys.argv[2]:<14} {a["samples"]:>8} {c["delay"]["ks_distance"]:>7.4f} {c["delay"]["p_value"]:>8.3f} '
      f'{100*a["loss_rate"]:>5.2f} ({100*a["loss_interval"][0]:.2f}-{100*a["loss_interval"][1]:.2f}) '
      f'{100*b["loss_rate"]:>5.2f} ({100*b["loss_interval"][0]:.2f}-{100*b["loss_interval"][1]:.2f}) '
      f'{bursts:>12} {"agree" if c["agrees"] else "DIFFER":>8} {fit:>9.3f} {inspect:>9.3f} {fit / max(inspect, 1e-9):>9.2f}')
PY
  cp "$work/$network-fitted.json" "$out/$network-fitted.json"
done
cat "$out/loop.txt"
