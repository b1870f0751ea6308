/** A viewer of a node's live console over its WebSocket (GET /node/<node>/console/stream), for tests. */
import WebSocket from 'ws';
import { basic, Creds } from './server';

/** A WebSocket viewer of a node's console, collecting what it receives. */
export interface Watcher {
  ws: WebSocket;
  text(): string;
  closed: Promise<{ code: number; reason: string }>;
  send(text: string): void;
}

/** `under`: where the stream's route is (the dashboard's: '/ui/api'). */
export function watch(url: string, node: string, as: Creds | null, headers: Record<string, string> = {}, under = ''): Promise<Watcher> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${under}/node/${encodeURIComponent(node)}/console/stream`, {
    headers: { ...(as ? { authorization: basic(as) } : {}), ...headers },
  });
  let got = '';
  ws.on('message', (d: Buffer) => (got += d.toString('latin1')));
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, text: () => got, closed, send: (t) => ws.send(Buffer.from(t, 'latin1')) }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`refused: ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

