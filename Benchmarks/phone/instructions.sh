#!/usr/bin/env bash
# Instructions per sample of the whole server process, `kinetrace phone` against its anchor
# `kinetrace host --transport wss --path /stream`, counted by callgrind (machine load does not
# move the counts). Each server takes N MotionLink controllers at 10 Hz over wss:// for a short
# and a long run; the difference of the two totals over the difference of the samples is the
# cost of one more sample (TLS, WebSocket, the host model, and for phone its site's bookkeeping),
# with start-up and shutdown cancelled out.
# Usage: Benchmarks/phone/instructions.sh [KINETRACE]   (default: the release build in .build-bench)
#   N controllers (default 20); SHORT and LONG seconds (default 5 and 20)
# Prints a Markdown table, also written to Benchmarks/phone/results/instructions.md. Needs valgrind and objcopy.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-}
if [ -z "$bin" ]; then
  swift build -c release --product kinetrace --scratch-path .build-bench >/dev/null
  bin=$(swift build -c release --scratch-path .build-bench --show-bin-path)/kinetrace
fi
n=${N:-20} short=${SHORT:-5} long=${LONG:-20}
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is missing" >&2; exit 1; }
work=$(mktemp -d /tmp/kinetrace-phone-ir.XXXXXX)
export XDG_DATA_HOME=$work/xdg
server_pid=
cleanup() { [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# valgrind 3.19 cannot read the DWARF 5 that Swift 6 writes: count a copy without debug info.
objcopy --strip-debug "$bin" "$work/k"
"$work/k" host --transport wss --port 0 > "$work/warm" 2>&1 & server_pid=$!   # makes the certificate, uncounted
for _ in $(seq 100); do grep -q "listening on" "$work/warm" && break; sleep 0.05; done
kill -INT "$server_pid"; wait "$server_pid" || true; server_pid=

count() {   # kind seconds → "samples instructions"
  local kind=$1 seconds=$2 cmd port
  case $kind in
    phone) cmd=("$work/k" phone --bind 127.0.0.1 --port 0 --no-qr --format json) ;;
    host) cmd=("$work/k" host --transport wss --path /stream --port 0 --format json) ;;
  esac
  valgrind --tool=callgrind --callgrind-out-file="$work/$kind.cg" "${cmd[@]}" > "$work/$kind.out" 2> "$work/$kind.err" &
  server_pid=$!
  for _ in $(seq 600); do grep -q "listening on" "$work/$kind.out" && break; sleep 0.1; done
  port=$(grep -o 'listening on .*' "$work/$kind.out" | grep -o '[0-9]*$')
  "$work/k" simulate --to "wss://127.0.0.1:$port/stream" --insecure --controllers "$n" --rate 10 --duration "$seconds" --format json > "$work/sim.json"
  kill -INT "$server_pid"; wait "$server_pid" || true; server_pid=
  local samples total
  samples=$(grep -o '"valid[a-z_]*":[0-9]*' "$work/$kind.out" | grep -o '[0-9]*$')
  total=$(sed -n 's/^summary: //p' "$work/$kind.cg")
  echo "$samples $total"
}

declare -A per
rows=""
for kind in host phone; do
  read -r s1 i1 < <(count "$kind" "$short")
  read -r s2 i2 < <(count "$kind" "$long")
  [ "$s2" -gt "$s1" ] || { echo "instructions.sh: $kind received $s1 then $s2 samples" >&2; exit 1; }
  per[$kind]=$(( (i2 - i1) / (s2 - s1) ))
  rows+="| $kind | $s1 | $i1 | $s2 | $i2 | ${per[$kind]} |"$'\n'
done
mkdir -p Benchmarks/phone/results
{
  echo "# Instructions per sample: kinetrace phone vs host --transport wss"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), callgrind, $n MotionLink controllers at 10 Hz over wss://, runs of $short s and $long s."
  echo
  echo "| server | samples (short) | instructions | samples (long) | instructions | per added sample |"
  echo "|---|---|---|---|---|---|"
  printf '%s' "$rows"
  echo
  echo "phone / host per sample: $(python3 -c "print(f'{${per[phone]} / ${per[host]}:.3f}')")"
} | tee Benchmarks/phone/results/instructions.md
