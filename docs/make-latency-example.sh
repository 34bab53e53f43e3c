#!/usr/bin/env bash
# Regenerates docs/latency-example.{svg,png,txt}: the bundled synthetic session
# replayed through the paper's lab network (lab-5ghz) into the reference host on
# loopback, the host's own trace analysed with `kinetrace latency`, and the
# figure rendered to PNG with librsvg so it can be looked at.
#
#   docs/make-latency-example.sh        (needs a built kinetrace and rsvg-convert)
set -euo pipefail
cd "$(dirname "$0")/.."
kinetrace=$(realpath "${KINETRACE:-$(swift build --show-bin-path)/kinetrace}")
docs=$(pwd)/docs
work=$(mktemp -d)
host_pid=""
cleanup() { [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$kinetrace" host --port 0 --trace "$work/host.jsonl" > "$work/host.out" 2>&1 &
host_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
address=$(sed -n 's/^listening on //p' "$work/host.out")

# Original timing (60 s) and wall-clock stamps, so the host's raw one-way latency is the network's delay plus loopback.
"$kinetrace" replay captures/synthetic-session.jsonl --to "$address" --network lab-5ghz --seed 5 \
  --timestamps wallclock --record "$work/replay.jsonl" > "$work/replay.txt"
kill -TERM "$host_pid"; wait "$host_pid" || true; host_pid=""

# From inside the work folder, so the reports name the trace "host.jsonl", not a temporary path.
(cd "$work" && "$kinetrace" latency host.jsonl --plot-measure one-way-raw --plot "$docs/latency-example.svg") > docs/latency-example.txt
rsvg-convert -o docs/latency-example.png docs/latency-example.svg

# Where the host's raw latency differs from the network: the delays the replayer drew (its impair
# events), its send to the host's receive stamp, and the whole-ms truncation of t_ms.
python3 - "$work/replay.jsonl" "$work/host.jsonl" > docs/latency-example-breakdown.txt <<'PY'
import json, struct, sys, zlib
import numpy as np
def records(path):
    with open(path) as f:
        next(f)
        for line in f:
            yield json.loads(line)
def frames(path):
    for r in records(path):
        p = bytes.fromhex(r.get("payload", ""))
        if r["kind"] == "msg" and r["dir"] == "c2h" and len(p) == 36 and zlib.crc32(p[:32]) == struct.unpack("<I", p[32:])[0]:
            yield (r["src"], struct.unpack("<Q", p[:8])[0]), r["t_ns"]
drawn = np.array([r["data"]["delay_ns"] / 1e6 for r in records(sys.argv[1]) if r["kind"] == "event" and r["event"] == "impair" and "delay_ns" in r["data"]])
sent, received = dict(frames(sys.argv[1])), dict(frames(sys.argv[2]))
both = [k for k in sent if k in received]
wire = np.array([(received[k] - sent[k]) / 1e6 for k in both])
raw = np.array([(received[k] - k[1] * 10**6) / 1e6 for k in both])
def stats(x): return f"mean {x.mean():.3f}, sd {x.std(ddof=1):.3f}, p95 {np.percentile(x, 95):.3f}, min {x.min():.3f}, max {x.max():.3f} ms (n {len(x)})"
print("delays the replayer drew (lab-5ghz):     ", stats(drawn))
print("host raw one-way, no outlier removal:    ", stats(raw))
print("replayer send -> host receive stamp:     ", stats(wire))
print("raw - delay - that (t_ms truncation etc):", f"mean {raw.mean() - drawn.mean() - wire.mean():.3f} ms")
PY
echo "wrote docs/latency-example.svg, .png, .txt and -breakdown.txt" >&2
