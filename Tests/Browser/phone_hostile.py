#!/usr/bin/env python3
"""Attacks `kinetrace phone`'s pages and side channel as a lying phone would, over TLS.

Each case prints what the server did; the Swift test (PhoneSiteHostileTests) judges it.
Usage: phone_hostile.py HOST PORT [--phones-full | --cue-chain]. Prints one JSON object.
"""
import base64, json, os, socket, ssl, struct, sys, time

HOST, PORT = sys.argv[1], int(sys.argv[2])
CONTEXT = ssl.create_default_context()
CONTEXT.check_hostname = False
CONTEXT.verify_mode = ssl.CERT_NONE


def connect():
    raw = socket.create_connection((HOST, PORT), timeout=5)
    return CONTEXT.wrap_socket(raw, server_hostname="localhost")


def http(request):
    s = connect()
    s.sendall(request)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ssl.SSLError, ConnectionResetError):
        pass
    s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return status, body


class Socket:
    """A WebSocket client that can also send what a browser never would."""

    def __init__(self, path):
        self.s = connect()
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET {path} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise RuntimeError(f"closed during the upgrade to {path}")
            head += chunk
        self.status = int(head.split(b" ", 2)[1])
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        header = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, message):
        self.frame(1, json.dumps(message).encode() if not isinstance(message, (bytes, str)) else (message.encode() if isinstance(message, str) else message))

    def _read(self, n, deadline):
        while len(self.buffer) < n:
            self.s.settimeout(max(0.01, deadline - time.time()))
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self, timeout=2.0):
        """The next message: ('text', obj), ('close', code), ('eof', None) or ('timeout', None)."""
        deadline = time.time() + timeout
        try:
            b0, b1 = self._read(2, deadline)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2, deadline))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8, deadline))[0]
            payload = self._read(n, deadline)
        except (socket.timeout, ssl.SSLError, TimeoutError):
            return ("timeout", None)
        except (EOFError, ConnectionResetError):
            return ("eof", None)
        opcode = b0 & 0x0F
        if opcode == 8:
            return ("close", struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None)
        if opcode == 1:
            return ("text", json.loads(payload))
        return ("other", opcode)

    def until(self, kind, timeout=3.0):
        """Messages until one of `kind` (a type, or 'close'); the last one."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.receive(deadline - time.time())
            if got[0] in ("eof", "timeout"):
                return got
            if got[0] == "close" and kind == "close":
                return got
            if got[0] == "text" and got[1].get("type") == kind:
                return got
        return ("timeout", None)


def token(n):
    return f"hostile{n:04d}abcdef"


def cue_chain():
    """A guided phone whose stream reconnects twice, then switches modes back and forth: cues
    must keep one cadence (one chain per channel), not one more each time it is introduced."""
    c = Socket("/control")
    c.send({"type": "hello", "phone": token(99), "name": "Cue", "mode": "guided"})
    for _ in range(3):
        stream = Socket(f"/stream?phone={token(99)}")
        c.until("welcome")
        stream.s.close()
        time.sleep(0.1)
    stream = Socket(f"/stream?phone={token(99)}")
    c.until("welcome")
    c.send({"type": "mode", "mode": "free"})
    c.send({"type": "mode", "mode": "guided"})
    cues, deadline = 0, time.time() + 3.0
    while time.time() < deadline:
        kind, message = c.receive(deadline - time.time())
        if kind == "text" and message["type"] == "cue":
            cues += 1
    stream.s.close()
    print(json.dumps({"cues_in_3s": cues}))


def main():
    if "--cue-chain" in sys.argv:
        return cue_chain()
    r = {}
    r["unknown_path"] = http(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")[0]
    r["post"] = http(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")[0]
    status, body = http(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    r["head"] = [status, len(body)]
    status, body = http(b"GET /phones.json HTTP/1.1\r\nHost: x\r\n\r\n")
    r["phones_json"] = [status, json.loads(body)]
    r["huge_head"] = http(b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n")[0]
    r["other_upgrade"] = Socket("/elsewhere").status

    c = Socket("/control")
    c.send("not json")
    r["not_json"] = c.until("refused")[1]["reason"]
    c.send({"type": "label", "gesture": "jump", "sender_time_ms": 1})
    r["label_first"] = c.until("refused")[1]["reason"]
    c.send({"type": "hello", "phone": "x", "name": "Eve"})
    r["bad_token"] = c.until("refused")[1]["reason"]
    c.send({"type": "hello", "phone": token(1), "name": "Eve\u0007"})
    r["control_name"] = c.until("refused")[1]["reason"]
    c.send({"type": "hello", "phone": token(1), "name": "E" * 33})
    r["long_name"] = c.until("refused")[1]["reason"]
    c.send({"type": "hello", "phone": token(1), "name": "  Eve  ", "mode": "free"})
    c.send({"type": "label", "gesture": "jump", "sender_time_ms": int(time.time() * 1000)})
    r["label_before_stream"] = c.until("refused")[1]["reason"]
    stream = Socket(f"/stream?phone={token(1)}")
    welcome = c.until("welcome")
    r["welcome"] = welcome[1] if welcome[0] == "text" else welcome[0]
    now = int(time.time() * 1000)
    c.send({"type": "label", "gesture": "cartwheel", "sender_time_ms": now})
    r["unknown_gesture"] = c.until("refused")[1]["reason"]
    c.send({"type": "label", "gesture": "jump", "sender_time_ms": now - 366 * 86_400_000})
    r["label_a_year_off"] = c.until("refused")[1]["reason"]
    c.send({"type": "label", "gesture": "jump", "sender_time_ms": now, "duration_ms": 0})
    r["zero_duration"] = c.until("refused")[1]["reason"]
    c.send({"type": "label", "gesture": "jump", "sender_time_ms": now, "duration_ms": 500})
    r["good_label"] = c.until("labelled")[1]
    for _ in range(12):
        c.send({"type": "label", "gesture": "duck", "sender_time_ms": now})
    accepted = refused = 0
    deadline = time.time() + 3
    while accepted + refused < 12 and time.time() < deadline:
        kind, message = c.receive(1.0)
        if kind == "text" and message["type"] == "labelled":
            accepted += 1
        elif kind == "text" and message["type"] == "refused":
            refused += 1
    r["label_flood"] = [accepted, refused]
    twin = Socket("/control")
    twin.send({"type": "hello", "phone": token(1), "name": "Twin"})
    r["second_channel"] = twin.until("close")[1]

    big = Socket("/control")
    big.send("x" * 5000)
    r["oversized_message"] = big.until("close")[1]
    binary = Socket("/control")
    binary.frame(2, b"\x01\x02")
    r["binary_frame"] = binary.until("close")[1]
    orphan = Socket("/control")
    orphan.frame(0, b"{}")
    r["orphan_continuation"] = orphan.until("close")[1]
    nested = Socket("/control")
    nested.frame(1, b'{"type":', fin=False)
    nested.frame(1, b'"alive"}')
    r["message_inside_message"] = nested.until("close")[1]
    noisy = Socket("/control")
    noisy.send({"type": "hello", "phone": token(2), "name": "Noisy"})
    for _ in range(60):
        noisy.send({"type": "nonsense"})
    r["noisy"] = noisy.until("close", timeout=5)[1]

    status, body = http(b"GET /phones.json HTTP/1.1\r\nHost: x\r\n\r\n")
    r["phones_after"] = json.loads(body)
    if "--phones-full" in sys.argv:
        keep = []
        for n in range(3):
            s = Socket("/control")
            s.send({"type": "hello", "phone": token(10 + n), "name": f"P{n}"})
            keep.append(s)
        r["phones_full"] = [s.until("close", timeout=1.5)[1] for s in keep]
    stream.s.close()
    print(json.dumps(r))


if __name__ == "__main__":
    main()
