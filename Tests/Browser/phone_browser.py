#!/usr/bin/env python3
"""Drives `kinetrace phone`'s page in headless Chromium with emulated motion sensors.

Each phone is its own Chromium window (only the visible window gets motion events), sized as a
phone, its sensors overridden through the DevTools protocol before the page loads. Standard
library only: the DevTools WebSocket client below is a few lines of RFC 6455.

Scenarios (--scenario):
  values   hold one known reading, let the page stream it, print what was set;
  jump     guided mode: after each cue, an emulated jump (1 g up for 250 ms); print the cues;
  many     --phones windows at once, each named, holding a reading; print their names;
  deny     motion permission denied: the page must say so and send nothing.
With --screenshots DIR it also writes phone-setup.png, phone-streaming.png and
phone-operator.png there (390×844 CSS px at 3×). Prints one JSON object on standard output.
"""
import argparse, base64, json, math, os, shutil, socket, struct, subprocess, sys, tempfile, time, urllib.parse

G = 9.80665


class DevTools:
    """A DevTools protocol client over one WebSocket (flattened sessions)."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("DevTools closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"DevTools refused the upgrade: {head[:200]!r}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0
        self.events = []

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _message(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            length = b1 & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(length)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise RuntimeError("DevTools sent a close frame")
            if opcode in (9, 10):
                continue
            parts.append(payload)
            if b0 & 0x80:
                return json.loads(b"".join(parts))

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(data) < 126:
            header += bytes([0x80 | len(data)])
        elif len(data) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(data))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(data))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        deadline = time.time() + timeout
        while time.time() < deadline:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise RuntimeError(f"{method}: no answer in {timeout} s")


def quaternion(alpha, beta, gamma):
    """The quaternion of W3C device orientation angles (degrees, Z-X'-Y'')."""
    a, b, g = (math.radians(v) / 2 for v in (alpha, beta, gamma))
    qz = (math.cos(a), 0, 0, math.sin(a))
    qx = (math.cos(b), math.sin(b), 0, 0)
    qy = (math.cos(g), 0, math.sin(g), 0)

    def mul(p, q):
        w1, x1, y1, z1 = p
        w2, x2, y2, z2 = q
        return (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    w, x, y, z = mul(mul(qz, qx), qy)
    return {"x": x, "y": y, "z": z, "w": w}


class Phone:
    """One emulated phone: a window with its own sensors."""
    SENSORS = ["accelerometer", "linear-acceleration", "gyroscope", "relative-orientation", "absolute-orientation"]

    def __init__(self, tools, url, name, mode, permission="granted"):
        self.tools = tools
        target = tools.send("Target.createTarget", {"url": "about:blank", "newWindow": True})["targetId"]
        self.target = target
        self.session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
        self.cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        # Overrides before the page subscribes: otherwise it gets one null event and nothing more.
        for sensor in self.SENSORS:
            self.cmd("Emulation.setSensorOverrideEnabled", {"enabled": True, "type": sensor, "metadata": {"available": True}})
        self.hold(user=(0, 0, 0), gravity=(0, -1, 0), rate=(0, 0, 0), angles=(0, 90, 0))
        if permission != "granted":
            origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
            for name_ in ("accelerometer", "gyroscope", "magnetometer"):
                tools.send("Browser.setPermission", {"permission": {"name": name_}, "setting": "denied", "origin": origin})
        self.cmd("Page.enable")
        self.cmd("Page.navigate", {"url": url})
        self.wait("window.kinetracePhone && document.getElementById('protocol').textContent.includes('Hz')")
        self.eval(f"document.getElementById('name').value = {json.dumps(name)}")
        self.tap(f"mode-{mode}")

    def cmd(self, method, params=None):
        return self.tools.send(method, params, session=self.session)

    def eval(self, expression):
        result = self.cmd("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.eval(f"Boolean({expression})"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {expression}")

    def tap(self, element_id):
        box = self.eval(f"(() => {{ const r = document.getElementById({json.dumps(element_id)}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        for kind in ("mousePressed", "mouseReleased"):
            self.cmd("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def hold(self, user, gravity, rate, angles):
        """user acceleration and gravity in g (gravity toward the earth), rate in rad/s, angles W3C degrees."""
        linear = {"x": user[0] * G, "y": user[1] * G, "z": user[2] * G}
        # The accelerometer reads the reaction to gravity: user acceleration minus gravity.
        total = {"x": (user[0] - gravity[0]) * G, "y": (user[1] - gravity[1]) * G, "z": (user[2] - gravity[2]) * G}
        self.cmd("Emulation.setSensorOverrideReadings", {"type": "accelerometer", "reading": {"xyz": total}})
        self.cmd("Emulation.setSensorOverrideReadings", {"type": "linear-acceleration", "reading": {"xyz": linear}})
        self.cmd("Emulation.setSensorOverrideReadings", {"type": "gyroscope", "reading": {"xyz": {"x": rate[0], "y": rate[1], "z": rate[2]}}})
        q = quaternion(*angles)
        for sensor in ("relative-orientation", "absolute-orientation"):
            self.cmd("Emulation.setSensorOverrideReadings", {"type": sensor, "reading": {"quaternion": q}})

    def status(self):
        return self.eval("window.kinetracePhone.status()")

    def screenshot(self, path):
        data = self.cmd("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


def launch():
    profile = tempfile.mkdtemp(prefix="kinetrace-chromium-")
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not binary:
        raise RuntimeError("no chromium on PATH (scripts/bootstrap installs Debian's)")
    process = subprocess.Popen([binary, "--headless=new", "--no-sandbox", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                                "--ignore-certificate-errors", "--autoplay-policy=no-user-gesture-required", "--mute-audio", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    active = os.path.join(profile, "DevToolsActivePort")
    deadline = time.time() + 30
    while time.time() < deadline:
        if os.path.exists(active):
            lines = open(active).read().split()
            if len(lines) >= 2:
                return process, profile, DevTools(int(lines[0]), lines[1])
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError("chromium wrote no DevToolsActivePort in 30 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--scenario", choices=["values", "jump", "many", "deny"], default="values")
    parser.add_argument("--phones", type=int, default=2)
    parser.add_argument("--cues", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--screenshots")
    parser.add_argument("--hostile-name", action="store_true", help="many: name the first phone with HTML markup")
    args = parser.parse_args()
    process, profile, tools = launch()
    result = {"scenario": args.scenario}
    try:
        if args.scenario == "values":
            phone = Phone(tools, args.url, "Alice", "free")
            phone.tap("start")
            phone.wait("window.kinetracePhone.status().controller")
            # Values Chromium keeps exactly at its rounding (0.1 m/s², 0.1 °/s, 0.1°).
            reading = {"user_ms2": [1.5, -2.3, 0.7], "gravity_ms2": [0.0, -9.8, 0.0], "rate_dps": [28.6, -14.3, 57.3], "angles": [30.0, 40.0, -20.0]}
            phone.hold(user=[v / G for v in reading["user_ms2"]], gravity=[v / G for v in reading["gravity_ms2"]],
                       rate=[math.radians(v) for v in reading["rate_dps"]], angles=reading["angles"])
            time.sleep(0.3)
            start = phone.eval("Date.now()")
            time.sleep(args.seconds)
            # Free mode's "I just jumped": a label covering the moments before the tap.
            tapped = phone.eval("Date.now()")
            phone.tap("free-jump")
            phone.wait("window.kinetracePhone.status().labels === 1")
            result.update(reading=reading, held_from_ms=start, tapped_ms=tapped, status=phone.status())
            if args.screenshots:
                phone.screenshot(os.path.join(args.screenshots, "phone-free.png"))
        elif args.scenario == "jump":
            phone = Phone(tools, args.url, "Bea", "guided")
            if args.screenshots:
                phone.screenshot(os.path.join(args.screenshots, "phone-setup.png"))
            phone.tap("start")
            phone.wait("window.kinetracePhone.status().controller")
            jumps = []
            seen = 0
            deadline = time.time() + 60
            while seen < args.cues and time.time() < deadline:
                cues = phone.status()["cues"]
                if cues > seen:
                    seen = cues
                    time.sleep(0.3)  # a player's reaction
                    jumps.append(phone.eval("Date.now()"))
                    phone.hold(user=(0, 1.0, 0), gravity=(0, -1, 0), rate=(0, 0, 0), angles=(0, 90, 0))
                    time.sleep(0.25)
                    phone.hold(user=(0, 0, 0), gravity=(0, -1, 0), rate=(0, 0, 0), angles=(0, 90, 0))
                    # After the jump, not during it: a screenshot takes long enough to make one jump two.
                    if args.screenshots and seen == 1:
                        phone.screenshot(os.path.join(args.screenshots, "phone-cue.png"))
                time.sleep(0.02)
            time.sleep(1.0)
            result.update(jumps_ms=jumps, status=phone.status())
        elif args.scenario == "many":
            names = [f"Player {i + 1}" for i in range(args.phones)]
            if args.hostile_name:
                names[0] = "<b>P1</b><img src=x>"
            phones = [Phone(tools, args.url, name, "free") for name in names]
            for phone in phones:
                phone.tap("start")
            for phone in phones:
                phone.wait("window.kinetracePhone.status().controller")
            time.sleep(args.seconds)
            listed = phones[0].eval("fetch('phones.json', {cache: 'no-store'}).then((r) => r.json())")
            result.update(names=names, statuses=[p.status() for p in phones], operator=listed)
            # The operator's page, as a browser renders it: names are text, never markup.
            operator = tools.send("Target.createTarget", {"url": args.url + "operator", "newWindow": True})["targetId"]
            session = tools.send("Target.attachToTarget", {"targetId": operator, "flatten": True})["sessionId"]
            deadline = time.time() + 10
            rendered = None
            while time.time() < deadline:
                rendered = tools.send("Runtime.evaluate", {"expression": "JSON.stringify({rows: document.querySelectorAll('#phones tr').length, "
                                      "markup: document.querySelectorAll('#phones b, #phones img').length, "
                                      "names: [...document.querySelectorAll('#phones tr td:first-child')].map((td) => td.textContent)})",
                                      "returnByValue": True}, session=session)["result"].get("value")
                if rendered and json.loads(rendered)["rows"] == len(names):
                    break
                time.sleep(0.2)
            result.update(operator_page=json.loads(rendered))
            if args.screenshots:
                tools.send("Emulation.setDeviceMetricsOverride", {"width": 720, "height": 400, "deviceScaleFactor": 2, "mobile": False}, session=session)
                time.sleep(2.0)
                data = tools.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
                open(os.path.join(args.screenshots, "phone-operator.png"), "wb").write(base64.b64decode(data))
        elif args.scenario == "deny":
            phone = Phone(tools, args.url, "Dee", "free", permission="denied")
            phone.eval("DeviceMotionEvent.requestPermission = () => Promise.resolve('denied')")
            phone.tap("start")
            phone.wait("window.kinetracePhone.status().error")
            time.sleep(0.5)
            result.update(status=phone.status())
        print(json.dumps(result))
    finally:
        try:
            tools.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:
        print(f"phone_browser.py: {error}", file=sys.stderr)
        sys.exit(1)
