#!/usr/bin/env python3
"""A plain UDP sink: bind 127.0.0.1 (or BIND) on an ephemeral port, print the
port, and only drain the socket until SIGTERM, then print the count received.
Python stdlib only. Usage: drain.py [BIND_ADDR] [RCVBUF_BYTES]"""
import signal
import socket
import sys

addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
rcvbuf = int(sys.argv[2]) if len(sys.argv) > 2 else 64 << 20
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:  # root may exceed net.core.rmem_max
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), rcvbuf)
except OSError:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
s.bind((addr, 0))
count = 0
done = False


def stop(*_):
    global done
    done = True
    s.close()


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
print(f"listening on {addr}:{s.getsockname()[1]} rcvbuf {s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)}", flush=True)
buf = bytearray(2048)
recv_into = s.recv_into
try:
    while not done:
        recv_into(buf)
        count += 1
except OSError:
    pass
print(f"received {count}", flush=True)
