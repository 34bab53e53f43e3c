#!/usr/bin/env python3
"""A WebSocket host that lies, for the controller side's own tests (WebSocketControllerTests).

    websocket_faulty_host.py --fault NAME     prints "listening on 127.0.0.1:PORT", serves until killed

Faults, each on every connection:
  silent         accepts the connection and never answers the upgrade
  not-found      answers 404
  bad-accept     answers 101 with a Sec-WebSocket-Accept that does not match the key
  extension      answers 101 choosing an extension that was not offered
  masked         upgrades, then sends a masked frame (servers must not mask)
  huge-frame     upgrades, then announces a 2 GiB binary frame and sends none of it
  endless-head   answers with header lines forever, never the blank line
  close-1011     upgrades, then closes with 1011 (internal error)
  ping-flood     upgrades, then sends 10,000 pings
Python 3 standard library only.
"""

import argparse
import base64
import hashlib
import socket
import struct
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


def accept_for(head):
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
            return base64.b64encode(hashlib.sha1(key + GUID).digest())
    return b""


def upgrade(conn, head, accept=None, extra=b""):
    accept = accept if accept is not None else accept_for(head)
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n" + extra + b"\r\n")


def serve(conn, fault):
    try:
        if fault == "silent":
            conn.recv(4096)
            threading.Event().wait(60)
            return
        head = read_head(conn)
        if head is None:
            return
        if fault == "not-found":
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        elif fault == "bad-accept":
            upgrade(conn, head, accept=b"AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        elif fault == "extension":
            upgrade(conn, head, extra=b"Sec-WebSocket-Extensions: permessage-deflate\r\n")
        elif fault == "masked":
            upgrade(conn, head)
            conn.sendall(bytes([0x82, 0x81, 1, 2, 3, 4, 5 ^ 1]))
        elif fault == "huge-frame":
            upgrade(conn, head)
            conn.sendall(bytes([0x82, 127]) + struct.pack(">Q", 2 << 30))
        elif fault == "endless-head":
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\n")
            while True:
                conn.sendall(b"X-Padding: " + b"a" * 100 + b"\r\n")
        elif fault == "close-1011":
            upgrade(conn, head)
            conn.sendall(bytes([0x88, 2, 0x03, 0xF3]))
        elif fault == "ping-flood":
            upgrade(conn, head)
            for _ in range(10000):
                conn.sendall(bytes([0x89, 0]))
        threading.Event().wait(10)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", required=True)
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("listening on 127.0.0.1:%d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, args.fault), daemon=True).start()


if __name__ == "__main__":
    main()
