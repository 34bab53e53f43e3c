/// The page a phone opens: it asks for motion on a tap, streams the protocol's samples over
/// `wss://` at the protocol's rate, shows cues and the host's decisions, and sends labels.
/// Served from memory so an installed binary needs no files beside it.
///
/// Conventions (docs/guide/phone.md): user acceleration is the W3C `acceleration` in g (+y
/// toward the top of the screen, so an upright phone pushed up reads ay > 0); gravity points
/// to the earth in device axes, in g; rotation rate is `rotationRate` in rad/s with alpha,
/// beta and gamma about x, y and z; attitude is roll (about y), pitch (about x, within ±90°)
/// and yaw (about z) in radians from `deviceorientation`. iOS passes CoreMotion's signs
/// through, the opposite of the W3C's for both accelerations, so the page flips them there.
enum PhonePage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<title>Kinetrace phone</title>
<style>
  :root { --bg:#10151c; --card:#1b232e; --text:#e8edf3; --dim:#94a3b8; --accent:#38bdf8; --good:#4ade80; --warn:#fbbf24; --bad:#f87171; }
  * { box-sizing: border-box; }
  body { margin:0; font:16px/1.4 -apple-system, system-ui, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--text);
         min-height:100vh; padding:env(safe-area-inset-top) 16px 24px; -webkit-user-select:none; user-select:none; }
  header { display:flex; align-items:baseline; justify-content:space-between; padding:14px 0 8px; }
  h1 { font-size:20px; margin:0; letter-spacing:.02em; } h1 span { color:var(--accent); }
  .protocol { color:var(--dim); font-size:13px; }
  .card { background:var(--card); border-radius:14px; padding:16px; margin:12px 0; }
  label.field { display:block; color:var(--dim); font-size:13px; margin-bottom:6px; }
  input[type=text] { width:100%; font-size:18px; padding:12px; border-radius:10px; border:1px solid #334155; background:#0f172a; color:var(--text); }
  .modes { display:flex; gap:8px; margin:14px 0 0; }
  .modes button { flex:1; padding:10px; border-radius:10px; border:1px solid #334155; background:#0f172a; color:var(--dim); font-size:15px; }
  .modes button[aria-pressed=true] { border-color:var(--accent); color:var(--text); background:#0c2a3a; }
  .hint { color:var(--dim); font-size:13px; margin:8px 0 0; }
  button.primary { width:100%; margin-top:16px; padding:16px; font-size:19px; font-weight:600; border:0; border-radius:12px; background:var(--accent); color:#04141f; }
  details { color:var(--dim); font-size:13px; } details summary { color:var(--text); font-size:14px; }
  #cue { text-align:center; font-size:56px; font-weight:800; letter-spacing:.04em; min-height:96px; display:flex; align-items:center; justify-content:center; color:var(--dim); }
  #cue.active { color:var(--warn); } #cue.note { font-size:20px; font-weight:500; letter-spacing:0; }
  .stats { display:grid; grid-template-columns:repeat(3, 1fr); gap:8px; text-align:center; }
  .stats b { display:block; font-size:24px; } .stats span { color:var(--dim); font-size:12px; }
  .free { display:grid; grid-template-columns:1fr 1fr; gap:10px; }
  .free button { padding:18px 8px; font-size:17px; border-radius:12px; border:1px solid #334155; background:#0f172a; color:var(--text); }
  #status { font-size:14px; color:var(--dim); } #status.ok { color:var(--good); } #status.bad { color:var(--bad); }
  #flash { position:fixed; inset:0; background:var(--good); opacity:0; pointer-events:none; transition:opacity .35s; }
  #flash.on { opacity:.55; transition:none; }
  [hidden] { display:none !important; }
</style>
</head>
<body>
<header><h1>Kine<span>trace</span> phone</h1><div class="protocol" id="protocol">…</div></header>

<section id="setup">
  <div class="card">
    <label class="field" for="name">Your name (shown to the operator)</label>
    <input id="name" type="text" maxlength="32" autocomplete="nickname" placeholder="Player">
    <div class="modes" role="group" aria-label="Mode">
      <button id="mode-guided" aria-pressed="true">Guided</button>
      <button id="mode-free" aria-pressed="false">Free</button>
    </div>
    <p class="hint" id="mode-hint">Guided: the phone asks you to move, and records when it asked.</p>
    <button class="primary" id="start">Start</button>
    <p class="hint" id="error" hidden></p>
  </div>
  <div class="card">
    <details>
      <summary>Why did my browser warn about this page?</summary>
      <p>Browsers give motion sensors only to secure (HTTPS) pages, so this host serves HTTPS with a certificate it made for itself.
      No authority vouches for it, hence the warning. It is safe to go on if the address is the one the operator showed you.</p>
      <p><b>iPhone (Safari):</b> tap <i>Show Details</i>, then <i>visit this website</i>, and confirm. Then tap Start and allow
      <i>Motion &amp; Orientation Access</i>.</p>
      <p><b>Android (Chrome):</b> tap <i>Advanced</i>, then <i>Proceed to …(unsafe)</i>.</p>
    </details>
  </div>
</section>

<section id="run" hidden>
  <div class="card"><div id="status">Connecting…</div></div>
  <div class="card"><div id="cue" aria-live="assertive">Ready</div></div>
  <div class="card free" id="free" hidden></div>
  <div class="modes" role="group" aria-label="Mode">
    <button id="run-mode-guided" aria-pressed="true">Guided</button>
    <button id="run-mode-free" aria-pressed="false">Free</button>
  </div>
  <div class="card stats">
    <div><b id="sent">0</b><span>samples sent</span></div>
    <div><b id="labels">0</b><span>labels</span></div>
    <div><b id="decisions">0</b><span>host decisions</span></div>
  </div>
  <p class="hint" id="run-hint"></p>
</section>
<div id="flash"></div>

<script>
'use strict';
(() => {
  const G = 9.80665, DEG = Math.PI / 180;
  const GESTURE_WORDS = { jump: 'JUMP', duck: 'DUCK', tilt_left: 'TILT ◀', tilt_right: 'TILT ▶' };
  const DONE_WORDS = { jump: 'I just jumped', duck: 'I just ducked', tilt_left: 'I just tilted left', tilt_right: 'I just tilted right' };
  const $ = (id) => document.getElementById(id);
  const iOS = /iPad|iPhone|iPod/.test(navigator.userAgent) || (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
  const counts = { sent: 0, skipped: 0, waiting: 0, stalled: 0, labels: 0, decisions: 0, cues: 0, vibrated: 0, flashed: 0, replies: 0, refused: 0 };
  let session = null, template = null, mode = 'guided', token = null, stream = null, control = null, controller = null;
  let motion = null, motionAt = -1, orientation = null, gravityEstimate = null, lastError = '', running = false, audio = null;

  fetch('session.json', { cache: 'no-store' }).then((r) => r.json()).then((s) => {
    session = s;
    template = JSON.parse(s.template);
    mode = s.mode;
    $('protocol').textContent = `${s.protocol} · ${s.rate_hz} Hz`;
    showMode();
  }).catch((e) => fail(`Cannot read this session: ${e}`));

  function showMode() {
    for (const prefix of ['', 'run-']) {
      $(`${prefix}mode-guided`).setAttribute('aria-pressed', String(mode === 'guided'));
      $(`${prefix}mode-free`).setAttribute('aria-pressed', String(mode === 'free'));
    }
    $('mode-hint').textContent = mode === 'guided'
      ? 'Guided: the phone asks you to move, and records when it asked.'
      : 'Free: move as you like, and tap a button just after each move.';
  }
  for (const prefix of ['', 'run-']) {
    $(`${prefix}mode-guided`).onclick = () => { mode = 'guided'; showMode(); sendControl({ type: 'mode', mode }); render(); };
    $(`${prefix}mode-free`).onclick = () => { mode = 'free'; showMode(); sendControl({ type: 'mode', mode }); render(); };
  }

  function fail(message) {
    lastError = message;
    const e = $('error'); e.hidden = false; e.textContent = message;
    const s = $('status'); s.textContent = message; s.className = 'bad';
  }

  // Motion, in the trace's conventions (see the page's source header in PhonePage.swift).
  function onMotion(e) {
    const sign = iOS ? -1 : 1;
    const a = e.acceleration, ag = e.accelerationIncludingGravity, r = e.rotationRate;
    const have = (v) => v && v.x !== null && v.x !== undefined;
    let user = have(a) ? [sign * a.x / G, sign * a.y / G, sign * a.z / G] : null;
    let gravity = null;
    if (have(ag)) {
      const total = [sign * ag.x / G, sign * ag.y / G, sign * ag.z / G];
      if (user) {
        gravity = [user[0] - total[0], user[1] - total[1], user[2] - total[2]];
      } else {
        // No separate acceleration: gravity from a low-pass of the total, the rest is the user's.
        gravityEstimate = gravityEstimate ? gravityEstimate.map((g, i) => 0.9 * g - 0.1 * total[i]) : total.map((t) => -t);
        gravity = gravityEstimate.slice();
        user = total.map((t, i) => t + gravity[i]);
      }
    }
    const rate = r && r.alpha !== null && r.alpha !== undefined ? [r.alpha * DEG, r.beta * DEG, r.gamma * DEG] : null;
    motion = { user, gravity, rate };
    motionAt = performance.now();
  }

  function onOrientation(e) {
    if (e.alpha === null || e.beta === null || e.gamma === null) return;
    // W3C angles are Z-X'-Y'' with beta in [-180, 180); the same rotation with pitch in [-90, 90]
    // (CoreMotion's ranges) adds 180° to alpha and gamma and reflects beta.
    let alpha = e.alpha, beta = e.beta, gamma = e.gamma;
    if (beta > 90 || beta < -90) {
      alpha += 180; beta = (beta > 0 ? 180 : -180) - beta; gamma += 180;
    }
    const wrap = (d) => { d = ((d + 180) % 360 + 360) % 360 - 180; return d === -180 ? 180 : d; };
    orientation = [wrap(gamma) * DEG, beta * DEG, wrap(alpha) * DEG];
  }

  function vectors() {
    const zero = [0, 0, 0];
    const v = {
      user_acceleration: (motion && motion.user) || zero,
      rotation_rate: (motion && motion.rate) || zero,
      gravity: (motion && motion.gravity) || zero,
      attitude: orientation || zero,
    };
    v.own = [0, 1, 2].map((i) => template.own_sum_of.reduce((s, name) => s + v[name][i], 0));
    return v;
  }

  // The protocol's sample: its template filled (SampleTemplate in Kinetrace's Swift source).
  const CRC32_TABLE = (() => {
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1; t[n] = c >>> 0; }
    return t;
  })();
  function check(algorithm, bytes) {
    switch (algorithm) {
      case 'crc32': { let c = 0xFFFFFFFF; for (const b of bytes) c = CRC32_TABLE[(c ^ b) & 0xFF] ^ (c >>> 8); return BigInt((c ^ 0xFFFFFFFF) >>> 0); }
      case 'crc16_ccitt': {
        let c = 0xFFFF;
        for (const b of bytes) { c ^= b << 8; for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xFFFF : (c << 1) & 0xFFFF; }
        return BigInt(c);
      }
      case 'sum8': return BigInt(bytes.reduce((s, b) => (s + b) & 0xFF, 0));
      case 'xor8': return BigInt(bytes.reduce((s, b) => s ^ b, 0));
    }
    throw new Error(`unknown check ${algorithm}`);
  }
  function putInteger(body, offset, size, bigEndian, value) {
    const x = BigInt.asUintN(size * 8, value);
    for (let i = 0; i < size; i++) {
      const shift = BigInt(8 * (bigEndian ? size - 1 - i : i));
      body[offset + i] = Number((x >> shift) & 0xFFn);
    }
  }
  const nearest = (v) => (Number.isFinite(v) ? BigInt(Math.sign(v) * Math.round(Math.abs(v))) : 0n);
  const FLOAT = { f32: true, f64: true, number: true };
  // A slot's value: a BigInt for integers, a Number for floats, a string for an id.
  function slotValue(slot, nowMs, v) {
    if (slot.role === 'sender_time') {
      const scale = { s: 1 / 1000, ms: 1, us: 1000, ns: 1e6 }[slot.unit];
      if (FLOAT[slot.type]) return nowMs * scale;
      const ms = BigInt(nowMs);
      return { s: ms / 1000n, ms, us: ms * 1000n, ns: ms * 1000000n }[slot.unit];
    }
    if (slot.role === 'message_id' || slot.role === 'message_id_upper') {
      const id = crypto.randomUUID();  // an identifier, recorded in the trace with its message
      return slot.role === 'message_id' ? id.toLowerCase() : id.toUpperCase();
    }
    const [vector, axis] = slot.role.split('.');
    const value = v[vector][{ x: 0, y: 1, z: 2 }[axis]];
    return slot.integer ? nearest(value) : value;
  }
  function encode(nowMs) {
    const v = vectors();
    let body;
    if (template.bytes) {
      body = Uint8Array.from(template.bytes);
      const view = new DataView(body.buffer);
      for (const slot of template.slots) {
        const value = slotValue(slot, nowMs, v);
        if (slot.type === 'f32') view.setFloat32(slot.offset, value, !slot.big_endian);
        else if (slot.type === 'f64') view.setFloat64(slot.offset, value, !slot.big_endian);
        else putInteger(body, slot.offset, slot.size, slot.big_endian, typeof value === 'bigint' ? value : nearest(value));
      }
      for (const c of template.checks) putInteger(body, c.offset, c.size, c.big_endian, check(c.algorithm, body.subarray(c.from, c.to)));
    } else {
      let text = template.pieces[0];
      template.slots.forEach((slot, i) => {
        const value = slotValue(slot, nowMs, v);
        text += (typeof value === 'number' ? String(value) : value.toString()) + template.pieces[i + 1];
      });
      body = new TextEncoder().encode(text);
    }
    const f = template.framing;
    if (f.kind === 'delimiter') body = Uint8Array.from([...body, ...f.bytes]);
    if (f.kind === 'length_prefix') {
      const padded = body.length >= f.offset ? body : Uint8Array.from([...body, ...new Array(f.offset - body.length).fill(0)]);
      const prefix = new Uint8Array(f.width);
      putInteger(prefix, 0, f.width, f.big_endian, BigInt(padded.length - f.offset + (f.counts_itself ? f.width : 0)));
      body = Uint8Array.from([...padded.subarray(0, f.offset), ...prefix, ...padded.subarray(f.offset)]);
    }
    return template.text ? new TextDecoder().decode(body) : body;
  }

  // Sampling at the protocol's rate: the newest reading at each tick, on an absolute schedule.
  function startTicking() {
    const period = 1000 / session.rate_hz;
    let next = performance.now() + period;
    const tick = () => {
      if (!running) return;
      const now = performance.now();
      if (now - next > period) next = now;  // a throttled tab skips ticks rather than bursting
      if (motionAt < 0) counts.waiting++;  // no motion event yet
      else if (now - motionAt > 1000) counts.stalled++;
      else if (!stream || stream.readyState !== WebSocket.OPEN || stream.bufferedAmount > 65536) counts.skipped++;
      else { stream.send(encode(Date.now())); counts.sent++; }
      next += period;
      setTimeout(tick, Math.max(0, next - performance.now()));
      if (counts.sent % 10 === 0) render();
    };
    setTimeout(tick, period);
  }

  function sendControl(message) {
    if (control && control.readyState === WebSocket.OPEN) control.send(JSON.stringify(message));
  }

  function label(gesture, senderTimeMs, durationMs) {
    const m = { type: 'label', gesture, sender_time_ms: Math.round(senderTimeMs) };
    if (durationMs) m.duration_ms = durationMs;
    sendControl(m);
  }

  function beep() {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      const o = audio.createOscillator(), g = audio.createGain();
      o.frequency.value = 880; g.gain.value = 0.2; o.connect(g); g.connect(audio.destination);
      o.start(); o.stop(audio.currentTime + 0.15);
    } catch (e) { /* no sound: the cue still shows */ }
  }

  function onCue(gesture) {
    const shownAt = Date.now();
    counts.cues++;
    const cue = $('cue'); cue.textContent = GESTURE_WORDS[gesture] || gesture; cue.className = 'active';
    beep();
    label(gesture, shownAt);
    setTimeout(() => { if (cue.textContent === (GESTURE_WORDS[gesture] || gesture)) { cue.textContent = 'Ready'; cue.className = ''; } }, 1200);
  }

  function onDecision() {
    counts.decisions++;
    // Vibration where the browser has it; a flash where it does not (iOS Safari).
    if (navigator.vibrate && navigator.vibrate(80)) counts.vibrated++;
    else counts.flashed++;
    const f = $('flash'); f.classList.add('on'); requestAnimationFrame(() => requestAnimationFrame(() => f.classList.remove('on')));
    render();
  }

  function render() {
    $('sent').textContent = counts.sent; $('labels').textContent = counts.labels; $('decisions').textContent = counts.decisions;
    const free = $('free');
    free.hidden = mode !== 'free';
    if (!free.hidden && free.childElementCount === 0 && session) {
      for (const g of session.gestures) {
        const b = document.createElement('button');
        b.textContent = DONE_WORDS[g] || g;
        b.id = `free-${g}`;
        b.onclick = () => label(g, Date.now() - session.free_look_back_ms, session.free_look_back_ms);
        free.appendChild(b);
      }
    }
    const cue = $('cue');
    if (mode === 'free') { cue.textContent = 'Move, then tap what you did'; cue.className = 'note'; }
    else if (cue.className === 'note') { cue.textContent = 'Ready'; cue.className = ''; }
  }

  function status(text, ok) { const s = $('status'); s.textContent = text; s.className = ok ? 'ok' : ''; }

  async function start() {
    if (!session) return fail('This session has not loaded yet; reload the page.');
    if (!window.isSecureContext) return fail('This page is not secure (HTTPS), so the browser gives it no motion sensors.');
    // The token names this phone's two connections to the host: an identifier, not an experiment's choice.
    token = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
    const name = $('name').value.trim() || `Player ${token.slice(0, 4)}`;
    // iOS 13+: motion needs a permission asked on a tap, which this is.
    try {
      if (typeof DeviceMotionEvent !== 'undefined' && typeof DeviceMotionEvent.requestPermission === 'function') {
        const answer = await DeviceMotionEvent.requestPermission();
        if (answer !== 'granted') return fail('Motion access was not allowed. On iPhone: Settings › Safari › Motion & Orientation Access, then reload.');
        if (typeof DeviceOrientationEvent !== 'undefined' && typeof DeviceOrientationEvent.requestPermission === 'function') {
          await DeviceOrientationEvent.requestPermission().catch(() => 'denied');
        }
      }
    } catch (e) { return fail(`Motion access failed: ${e}`); }
    window.addEventListener('devicemotion', onMotion);
    window.addEventListener('deviceorientation', onOrientation);
    beep();
    if (navigator.wakeLock) navigator.wakeLock.request('screen').catch(() => {});
    $('setup').hidden = true; $('run').hidden = false;
    running = true;
    const base = `wss://${location.host}`;
    stream = new WebSocket(`${base}/stream?phone=${token}`);
    stream.binaryType = 'arraybuffer';
    stream.onmessage = () => { counts.replies++; };
    stream.onclose = (e) => { running = false; fail(`Disconnected from the host (${e.code}${e.reason ? ': ' + e.reason : ''}). Reload to join again.`); };
    control = new WebSocket(`${base}/control`);
    control.onopen = () => control.send(JSON.stringify({ type: 'hello', phone: token, name, mode }));
    control.onclose = (e) => {
      if (running) $('run-hint').textContent = `Labels and decisions are off: the host closed their channel (${e.code}${e.reason ? ': ' + e.reason : ''}).`;
    };
    control.onmessage = (e) => {
      let m; try { m = JSON.parse(e.data); } catch (x) { return; }
      if (m.type === 'welcome') { controller = m.controller; status(`Streaming ${session.protocol} as ${name}`, true); }
      else if (m.type === 'cue' && mode === 'guided') onCue(m.gesture);
      else if (m.type === 'decision') onDecision(m);
      else if (m.type === 'labelled') { counts.labels = m.labels; render(); }
      else if (m.type === 'refused') { counts.refused++; $('run-hint').textContent = `The host refused: ${m.reason}`; }
    };
    setInterval(() => sendControl({ type: 'alive' }), 2000);
    render();
    startTicking();
  }
  $('start').onclick = start;

  // What a test (or a curious operator in the console) can read.
  window.kinetracePhone = {
    status: () => Object.assign({ running, controller, mode, error: lastError, token, motion: motion !== null, orientation }, counts),
  };
})();
</script>
</body>
</html>
"""#
}
