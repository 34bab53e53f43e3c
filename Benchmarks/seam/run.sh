#!/usr/bin/env bash
# The transport seam against the code before it, in one run: the same
# benchmarks, the same machine, the two binaries taking turns load by load.
#   1. replay send-time p99 (independent tcpdump stamps, Benchmarks/replay/run.sh)
#      at 10 Hz × 1, 1 kHz × 1 and 10 Hz × 3,000 (30,000 frames/s);
#   2. host ack p99 and capture drops at 10,000 frames/s (Benchmarks/live/run.sh).
# A figure more than 10 % worse than the base's is a regression (issue 29).
#
# Usage: sudo Benchmarks/seam/run.sh [BASE_REF]
#   BASE_REF  the commit to compare with (default: the last commit before the seam,
#             8244a31); built in a scratch worktree under .build-seam-base
# Environment: SKIP_BUILD=1 reuses both builds; REPEATS=N turns per load (default 2);
#   LOADS="name controllers rate_hz seconds;..." other replay loads; SKIP_LIVE=1 leaves out the live run;
#   LIVE_SECONDS, CAPTURE_SECONDS: the live run's host and capture spans (default 20 each).
# Writes results/seam.md and prints it. Exits non-zero only on harness errors.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
base_ref=${1:-8244a31}
repeats=${REPEATS:-2}
base_tree="$root/.build-seam-base/src"
base_scratch="$root/.build-seam-base/build"
new_scratch="$root/.build-bench"
out="$here/results"
die() { echo "seam/run.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }
[ "$(id -u)" -eq 0 ] || die "needs root: capturing on lo"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "base $base_ref: worktree $base_tree"
  rm -rf "$base_tree"
  git -C "$root" worktree prune
  git -C "$root" worktree add --detach "$base_tree" "$base_ref" >&2 || die "cannot check out $base_ref"
  log "building base (release)"
  (cd "$base_tree" && swift build -c release --product kinetrace --scratch-path "$base_scratch" >&2) || die "base build failed"
  log "building this tree (release)"
  (cd "$root" && swift build -c release --product kinetrace --scratch-path "$new_scratch" >&2) || die "build failed"
fi
base_bin="$base_scratch/release/kinetrace"
new_bin="$new_scratch/release/kinetrace"
[ -x "$base_bin" ] && [ -x "$new_bin" ] || die "missing binaries: $base_bin $new_bin"

work=$(mktemp -d /tmp/kinetrace-seam.XXXXXX)
if [ -n "${LOADS:-}" ]; then
  IFS=';' read -r -a loads <<<"$LOADS"
else
  loads=("10hz-x1 1 10 20" "1khz-x1 1 1000 10" "10hz-x3000 3000 10 5")
fi
names=$(for load in "${loads[@]}"; do printf '%s ' "${load%% *}"; done)
for turn in $(seq "$repeats"); do
  for load in "${loads[@]}"; do
    name=${load%% *}
    for which in base new; do
      bin=$base_bin; [ "$which" = new ] && bin=$new_bin
      log "turn $turn, $name, $which"
      RESULTS_DIR="$work/replay-$which-$name-$turn" LOADS="$load" KINETRACE_BIN="$bin" "$here/../replay/run.sh" >/dev/null 2>"$work/replay-$which-$name-$turn.log" \
        || die "replay benchmark failed ($which, $name): $(tail -3 "$work/replay-$which-$name-$turn.log")"
    done
  done
  [ "${SKIP_LIVE:-0}" = 1 ] && continue
  for which in base new; do
    bin=$base_bin; [ "$which" = new ] && bin=$new_bin
    log "turn $turn, live, $which"
    KINETRACE_BIN="$bin" "$here/../live/run.sh" "${LIVE_SECONDS:-20}" "${CAPTURE_SECONDS:-20}" >"$work/live-$which-$turn.md" 2>"$work/live-$which-$turn.log" \
      || die "live benchmark failed ($which): $(tail -3 "$work/live-$which-$turn.log")"
  done
done

mkdir -p "$out"
python3 - "$work" "$repeats" "$base_ref" "$(git -C "$root" describe --always --dirty)" "$names" "${SKIP_LIVE:-0}" >"$out/seam.md" <<'EOF'
import json, re, sys
work, repeats, base_ref, head = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
loads, skip_live = sys.argv[5].split(), sys.argv[6] == "1"
rows = []
def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
print(f"Base {base_ref} against {head}, {repeats} turn(s) each, taking turns load by load.\n")
print("| What | base, each turn | seam, each turn | seam / base (medians of the turns) | tcpreplay best p99 (same runs) |")
print("|---|---|---|---|---|")
for load in loads:
    figures = {"base": [], "new": []}
    anchors = []
    for which in ("base", "new"):
        for turn in range(1, repeats + 1):
            data = json.load(open(f"{work}/replay-{which}-{load}-{turn}/results.json"))
            entry = data["loads"][0] if isinstance(data.get("loads"), list) else list(data["loads"].values())[0]
            figures[which].append(entry["tools"]["kinetrace"]["lateness_us"]["p99"])
            if entry.get("tcpreplay_baseline_p99_us") is not None:
                anchors.append(entry["tcpreplay_baseline_p99_us"])
    print(f"| replay p99 send lateness, {load} (µs) | {' / '.join(f'{x:.1f}' for x in figures['base'])} | "
          f"{' / '.join(f'{x:.1f}' for x in figures['new'])} | {median(figures['new']) / median(figures['base']):.2f} | {' / '.join(f'{x:.1f}' for x in anchors)} |")
if skip_live:
    sys.exit(0)
ack = {"base": [], "new": []}
drops = {"base": [], "new": []}
for which in ("base", "new"):
    for turn in range(1, repeats + 1):
        text = open(f"{work}/live-{which}-{turn}.md").read()
        m = re.search(r"ack after trigger frame.*?p99 ([0-9.]+) ms, max [0-9.]+ ms over (\d+) acks", text)
        ack[which].append(float(m.group(1)) if m else float("nan"))
        acks = m.group(2) if m else "?"
        m = re.search(r"Capture at 10,000 frames/s.*?\| (\d+) of (\d+) frames captured, kernel dropped (\d+), interface dropped (\d+)", text)
        drops[which].append(f"{m.group(3)}+{m.group(4)} of {m.group(2)}" if m else "?")
print(f"| host ack p99, 100 controllers × 10 Hz, {acks} acks a turn (ms) | {' / '.join(f'{x:.3f}' for x in ack['base'])} | "
      f"{' / '.join(f'{x:.3f}' for x in ack['new'])} | {median(ack['new']) / median(ack['base']):.2f} | |")
print(f"| capture drops (kernel + interface) at 10,000 frames/s | {' / '.join(drops['base'])} | {' / '.join(drops['new'])} | | |")
EOF
cat "$out/seam.md"
rm -rf "$work"
git -C "$root" worktree remove --force "$base_tree" 2>/dev/null || true
