#!/usr/bin/env bash
# Instructions per message on the two paths the transport seam changed, counted by
# callgrind inside one function each (machine load does not move the counts):
#   host:   the datagram handler's channelRead (decode, host model, reply) for each
#           datagram the reference host receives;
#   replay: the controller link's send for each message the replayer sends.
# The base is 8244a31 (UDPControllerLink, the host's HostHandler); the seam is this
# tree (NetworkControllerLink, DatagramListenerHandler). Both replay the first
# SECONDS of captures/loopback-session.jsonl at 5× speed, seed 1, with
# deterministic hashing, so they do the same work.
#
# Usage: Benchmarks/seam/instructions.sh BASE_KINETRACE NEW_KINETRACE [SECONDS]   (default 20)
#   BASE_SEAM=1  the base already has the seam (0c9392f or later): count the same functions in both
# Prints a Markdown table. Needs valgrind and objcopy.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BASE_KINETRACE NEW_KINETRACE [SECONDS]" >&2; exit 64; }
base=$1 new=$2 seconds=${3:-20}
[ -x "$base" ] && [ -x "$new" ] || { echo "instructions.sh: $base and $new must be kinetrace binaries" >&2; exit 64; }
root=$(cd "$(dirname "$0")/../.." && pwd)
trace="$root/captures/loopback-session.jsonl"
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is missing" >&2; exit 1; }
work=$(mktemp -d /tmp/kinetrace-seam-ir.XXXXXX)
host_pid=""
cleanup() { [ -n "$host_pid" ] && kill -INT "$host_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export SWIFT_DETERMINISTIC_HASHING=1

# valgrind 3.19 cannot read the DWARF 5 that Swift 6 writes: count copies without debug info.
objcopy --strip-debug "$base" "$work/base"
objcopy --strip-debug "$new" "$work/new"
# BASE_SEAM=1: the base is a build with the seam already (0c9392f or later), whose symbols are the new ones.
declare -A symbol=(
  [host-base]='$s13KinetraceHost0B7HandlerC11channelRead7context4datay7NIOCore07ChannelC7ContextC_AG6NIOAnyVtF'
  [host-new]='$s18KinetraceTransport23DatagramListenerHandlerC11channelRead7context4datay7NIOCore07ChannelE7ContextC_AG6NIOAnyVtF'
  # The replayer calls the specialised copy (dead argument removed) on the base.
  [replay-base]='$s18KinetraceTransport17UDPControllerLinkC4send_4from19deadlineMonotonicNss5Int32VSgSays5UInt8VG_Sis5Int64VtFTf4nndn_n'
  [replay-new]='$s18KinetraceTransport21NetworkControllerLinkC4send_4from19deadlineMonotonicNss5Int32VSgSays5UInt8VG_Sis5Int64VtF'
)
if [ -n "${BASE_SEAM:-}" ]; then symbol[host-base]=${symbol[host-new]}; symbol[replay-base]=${symbol[replay-new]}; fi
callgrind=(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$work/ir.out")

start_host() {  # command...; sets host_pid and port
  "$@" host --port 0 --format json >"$work/host.out" 2>"$work/host.err" &
  host_pid=$!
  for _ in $(seq 600); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
  port=$(grep -o 'listening on .*:[0-9]*' "$work/host.out" | grep -o '[0-9]*$' || true)
  [ -n "$port" ] || { echo "instructions.sh: the host did not start: $(tail -2 "$work/host.err")" >&2; exit 1; }
}
stop_host() { kill -INT "$host_pid"; wait "$host_pid" || true; host_pid=""; }
replay() { "$1" replay "$trace" --to "127.0.0.1:$port" --duration "$seconds" --speed 5 --seed 1 --format json; }

declare -A figure
for which in base new; do
  # The host under callgrind, the seam's replayer driving it.
  start_host "${callgrind[@]}" --toggle-collect="${symbol[host-$which]}" "$work/$which"
  replay "$work/new" >/dev/null 2>&1
  stop_host
  messages=$(python3 -c "import json; print(json.loads(open('$work/host.out').read().splitlines()[-1])['datagrams'])")
  figure[host-$which]="$(grep -m1 '^summary:' "$work/ir.out" | awk '{print $2}') $messages"
  # The replayer under callgrind, the seam's host answering.
  start_host "$work/new"
  "${callgrind[@]}" --toggle-collect="${symbol[replay-$which]}" "$work/$which" replay "$trace" --to "127.0.0.1:$port" \
    --duration "$seconds" --speed 5 --seed 1 --format json >"$work/replay.json" 2>/dev/null
  stop_host
  messages=$(python3 -c "import json; print(json.load(open('$work/replay.json'))['sent'])")
  figure[replay-$which]="$(grep -m1 '^summary:' "$work/ir.out" | awk '{print $2}') $messages"
done

echo "| Path (per message) | base instructions | seam instructions | seam / base | messages |"
echo "|---|---|---|---|---|"
for path in host replay; do
  read -r base_ir base_n <<<"${figure[$path-base]}"
  read -r new_ir new_n <<<"${figure[$path-new]}"
  [ "$base_ir" -gt 0 ] && [ "$new_ir" -gt 0 ] || { echo "instructions.sh: $path: no instructions counted (a symbol was not found)" >&2; exit 1; }
  echo "| $path | $((base_ir / base_n)) | $((new_ir / new_n)) | $(python3 -c "print(f'{($new_ir / $new_n) / ($base_ir / $base_n):.3f}')") | $base_n / $new_n |"
done
