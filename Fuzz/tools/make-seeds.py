#!/usr/bin/env python3
"""Writes Fuzz/corpus/<target>/ seed files from the project's real inputs:
the spec vectors, the captures in captures/, the bundled networks and the
stdio adapter's record format. Run from the repository root; needs editcap
and tshark (scripts/bootstrap installs them). Seeds named ok-* must decode;
seeds named after an error code (crc_mismatch-*, non_finite-*, ...) must fail
with it: the corpus tests check both."""
import json, os, re, shutil, struct, subprocess, sys, tempfile

root = os.getcwd()
corpus = os.path.join(root, "Fuzz", "corpus")

def put(target, name, data):
    folder = os.path.join(corpus, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)

def vectors(spec):
    """(name, expect, bytes) for every vector block in a spec."""
    text = open(os.path.join(root, "specs", spec)).read()
    for m in re.finditer(r"<!-- vector: (.*?) -->\s*```(hex|json)\n(.*?)```", text, re.S):
        attrs = dict(kv.split("=", 1) for kv in m.group(1).split())
        body = m.group(3)
        data = bytes.fromhex("".join(body.split())) if m.group(2) == "hex" else body.strip().encode()
        yield attrs["name"], attrs["expect"], data

def lines(path, count):
    with open(os.path.join(root, path), "rb") as f:
        return [next(f) for _ in range(count)]

def payloads(path, count, direction=None):
    out = []
    with open(os.path.join(root, path)) as f:
        next(f)
        for line in f:
            record = json.loads(line)
            if record.get("kind") == "msg" and (direction is None or record["dir"] == direction):
                out.append(bytes.fromhex(record["payload"]))
                if len(out) == count:
                    break
    return out

def outcome(expect):
    return "ok" if expect == "valid" else expect

def stdio_record(kind, controller, payload):
    return struct.pack(">IBBH", len(payload) + 4, kind, 0, controller) + payload

for target in ["motionlink", "trace", "pcap", "network", "stdio", "keepcalm", "attitude", "tcp", "gzip", "merge", "declaration", "declared"]:
    shutil.rmtree(os.path.join(corpus, target), ignore_errors=True)

# 1. MotionLink v1: byte 0 is the mode (0: as is), then one datagram.
for name, expect, data in vectors("motionlink-v1.md"):
    put("motionlink", f"{outcome(expect)}-{name}", b"\x00" + data)
for i, p in enumerate(payloads("captures/loopback-session.jsonl", 3, "c2h")):
    put("motionlink", f"ok-capture-frame-{i}", b"\x00" + p)
for i, p in enumerate(payloads("captures/loopback-session.jsonl", 2, "h2c")):
    put("motionlink", f"ok-capture-ack-{i}", b"\x00" + p)

# 2. Traces: the head of each kind of trace the project writes.
put("trace", "ok-loopback-head", b"".join(lines("captures/loopback-session.jsonl", 12)))
put("trace", "ok-keepcalm-head", b"".join(lines("captures/keepcalm-session.jsonl", 6)))
put("trace", "ok-attitude-head", b"".join(lines("captures/attitude-session.jsonl", 10)))
put("trace", "ok-synthetic-head", b"".join(lines("captures/synthetic-session.jsonl", 12)))
put("trace", "ok-gestures-head", b"".join(lines("captures/gestures/steady.jsonl", 12)))

# 3. Captures: the first packets of each real capture, as pcap and as pcapng, with
# the host's port (random in a live capture) changed to the protocol's default,
# which is where the reader looks. Checksums are left: the decoder ignores them.
DEFAULT_PORTS = {"loopback": 47110, "keepcalm": 47120, "attitude": 47130}

def host_port(trace):
    with open(os.path.join(root, "captures", trace)) as f:
        next(f)
        for line in f:
            record = json.loads(line)
            if record.get("kind") == "msg":
                hostport = record["dst"] if record["dir"] == "c2h" else record["src"]
                return int(hostport.rsplit(":", 1)[1])

def rewrite_ports(capture, old, new):
    """Classic pcap, Ethernet, IPv4 or IPv6, UDP or TCP: the port `old` becomes `new`."""
    out = bytearray(capture)
    endian = "<" if capture[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    at = 24
    while at + 16 <= len(out):
        caplen = struct.unpack(endian + "I", out[at + 8:at + 12])[0]
        packet = at + 16
        ethertype = struct.unpack(">H", out[packet + 12:packet + 14])[0]
        ip = packet + 14
        if ethertype == 0x0800:
            transport, protocol = ip + (out[ip] & 0x0F) * 4, out[ip + 9]
        elif ethertype == 0x86DD:
            transport, protocol = ip + 40, out[ip + 6]
        else:
            transport, protocol = None, None
        if protocol in (6, 17):
            for field in (transport, transport + 2):
                if struct.unpack(">H", out[field:field + 2])[0] == old:
                    out[field:field + 2] = struct.pack(">H", new)
        at = packet + caplen
    return bytes(out)

with tempfile.TemporaryDirectory() as work:
    for name, packets in [("loopback", "1-8"), ("keepcalm", "1-6"), ("attitude", "1-12")]:
        head = os.path.join(work, f"{name}-head.pcap")
        subprocess.run(["editcap", "-F", "pcap", "-r", os.path.join(root, "captures", f"{name}-session.pcap"), head, packets],
                       check=True)
        rewritten = rewrite_ports(open(head, "rb").read(), host_port(f"{name}-session.jsonl"), DEFAULT_PORTS[name])
        put("pcap", f"ok-{name}-head.pcap", rewritten)
        with open(head, "wb") as f:
            f.write(rewritten)
        pcapng = os.path.join(work, f"{name}.pcapng")
        subprocess.run(["editcap", "-F", "pcapng", head, pcapng], check=True)
        put("pcap", f"ok-{name}-head.pcapng", open(pcapng, "rb").read())

# 4. Networks: every bundled one.
for file in sorted(os.listdir(os.path.join(root, "specs", "networks"))):
    if file.endswith(".json"):
        put("network", f"ok-{file[:-5]}", open(os.path.join(root, "specs", "networks", file), "rb").read())

# 5. Stdio records: byte 0 is the read size, then records of real payloads and an observation.
ml = payloads("captures/loopback-session.jsonl", 2, "c2h") + payloads("captures/loopback-session.jsonl", 1, "h2c")
kc = payloads("captures/keepcalm-session.jsonl", 1)
put("stdio", "ok-motionlink", b"\x07" + stdio_record(1, 0, ml[0]) + stdio_record(1, 1, ml[1]) + stdio_record(2, 0, ml[2]))
put("stdio", "ok-keepcalm", b"\x0f" + stdio_record(1, 3, kc[0]))
put("stdio", "ok-observation", b"\x03" + stdio_record(3, 0, b'{"decision":"jump","t_ms":1767225600123,"values":[0.75,-0.5]}'))

# 6. KeepCalm JSON: the spec's vectors and captured messages.
for name, expect, data in vectors("keepcalm-json.md"):
    put("keepcalm", f"{outcome(expect)}-{name}", data)
for i, p in enumerate(payloads("captures/keepcalm-session.jsonl", 3)):
    put("keepcalm", f"ok-capture-{i}", p)

# 7. Attitude stream: byte 0 is the append size, then records back to back.
for name, expect, data in vectors("attitude-stream.md"):
    put("attitude", f"{outcome(expect)}-{name}", b"\x0b" + data)
put("attitude", "ok-capture-stream", b"\x05" + b"".join(payloads("captures/attitude-session.jsonl", 8)))

# 8. TCP segments of the attitude capture, in the tcp target's coding.
fields = subprocess.run(["tshark", "-r", os.path.join(root, "captures", "attitude-session.pcap"), "-c", "24", "-T", "fields",
                         "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.flags", "-e", "tcp.seq_raw", "-e", "tcp.payload"],
                        check=True, capture_output=True, text=True).stdout
host_port = None
clients = {}
out = bytearray(b"\x00")
for row in fields.splitlines():
    src, dst, flags, seq, payload = (row.split("\t") + [""] * 5)[:5]
    flags = int(flags, 16)
    if host_port is None and flags == 0x02:
        host_port = int(dst)  # the first bare SYN goes to the host
    from_host = int(src) == host_port
    client = clients.setdefault(int(dst) if from_host else int(src), len(clients) % 4)
    data = bytes.fromhex(payload.replace(":", ""))[:255]
    who = (1 << 3) | (4 if from_host else 0) | client
    out += bytes([who, flags & 0xFF]) + struct.pack("<I", int(seq)) + bytes([len(data)]) + data
put("tcp", "ok-attitude-capture", bytes(out))

# 9. gzip framing: byte 0 picks the buffer and read sizes, then a gzip file (mtime 0, so the bytes are fixed).
import gzip as gz, zlib
head = b"".join(lines("captures/synthetic-session.jsonl", 12))
put("gzip", "ok-trace-head", b"\x03" + gz.compress(head, mtime=0))
put("gzip", "ok-two-members", b"\x42" + gz.compress(head[:700], mtime=0) + gz.compress(head[700:], mtime=0))
put("gzip", "ok-zero-padding", b"\x81" + gz.compress(head, mtime=0) + bytes(64))
put("gzip", "ok-empty-member", b"\x00" + gz.compress(b"", mtime=0))
flushed = zlib.compressobj(6, zlib.DEFLATED, 31)
put("gzip", "ok-cut-at-flush", b"\xc0" + flushed.compress(head) + flushed.flush(zlib.Z_SYNC_FLUSH))
put("gzip", "bad_record-trailing-garbage", b"\x05" + gz.compress(head, mtime=0) + b"garbage")
put("gzip", "bad_record-garbage-after-padding", b"\x01" + gz.compress(head, mtime=0) + bytes(20) + b"\x01")
corrupt = bytearray(gz.compress(head, mtime=0))
corrupt[40] ^= 0xFF
put("gzip", "bad_record-corrupt-block", b"\x02" + bytes(corrupt))

# 10. merge: byte 0 (bit 0: three inputs, bit 1: a 1 s window, bit 2: whole files with their headers,
# bits 4-7: waiting bound per input - 2), then the inputs separated by 0xFF.
records = lines("captures/synthetic-session.jsonl", 20)[2:]
shards = [b"".join(records[i::3]) for i in range(3)]
put("merge", "ok-three-shards", bytes([0x03 | 14 << 4]) + b"\xff".join(shards))
put("merge", "ok-two-shards-1ms", bytes([0x00 | 14 << 4]) + shards[0] + b"\xff" + shards[1])
def event(t, name):
    return b'{"kind":"event","t_ns":%d,"event":"%s","data":{}}\n' % (t, name.encode())
base = 1767225600000000000
crowd = [b"".join(event(base, f"{c}{i}") for i in range(6)) + event(base + 2000000000, f"{c}-late") for c in "abc"]
put("merge", "bad_record-crowded-together", bytes([0x03 | 6 << 4]) + b"\xff".join(crowd))
put("merge", "out_of_order-late-record", bytes([0x02 | 14 << 4]) + event(base + 5000000000, "a") + event(base, "late") + b"\xff" + event(base, "b"))
whole = b"".join(lines("captures/loopback-session.jsonl", 8))
put("merge", "ok-whole-files", bytes([0x06 | 14 << 4]) + whole + b"\xff" + whole.split(b"\n", 1)[0] + b"\n")
put("merge", "bad_header-different-clocks", bytes([0x06 | 14 << 4]) + whole + b"\xff" + whole.replace(b'"clock":"pcap"', b'"clock":"monotonic"', 1))

# 11. Declarations: the seed declarations as they are and as their canonical text would be
# (sorted members, no spaces), the examples, a declaration of each encoding and framing they leave out,
# and refusals (named "refused-": any DeclarationError).
for file in sorted(os.listdir(os.path.join(root, "specs", "protocols"))):
    if file.endswith(".json"):
        text = open(os.path.join(root, "specs", "protocols", file), "rb").read()
        put("declaration", f"ok-{file[:-5]}", text)
        put("declaration", f"ok-{file[:-5]}-compact", json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
for file in sorted(os.listdir(os.path.join(root, "examples", "protocols"))):
    if file.endswith(".json"):
        put("declaration", f"ok-example-{file[:-5]}", open(os.path.join(root, "examples", "protocols", file), "rb").read())
def declaration(name, transport, messages, clock=None, host=None, extra=None):
    d = {"kinetrace_protocol": 1, "name": name, "version": "1", "summary": "fuzz seed", "transport": transport, "rate_hz": 10, "messages": messages}
    if clock: d["sender_clock"] = {"unit": clock, "epoch": "arbitrary"}
    if host: d["host"] = host
    d.update(extra or {})
    return json.dumps(d, indent=1).encode()
put("declaration", "ok-osc-bundles", declaration("osc-seed", {"kind": "udp", "default_port": 9000}, [
    {"kind": "accel", "direction": "controller_to_host", "encoding": "osc", "address": "/acc", "bundles": "allowed",
     "arguments": [{"name": "t", "type": "t", "role": "sender_time"}, {"name": "x", "type": "f", "role": "user_acceleration.x"},
                   {"name": "s", "type": "s"}, {"name": "b", "type": "b"}, {"name": "on", "type": "T"}, {"name": "off", "type": "F"},
                   {"name": "n", "type": "i", "range": [0, 9]}, {"name": "d", "type": "d", "finite": True}]},
    {"kind": "buzz", "direction": "host_to_controller", "encoding": "osc", "address": "/buzz", "bundles": "refused",
     "arguments": [{"name": "echo", "type": "t", "role": "echo_time"}, {"name": "level", "type": "f", "range": [0, 1]}]}], clock="ms",
    host={"behaviour": "threshold", "quantity": "user_acceleration.x", "above": 0.5, "window": {"ms": 400, "clock": "sender"},
          "stale": {"ignore": True, "resync_ms": 2000}, "decision": "jump", "reply": {"kind": "buzz", "deadline_ms": 50, "fields": {"level": 1}}}))
put("declaration", "ok-text-delimiter", declaration("text-seed", {"kind": "tcp", "default_port": 9001, "framing": {"delimiter": "\r\n", "max_length": 256}}, [
    {"kind": "line", "direction": "controller_to_host", "encoding": "text", "separator": ",", "max_length": 200,
     "fields": [{"name": "tag", "type": "string", "constant": "M"}, {"name": "t", "type": "integer", "role": "sender_time"},
                {"name": "x", "type": "number", "role": "gravity.x", "finite": True}, {"name": "who", "type": "string", "role": "controller_id"}]},
    {"kind": "hello", "direction": "controller_to_host", "encoding": "text", "separator": ",",
     "fields": [{"name": "tag", "type": "string", "constant": "H"}, {"name": "v", "type": "integer", "range": [1, 3]}]}], clock="s",
    host={"behaviour": "apply", "decision": "lean", "decision_values": ["gravity.x"]}))
put("declaration", "ok-length-prefix-offset", declaration("prefix-seed", {"kind": "tcp", "default_port": 9002,
    "framing": {"length_prefix": {"width": 4, "byte_order": "little", "offset": 1, "counts_itself": True, "max_length": 4096}}}, [
    {"kind": "imu", "direction": "controller_to_host", "encoding": "binary", "byte_order": "big",
     "fields": [{"name": "magic", "type": "u8", "constant": 7}, {"name": "t", "type": "i64", "role": "sender_time"},
                {"name": "w", "type": "f64", "role": "rotation_rate.z", "range": [-40, 40]}, {"name": "raw", "type": "bytes", "length": 3, "constant": "a1b2c3"},
                {"name": "pad", "type": "padding", "length": 1}, {"name": "sum", "type": "u32", "check": {"algorithm": "crc32", "from": 0, "to": 21}}]}],
    clock="us"))
put("declaration", "ok-json-vector", declaration("json-seed", {"kind": "udp", "default_port": 9003}, [
    {"kind": "m", "direction": "controller_to_host", "encoding": "json", "max_length": 512, "unknown_members": "refused", "repeated_members": "first",
     "members": [{"path": "k", "type": "string", "constant": "m"}, {"path": "p.id", "name": "id", "type": "string", "format": "uuid_upper", "role": "message_id"},
                 {"path": "p.v.a", "name": "a", "type": "number", "role": "own.x"}, {"path": "p.v.b", "name": "b", "type": "number", "role": "own.y", "required": False},
                 {"path": "ok", "type": "boolean"}]}],
    host={"behaviour": "threshold", "quantity": "own.x", "above": 1, "window": {"ms": 100, "clock": "arrival"}, "decision": "hit"},
    extra={"vectors": [{"name": "tilt", "summary": "seed", "sum_of": ["gravity", "attitude"]}]}).replace(b'"own.', b'"tilt.'))
put("declaration", "refused-not-json", b'{"kinetrace_protocol": 1, "name": ')
put("declaration", "refused-unknown-member", declaration("colour-seed", {"kind": "udp", "default_port": 9005}, [
    {"kind": "r", "direction": "controller_to_host", "encoding": "binary", "fields": [{"name": "a", "type": "u8"}]}], extra={"colour": "red"}))
put("declaration", "refused-newer-language", b'{"kinetrace_protocol": 2}')
put("declaration", "refused-fixed-length-mismatch", declaration("fixed-seed", {"kind": "tcp", "default_port": 9004, "framing": {"fixed_length": 8}}, [
    {"kind": "r", "direction": "controller_to_host", "encoding": "binary", "byte_order": "little", "fields": [{"name": "a", "type": "f32"}]}]))

# 12. Declared protocols: byte 0 picks the declaration (0 motionlink-v1, 1 keepcalm-json,
# 2 attitude-stream, 3 OSC/UDP, 4 JSON lines/TCP, 5 length-prefixed binary/TCP: the
# declared target's inline ones), bit 3 repairs checks, bits 4-7 vary the chunks.
def osc_string(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 4)
def osc(address, tags, args):
    return osc_string(address) + osc_string("," + tags) + args
def crc16(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc
ml = payloads("captures/loopback-session.jsonl", 2, "c2h") + payloads("captures/loopback-session.jsonl", 1, "h2c")
put("declared", "ok-motionlink-frame", b"\x00" + ml[0])
put("declared", "ok-motionlink-ack", b"\x00" + ml[2])
put("declared", "crc_mismatch-motionlink-frame", b"\x00" + ml[1][:-1] + bytes([ml[1][-1] ^ 1]))
put("declared", "ok-keepcalm-motion", b"\x01" + payloads("captures/keepcalm-session.jsonl", 1)[0])
put("declared", "ok-attitude-stream", b"\x12" + b"".join(payloads("captures/attitude-session.jsonl", 4)))
accel = osc("/accxyz", "tffd", struct.pack(">QffD".replace("D", "d"), 1767225600000, 0.25, 0.75, -1.0))
gyro = osc("/gyro", "fsbTi", struct.pack(">f", 0.5) + osc_string("left") + struct.pack(">i", 3) + b"abc\0" + struct.pack(">i", 42))
put("declared", "ok-osc-accel", b"\x03" + accel)
put("declared", "ok-osc-bundle", b"\x03" + osc_string("#bundle") + struct.pack(">Q", 1) + struct.pack(">i", len(accel)) + accel
    + struct.pack(">i", len(gyro)) + gyro)
put("declared", "ok-osc-reply", b"\x03" + osc("/buzz", "tf", struct.pack(">Qf", 1767225600000, 1.0)))
put("declared", "ok-json-lines", b"\x24" + b'{"type":"motion","t":1767225600000000,"acc":{"x":0.1,"y":-0.5,"z":9.8},"id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f"}\n'
    + b'{"type":"ping","echo":1767225600000000}\n{"acc":{"y":1,"x":2},"id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f","t":5,"type":"motion","still":true,"extra":[1,{}]}\n')
put("declared", "invalid_length-json-lines-cut", b"\x44" + b'{"type":"motion","t":1,"acc":{"x":0.1,"y":-0.5},"id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f"}\n{"type":"mot')
def lp(body):
    return struct.pack(">H", len(body)) + body
imu = b"\xa5" + struct.pack(">Qhh", 1767225600000000000, -3, 1000) + struct.pack("<h", 2) + struct.pack(">d", 0.5) + bytes(3) + b"tag!"
imu += struct.pack(">H", crc16(imu))
ack = b"\x5a" + struct.pack("<Q", 1767225600000000000)
ack += bytes([0 ^ __import__("functools").reduce(lambda a, b: a ^ b, ack)])
hello = b"\xa5\x02" + bytes([(0xa5 + 2) & 0xFF])
put("declared", "ok-length-prefix", b"\x35" + lp(imu) + lp(ack) + lp(hello))
put("declared", "ok-length-prefix-repaired", b"\x3d" + lp(imu[:-2] + b"\0\0"))
put("declared", "invalid_length-length-prefix-too-long", b"\x05" + struct.pack(">H", 63) + bytes(63))
print("seeds written to Fuzz/corpus/")
