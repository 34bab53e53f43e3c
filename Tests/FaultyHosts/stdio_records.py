"""The stdio adapter's records (specs/stdio-adapter-v1.md) for the Python
faulty hosts: reading controller-to-host records from stdin and writing
observation records (kind 0x03) to stdout."""

import json
import os
import struct


def read_exactly(fd, n):
    """n bytes from fd, or None at end of input."""
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def controller_records(fd=0):
    """(controller, payload) of each kind 0x01 record until end of input; other kinds are skipped."""
    while True:
        header = read_exactly(fd, 8)
        if header is None:
            return
        length, kind, _flags, controller = struct.unpack(">IBBH", header)
        payload = read_exactly(fd, length - 4)
        if payload is None:
            raise SystemExit("the input ended inside a record")
        if kind == 1:
            yield controller, payload


def observe(controller, decision, values, fd=1):
    """Writes one observation record: {"decision": …, "values": […]}."""
    body = json.dumps({"decision": decision, "values": values}).encode()
    os.write(fd, struct.pack(">IBBH", len(body) + 4, 3, 0, controller) + body)


def observe_text(controller, decision, values_json, fd=1):
    """Writes one observation record whose values are the JSON text given (numbers as the host formats them)."""
    body = ('{"decision": %s, "values": %s}' % (json.dumps(decision), values_json)).encode()
    os.write(fd, struct.pack(">IBBH", len(body) + 4, 3, 0, controller) + body)
