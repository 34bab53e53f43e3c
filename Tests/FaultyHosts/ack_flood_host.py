"""A hostile stdio-adapter host (specs/stdio-adapter-v1.md): it reads and
ignores its input, and writes valid MotionLink HapticAck records for
controller 0 without pause. The replay must stop it as flooded (exit 76)
in bounded memory, not grow until it runs out (issue 15, finding 4)."""
import struct, sys, threading, zlib, os
def drain():
    while os.read(0, 65536): pass
threading.Thread(target=drain, daemon=True).start()
body = struct.pack('<Qff', 12345, 1.0, 1.0)
ack = body + struct.pack('<I', zlib.crc32(body))
record = struct.pack('>IBBH', 4 + len(ack), 2, 0, 0) + ack
chunk = record * 2000
out = sys.stdout.buffer
try:
    while True: out.write(chunk); out.flush()
except BrokenPipeError:
    pass
