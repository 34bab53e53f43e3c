#!/usr/bin/env python3
"""Writes an attitude-stream capture for timing TCP reassembly: CONNECTIONS
controllers, each with a handshake, RECORDS records in all at 60 Hz, one to
three records per segment (seeded), a host ACK after every segment, and a
FIN from both sides. Ethernet, IPv4, nanosecond pcap.

usage: make-stream-pcap.py OUT.pcap [RECORDS] [CONNECTIONS] [SEED]
"""
import random
import os
import struct
import sys

out, records, connections, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000, \
    int(sys.argv[3]) if len(sys.argv) > 3 else 8, int(sys.argv[4]) if len(sys.argv) > 4 else 1
rng = random.Random(seed)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tcp_pcap import HOST_IP as host_ip, HOST_PORT, NanosecondPcap, packet  # noqa: E402

with open(out, "wb") as f:
    write = NanosecondPcap(f).write

    conns = []
    for k in range(connections):
        ip = bytes([10, 0, 1, k % 250 + 1])
        port = 50000 + k
        c_isn, h_isn = rng.getrandbits(32), rng.getrandbits(32)
        write(packet(ip, host_ip, port, HOST_PORT, c_isn, 0, 0x02, b""))
        write(packet(host_ip, ip, HOST_PORT, port, h_isn, c_isn + 1, 0x12, b""))
        write(packet(ip, host_ip, port, HOST_PORT, c_isn + 1, h_isn + 1, 0x10, b""))
        conns.append([ip, port, c_isn + 1, h_isn + 1])
    left = records
    k = 0
    while left > 0:
        ip, port, seq, hseq = conns[k % connections]
        n = min(left, rng.choice((1, 1, 1, 1, 2, 3)))
        payload = b"".join(struct.pack("<fff", rng.uniform(-3, 3), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3)) for _ in range(n))
        write(packet(ip, host_ip, port, HOST_PORT, seq, hseq, 0x18, payload))
        conns[k % connections][2] = seq + len(payload)
        write(packet(host_ip, ip, HOST_PORT, port, hseq, seq + len(payload), 0x10, b""))
        left -= n
        k += 1
    for ip, port, seq, hseq in conns:
        write(packet(ip, host_ip, port, HOST_PORT, seq, hseq, 0x11, b""))
        write(packet(host_ip, ip, HOST_PORT, port, hseq, seq + 1, 0x11, b""))
        write(packet(ip, host_ip, port, HOST_PORT, seq + 1, hseq + 1, 0x10, b""))
