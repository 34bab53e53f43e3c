#!/usr/bin/env python3
"""Writes an attitude-stream capture whose every connection waits behind a
hole: CONNECTIONS controllers, each with a handshake, then SEGMENTS one-byte
segments at stream offsets 1, 2, … (offset 0 is never sent), interleaved
across connections, and no FIN. What a reassembler holds at the end is
SEGMENTS one-byte segments per connection: the worst case for its per-segment
overhead. Ethernet, IPv4, nanosecond pcap.

usage: make-hole-pcap.py OUT.pcap [CONNECTIONS] [SEGMENTS] [ORDER]
  ORDER  forward (default: offsets ascending, so waiting segments abut) or
         reverse (descending, so no segment abuts one that waited before it)
"""
import struct
import sys

out = sys.argv[1]
connections = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
segments = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
order = sys.argv[4] if len(sys.argv) > 4 else "forward"
if not (1 <= connections <= 60000 and 1 <= segments <= 1_000_000 and order in ("forward", "reverse")):
    sys.exit("make-hole-pcap.py: CONNECTIONS 1–60000, SEGMENTS 1–1000000, ORDER forward|reverse")
HOST_PORT = 47130
host_ip = bytes([10, 0, 0, 1])


def packet(src_ip, dst_ip, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src_ip, dst_ip) + tcp
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip


with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    t = 1_767_225_600_000_000_000

    def write(data):
        global t
        t += 1_000
        f.write(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(data), len(data)) + data)

    conns = []
    for k in range(connections):
        ip = bytes([10, 1, k // 250 % 250, k % 250 + 1])
        port = 20000 + k % 40000
        isn = (k * 2654435761) & 0xFFFFFFFF
        write(packet(ip, host_ip, port, HOST_PORT, isn, 0, 0x02, b""))
        conns.append((ip, port, isn + 1))
    offsets = range(1, segments + 1) if order == "forward" else range(segments, 0, -1)
    for offset in offsets:
        for ip, port, first in conns:
            write(packet(ip, host_ip, port, HOST_PORT, first + offset, 1, 0x18, bytes([offset & 0xFF])))
