#!/usr/bin/env python3
"""A MotionLink v1 host with one deliberate fault, for the conformance suite's own tests.

    faulty_host.py --fault NAME      prints "listening on 127.0.0.1:PORT", serves until killed

Faults (each must be failed by the case meant to catch it, see ConformanceSuiteTests):
  none               a correct host (the control)
  endianness         writes its acks big-endian
  no-crc             accepts frames whatever their checksum
  no-refractory      triggers on every frame over the threshold
  duplicate          acks a repeated triggering datagram again
  late-acks          answers 80 ms late
  wrong-echo         echoes t_ms + 1
  wrong-destination  sends each ack to the controller heard from before this one
  crash-on-short     dies on a datagram shorter than a frame
  no-stale           processes repeated and older (reordered) frames as if new
  arrival-clock      times the refractory window by arrival, not by t_ms
Python 3 standard library only.
"""

import argparse
import math
import socket
import struct
import sys
import threading
import time
import zlib

FRAME = struct.Struct("<Q6fI")


def ack_bytes(echo, big_endian=False):
    order = ">" if big_endian else "<"
    body = struct.pack(order + "Qff", echo, 1.0, 1.0)
    return body + struct.pack(order + "I", zlib.crc32(body) & 0xFFFFFFFF)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--refractory-ms", type=int, default=400)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    print("listening on 127.0.0.1:%d" % sock.getsockname()[1], flush=True)
    newest, last_trigger = {}, {}
    previous_sender = None
    while True:
        data, sender = sock.recvfrom(2048)
        if args.fault == "crash-on-short" and len(data) < FRAME.size:
            raise SystemExit("crash: short datagram")
        if len(data) != FRAME.size:
            continue
        t_ms, ax, ay, az, wx, wy, wz, check = FRAME.unpack(data)
        if args.fault != "no-crc" and zlib.crc32(data[:32]) & 0xFFFFFFFF != check:
            continue
        if not all(math.isfinite(v) for v in (ax, ay, az, wx, wy, wz)):
            continue
        duplicate = args.fault == "duplicate" and last_trigger.get(sender) == t_ms and ay > args.threshold
        if not duplicate:
            if sender in newest and t_ms <= newest[sender] and args.fault != "no-stale":
                continue
            newest[sender] = max(t_ms, newest.get(sender, 0))
            clock = int(time.monotonic() * 1000) if args.fault == "arrival-clock" else t_ms
            last = last_trigger.get(sender)
            ready = last is None or clock - last >= args.refractory_ms or args.fault == "no-refractory"
            if not (ay > args.threshold and ready):
                previous_sender = sender
                continue
            last_trigger[sender] = clock
        echo = t_ms + 1 if args.fault == "wrong-echo" else t_ms
        payload = ack_bytes(echo, big_endian=args.fault == "endianness")
        destination = sender
        if args.fault == "wrong-destination":
            destination = previous_sender if previous_sender not in (None, sender) else (sender[0], sender[1] ^ 1)
        previous_sender = sender
        if args.fault == "late-acks":
            threading.Timer(0.08, sock.sendto, (payload, destination)).start()
        else:
            sock.sendto(payload, destination)


if __name__ == "__main__":
    main()
