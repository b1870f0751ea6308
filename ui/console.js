// The dashboard's console view (docs/consoles.md): xterm.js (served by hilt from its own package)
// on the node's live console, a WebSocket behind the dashboard's session cookie. The node is
// the page's hash: console.html#<node>. Output arrives as binary messages; keys go back as bytes.

const $ = (id) => document.getElementById(id);
const node = decodeURIComponent(location.hash.slice(1));
const status = (text) => { $('status').textContent = text; };

async function main() {
  if (!node) return status('No node named: open a console from a node\'s page.');
  $('title').textContent = `Console of ${node}`;
  document.title = `Console of ${node} · hilt`;
  $('back').href = `./#/node/${encodeURIComponent(node)}`;
  // A session first: without one, the dashboard's login.
  const me = await fetch('api/me', { credentials: 'same-origin', cache: 'no-store' });
  if (me.status === 401) {
    location.href = './';
    return;
  }
  const term = new window.Terminal({ convertEol: false, cursorBlink: true, scrollback: 5000, fontSize: 14 });
  term.open($('terminal'));
  term.focus();
  const url = new URL(`api/node/${encodeURIComponent(node)}/console/stream`, location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  status('Connecting…');
  const encoder = new TextEncoder();
  ws.addEventListener('open', () => status(`Connected to the console of ${node}.`));
  ws.addEventListener('message', (ev) => term.write(new Uint8Array(ev.data)));
  term.onData((data) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
  });
  ws.addEventListener('close', (ev) => {
    const why = ev.reason || (ev.code === 1006 ? 'the connection was refused or lost (is the console offered for this node, and may you see it?)' : `code ${ev.code}`);
    status(`Disconnected: ${why}.`);
    term.write(`\r\n[disconnected: ${why}]\r\n`);
  });
}

main().catch((err) => status(`The console could not start: ${err.message}`));
