/// The operator's page: every phone of the session, live (it reads /phones.json each second).
enum OperatorPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kinetrace phones</title>
<style>
  body { margin:0; padding:16px; font:15px/1.4 -apple-system, system-ui, "Segoe UI", Roboto, sans-serif; background:#10151c; color:#e8edf3; }
  h1 { font-size:20px; margin:4px 0 2px; } #summary { color:#94a3b8; margin-bottom:12px; }
  table { border-collapse:collapse; width:100%; background:#1b232e; border-radius:12px; overflow:hidden; }
  th, td { padding:9px 10px; text-align:left; border-bottom:1px solid #263241; } th { color:#94a3b8; font-weight:500; font-size:13px; }
  td.n { text-align:right; font-variant-numeric:tabular-nums; } th.n { text-align:right; }
  .dot { display:inline-block; width:9px; height:9px; border-radius:50%; margin-right:6px; background:#64748b; }
  .live .dot { background:#4ade80; } .gone { color:#64748b; }
  #empty { color:#94a3b8; padding:14px; }
</style>
</head>
<body>
<h1>Connected phones</h1>
<div id="summary">…</div>
<table><thead><tr><th>Player</th><th>Mode</th><th>Controller</th><th class="n">Samples</th><th class="n">Labels</th><th class="n">Cues</th><th class="n">Decisions</th></tr></thead>
<tbody id="phones"></tbody></table>
<div id="empty">No phone has joined yet. Open the phone page's address on a phone.</div>
<script>
'use strict';
(() => {
  const cell = (text, numeric) => { const td = document.createElement('td'); td.textContent = text; if (numeric) td.className = 'n'; return td; };
  async function refresh() {
    try {
      const s = await (await fetch('phones.json', { cache: 'no-store' })).json();
      const body = document.getElementById('phones');
      body.replaceChildren();
      let live = 0;
      for (const p of s.phones) {
        const tr = document.createElement('tr');
        const streaming = p.connected && p.streaming;
        if (streaming) live++;
        tr.className = streaming ? 'live' : p.connected ? '' : 'gone';
        const name = cell(p.name || '(no name yet)'); name.insertBefore(document.createElement('span'), name.firstChild).className = 'dot';
        tr.append(name, cell(p.mode), cell(p.controller || '—'), cell(p.samples, true), cell(p.labels, true), cell(p.cues, true), cell(p.decisions, true));
        body.appendChild(tr);
      }
      document.getElementById('empty').hidden = s.phones.length > 0;
      document.getElementById('summary').textContent = `${s.protocol}: ${live} streaming, ${s.phones.length} seen`;
    } catch (e) {
      document.getElementById('summary').textContent = `The host does not answer (${e}).`;
    }
  }
  refresh();
  setInterval(refresh, 1000);
})();
</script>
</body>
</html>
"""#
}
