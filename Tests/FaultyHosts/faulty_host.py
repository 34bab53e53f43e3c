#!/usr/bin/env python3
"""A MotionLink v1 host with one deliberate fault, for the conformance suite's own tests.

    faulty_host.py --fault NAME      prints "listening on 127.0.0.1:PORT", serves until killed

Faults (each must be failed by the case meant to catch it: FaultyHostTests, CaseFailureTests):
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
  inclusive-threshold
                     triggers at ay >= threshold, not only above it
  keepalive          acks every 25th frame in a row that is below the threshold (a "heartbeat")
  slow-acks          answers 20 ms late: inside the 50 ms deadline, past the 10 ms SHOULD
  double-under-load  while over 500 datagrams arrived in the last second, acks each trigger twice
                     (as if a second worker took the same frame)
  dropout-rearm      after 500 ms or more of a controller's frame time with no frame (a dropout),
                     ignores its triggers until it sends a frame below the threshold
  state-before-crc   takes a frame's t_ms as the newest before checking its CRC, so a corrupted
                     t_ms far ahead makes the controller's later frames stale
  no-resync          never ends a stale lock-out (ML-STATE-4): one frame stamped far ahead
                     silences its controller for good
  unbounded-state    never forgets a controller, whatever --max-controllers says (ML-STATE-2)

The correct host forgets a controller after --stale-resync-ms of arrival time with only stale
frames from it (ML-STATE-4), and beyond --max-controllers the least recently heard (ML-STATE-2).
Python 3 standard library only.
"""

import argparse
import collections
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
    parser.add_argument("--max-controllers", type=int, default=65536)
    parser.add_argument("--stale-resync-ms", type=int, default=2000)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    print("listening on 127.0.0.1:%d" % sock.getsockname()[1], flush=True)
    newest, last_trigger = {}, {}
    previous_sender = None
    quiet = {}  # keepalive: below-threshold frames in a row, per controller
    arrivals = collections.deque()  # double-under-load: arrival times over the last second
    rearm = set()  # dropout-rearm: controllers back from a dropout, not yet seen below the threshold
    accepted_at = {}  # arrival time (monotonic s) of each controller's newest accepted frame
    heard = collections.OrderedDict()  # controllers, least recently heard first

    def forget(controller):
        for table in (newest, last_trigger, quiet, accepted_at, heard):
            table.pop(controller, None)
        rearm.discard(controller)
    while True:
        data, sender = sock.recvfrom(2048)
        if args.fault == "double-under-load":
            now = time.monotonic()
            arrivals.append(now)
            while arrivals[0] < now - 1.0:
                arrivals.popleft()
        if args.fault == "crash-on-short" and len(data) < FRAME.size:
            raise SystemExit("crash: short datagram")
        if len(data) != FRAME.size:
            continue
        t_ms, ax, ay, az, wx, wy, wz, check = FRAME.unpack(data)
        now = time.monotonic()
        stale = sender in newest and t_ms <= newest[sender]
        if stale and args.fault != "no-resync" and args.stale_resync_ms > 0 \
                and now - accepted_at.get(sender, now) >= args.stale_resync_ms / 1000:
            forget(sender)  # only stale frames for the resync time: the sender starts fresh
            stale = False
        if args.fault == "state-before-crc" and not stale:
            newest[sender] = t_ms
        if args.fault != "no-crc" and zlib.crc32(data[:32]) & 0xFFFFFFFF != check:
            continue
        if not all(math.isfinite(v) for v in (ax, ay, az, wx, wy, wz)):
            continue
        heard[sender] = True
        heard.move_to_end(sender)
        if args.fault != "unbounded-state" and len(heard) > args.max_controllers:
            forget(next(iter(heard)))
        above = ay >= args.threshold if args.fault == "inclusive-threshold" else ay > args.threshold
        if args.fault == "keepalive":
            quiet[sender] = 0 if above else quiet.get(sender, 0) + 1
            if quiet[sender] == 25:
                quiet[sender] = 0
                sock.sendto(ack_bytes(t_ms), sender)
        duplicate = args.fault == "duplicate" and last_trigger.get(sender) == t_ms and above
        if not duplicate:
            if stale and args.fault != "no-stale":
                continue
            if args.fault == "dropout-rearm" and sender in newest and t_ms - newest[sender] >= 500:
                rearm.add(sender)
            if not stale:
                accepted_at[sender] = now
            newest[sender] = max(t_ms, newest.get(sender, 0))
            if sender in rearm and not above:
                rearm.discard(sender)
            clock = int(time.monotonic() * 1000) if args.fault == "arrival-clock" else t_ms
            last = last_trigger.get(sender)
            ready = last is None or clock - last >= args.refractory_ms or args.fault == "no-refractory"
            if not (above and ready) or sender in rearm:
                previous_sender = sender
                continue
            last_trigger[sender] = clock
        echo = t_ms + 1 if args.fault == "wrong-echo" else t_ms
        payload = ack_bytes(echo, big_endian=args.fault == "endianness")
        destination = sender
        if args.fault == "wrong-destination":
            destination = previous_sender if previous_sender not in (None, sender) else (sender[0], sender[1] ^ 1)
        previous_sender = sender
        if args.fault == "double-under-load" and len(arrivals) > 500:
            sock.sendto(payload, destination)
        if args.fault in ("late-acks", "slow-acks"):
            delay = 0.08 if args.fault == "late-acks" else 0.02
            threading.Timer(delay, sock.sendto, (payload, destination)).start()
        else:
            sock.sendto(payload, destination)


if __name__ == "__main__":
    main()
