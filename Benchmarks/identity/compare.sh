#!/usr/bin/env bash
# Checks that two kinetrace builds behave identically on MotionLink v1, byte
# for byte, where they should: run it before and after a refactor, with the
# old binary first. Compares, in one run:
#   1. synth output (the bundled synthetic session, the gesture corpus, and
#      more seeds and options), each also against the committed file;
#   2. replay --dry-run --format json (schedule digests and all) for the
#      bundled inputs under every bundled network and several flag sets;
#   3. conform --list and the passive suite's JSON case list;
#   4. pcap -> trace -> pcap and trace -> pcap -> trace conversions;
#   5. inspect, latency and gestures eval JSON reports.
# Known renames are listed in RENAMES below and applied to the old output
# before comparing; anything else that differs fails the run.
#
# Usage: Benchmarks/identity/compare.sh OLD_KINETRACE NEW_KINETRACE
set -uo pipefail
old=${1:?usage: compare.sh OLD_KINETRACE NEW_KINETRACE}
new=${2:?usage: compare.sh OLD_KINETRACE NEW_KINETRACE}
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

# Renames made on purpose (sed expressions applied to the old output).
RENAMES=(
  -e "s/the \([a-z0-9-]*\) profile's impairments/the \1 network's impairments/g"  # conform: profile -> network
  -e '/^{"format":"kinetrace-trace"/!s/"profile":"motionlink-v1"/"protocol":"motionlink-v1"/g'  # inspect JSON header field (not trace headers)
  -e 's/, profile motionlink-v1,/, protocol motionlink-v1,/g'                        # inspect text header line
  # Issue 25: trace minor 2 (writers, and the header a capture is read under), and the host's rule as its protocol says it.
  -e 's/^\({"format":"kinetrace-trace",.*\)"minor":1,/\1"minor":2,/'
  -e 's/\("header":{[^}]*\)"minor":1,/\1"minor":2,/'
  -e 's/kinetrace-trace 1\.1, protocol/kinetrace-trace 1.2, protocol/'
  -e 's/^Gesture rule (τ = \([0-9.]*\) g, R = \([0-9]*\) ms):$/Host (jump when ay > \1 g, then \2 ms of frame time (t_ms) before the next; a HapticAck per jump):/'
  -e 's/^rule τ = \([0-9.]*\) g, R = \([0-9]*\) ms; ack deadline \([0-9.]*\) ms/host: jump when ay > \1 g, then \2 ms of frame time (t_ms) before the next; a HapticAck per jump; reply deadline \3 ms/'
  # Issue 25, last item: generic text says reply and sender time (docs/vocabulary.md).
  -e 's/  sender clock (t_ms)   /  sender clock          /'
  -e 's/triggers \([0-9]*\), acks seen /triggers \1, replies seen /'
  -e 's/^  ack after trigger frame/  reply after trigger frame/'
  -e 's/the host acks exactly the triggers/the host answers exactly the triggers/'
  -e 's/(c2h frames: t_receive − t_ms)/(c2h samples: t_receive − sender time)/g'
  -e 's/Ack latency, raw (h2c acks: t_receive − echoed t_ms)/Reply latency, raw (h2c replies: t_receive − echoed sender time)/g'
  -e 's/Ack latency, relative/Reply latency, relative/g'
  -e 's/Ack round trip on/Reply round trip on/g'
  -e 's/Ack turnaround on the capture clock (frame seen → its ack seen)/Reply turnaround on the capture clock (frame seen → its reply seen)/g'
  -e 's/Capture time of the ack minus/Capture time of the reply minus/g'
  -e 's/Frame seen to its ack seen/Frame seen to its reply seen/g'
  -e 's/Frame to ack at the capture point/Frame to reply at the capture point/g'
  -e 's/^\(  Controller  *Frames  *Valid  *Triggers  *\)Acks /\1Replies /'
)

# Issue 25's vocabulary (docs/vocabulary.md) renamed JSON members, and JSON output is
# key-sorted, so a renamed member moves: JSON lines of both outputs are read, the old
# one's members renamed, and both written again sorted (numbers keep their exact value).
json_renamed() {  # json_renamed OLD_IN NEW_IN OLD_OUT NEW_OUT
    python3 - "$@" <<'PY'
import json, sys
KEYS = {"acks_predicted": "replies_predicted", "acks_matched": "replies_matched", "acks_unexpected": "replies_unexpected",
        "matched_acks": "matched_replies", "missing_acks": "missing_replies", "unexpected_acks": "unexpected_replies",
        "ack_delay_ms": "reply_delay_ms", "unpaired_acks": "unpaired_replies", "ack_deadline_ms": "reply_deadline_ms"}
MEASURES = {"ack_echo_raw": "reply_echo_raw", "ack_echo_relative": "reply_echo_relative", "ack_rtt": "reply_rtt",
            "ack_turnaround": "reply_turnaround", "ack_one_way_joined": "reply_one_way_joined"}
def rename(value, parent=None):
    if isinstance(value, list):
        return [rename(v, parent) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        if key == "acks" and parent != "measurements":  # a MotionLink case's own measurement keeps its name
            key = "replies" if isinstance(v, dict) else "replies_seen"  # replay's object, inspect's count
        elif key == "t_ms" and parent in ("data", "triggers"):
            key = "sender_time_ms"  # event data and replay triggers; trace labels and motion keep t_ms
        key = KEYS.get(key, key)
        if key == "measure" and v in MEASURES:
            v = MEASURES[v]
        out[key] = rename(v, key)
    if out.get("format") == "kinetrace-latency" and out.get("version") == 1:
        out["version"] = 2
    if "suite_version" in out and "format" not in out:
        out["format"], out["version"] = "kinetrace-conform", 2
    return out
def canonical(path, old):
    lines = []
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        try:
            value = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        lines.append(json.dumps(rename(value) if old else value, sort_keys=True, ensure_ascii=False) + "\n")
    return lines
open(sys.argv[3], "w", encoding="utf-8", errors="surrogateescape").writelines(canonical(sys.argv[1], True))
open(sys.argv[4], "w", encoding="utf-8", errors="surrogateescape").writelines(canonical(sys.argv[2], False))
PY
}

checks=0 failures=0
same() {  # same NAME OLD_FILE NEW_FILE
    checks=$((checks + 1))
    if cmp -s "$2" "$3"; then return 0; fi
    sed "${RENAMES[@]}" "$2" > "$2.renamed"
    if cmp -s "$2.renamed" "$3"; then return 0; fi
    json_renamed "$2.renamed" "$3" "$2.json-renamed" "$3.json-canonical"
    if cmp -s "$2.json-renamed" "$3.json-canonical"; then return 0; fi
    # A renamed table header widens its column; the values must still be the same, in order.
    tr -s ' ' < "$2.json-renamed" > "$2.spaces"; tr -s ' ' < "$3.json-canonical" > "$3.spaces"
    if cmp -s "$2.spaces" "$3.spaces"; then return 0; fi
    failures=$((failures + 1))
    echo "DIFFERS: $1"
    diff "$2.json-renamed" "$3.json-canonical" | head -5
}
run() {  # run NAME ARGS...: runs both binaries, compares standard output and exit status
    local name=$1; shift
    "$old" "$@" > "$work/old.out" 2>/dev/null; echo "exit $?" >> "$work/old.out"
    "$new" "$@" > "$work/new.out" 2>/dev/null; echo "exit $?" >> "$work/new.out"
    same "$name" "$work/old.out" "$work/new.out"
}

# 1. synth
synth() {  # synth NAME COMMITTED_FILE_OR_- ARGS...
    local name=$1 committed=$2; shift 2
    "$old" synth "$@" --out "$work/old.jsonl" > /dev/null 2>&1
    "$new" synth "$@" --out "$work/new.jsonl" > /dev/null 2>&1
    same "synth $name" "$work/old.jsonl" "$work/new.jsonl"
    if [[ "$committed" != - ]]; then same "synth $name (committed file)" "$committed" "$work/new.jsonl"; fi
}
synth bundled captures/synthetic-session.jsonl --controllers 3 --duration 60 --script random --corrupt 0.005 --seed 2026
synth default -
synth "21 controllers" - --controllers 21 --duration 30 --seed 7 --corrupt 0.01
synth idle - --script idle --duration 10 --rate 20
# The corpus table is make-corpus.sh's own; --user, because the old binary has no --persona.
corpus=$(sed -n "/<<'PERSONAS'/,/^PERSONAS\$/{//!p}" captures/gestures/make-corpus.sh)
[[ $(wc -l <<<"$corpus") -ge 8 ]] || { echo "compare.sh: cannot read the persona table from captures/gestures/make-corpus.sh" >&2; exit 2; }
while read -r user controllers seed; do
    synth "corpus $user" "captures/gestures/$user.jsonl" --user "$user" --controllers "$controllers" --duration 60 --motion-hz 50 --seed "$seed"
done <<<"$corpus"

# 2. replay --dry-run
inputs=("captures/synthetic-session.jsonl" "captures/loopback-session.jsonl" "captures/loopback-session.pcap --port 41448"
        "captures/gestures/walking.jsonl")
for input in "${inputs[@]}"; do
    for network in "" lab-5ghz crowded-event perfect harsh; do
        # shellcheck disable=SC2086
        run "replay --dry-run $input ${network:+--profile $network}" replay $input ${network:+--profile $network} --dry-run --format json
    done
    # shellcheck disable=SC2086
    {
        run "replay --dry-run $input --loop 3 --controllers 50" replay $input --dry-run --format json --loop 3 --controllers 50 --profile lab-5ghz
        run "replay --dry-run $input --timestamps original" replay $input --dry-run --format json --timestamps original --loss 10% --seed 3
        run "replay --dry-run $input --order jitter" replay $input --dry-run --format json --order jitter --delay normal:70:20 --loss gemodel:2%:25%:60%:0.1% --duplicate 1% --reorder 2% --corrupt 1% --truncate 1% --seed 9
        run "replay --dry-run $input --speed 2 --start 5 --end 30" replay $input --dry-run --format json --speed 2 --start 5 --end 30 --threshold 0.3 --refractory-ms 200
        run "replay --dry-run $input --timing fast" replay $input --dry-run --format json --timing fast --loop 2 --rate 1mbit --rate 64kbit@20
    }
done

# 3. conform case lists
run "conform --list" conform --list
run "conform --list --cases AC-*" conform --list --cases 'AC-*' --exclude 'AC-LOAD'
for capture in "captures/loopback-session.jsonl" "captures/loopback-session.pcap --port 41448" "captures/synthetic-session.jsonl"; do
    # shellcheck disable=SC2086
    "$old" conform --capture $capture --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
for c in r["cases"]: c.pop("duration_ms")
r.pop("elapsed_ms")
print(json.dumps(r, sort_keys=True))' > "$work/old.json"
    # shellcheck disable=SC2086
    "$new" conform --capture $capture --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
for c in r["cases"]: c.pop("duration_ms")
r.pop("elapsed_ms")
print(json.dumps(r, sort_keys=True))' > "$work/new.json"
    same "conform --capture $capture (case list and verdicts)" "$work/old.json" "$work/new.json"
done

# 4. conversions
for tool in old new; do
    bin=${!tool}
    "$bin" convert captures/loopback-session.pcap "$work/$tool-from-pcap.jsonl" --port 41448 > /dev/null
    "$bin" convert "$work/$tool-from-pcap.jsonl" "$work/$tool-round.pcap" > /dev/null
    "$bin" convert "$work/$tool-round.pcap" "$work/$tool-round.jsonl" --port 41448 > /dev/null
    "$bin" convert captures/synthetic-session.jsonl "$work/$tool-synthetic.pcap" > /dev/null
    "$bin" convert "$work/$tool-synthetic.pcap" "$work/$tool-synthetic.jsonl" > /dev/null
done
same "convert pcap -> trace" "$work/old-from-pcap.jsonl" "$work/new-from-pcap.jsonl"
same "convert pcap -> trace -> pcap" "$work/old-round.pcap" "$work/new-round.pcap"
same "convert trace -> pcap" "$work/old-synthetic.pcap" "$work/new-synthetic.pcap"
# A trace read from a pcap is created at the pcap's modification time and names the pcap's path in its notes.
for f in round synthetic; do
    for tool in old new; do
        sed -e '1s/"created":"[^"]*"/"created":""/' -e "1s#/$tool-$f.pcap#/$f.pcap#" "$work/$tool-$f.jsonl" > "$work/$tool-$f.normalised.jsonl"
    done
done
same "convert pcap -> trace -> pcap -> trace (but the pcap's time and name)" "$work/old-round.normalised.jsonl" "$work/new-round.normalised.jsonl"
same "convert trace -> pcap -> trace (but the pcap's time and name)" "$work/old-synthetic.normalised.jsonl" "$work/new-synthetic.normalised.jsonl"

# 5. reports
for input in captures/synthetic-session.jsonl captures/loopback-session.jsonl "captures/loopback-session.pcap --port 41448"; do
    # shellcheck disable=SC2086
    {
        run "inspect $input" inspect $input --format json
        run "inspect $input (text)" inspect $input
        run "latency $input" latency $input --format json
    }
done
strip_timing='import json, sys
r = json.load(sys.stdin)
for key in ("elapsed_ms", "evaluate_ms", "read_ms"): r.pop(key, None)
print(json.dumps(r, sort_keys=True))'
"$old" gestures eval --detector threshold --sweep threshold=0.1:1.5:0.05 captures/gestures/ --format json 2>/dev/null | python3 -c "$strip_timing" > "$work/old.json"
"$new" gestures eval --detector threshold --sweep threshold=0.1:1.5:0.05 captures/gestures/ --format json 2>/dev/null | python3 -c "$strip_timing" > "$work/new.json"
same "gestures eval --sweep (without timings)" "$work/old.json" "$work/new.json"

echo "identity: $checks checks, $failures differ"
[[ $failures -eq 0 ]]
