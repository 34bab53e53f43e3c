#!/usr/bin/env bash
# Regenerates the phone page's screenshots in docs/phone/ (390×844 CSS px at 3×, as an iPhone
# 14 shows it) and the example session captures/phone/guided-jumps.jsonl: `kinetrace phone` on
# loopback, driven by headless Chromium with emulated motion sensors (Tests/Browser/phone_browser.py,
# the same driver the tests use).
#
#   docs/make-phone-screenshots.sh        (needs a built kinetrace, chromium and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
kinetrace=$(realpath "${KINETRACE:-$(swift build --show-bin-path)/kinetrace}")
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# serve TRACE ARGS...: starts a session on loopback; sets $url and $pid.
serve() {
  local trace=$1; shift
  XDG_DATA_HOME="$work" "$kinetrace" phone --bind 127.0.0.1 --port 0 --no-qr --trace "$trace" "$@" > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 100); do grep -q "^phone page: " "$work/out" && break; sleep 0.05; done
  url=$(sed -n 's/^phone page: //p' "$work/out")
}
stop() { kill -INT "$pid"; wait "$pid" || true; pid=; }

# Guided: the start screen, then a cue with its jump; the session is the example capture.
serve captures/phone/guided-jumps.jsonl --cue-every 2:3 --seed 11
python3 Tests/Browser/phone_browser.py --url "$url" --scenario jump --cues 5 --screenshots docs/phone > "$work/jump.json"
stop
# Free mode, streaming.
serve "$work/free.jsonl" --mode free --gestures jump,duck
python3 Tests/Browser/phone_browser.py --url "$url" --scenario values --seconds 1 --screenshots docs/phone > /dev/null
stop
# Three phones and the operator's list.
serve "$work/many.jsonl" --mode free
python3 Tests/Browser/phone_browser.py --url "$url" --scenario many --phones 3 --seconds 2 --screenshots docs/phone > /dev/null
stop
ls -l docs/phone captures/phone
