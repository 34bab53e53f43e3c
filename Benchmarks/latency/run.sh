#!/usr/bin/env bash
# `kinetrace latency` on a large trace, against baselines measured in the same run:
#   inspect   the same trace reader feeding a constant-memory summary (the floor for one pass)
#   numpy     an independent reference: Python's json + numpy computing the same Table I
# Each is run RUNS times; the best and the median wall time are reported, with peak RSS.
#
#   Benchmarks/latency/run.sh [FRAMES] [RUNS]     (defaults: 1000000 frames, 3 runs)
#
# Needs a release build (swift build -c release) and python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/../.."
frames=${1:-1000000}
runs=${2:-3}
kinetrace=${KINETRACE:-.build/release/kinetrace}
out=${OUT:-Benchmarks/latency/results}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# 21 controllers, as in the paper's public deployment, at 10 Hz.
controllers=21
duration=$(( (frames + controllers * 10 - 1) / (controllers * 10) ))
trace="$work/session.jsonl"
"$kinetrace" synth --out "$trace" --controllers "$controllers" --duration "$duration" --script random --seed 6 >/dev/null
records=$(( $(wc -l < "$trace") - 1 ))
bytes=$(stat -c %s "$trace")

cat > "$work/reference.py" <<'EOF'
import json, struct, sys, zlib
import numpy as np
one_way = {}
with open(sys.argv[1]) as f:
    next(f)
    for line in f:
        r = json.loads(line)
        if r["kind"] != "msg" or r["dir"] != "c2h": continue
        p = bytes.fromhex(r["payload"])
        if len(p) == 36 and zlib.crc32(p[:32]) == struct.unpack("<I", p[32:])[0]:
            one_way.setdefault(r["src"], []).append((r["t_ns"] - struct.unpack("<Q", p[:8])[0] * 10**6) / 1e6)
for name, values in [("all", sum(one_way.values(), []))] + sorted(one_way.items()):
    x = np.array(values); m, s = x.mean(), x.std(ddof=1); k = x[np.abs(x - m) <= 3 * s]
    print(name, len(x), len(k), k.mean(), np.percentile(k, 95), k.max(), k.min(), k.std(ddof=1))
EOF

# Prints "best median peak_rss_mb" over $runs runs of the command.
measure() {
  local times=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    read -r seconds kb < "$work/time"
    times+=("$seconds")
    (( kb > rss )) && rss=$kb
  done
  printf '%s\n' "${times[@]}" | sort -g | awk -v rss="$rss" '{ t[NR] = $1 } END { printf "%s %s %.0f\n", t[1], t[int((NR + 1) / 2)], rss / 1024 }'
}

echo "trace: $records records ($frames+ frames requested, $controllers controllers), $((bytes / 1048576)) MiB; $runs runs each" >&2
inspect=$(measure "$kinetrace" inspect "$trace")
latency=$(measure "$kinetrace" latency "$trace" --format json)
plot=$(measure "$kinetrace" latency "$trace" --format json --plot "$work/fig.svg")
numpy=$(measure python3 "$work/reference.py" "$trace")
svg_kb=$(( $(stat -c %s "$work/fig.svg") / 1024 ))

report() {
  local name=$1 row=$2
  read -r best median rss <<< "$row"
  read -r base_best base_median _ <<< "$inspect"
  awk -v n="$name" -v b="$best" -v m="$median" -v r="$rss" -v bb="$base_best" -v bm="$base_median" -v recs="$records" \
    'BEGIN { printf "| %s | %.2f s | %.2f s | %.2f M records/s | %d MB | %.2f× / %.2f× |\n", n, b, m, recs / b / 1e6, r, b / bb, m / bm }'
}

{
  echo "# kinetrace latency: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) vCPU, $records records, $((bytes / 1048576)) MiB"
  echo
  echo "| Command | best | median | throughput (best) | peak RSS | vs inspect (best / median) |"
  echo "|---|---|---|---|---|---|"
  report "kinetrace inspect (baseline: same reader, constant memory)" "$inspect"
  report "kinetrace latency --format json" "$latency"
  report "kinetrace latency --format json --plot (SVG ${svg_kb} KiB)" "$plot"
  report "python3 json + numpy, one-way Table I only (independent reference)" "$numpy"
} | tee "$out/latest.md"
