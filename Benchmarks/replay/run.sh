#!/usr/bin/env bash
# Replay send-time accuracy: `kinetrace replay` against tcpreplay, both sending
# the same c2h-only pcap over loopback, both timestamped by an independent
# tcpdump capture on lo at nanosecond precision. See README.md next to this file.
#
# Usage: Benchmarks/replay/run.sh [--quick]
#   --quick        short durations, to check the harness (figures not meaningful)
# Environment:
#   SEED=N         synth seed (default 1)
#   SKIP_BUILD=1   use the existing .build-bench binary
#   KINETRACE_BIN  use this kinetrace binary instead (implies SKIP_BUILD=1)
#   KEEP_WORK=1    keep inputs, captures and logs (path printed at the end)
#   REPLAY_EXTRA   extra options for `kinetrace replay` (e.g. "--spin-us 500")
#   TCPREPLAY      the tcpreplay binary to compare with (default: tcpreplay on PATH,
#                  installed with apt-get if missing). Debian's 4.4.x drifts; the
#                  issue-17 figures use 4.5.5 built from source in /tmp:
#                    ./autogen.sh && ./configure --prefix=/tmp/tcpreplay-4.5.5 && make install
#                    TCPREPLAY=/tmp/tcpreplay-4.5.5/bin/tcpreplay Benchmarks/replay/run.sh
#   LOADS          "name controllers rate_hz duration_s;..." instead of the built-in loads
#   RESULTS_DIR    where results.{json,md} go (default: results/ next to this file)
#   HOST_EXTRA     options for the reference host (e.g. --immediate-mode)
# Needs root (capture and tcpreplay on lo). Writes results/results.{json,md}.
# Exits non-zero only on harness errors; missed targets are reported, not asserted.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch="$root/.build-bench"
results=${RESULTS_DIR:-$here/results}
seed=${SEED:-1}
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# name controllers rate_hz duration_s. Durations give p99 at least 6 samples
# beyond it (600 frames at the slowest load) while the whole run stays ~3 min.
# The stadium loads (3,000 to 10,000 controllers) find the highest rate whose p99 stays ≤ 100 µs.
if [ -n "${LOADS:-}" ]; then
  IFS=';' read -r -a loads <<<"$LOADS"
elif [ "$quick" = 1 ]; then
  loads=("10hz-x1 1 10 10" "1000hz-x1 1 1000 2" "10hz-x1000 1000 10 2" "10hz-x10000 10000 10 2")
else
  loads=("10hz-x1 1 10 60" "1000hz-x1 1 1000 10" "10hz-x1000 1000 10 10"
         "10hz-x3000 3000 10 5" "10hz-x5000 5000 10 5" "10hz-x10000 10000 10 5")
fi
for load in "${loads[@]}"; do
  [[ $load =~ ^[A-Za-z0-9_-]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] || { echo "run.sh: bad load '$load' (name controllers rate_hz duration_s)" >&2; exit 64; }
done

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

[ "$(id -u)" -eq 0 ] || die "needs root: capturing and injecting on lo"
command -v tcpdump >/dev/null || die "tcpdump is missing (scripts/bootstrap installs it)"
command -v python3 >/dev/null || die "python3 is missing"
tcpreplay=${TCPREPLAY:-tcpreplay}
if [ -n "${TCPREPLAY:-}" ]; then
  [ -x "$TCPREPLAY" ] || die "TCPREPLAY=$TCPREPLAY is not an executable"
elif ! command -v tcpreplay >/dev/null; then
  log "installing tcpreplay"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tcpreplay >/dev/null \
    || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tcpreplay >/dev/null; } \
    || die "could not install tcpreplay"
fi

if [ -z "${KINETRACE_BIN:-}" ] && [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "building kinetrace (release, $scratch)"
  (cd "$root" && swift build -c release --scratch-path "$scratch" --product kinetrace >&2) || die "build failed"
fi
bin=${KINETRACE_BIN:-$scratch/release/kinetrace}
[ -x "$bin" ] || die "no kinetrace binary at $bin"

work=$(mktemp -d /tmp/kinetrace-replay-bench.XXXXXX)
pids=()

# Stop a child we started: TERM first (tcpdump and the host flush and print
# their summary), then KILL if it has not gone within 3 s.
stop_pid() {
  local pid=$1 kept=() p
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
  pids=("${kept[@]}")  # never signal a reaped (possibly reused) pid again
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  while [ ${#pids[@]} -gt 0 ]; do stop_pid "${pids[0]}"; done
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "run.sh: work files kept in $work" >&2; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start tcpdump on lo and wait until it is really capturing, so the first
# packet of a run cannot be missed. Sets cap_pid.
start_capture() {  # out.pcap log filter
  # -B: 64 MiB ring so 10,000 frames/s never drop; -s 128: headers + 36-byte frame suffice.
  tcpdump -i lo -n --time-stamp-precision=nano -B 65536 -s 128 -w "$1" "$3" >"$2" 2>&1 &
  cap_pid=$!
  pids+=("$cap_pid")
  for _ in $(seq 100); do grep -q "listening on" "$2" && return 0; sleep 0.05; done
  die "tcpdump did not start: $(cat "$2")"
}

# libpcap hands packets over a TPACKET_V3 block at a time (1 s timeout); wait
# past that so the last block is written before tcpdump is stopped.
stop_capture() {
  sleep 2
  stop_pid "$cap_pid"
}

# User + system CPU seconds from /usr/bin/time's "%U %S" (its last line: the first may be a signal note).
cpu_seconds() { tail -n 1 "$1" 2>/dev/null | awk 'NF == 2 { printf "%.2f", $1 + $2 }'; }

# Read help into a variable first: `cmd | grep -q` can fail under pipefail (SIGPIPE).
has_option() { local help; help=$("$bin" "$1" --help 2>&1 || true); [[ "$help" == *"$2"* ]]; }

# tcpreplay: original timing (no -x/-M/-t), preloaded so file reads cannot
# delay sends. Each timer this version offers among gtod (its default) and
# nano is run, and the better one is the baseline: which is more accurate
# depends on the build and machine, and the comparison should be fair.
tcpreplay_opts=(--intf1=lo --preload-pcap)
tcpreplay_help=$("$tcpreplay" --help 2>&1 || true)
tcpreplay_timers=()
if [[ "$tcpreplay_help" == *"--timer"* ]]; then
  for timer in gtod nano; do [[ "$tcpreplay_help" == *"$timer"* ]] && tcpreplay_timers+=("$timer"); done
fi
[ ${#tcpreplay_timers[@]} -gt 0 ] || tcpreplay_timers=(default)
tcpreplay_version=$("$tcpreplay" --version 2>&1 | head -1 || true)

have_replay=0
"$bin" replay --help >/dev/null 2>&1 && have_replay=1
replay_opts=(--timing original --port 47110 --format json)
if [ "$have_replay" = 1 ]; then
  # Keep payloads byte for byte so captured frames match the input.
  has_option replay "--timestamps" && replay_opts+=(--timestamps original)
  # shellcheck disable=SC2206  # REPLAY_EXTRA is meant to split into words
  [ -n "${REPLAY_EXTRA:-}" ] && replay_opts+=(${REPLAY_EXTRA})
else
  log "kinetrace replay is not available in this build: measuring tcpreplay only"
fi

meta="$work/meta.txt"
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel=$(uname -r)"
  echo "cpus=$(nproc)"
  echo "seed=$seed"
  echo "quick=$quick"
  echo "tcpreplay_version=$tcpreplay_version"
  echo "tcpreplay_options=${tcpreplay_opts[*]} --timer={${tcpreplay_timers[*]}}"
  echo "tcpdump_version=$(tcpdump --version 2>&1 | head -1)"
  echo "libpcap_version=$(tcpdump --version 2>&1 | sed -n 2p)"
  echo "kinetrace_version=$("$bin" --version 2>&1 | head -1)"
  echo "kinetrace_replay_available=$have_replay"
  echo "kinetrace_options=$([ "$have_replay" = 1 ] && echo "${replay_opts[*]}" || echo "n/a")"
  echo "sink=kinetrace host --port 0 ${HOST_EXTRA:+$HOST_EXTRA }(reference host on 127.0.0.1)"
} >"$meta"
manifest="$work/manifest.tsv"
: >"$manifest"

for load in "${loads[@]}"; do
  read -r name controllers rate duration <<<"$load"
  dir="$work/$name"
  mkdir -p "$dir"
  log "$name: synthesizing $controllers controller(s) × $rate Hz for $duration s"
  "$bin" synth --out "$dir/input.jsonl" --controllers "$controllers" --rate "$rate" \
    --duration "$duration" --seed "$seed" >&2
  "$bin" convert "$dir/input.jsonl" "$dir/all.pcap" >&2
  # Only controller→host frames are sent by either tool; nano precision keeps
  # the schedule exact (tcpdump would otherwise rewrite it in microseconds).
  tcpdump -r "$dir/all.pcap" --time-stamp-precision=nano -w "$dir/input.pcap" 'udp dst port 47110' 2>/dev/null
  input="$dir/input.pcap"

  # tcpreplay: the converted frames go to 10.0.0.1:47110 with made-up MACs; no
  # socket needs to exist for them. The capture filter picks exactly those.
  for timer in "${tcpreplay_timers[@]}"; do
    opts=("${tcpreplay_opts[@]}")
    [ "$timer" = default ] || opts+=(--timer="$timer")
    tool="tcpreplay-$timer"
    log "$name: tcpreplay ${opts[*]}"
    start_capture "$dir/$tool.cap.pcap" "$dir/$tool.cap.log" "udp and dst host 10.0.0.1 and dst port 47110"
    code=0
    /usr/bin/time -f "%U %S" -o "$dir/$tool.cpu" "$tcpreplay" "${opts[@]}" "$input" >"$dir/$tool.log" 2>&1 || code=$?
    stop_capture
    [ "$code" = 0 ] || log "$name: tcpreplay exited $code: $(tail -3 "$dir/$tool.log")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$controllers" "$rate" "$duration" \
      "$tool" ran "$input" "$dir/$tool.cap.pcap" "$dir/$tool.cap.log" 47110 "$code" "" \
      "tcpreplay ${opts[*]} input.pcap" | sed "s/\$/\t$(cpu_seconds "$dir/$tool.cpu")/" >>"$manifest"
  done

  if [ "$have_replay" = 0 ]; then
    printf '%s\t%s\t%s\t%s\tkinetrace\tskipped (no replay subcommand)\t\t\t\t0\t0\t\t\n' \
      "$name" "$controllers" "$rate" "$duration" >>"$manifest"
    continue
  fi

  # kinetrace replay needs a live sink: it stops on ICMP port unreachable.
  # The reference host on an ephemeral port also sends the acks back.
  # shellcheck disable=SC2086  # HOST_EXTRA is meant to split into words
  "$bin" host --port 0 ${HOST_EXTRA:-} >"$dir/host.log" 2>&1 &
  host_pid=$!
  pids+=("$host_pid")
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'listening on .*:[0-9]*' "$dir/host.log" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || die "host did not start: $(cat "$dir/host.log")"

  log "$name: kinetrace replay ${replay_opts[*]} --to 127.0.0.1:$port"
  start_capture "$dir/kinetrace.cap.pcap" "$dir/kinetrace.cap.log" "udp and dst host 127.0.0.1 and dst port $port"
  code=0
  /usr/bin/time -f "%U %S" -o "$dir/kinetrace.cpu" \
    "$bin" replay "$input" --to "127.0.0.1:$port" "${replay_opts[@]}" >"$dir/kinetrace.json" 2>"$dir/kinetrace.log" || code=$?
  stop_capture
  stop_pid "$host_pid"
  [ "$code" = 0 ] || log "$name: kinetrace replay exited $code: $(tail -3 "$dir/kinetrace.log")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$controllers" "$rate" "$duration" \
    kinetrace ran "$input" "$dir/kinetrace.cap.pcap" "$dir/kinetrace.cap.log" "$port" "$code" "$dir/kinetrace.json" \
    "kinetrace replay input.pcap --to 127.0.0.1:PORT ${replay_opts[*]}" | sed "s/\$/\t$(cpu_seconds "$dir/kinetrace.cpu")/" >>"$manifest"
done

mkdir -p "$results"
python3 "$here/analyze.py" --manifest "$manifest" --meta "$meta" \
  --json "$results/results.json" --markdown "$results/results.md" || die "analysis failed"
log "results in $results/results.json and $results/results.md"
