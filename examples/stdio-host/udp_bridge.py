#!/usr/bin/env python3
"""Bridges Kinetrace's stdio adapter to a MotionLink v1 host listening on UDP.

Each record's payload (specs/stdio-adapter-v1.md) goes out as one datagram to
--to HOST:PORT, from one UDP socket per controller id, so the host sees one
source port per controller and keeps its per-controller state apart
(ML-GESTURE-1). Whatever a socket receives comes back on stdout as a
kind-0x02 record with that socket's controller id. At end of input the
bridge waits --drain-ms for late replies, then exits 0. Python 3 standard
library only.

    kinetrace host --port 47110 &
    kinetrace replay captures/synthetic-session.jsonl \\
        --exec "python3 examples/stdio-host/udp_bridge.py --to 127.0.0.1:47110"
"""

import argparse
import os
import selectors
import socket
import struct
import sys
import time

RECORD_HEADER = struct.Struct(">IBBH")  # L, kind, flags, controller id (big-endian)
KIND_TO_HOST = 0x01
KIND_TO_CONTROLLER = 0x02
MAX_LENGTH = 4 + 65535

EX_PROTOCOL = 76  # what kinetrace itself exits with on a framing error
EX_UNAVAILABLE = 69

STDIN, STDOUT = 0, 1


class FramingError(Exception):
    def __init__(self, offset, message):
        super().__init__(f"stdin, byte {offset}: {message}")


class RecordReader:
    """Cuts the stdin byte stream into records, however reads split it."""

    def __init__(self):
        self.buffer = bytearray()
        self.consumed = 0  # stream offset of buffer[0]

    def feed(self, chunk):
        self.buffer += chunk
        start = 0
        while len(self.buffer) - start >= RECORD_HEADER.size:
            length, kind, flags, controller = RECORD_HEADER.unpack_from(self.buffer, start)
            offset = self.consumed + start
            if not 4 <= length <= MAX_LENGTH:
                raise FramingError(offset, f"record length {length} is outside 4...{MAX_LENGTH}")
            if kind != KIND_TO_HOST:
                raise FramingError(offset + 4, f"kind 0x{kind:02x}, expected 0x01 (controller to host)")
            if flags != 0:
                raise FramingError(offset + 5, f"flags 0x{flags:02x}, expected 0")
            end = start + 4 + length
            if end > len(self.buffer):
                break
            yield controller, bytes(self.buffer[start + RECORD_HEADER.size:end])
            start = end
        del self.buffer[:start]
        self.consumed += start

    def finish(self):
        if self.buffer:
            raise FramingError(self.consumed, f"end of input inside a record ({len(self.buffer)} bytes)")


def resolve(endpoint):
    """HOST:PORT or [IPV6]:PORT to a (family, sockaddr) pair."""
    host, colon, port = endpoint.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, found {endpoint!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    family, _, _, _, address = socket.getaddrinfo(host, int(port), type=socket.SOCK_DGRAM)[0]
    return family, address


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Bridge:
    def __init__(self, family, address):
        self.family = family
        self.address = address
        # poll, unlike epoll, also accepts a regular file on stdin (handy for testing).
        self.selector = selectors.PollSelector()
        self.sockets = {}  # controller id -> its UDP socket

    def socket_for(self, controller):
        sock = self.sockets.get(controller)
        if sock is None:
            sock = socket.socket(self.family, socket.SOCK_DGRAM)
            # connect() gives the socket its own source port and makes it
            # accept datagrams from the host only.
            sock.connect(self.address)
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, controller)
            self.sockets[controller] = sock
        return sock

    def forward(self, controller, payload):
        sock = self.socket_for(controller)
        for _ in range(2):
            try:
                sock.send(payload)
                return
            except ConnectionRefusedError:
                # An ICMP error left over from an earlier datagram (no host
                # listening yet); this datagram was not sent, so try once more.
                continue
            except BlockingIOError:
                break  # send buffer full: drop, as the network would
            except OSError as error:  # e.g. EMSGSIZE for a payload no UDP datagram can carry
                print(f"udp_bridge: controller {controller}: {len(payload)}-byte payload not sent: {error.strerror}",
                      file=sys.stderr)
                return
        print(f"udp_bridge: controller {controller}: datagram dropped", file=sys.stderr)

    def answer(self, sock, controller):
        while True:
            try:
                reply = sock.recv(65535)
            except BlockingIOError:
                return
            except ConnectionRefusedError:
                continue  # the host is not listening; its replies will come when it is
            write_all(STDOUT, RECORD_HEADER.pack(4 + len(reply), KIND_TO_CONTROLLER, 0, controller) + reply)

    def run(self, drain_seconds):
        reader = RecordReader()
        # stdin is not made non-blocking: it shares one open file with stdout,
        # which must stay blocking. A read after the selector says "ready" does not block.
        self.selector.register(STDIN, selectors.EVENT_READ, None)
        deadline = None  # set at end of input
        while deadline is None or time.monotonic() < deadline:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in self.selector.select(timeout):
                if key.data is not None:
                    self.answer(key.fileobj, key.data)
                    continue
                chunk = os.read(STDIN, 65536)
                if chunk:
                    for controller, payload in reader.feed(chunk):
                        self.forward(controller, payload)
                else:
                    reader.finish()
                    self.selector.unregister(STDIN)
                    deadline = time.monotonic() + drain_seconds
        for sock in self.sockets.values():
            sock.close()


def main():
    parser = argparse.ArgumentParser(description="Bridge Kinetrace's stdio adapter to a MotionLink v1 host on UDP.")
    parser.add_argument("--to", required=True, metavar="HOST:PORT", help="the UDP host, e.g. 127.0.0.1:47110 or [::1]:47110")
    parser.add_argument("--drain-ms", type=int, default=300, metavar="MS",
                        help="how long to wait for late replies after the end of input (default 300)")
    args = parser.parse_args()
    if args.drain_ms < 0:
        parser.error("--drain-ms must not be negative")
    try:
        family, address = resolve(args.to)
    except (ValueError, OSError) as error:
        print(f"udp_bridge: error: --to {args.to}: {error}", file=sys.stderr)
        return EX_UNAVAILABLE

    try:
        Bridge(family, address).run(args.drain_ms / 1000)
    except FramingError as error:
        print(f"udp_bridge: error: {error}", file=sys.stderr)
        return EX_PROTOCOL
    except (BrokenPipeError, ConnectionResetError):
        return 1  # kinetrace went away
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
