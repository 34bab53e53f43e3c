#!/usr/bin/env python3
"""A KeepCalm host (keepcalm-json) with one deliberate fault, for the conformance suite's own tests.

    keepcalm_faulty_host.py --fault NAME         speaks the stdio adapter on stdin/stdout and reports
                                                 each jump as an observation record (kind 0x03)
    keepcalm_faulty_host.py --fault NAME --udp   prints "listening on 127.0.0.1:PORT" and serves UDP
                                                 until killed (no observation channel there)

Faults (each must be failed by the case meant to catch it, see KeepCalmFaultyHostTests):
  none               a correct host (the control)
  no-latch           jumps on every spike over the threshold
  count-latch        a jump lasts 4 messages (0.4 s only at exactly 10 Hz), not 0.4 s on its clock
  at-threshold       jumps when y >= threshold
  shared-latch       one latch for every controller
  strict-members     drops messages with members it does not know
  no-type-check      ignores the envelope and payload types and the id's form
  no-range-check     takes any number, and numbers written as strings, even NaN, inf and past 100
  crash-on-bad-json  exits on a datagram that is not JSON
  small-buffer       reads datagrams into 1024 bytes, so a longer one arrives cut
  duplicate-last-wins  takes a member given twice (the last value) instead of refusing the message
  floats-only        refuses numbers written as integers ("y":2)
  unique-ids         refuses a message whose id an earlier message used
  latch-90           a jump latches for 0.9 R
  latch-110          a jump latches for 1.1 R
  nesting-crash      exits on a datagram (of at most 4,096 bytes) nested deeper than 512 arrays or
                     objects: a recursive parser's stack
  bad-framing        writes a line of text to stdout instead of its first observation record
  late-observations  a correct host that reports each jump 400 ms after it makes it
  silent             a correct host that reports no observation at all
  wrong-controller   a correct host that reports each jump under the controller id before its own
--values none|y|xyz  what a jump observation carries (KC-OBS-2 allows each): no values, [y] (the
                     default) or [x, y, z]
Python 3 standard library only.
"""

import argparse
import json
import math
import os
import re
import socket
import sys
import threading
import time

from stdio_records import controller_records, observe

UUID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
ENVELOPE = {"type", "payload"}
SEEN_IDS = set()
PAYLOAD = {"id", "type", "x", "y", "z"}


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def unique_members(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("repeated member")
    return dict(pairs)


def number(value, fault):
    if fault == "no-range-check":
        return float(value)  # strings too: "NaN", "inf"
    if fault == "floats-only" and isinstance(value, int):
        raise ValueError("an integer")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not a number")
    value = float(value)
    if not math.isfinite(value) or abs(value) > 100:
        raise ValueError("not finite or past 100")
    return value


def depth(data):
    """How deep the datagram's brackets nest (strings not told apart: a crude parser's view)."""
    deepest = level = 0
    for byte in data:
        if byte in b"[{":
            level += 1
            deepest = max(deepest, level)
        elif byte in b"]}":
            level -= 1
    return deepest


def decode(data, fault):
    """The message's (x, y, z), or None when the datagram is not a valid KeepCalm message."""
    if fault == "small-buffer":
        data = data[:1024]
    if not 1 <= len(data) <= 4096:
        return None
    if fault == "nesting-crash" and depth(data) > 512:
        raise SystemExit("crash: nested too deep")
    try:
        hook = dict if fault == "duplicate-last-wins" else unique_members
        message = json.loads(data.decode("utf-8"), parse_constant=reject_constant, object_pairs_hook=hook)
    except Exception:
        if fault == "crash-on-bad-json":
            raise SystemExit("crash: not JSON")
        return None
    try:
        if not isinstance(message, dict) or not isinstance(message.get("payload"), dict):
            return None
        payload = message["payload"]
        if fault == "strict-members" and (set(message) - ENVELOPE or set(payload) - PAYLOAD):
            return None
        if fault != "no-type-check":
            if message.get("type") != "MotionData" or payload.get("type") != "Combined":
                return None
            if not isinstance(payload.get("id"), str) or not UUID.match(payload["id"]):
                return None
        elif "id" not in payload or "type" not in payload or "type" not in message:
            return None
        xyz = tuple(number(payload[k], fault) for k in ("x", "y", "z"))
        if fault == "unique-ids":
            if payload["id"] in SEEN_IDS:
                return None
            SEEN_IDS.add(payload["id"])
        return xyz
    except (KeyError, ValueError, TypeError, OverflowError):
        return None


class Host:
    def __init__(self, fault, threshold, refractory_ms):
        scale = {"latch-90": 0.9, "latch-110": 1.1}.get(fault, 1.0)
        self.fault, self.threshold, self.refractory = fault, threshold, scale * refractory_ms / 1000
        self.jump_ends = {}   # controller -> host clock when its jump ends
        self.count_left = {}  # controller -> messages its jump still lasts (count-latch)

    def accept(self, controller, data):
        """The message's (x, y, z) when it makes the controller jump, else None."""
        xyz = decode(data, self.fault)
        y = xyz[1] if xyz is not None else None
        now = time.monotonic()
        key = "all" if self.fault == "shared-latch" else controller
        if self.fault == "count-latch":
            left = self.count_left.get(key, 0)
            if left > 0:
                self.count_left[key] = left - 1
                return None
        if y is None:
            return None
        above = y >= self.threshold if self.fault == "at-threshold" else y > self.threshold
        if not above:
            return None
        if self.fault == "count-latch":
            self.count_left[key] = 4
            return xyz
        if self.fault != "no-latch" and now < self.jump_ends.get(key, -math.inf):
            return None
        self.jump_ends[key] = now + self.refractory
        return xyz


def serve_stdio(host, values):
    for controller, payload in controller_records():
        xyz = host.accept(controller, payload)
        if xyz is None or host.fault == "silent":
            continue
        if host.fault == "bad-framing":
            os.write(1, b"jump!\n")
            continue
        reported = {"none": [], "y": [xyz[1]], "xyz": list(xyz)}[values]
        target = max(controller - 1, 0) if host.fault == "wrong-controller" else controller
        if host.fault == "late-observations":
            threading.Timer(0.4, observe, (target, "jump", reported)).start()
        else:
            observe(target, "jump", reported)


def serve_udp(host):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    print("listening on 127.0.0.1:%d" % sock.getsockname()[1], flush=True)
    while True:
        data, sender = sock.recvfrom(65536)
        host.accept(sender, data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--udp", action="store_true")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--refractory-ms", type=int, default=400)
    parser.add_argument("--values", choices=["none", "y", "xyz"], default="y")
    args = parser.parse_args()
    sys.setrecursionlimit(2000)
    host = Host(args.fault, args.threshold, args.refractory_ms)
    serve_udp(host) if args.udp else serve_stdio(host, args.values)


if __name__ == "__main__":
    main()
