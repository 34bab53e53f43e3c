#!/usr/bin/env python3
"""Writes Fuzz/corpus/websocket/: small RFC 6455 streams in the websocket target's
coding (Fuzz/websocket.swift): byte 0 the cut between the two appends, byte 1 the
configuration (bit 0: the sender the name is about, 0 client, 1 server; bit 1: an
HTTP head first; bits 2-3: maximumPayloadBytes 125/256/1024/Int.max; bits 4-5:
maximumFragments 1/2/4/64; bits 6-7: maximumMessageBytes 16/256/4096/Int.max), then
the stream. Names as in Fuzz/README.md: ok-* reads without an error, <code>-* fails
with that WebSocketError code (FuzzCorpusTests checks both). Pure Python: run from
the repository root."""
import os, shutil

folder = os.path.join(os.getcwd(), "Fuzz", "corpus", "websocket")
shutil.rmtree(folder, ignore_errors=True)
os.makedirs(folder)

def config(sender="server", head=False, payload=1024, fragments=64, message=4096):
    return ((sender == "server")
            | (head << 1)
            | [125, 256, 1024, "max"].index(payload) << 2
            | [1, 2, 4, 64].index(fragments) << 4
            | [16, 256, 4096, "max"].index(message) << 6)

def put(name, stream, cut=128, **options):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes([cut, config(**options)]) + stream)

def frame(opcode, payload=b"", fin=True, key=None, first=None):
    """A frame with the shortest length encoding, masked with `key` if given."""
    out = bytearray([first if first is not None else (0x80 if fin else 0) | opcode])
    mask = 0x80 if key else 0
    n = len(payload)
    if n < 126:
        out.append(mask | n)
    elif n <= 0xFFFF:
        out += bytes([mask | 126]) + n.to_bytes(2, "big")
    else:
        out += bytes([mask | 127]) + n.to_bytes(8, "big")
    if key:
        out += key
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return bytes(out) + payload

key = bytes.fromhex("37fa213d")
hello = b"Hello"

# RFC 6455 section 5.7's examples.
put("ok-server-hello-unmasked", bytes.fromhex("810548656c6c6f"))
put("ok-client-hello-masked", bytes.fromhex("818537fa213d7f9f4d5158"), sender="client")
put("ok-server-fragmented-hello", bytes.fromhex("010348656c8002 6c6f".replace(" ", "")), cut=100)
put("ok-server-ping-then-pong", frame(0x9, hello) + frame(0xA, hello))
put("ok-client-masked-pong", bytes.fromhex("8a8537fa213d7f9f4d5158"), sender="client")
put("ok-server-binary-256", bytes.fromhex("827e0100") + bytes(range(256)), cut=3)
# A fragmented message with a ping between its fragments, then a close with a code and reason.
put("ok-client-fragments-ping-close",
    frame(0x1, b"abc", fin=False, key=key) + frame(0x9, b"p", key=key) + frame(0x0, b"def", key=key)
    + frame(0x8, b"\x03\xe8bye", key=key), sender="client", cut=40)
put("ok-server-empty-close", frame(0x8))
# Opening handshakes (section 1.3), then frames in the direction the head came from.
request = (b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
response = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
            b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
put("ok-client-handshake-then-text", request + frame(0x1, hello, key=key), sender="client", head=True, cut=60)
put("ok-server-handshake-then-binary", response + frame(0x2, b"\x00\x01\x02"), head=True, cut=200)

# One seed per error code.
put("unmasked_client_frame-hello", bytes.fromhex("810548656c6c6f"), sender="client")
put("masked_server_frame-hello", bytes.fromhex("818537fa213d7f9f4d5158"))
put("reserved_bits-rsv1", frame(0x1, hello, first=0xC1))
put("reserved_opcode-0x3", frame(0x3))
put("reserved_opcode-0xb-after-a-frame", frame(0x2, b"x") + frame(0xB))
put("fragmented_control_frame-ping", frame(0x9, b"", fin=False))
put("control_frame_too_long-ping-126", frame(0x9, bytes(126)), cut=2)
put("frame_too_large-2-63-bytes", bytes.fromhex("827f8000000000000000"))
put("frame_too_large-70000-bytes", bytes.fromhex("827f0000000000011170") + bytes(20), payload=1024)
put("frame_too_large-257-of-256", frame(0x2, bytes(257)), payload=256, cut=1)
put("unexpected_continuation-first", frame(0x0, b"a"))
put("data_frame_inside_message-text-text", frame(0x1, b"a", fin=False) + frame(0x1, b"b"))
put("bad_close_payload-one-byte", frame(0x8, b"\x03"))
put("too_many_fragments-2-of-1", frame(0x1, b"a", fin=False) + frame(0x0, b"b"), fragments=1)
put("message_too_large-17-of-16", frame(0x2, bytes(17)), message=16)
put("message_too_large-fragments-over-16", frame(0x1, bytes(10), fin=False) + frame(0x0, bytes(10)), message=16)
put("bad_handshake-no-colon", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade websocket\r\n\r\n" + frame(0x1, hello), head=True)
put("bad_handshake-not-http", b"HELLO\r\n\r\n", head=True)
put("handshake_too_long-1100-bytes", b"GET / HTTP/1.1\r\nX: " + b"a" * 1100, head=True, sender="client")
