#!/usr/bin/env bash
# The reference host must pass every case of keepcalm-json, attitude-stream
# and the example declarations (their suites derived from the declaration:
# issue 26) in N consecutive runs (issue 14). For each protocol, runs
# stability.sh (default 20 runs) against the reference host behind the stdio
# adapter, reporting its decisions (`kinetrace host --stdio --observe`), then
# checks that every case of every run is PASS, not merely that no MUST failed.
#
#   Benchmarks/conform/stability-protocols.sh [RUNS]
#   KINETRACE=path/to/kinetrace OUT=dir Benchmarks/conform/stability-protocols.sh 20
#
# Exit status: 0 when every case of every run passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-20}"
if [[ -z "${KINETRACE:-}" ]]; then
  swift build -c release --product kinetrace >/dev/null
  KINETRACE="$(swift build -c release --show-bin-path)/kinetrace"
fi
export KINETRACE
out="${OUT:-$(mktemp -d /tmp/kinetrace-stability-protocols.XXXXXX)}"
failed=0
for protocol in keepcalm-json attitude-stream examples/protocols/osc-motion.json examples/protocols/ndjson-motion.json \
                Fuzz/declarations/length-prefix-tcp.json; do
  echo "== $protocol"
  name="$(basename "$protocol" .json)"
  OUT="$out/$name" Benchmarks/conform/stability.sh "$runs" --protocol "$protocol" \
    --exec "'$KINETRACE' host --stdio --observe --protocol $protocol" || failed=1
  python3 - "$out/$name" "$runs" <<'PY' || failed=1
import glob, json, sys
out, runs = sys.argv[1], int(sys.argv[2])
reports = sorted(glob.glob(out + "/run-*.json"))
# Over the stdio adapter there are no connections to flood: that case alone is INCONCLUSIVE there.
bad = [(p, c["id"], c["verdict"]) for p in reports for c in json.load(open(p))["cases"]
       if c["verdict"] != "PASS" and not (c["id"] == "AC-AS-CONN-FLOOD" and c["verdict"] == "INCONCLUSIVE")]
for path, cid, verdict in bad:
    print(f"not PASS: {path.rsplit('/', 1)[1]} {cid} {verdict}")
print(f"{len(reports)} of {runs} reports, {len(bad)} case result(s) not PASS")
sys.exit(0 if len(reports) == runs and not bad else 1)
PY
done
echo "reports in $out"
[[ $failed -eq 0 ]]
