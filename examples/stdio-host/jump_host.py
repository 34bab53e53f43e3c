#!/usr/bin/env python3
"""A MotionLink v1 jump host behind Kinetrace's stdio adapter.

Reads stdio-adapter-v1 records (specs/stdio-adapter-v1.md) on stdin, applies
the gesture rule of specs/motionlink-v1.md section 6 per controller id, and
answers every trigger with one HapticAck record on stdout. Exits 0 at the end
of its input. Python 3 standard library only.

    kinetrace replay captures/synthetic-session.jsonl \\
        --exec "python3 examples/stdio-host/jump_host.py"
"""

import argparse
import math
import os
import struct
import sys
import zlib

# The framing is big-endian; the MotionLink payloads it carries are little-endian.
RECORD_HEADER = struct.Struct(">IBBH")  # L, kind, flags, controller id
MOTION_FRAME = struct.Struct("<Q6fI")  # t_ms, ax ay az, wx wy wz, check
ACK_BODY = struct.Struct("<Qff")  # echo_t_ms, intensity, sharpness; the CRC follows

KIND_TO_HOST = 0x01
KIND_TO_CONTROLLER = 0x02
MAX_LENGTH = 4 + 65535

EX_PROTOCOL = 76  # what kinetrace itself exits with on a framing error

STDIN, STDOUT = 0, 1


class FramingError(Exception):
    def __init__(self, offset, message):
        super().__init__(f"stdin, byte {offset}: {message}")


def read_records(fd):
    """Yields (offset, kind, flags, controller, payload) for each whole record.

    The stream may split or join records at any byte, so bytes are buffered
    until a record is complete; one read is never assumed to be one record.
    """
    buffer = bytearray()
    consumed = 0  # stream offset of buffer[0], for error messages
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            if buffer:
                raise FramingError(consumed, f"end of input inside a record ({len(buffer)} bytes)")
            return
        buffer += chunk
        start = 0
        while len(buffer) - start >= RECORD_HEADER.size:
            length, kind, flags, controller = RECORD_HEADER.unpack_from(buffer, start)
            if not 4 <= length <= MAX_LENGTH:
                # Without a trustworthy length there is no next record to find.
                raise FramingError(consumed + start, f"record length {length} is outside 4...{MAX_LENGTH}")
            end = start + 4 + length
            if end > len(buffer):
                break
            yield consumed + start, kind, flags, controller, bytes(buffer[start + RECORD_HEADER.size:end])
            start = end
        del buffer[:start]
        consumed += start


def valid_frame(payload):
    """(t_ms, ay) of a valid MotionFrame (ML-VALID-1), else None.

    Checks run in the spec's order: length, CRC, then the floats. A 20-byte
    HapticAck fails the length test here too: at a host it is wrong-direction
    input (ML-VALID-3), dropped like any other invalid datagram.
    """
    if len(payload) != MOTION_FRAME.size:
        return None
    t_ms, ax, ay, az, wx, wy, wz, check = MOTION_FRAME.unpack(payload)
    if zlib.crc32(payload[:32]) != check:
        return None
    if not all(math.isfinite(value) for value in (ax, ay, az, wx, wy, wz)):
        return None
    return t_ms, ay


def haptic_ack(echo_t_ms, intensity=1.0, sharpness=1.0):
    body = ACK_BODY.pack(echo_t_ms, intensity, sharpness)
    return body + struct.pack("<I", zlib.crc32(body))


class JumpRule:
    """ML-GESTURE-1..4, with state per controller id."""

    def __init__(self, threshold, refractory_ms):
        self.threshold = threshold
        self.refractory_ms = refractory_ms
        self.newest = {}  # controller -> newest accepted t_ms
        self.last_trigger = {}  # controller -> t_ms of its last trigger

    def triggers(self, controller, t_ms, ay):
        newest = self.newest.get(controller)
        # No earlier frame means nothing is stale yet, even a t_ms of 0.
        if newest is not None and t_ms <= newest:
            return False  # stale: no trigger and no state change
        self.newest[controller] = t_ms
        last = self.last_trigger.get(controller)
        # ay is the binary32 value widened to a Python float (binary64): an
        # exact comparison, as the spec asks. Timing is frame time only.
        if ay > self.threshold and (last is None or t_ms - last >= self.refractory_ms):
            self.last_trigger[controller] = t_ms
            return True
        return False


def write_all(fd, data):
    # os.write has no user-space buffer, so each record leaves at once; a
    # short write only means the socket was momentarily full.
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def serve(rule, verbose):
    for offset, kind, flags, controller, payload in read_records(STDIN):
        if kind != KIND_TO_HOST:
            raise FramingError(offset + 4, f"kind 0x{kind:02x}, expected 0x01 (controller to host)")
        if flags != 0:
            raise FramingError(offset + 5, f"flags 0x{flags:02x}, expected 0")
        frame = valid_frame(payload)
        if frame is None:
            continue  # ML-VALID-2: dropped silently, no ack, no state change
        t_ms, ay = frame
        if rule.triggers(controller, t_ms, ay):
            ack = haptic_ack(t_ms)
            write_all(STDOUT, RECORD_HEADER.pack(4 + len(ack), KIND_TO_CONTROLLER, 0, controller) + ack)
            if verbose:
                print(f"jump_host: controller {controller} jumped at t_ms {t_ms} (ay {ay:.3f})", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description="MotionLink v1 jump host over Kinetrace's stdio adapter.")
    parser.add_argument("--threshold", type=float, default=0.5, metavar="G",
                        help="jump threshold in g: a frame triggers when ay exceeds it (default 0.5)")
    parser.add_argument("--refractory-ms", type=int, default=400, metavar="MS",
                        help="milliseconds of frame time between triggers of one controller (default 400)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every trigger to stderr")
    args = parser.parse_args()
    if not math.isfinite(args.threshold):
        parser.error("--threshold must be a finite number")
    if args.refractory_ms < 0:
        parser.error("--refractory-ms must not be negative")

    try:
        serve(JumpRule(args.threshold, args.refractory_ms), args.verbose)
    except FramingError as error:
        print(f"jump_host: error: {error}", file=sys.stderr)
        return EX_PROTOCOL
    except (BrokenPipeError, ConnectionResetError):
        return 1  # kinetrace went away; nobody is left to answer
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
