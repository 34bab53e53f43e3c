#!/usr/bin/env python3
"""Writes Fuzz/corpus/wssession/: scripts of stream chunks in the wssession target's coding
(Fuzz/wssession.swift), each a small WebSocket session or one way of failing one.

Byte 0: bits 0-1 Limits.heldBytesTotal (64 MiB, 1024, 200, 16), bits 2-3 the WebSocket
limits (0 the defaults; 1 frame 125, message 256, 4 fragments, head 256; 2 frame 300,
message 125, 2 fragments, head 64; 3 frame 125, message 1, 1 fragment, head 200). Then per
step [who][flags][length][bytes]: who bits 0-1 the controller, bit 2 from the host, bits 3-7
the time step in ms; flags bit 0 a new connection (an open direction ends, `reused`), bit 1 a
mid-stream start, bit 2 a canned head first (bit 3: 0 kinetrace's own, 1 minimal), bit 4 a
gap of 7 bytes before the chunk, bits 5-7 6 fin, 7 rst.

Names as in Fuzz/README.md: ok-* records messages and no websocket_error, <code>-* writes a
websocket_error with that code (FuzzCorpusTests checks both). Pure Python: run from the
repository root."""
import os, shutil

folder = os.path.join(os.getcwd(), "Fuzz", "corpus", "wssession")
shutil.rmtree(folder, ignore_errors=True)
os.makedirs(folder)

HELD = {"default": 0, 1024: 1, 200: 2, 16: 3}
CODEC = {"default": 0, "small": 1, "head64": 2, "message1": 3}
KEY = bytes.fromhex("37fa213d")


def config(held="default", codec="default"):
    return bytes([HELD[held] | CODEC[codec] << 2])


def frame(opcode, payload=b"", fin=True, masked=True, first=None):
    """A frame with the shortest length encoding; a controller's (masked) unless masked=False."""
    out = bytearray([first if first is not None else (0x80 if fin else 0) | opcode])
    bit = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        out.append(bit | n)
    elif n <= 0xFFFF:
        out += bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        out += bytes([bit | 127]) + n.to_bytes(8, "big")
    if masked:
        out += KEY
        payload = bytes(b ^ KEY[i % 4] for i, b in enumerate(payload))
    return bytes(out) + payload


def host(opcode, payload=b"", fin=True):
    return frame(opcode, payload, fin=fin, masked=False)


def close(code=None, reason=b"", masked=True):
    return frame(0x8, (code.to_bytes(2, "big") if code is not None else b"") + reason, masked=masked)


def step(controller=0, from_host=False, data=b"", ms=1, restart=False, mid=False, canned=None, gap=False, end=None):
    """One step; data over 255 bytes is cut into several, the flags on the first, the end on the last."""
    pieces = [data[i:i + 255] for i in range(0, len(data), 255)] or [b""]
    out = bytearray()
    for n, piece in enumerate(pieces):
        flags = 0
        if n == 0:
            flags |= (1 if restart else 0) | (2 if mid else 0) | (0x10 if gap else 0)
            if canned is not None:
                flags |= 4 | canned << 3
        if n == len(pieces) - 1 and end:
            flags |= {"fin": 6, "rst": 7}[end] << 5
        out += bytes([controller | (4 if from_host else 0) | (ms if n == 0 else 0) << 3, flags, len(piece)]) + piece
    return bytes(out)


def put(name, *parts, **options):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(config(**options) + b"".join(parts))


def c2h(data=b"", **kw):
    return step(from_host=False, data=data, **kw)


def h2c(data=b"", **kw):
    return step(from_host=True, data=data, **kw)


# Sessions read whole.
put("ok-session-kinetrace-handshake",
    c2h(frame(0x2, b"hello"), canned=0), h2c(host(0x2, b"ack"), canned=0),
    c2h(close(1000, b"bye")), h2c(close(1000, masked=False)), c2h(end="fin"), h2c(end="fin"))
put("ok-minimal-heads-fragments-and-ping",
    c2h(canned=1), h2c(canned=1),
    c2h(frame(0x1, b"hel", fin=False) + frame(0x9, b"?")), h2c(host(0xA, b"?")),
    c2h(frame(0x0, b"lo")), c2h(end="fin"), h2c(end="fin"), codec="head64")
frame300 = frame(0x2, bytes(range(256)) + bytes(44))
put("ok-frame-cut-across-chunks",
    c2h(canned=0), h2c(canned=0), c2h(frame300[:1]), c2h(frame300[1:3]), c2h(frame300[3:100]), c2h(frame300[100:]),
    c2h(end="fin"), h2c(end="fin"))
put("ok-two-controllers-interleaved",
    c2h(canned=0, controller=0), c2h(canned=1, controller=1), h2c(canned=0, controller=1), h2c(canned=1, controller=0),
    c2h(frame(0x2, b"zero"), controller=0), c2h(frame(0x2, b"one"), controller=1),
    h2c(host(0x1, b"to one"), controller=1), h2c(host(0x1, b"to zero"), controller=0),
    c2h(close(1001, b"going away"), controller=1), h2c(close(1001, masked=False), controller=1),
    c2h(end="fin", controller=1), h2c(end="fin", controller=1), c2h(end="rst", controller=0))
put("ok-four-tuple-reused",
    c2h(canned=0), h2c(canned=0), c2h(frame(0x2, b"first")), c2h(close()), h2c(close(masked=False)),
    c2h(canned=1, restart=True), h2c(canned=1, restart=True), c2h(frame(0x2, b"second")), c2h(end="rst"))
put("ok-many-small-frames-in-one-chunk",
    c2h(canned=1), h2c(canned=1), c2h(b"".join(frame(0x2, bytes([n]) * 20) for n in range(10))),
    c2h(frame(0x2, bytes(125))), h2c(end="fin"), c2h(end="fin"), codec="small")
put("ok-host-closes-first",
    c2h(canned=0), h2c(canned=0), c2h(frame(0x2, b"before")), h2c(host(0x2, b"reply")), h2c(close(4000, "fin ☃".encode(), masked=False)),
    c2h(frame(0x2, b"after the host's close")), c2h(close(4000)), c2h(end="fin"), h2c(end="fin"))
put("ok-empty-and-long-messages",
    c2h(canned=0), h2c(canned=0), c2h(frame(0x1, b"")), h2c(host(0x2, bytes(600))), c2h(end="fin"), h2c(end="fin"))

# One way of failing each.
put("mid_stream_start-controller", c2h(frame(0x2, b"x"), mid=True), h2c(canned=0))
put("stream_gap-inside-frames", c2h(canned=0), c2h(frame(0x2, b"a")), c2h(frame(0x2, b"b"), gap=True), c2h(end="fin"))
put("stream_gap-inside-head", c2h(b"GET / HTTP/1.1\r\n"), c2h(b"Upgrade: websocket\r\n\r\n", gap=True))
put("upgrade_refused-http-403", c2h(canned=0), h2c(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"), c2h(frame(0x2, b"x")))
put("bad_handshake-post", c2h(b"POST / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n" + frame(0x2, b"x")))
put("bad_handshake-no-upgrade", c2h(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
put("handshake_too_long-kinetrace-request-over-64", c2h(frame(0x2, b"x"), canned=0), h2c(canned=1), codec="head64")
put("unmasked_client_frame-after-handshake", c2h(host(0x2, b"plain"), canned=0))
put("masked_server_frame-after-handshake", h2c(frame(0x2, b"masked"), canned=0))
put("frame_too_large-126-of-125", c2h(frame(0x2, bytes(126)), canned=1), codec="small")
put("message_too_large-2-of-1", c2h(frame(0x2, b"ab"), canned=1), codec="message1")
put("too_many_fragments-3-of-2",
    c2h(frame(0x2, b"a", fin=False) + frame(0x0, b"b", fin=False) + frame(0x0, b"c"), canned=1), codec="head64")
put("stream_ended-inside-head", c2h(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n", end="fin"))
put("stream_ended-inside-frame", c2h(frame(0x2, b"cut short")[:6], canned=0), c2h(end="fin"))
put("stream_ended-inside-fragmented-message", c2h(frame(0x2, b"part", fin=False), canned=0), c2h(end="rst"))
put("held_bytes_limit-partial-frame-over-16", c2h(canned=1), c2h(frame(0x2, bytes(40))[:30]), held=16)
put("held_bytes_limit-two-connections-over-200",
    c2h(canned=1, controller=0), c2h(canned=1, controller=1), c2h(frame(0x2, bytes(300))[:120], controller=0),
    c2h(frame(0x2, bytes(300))[:110], controller=1), c2h(frame(0x2, b"ok"), controller=2, canned=1), held=200)
put("reserved_opcode-0x3", c2h(frame(0x3), canned=0))
put("reserved_bits-rsv1", h2c(bytes([0xC2, 0x01, 0x78]), canned=0))
put("bad_close_payload-one-byte", c2h(frame(0x8, b"\x03"), canned=0))
put("control_frame_too_long-ping-126", h2c(host(0x9, bytes(126)), canned=0))
put("data_frame_inside_message-text-text", c2h(frame(0x1, b"a", fin=False) + frame(0x1, b"b"), canned=0))
put("unexpected_continuation-first", h2c(host(0x0, b"a"), canned=1))
put("fragmented_control_frame-ping", c2h(frame(0x9, b"", fin=False), canned=1))
