#!/usr/bin/env python3
"""A 3D-mouse host (attitude-stream) with one deliberate fault, for the conformance suite's own tests.

    attitude_faulty_host.py --fault NAME         speaks the stdio adapter on stdin/stdout (each kind 0x01
                                                 record is one write of a controller's stream) and reports
                                                 each attitude it applies as an observation record (kind 0x03)
    attitude_faulty_host.py --fault NAME --tcp   prints "listening on 127.0.0.1:PORT" and serves TCP until
                                                 killed, one thread per connection (no observation channel)

Faults (each must be failed by the case meant to catch it: NewProtocolFaultyHostTests, CaseFailureTests):
  none                  a correct host (the control)
  one-record-per-read   assumes one read is one record: applies the first 12 bytes of each read, drops the rest
  big-endian            reads the floats big-endian
  no-range-check        applies finite records whatever their range
  dies-on-nan           closes the connection (on stdio: exits) on a non-finite record
  stops-reading         stops reading after 30 records
  resync-on-long-read   takes a read of 12 bytes or more to start on a record boundary, dropping
                        any partial record buffered before it
  read-cap              keeps at most 256 bytes of each read (a fixed buffer), dropping the rest
  partial-gives-up      drops a partial record that 4 more reads have not completed
  late-observations     a correct host that reports each applied attitude 400 ms after applying it
  slow-apply            applies each record correctly but takes 20 ms over it: slower than 60 Hz
  shared-buffer         reassembles every controller's bytes in one buffer, as if one stream
  silent                a correct host that reports no observation at all
  wrong-controller      a correct host that reports each attitude under the controller id before its own
--values exact|shortest how an observation writes each float32: its exact value (the default) or the
                        shortest decimal that identifies it (AS-OBS-2 allows both)
  refuses-over-cap      (TCP) holds at most --max-connections (32) open and closes every connection past
                        them at once, however idle the held ones are: a connection flood locks phones out
Python 3 standard library only.
"""

import argparse
import math
import socket
import struct
import sys
import threading
import time

from stdio_records import controller_records, observe, observe_text

PI_F32 = struct.unpack("<f", struct.pack("<f", math.pi))[0]
HALF_PI_F32 = struct.unpack("<f", struct.pack("<f", math.pi / 2))[0]

SIZE = 12


class Stream:
    """One controller's stream: records cut at 12-byte offsets, whatever the reads."""

    def __init__(self, fault):
        self.fault, self.buffer, self.records = fault, b"", 0
        self.partial_reads = 0  # partial-gives-up: reads since the buffered partial record began

    def read(self, data):
        """The attitudes this read makes the host apply; raises SystemExit when the host gives up."""
        if self.fault == "one-record-per-read":
            chunks = [data[:SIZE]] if len(data) >= SIZE else []
        else:
            if self.fault == "resync-on-long-read" and len(data) >= SIZE:
                self.buffer = b""
            if self.fault == "read-cap":
                data = data[:256]
            if self.fault == "partial-gives-up" and self.buffer:
                self.partial_reads += 1
                if self.partial_reads > 4:
                    self.buffer, self.partial_reads = b"", 0
            self.buffer += data
            cut = len(self.buffer) // SIZE * SIZE
            chunks = [self.buffer[i:i + SIZE] for i in range(0, cut, SIZE)]
            self.buffer = self.buffer[cut:]
            if cut:
                self.partial_reads = 0
        applied = []
        for chunk in chunks:
            self.records += 1
            roll, pitch, yaw = struct.unpack(">3f" if self.fault == "big-endian" else "<3f", chunk)
            if not all(math.isfinite(v) for v in (roll, pitch, yaw)):
                if self.fault == "dies-on-nan":
                    raise SystemExit("crash: a non-finite record")
                continue
            # AS-VALUE-2: bounds are pi and pi/2 rounded to the nearest float32.
            in_range = abs(roll) <= PI_F32 and abs(pitch) <= HALF_PI_F32 and abs(yaw) <= PI_F32
            if in_range or self.fault == "no-range-check":
                applied.append([roll, pitch, yaw])
        return applied

    @property
    def stalled(self):
        return self.fault == "stops-reading" and self.records >= 30


def shortest_float32(value):
    """The shortest decimal text whose nearest float32 is value's (value is a float32's exact value)."""
    if not math.isfinite(value):
        return None
    for digits in range(1, 10):
        text = "%.*g" % (digits, value)
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
            return text
    return repr(value)


def serve_stdio(fault, values_form):
    streams = {}
    for controller, payload in controller_records():
        stream = streams.setdefault(0 if fault == "shared-buffer" else controller, Stream(fault))
        for values in stream.read(payload):
            if fault == "slow-apply":
                time.sleep(0.02)
            if fault == "silent":
                continue
            reported = max(controller - 1, 0) if fault == "wrong-controller" else controller
            texts = [shortest_float32(v) for v in values] if values_form == "shortest" else [None]
            if values_form == "shortest" and None not in texts:
                observe_text(reported, "attitude", "[" + ",".join(texts) + "]")
            elif fault == "late-observations":
                threading.Timer(0.4, observe, (reported, "attitude", values)).start()
            else:
                observe(reported, "attitude", values)
        if any(s.stalled for s in streams.values()):
            time.sleep(3600)  # stops reading its input altogether


def serve_connection(conn, fault, on_close=None):
    stream = Stream(fault)
    with conn:
        try:
            serve_stream(conn, stream)
        finally:
            if on_close:
                on_close()


def serve_stream(conn, stream):
    while True:
        if stream.stalled:
            time.sleep(3600)
        try:
            data = conn.recv(4096)
        except ConnectionResetError:
            return
        if not data:
            return
        try:
            stream.read(data)
        except SystemExit:
            return  # closes the connection


def serve_tcp(fault, max_connections):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(256)
    print("listening on 127.0.0.1:%d" % server.getsockname()[1], flush=True)
    lock, open_count = threading.Lock(), [0]

    def closed():
        with lock:
            open_count[0] -= 1

    while True:
        conn, _ = server.accept()
        with lock:
            refuse = fault == "refuses-over-cap" and open_count[0] >= max_connections
            if not refuse:
                open_count[0] += 1
        if refuse:
            conn.close()  # the fault: the newcomer goes, whoever holds the slots
            continue
        threading.Thread(target=serve_connection, args=(conn, fault, closed), daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--tcp", action="store_true")
    parser.add_argument("--max-connections", type=int, default=32)
    parser.add_argument("--values", choices=["exact", "shortest"], default="exact")
    args = parser.parse_args()
    serve_tcp(args.fault, args.max_connections) if args.tcp else serve_stdio(args.fault, args.values)


if __name__ == "__main__":
    main()
