#!/usr/bin/env bash
# Regenerates docs/plots/network-compare.svg and .png: an "event" recorded through
# crowded-event, a network fitted to it, a lab replay through the fitted network, and
# `kinetrace network compare` of the two. About 45 s. KINETRACE chooses the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
kinetrace=${KINETRACE:-$(swift build --show-bin-path)/kinetrace}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

record() {  # NETWORK SEED OUT: the host's recording of a 20 s replay through NETWORK
  "$kinetrace" host --port 0 --trace "$3" > "$work/host.log" &
  local host=$!
  until grep -qs '^listening' "$work/host.log"; do sleep 0.1; done
  local port
  port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/host.log")
  "$kinetrace" replay captures/loopback-session.jsonl --to "127.0.0.1:$port" --network "$1" --seed "$2" \
    --timestamps wallclock --duration 20 > /dev/null
  kill -INT "$host" && wait "$host" || true
}

record crowded-event 1 "$work/event.jsonl"
"$kinetrace" network fit "$work/event.jsonl" -o "$work/event-fitted.json" --name event-fitted
record "$work/event-fitted.json" 2 "$work/lab.jsonl"
# Exit 1 (they differ) still leaves the plot to look at; the report says why.
"$kinetrace" network compare "$work/event.jsonl" "$work/lab.jsonl" --plot docs/plots/network-compare.svg || true
rsvg-convert -z 2 docs/plots/network-compare.svg -o docs/plots/network-compare.png
