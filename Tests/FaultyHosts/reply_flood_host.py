#!/usr/bin/env python3
"""A hostile MotionLink v1 host on UDP, for the bounded-memory tests and
Benchmarks/flood (issue 15, finding 4).

    reply_flood_host.py --mode big     answers every datagram with one 65,507-byte datagram
    reply_flood_host.py --mode flood   after a sender's first datagram, sends valid acks to
                                       every sender heard, without pause
    reply_flood_host.py --mode many    answers every datagram with nine valid acks nobody asked
                                       for: just under the harness's flood limits, so a run
                                       goes on for its whole length, counting them

Prints "listening on 127.0.0.1:PORT" and serves until killed. Python 3 standard library only.
"""

import argparse
import socket
import struct
import threading
import zlib

BIG = bytes(range(256)) * 255 + bytes(227)  # 65,507 bytes: the largest IPv4 UDP payload


def ack(echo):
    body = struct.pack("<Qff", echo, 1.0, 1.0)
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["big", "flood", "many"], required=True)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    sock.bind(("127.0.0.1", 0))
    print("listening on 127.0.0.1:%d" % sock.getsockname()[1], flush=True)
    senders = {}
    lock = threading.Lock()

    def flood():
        sent = 0
        while True:
            with lock:
                targets = list(senders.items())
            if not targets:
                threading.Event().wait(0.001)
                continue
            for address, stamp in targets:
                try:
                    sock.sendto(ack(stamp + 1 + sent % 1000), address)
                except OSError:
                    pass  # a closed controller socket answers ICMP unreachable: keep flooding the rest
                sent += 1

    if args.mode == "flood":
        threading.Thread(target=flood, daemon=True).start()
    while True:
        try:
            data, sender = sock.recvfrom(65536)
        except OSError:
            continue
        if args.mode == "big":
            try:
                sock.sendto(BIG, sender)
            except OSError:
                pass
        elif args.mode == "many":
            stamp = struct.unpack_from("<Q", data)[0] if len(data) >= 8 else 0
            for k in range(9):
                try:
                    sock.sendto(ack(stamp + 1 + k), sender)
                except OSError:
                    pass
        elif len(data) >= 8:
            with lock:
                senders[sender] = struct.unpack_from("<Q", data)[0]


if __name__ == "__main__":
    main()
