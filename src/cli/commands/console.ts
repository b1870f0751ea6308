/**
 * hilt node console …: HIL's console calls (`show`, `start`, `stop`) and hilt's live console
 * (`attach`, a WebSocket: docs/consoles.md). attach puts a terminal in raw mode, so every key
 * (Ctrl-C too) goes to the node; `~.` at the start of a line detaches, `~~` sends a `~` and `~?`
 * lists these, as ssh does.
 */
import type { Command } from 'commander';
import WebSocket from 'ws';
import { ApiError, Client, path, TransportError } from '../client';
import type { Ctx } from '../context';

/** Where attach reads keys and writes the console (tests give their own). */
export interface Terminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  output: NodeJS.WritableStream;
  /** where the CLI's own messages go */
  messages: NodeJS.WritableStream;
}

const HELP = 'Supported escape sequences (at the start of a line):\r\n  ~.  detach\r\n  ~~  send ~\r\n  ~?  this help\r\n';

/**
 * ssh's escapes over the keys typed: calls `send` with what goes to the node, `detach` on `~.`.
 * State carries over between chunks (a `~` may end one and its `.` start the next).
 */
export class Escapes {
  private atLineStart = true;
  private pending = false;

  constructor(private readonly send: (b: Buffer) => void, private readonly detach: () => void, private readonly help: () => void) {}

  feed(chunk: Buffer): void {
    const out: number[] = [];
    for (const b of chunk) {
      if (this.pending) {
        this.pending = false;
        if (b === 0x2e) { // .
          if (out.length) this.send(Buffer.from(out));
          return this.detach();
        }
        if (b === 0x3f) { // ?
          if (out.length) this.send(Buffer.from(out.splice(0)));
          this.help();
          continue;
        }
        if (b !== 0x7e) out.push(0x7e); // anything but ~: the ~ was meant
        out.push(b);
      } else if (this.atLineStart && b === 0x7e) {
        this.pending = true;
        continue;
      } else {
        out.push(b);
      }
      this.atLineStart = b === 0x0d || b === 0x0a;
    }
    if (out.length) this.send(Buffer.from(out));
  }
}

/** The WebSocket URL of the node's live console. */
export function streamUrl(client: Client, node: string): string {
  return client.endpoint.replace(/^http/, 'ws') + path('node', node, 'console', 'stream');
}

/**
 * Attaches the terminal to the node's console until `~.` (resolves) or the server closes the
 * connection (resolves after saying why, or rejects for a refusal: an ApiError as for any call).
 */
export async function attach(client: Client, node: string, term: Terminal): Promise<void> {
  const authorization = await client.authorization();
  // The timeout bounds the handshake only: a quiet console stays attached.
  const ws = new WebSocket(streamUrl(client, node), { headers: authorization ? { authorization } : {}, perMessageDeflate: false, ...(client.timeoutS > 0 ? { handshakeTimeout: client.timeoutS * 1000 } : {}) });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let e: { type?: unknown; msg?: unknown } = {};
        try {
          e = JSON.parse(text) as typeof e;
        } catch { /* not our error body */ }
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) return reject(client.redirected(`GET ${path('node', node, 'console', 'stream')}`, status, res.headers.location));
        reject(typeof e.type === 'string' && typeof e.msg === 'string'
          ? new ApiError(status, e.type, e.msg, `GET ${path('node', node, 'console', 'stream')}`)
          : new ApiError(status, `HTTP ${status}`, text.trim().slice(0, 500), `GET ${path('node', node, 'console', 'stream')}`));
      });
    });
    ws.once('error', (err: NodeJS.ErrnoException) => reject(/handshake has timed out/.test(err.message) ? client.silent(`GET ${path('node', node, 'console', 'stream')}`) : new TransportError(`cannot reach ${client.endpoint}: ${err.code ?? err.message}`)));
  });

  const raw = !!term.input.isTTY && typeof term.input.setRawMode === 'function';
  if (raw) term.input.setRawMode!(true);
  term.messages.write(`[connected to the console of ${node}; ~. at the start of a line detaches]\r\n`);
  let detached = false;
  const escapes = new Escapes(
    (b) => ws.send(b, { binary: true }),
    () => {
      detached = true;
      ws.close(1000, 'detached');
    },
    () => term.messages.write(HELP),
  );
  const onKeys = (d: Buffer | string) => escapes.feed(typeof d === 'string' ? Buffer.from(d) : d);
  term.input.on('data', onKeys);
  term.input.resume();
  ws.on('message', (d: Buffer) => term.output.write(d));
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  term.input.removeListener('data', onKeys);
  term.input.pause();
  if (raw) term.input.setRawMode!(false);
  if (detached) {
    term.messages.write('\r\n[detached]\r\n');
    return;
  }
  const why = closed.reason || (closed.code === 1006 ? 'the connection was lost' : `code ${closed.code}`);
  throw new TransportError(`the console of ${node} was disconnected: ${why} (${closed.code})`);
}

export function consoleCommands(node: Command, ctx: Ctx): void {
  const c = () => ctx.client();
  const console = node.command('console').description('A node\'s serial console (IPMI Serial-over-LAN)');
  console.command('show').description('Print the recorded console log of a node').argument('<node>')
    .action(async (name: string) => {
      const r = await c().getText(path('node', name, 'console'));
      process.stdout.write(r.text);
    });
  console.command('start').description('Start recording the console of a node').argument('<node>')
    .action(async (name: string) => void (await c().put(path('node', name, 'console'))));
  console.command('stop').description('Stop recording the console of a node and delete its log').argument('<node>')
    .action(async (name: string) => void (await c().del(path('node', name, 'console'))));
  console.command('attach').description('Attach this terminal to the live console of a node (starts recording; ~. detaches)').argument('<node>')
    .action(async (name: string) => attach(c(), name, { input: process.stdin, output: process.stdout, messages: process.stderr }));
}
