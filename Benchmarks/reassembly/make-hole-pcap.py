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
import os
import sys

out = sys.argv[1]
connections = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
segments = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
order = sys.argv[4] if len(sys.argv) > 4 else "forward"
if not (1 <= connections <= 60000 and 1 <= segments <= 1_000_000 and order in ("forward", "reverse")):
    sys.exit("make-hole-pcap.py: CONNECTIONS 1–60000, SEGMENTS 1–1000000, ORDER forward|reverse")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tcp_pcap import HOST_IP as host_ip, HOST_PORT, NanosecondPcap, packet  # noqa: E402

with open(out, "wb") as f:
    write = NanosecondPcap(f).write

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
