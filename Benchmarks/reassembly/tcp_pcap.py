"""What the capture generators here share: a TCP segment in Ethernet and IPv4
(checksums left zero, as captures with offload show them), and a nanosecond
pcap writer whose packets are stamped 1 µs apart from 2026-01-01."""
import struct

HOST_PORT = 47130
HOST_IP = bytes([10, 0, 0, 1])


def packet(src_ip, dst_ip, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src_ip, dst_ip) + tcp
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip


class NanosecondPcap:
    """A pcap (magic A1B23C4D, Ethernet, snaplen 262144) open for writing."""

    def __init__(self, f):
        self.f, self.t = f, 1_767_225_600_000_000_000
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))

    def write(self, data):
        self.t += 1_000
        self.f.write(struct.pack("<IIII", self.t // 1_000_000_000, self.t % 1_000_000_000, len(data), len(data)) + data)
