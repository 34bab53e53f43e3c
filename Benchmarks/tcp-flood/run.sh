#!/usr/bin/env bash
# 1,100 idle TCP connections against `kinetrace host --protocol attitude-stream` at its default
# connection cap (1,024), then a phone streaming 60 records at 60 Hz (issue 24, finding 5).
# Prints whether the host closed the phone, how many idle connections it closed, and the host's
# summary. Before the fix the 1,025th connection and every later one (the phone) were refused.
#   KINETRACE=.build/release/kinetrace Benchmarks/tcp-flood/run.sh [IDLE]
set -euo pipefail
cd "$(dirname "$0")/../.."
kinetrace=${KINETRACE:-.build/release/kinetrace}
idle=${1:-1100}
ulimit -n 4096
work=$(mktemp -d)
trap 'kill "$host" 2>/dev/null || true; rm -rf "$work"' EXIT
"$kinetrace" host --protocol attitude-stream --port 0 --format json > "$work/host.out" 2> "$work/host.err" &
host=$!
for _ in $(seq 100); do grep -q "listening on" "$work/host.out" 2>/dev/null && break; sleep 0.05; done
port=$(head -1 "$work/host.out" | sed 's/.*://')
python3 - "$port" "$idle" <<'PY'
import select, socket, struct, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
time.sleep(0.5)
phone = socket.create_connection(("127.0.0.1", port))
record = struct.pack("<3f", 0.5, -0.25, 1.0)
sent = 0
try:
    for _ in range(60):
        phone.sendall(record)
        sent += 1
        time.sleep(1 / 60)
except OSError as error:  # the host refused the phone: reset or closed
    print(f"phone closed by the host after {sent} records: {error}")
    sys.exit(0)
def ended(s, ms):
    p = select.poll(); p.register(s, select.POLLIN)
    if not p.poll(ms): return False
    try: return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except ConnectionResetError: return True
phone_ended = ended(phone, 200)
closed = sum(1 for s in idle if ended(s, 0))
print(f"phone closed by the host: {phone_ended}; idle connections closed by the host: {closed} of {count}")
PY
kill -TERM "$host"; wait "$host" || true
echo "host summary: $(tail -1 "$work/host.out")"
