// The dashboard's console view (docs/consoles.md): xterm.js (served by hilt from its own package)
// on the node's live console, a WebSocket behind the dashboard's session cookie. The node is
// the page's hash: console.html#<node>. Output arrives as binary messages; keys go back as bytes.
//
// The page's requests carry the session whoever sent the browser here, so it acts only on what
// the user does: reached from another site (the service marks the page by the navigation's
// Sec-Fetch-Site, src/routes/ui.ts; a referrer of another origin counts too) it connects only
// after a click on "Connect". The stream never starts the recording: a console not recorded is
// refused (close code 4410), and "Start recording" (the action console_start, with the session's
// CSRF token, as PUT /node/<node>/console) starts it before connecting again.

const $ = (id) => document.getElementById(id);
const node = decodeURIComponent(location.hash.slice(1));
const status = (text) => { $('status').textContent = text; };

/** Was the page reached from the dashboard itself (or by the user: typed, a bookmark, a reload)? */
function reachedHere() {
  if (document.body.dataset.arrival !== 'here') return false;
  if (!document.referrer) return true;
  try {
    return new URL(document.referrer).origin === location.origin;
  } catch {
    return false;
  }
}

/** One click on the button, then it hides again. */
const clicked = (button) => new Promise((resolve) => {
  button.hidden = false;
  button.addEventListener('click', () => { button.hidden = true; resolve(); }, { once: true });
  button.focus();
});

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
  const { csrf, isAdmin, projects, readOnly } = await me.json();
  // Starting the recording is a change (the API's rule of PUT /node/<node>/console): offered to an
  // admin, and to a member of the node's project; not to a reader, an auditor or a read-only token.
  const detail = await fetch(`api/node?name=${encodeURIComponent(node)}`, { credentials: 'same-origin', cache: 'no-store' });
  const project = detail.ok ? (await detail.json()).project : undefined;
  const mayStart = detail.ok && !readOnly && (isAdmin || (!!project && projects.includes(project)));
  if (!reachedHere()) {
    status(`This page was opened from another site. Connect to the live console of ${node}? What you type goes to the node.`);
    await clicked($('connect'));
  }
  const term = new window.Terminal({ convertEol: false, cursorBlink: true, scrollback: 5000, fontSize: 14 });
  term.open($('terminal'));
  term.focus();
  const encoder = new TextEncoder();
  let ws = null;
  term.onData((data) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
  });

  const connect = () => {
    // A node `.` or `..` in the query: a URL drops such a path segment (even as %2E%2E).
    const url = new URL(/^\.\.?$/.test(node) ? `api/console/stream?node=${node}` : `api/node/${encodeURIComponent(node)}/console/stream`, location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    status('Connecting…');
    ws.addEventListener('open', () => status(`Connected to the console of ${node}.`));
    ws.addEventListener('message', (ev) => term.write(new Uint8Array(ev.data)));
    ws.addEventListener('close', (ev) => {
      const why = ev.reason || (ev.code === 1006 ? 'the connection was refused or lost (is the console offered for this node, and may you see it?)' : `code ${ev.code}`);
      status(`Disconnected: ${why}.`);
      term.write(`\r\n[disconnected: ${why}]\r\n`);
      // Not recorded (refused, or stopped meanwhile): recording starts only at the user's click.
      if (ev.code === 4410) offerStart(why).catch((err) => status(`Start recording failed: ${err.message}`));
    });
  };

  const offerStart = async (why) => {
    if (!mayStart) {
      status(`Disconnected: ${why}. Only a member of the node's project, or an admin, may start its recording.`);
      return;
    }
    status(`Disconnected: ${why}. Start recording the console of ${node} to watch it.`);
    for (;;) {
      await clicked($('start-recording'));
      status('Starting the recording…');
      const r = await fetch('api/action', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { accept: 'application/json', 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ action: 'console_start', node }),
      });
      if (r.ok) break;
      const body = await r.json().catch(() => null);
      status(`Start recording failed: ${body && body.msg ? body.msg : `HTTP ${r.status}`}.`);
    }
    connect();
  };

  connect();
}

main().catch((err) => status(`The console could not start: ${err.message}`));
