/**
 * A QMP client: one short-lived connection per exchange, since QEMU serves one QMP client at a
 * time and a connection left open would lock out the next operation.
 */
import * as net from 'node:net';

import { HeadnodeError } from '../types';

export type QmpCommand = { execute: string; arguments?: Record<string, unknown> };

export interface QmpOptions {
  /** The connection closing after the last command was sent counts as success (`quit`). */
  quitting?: boolean;
  /**
   * For probes: a QEMU silent this long is deemed wedged and the session fails with a
   * HeadnodeError. Without it, only the signal ends the wait.
   */
  answerMs?: number;
}

/**
 * One QMP session: greeting, qmp_capabilities, then `cmds` in order. Resolves with each command's
 * `return`. An aborted signal closes the connection and rejects with the signal's reason.
 */
export function qmpSession(sock: string, cmds: QmpCommand[], signal: AbortSignal, opts: QmpOptions = {}): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const results: unknown[] = [];
    let buf = '';
    let stage = -2; // -2: greeting, -1: capabilities, i >= 0: waiting for cmds[i]
    let done = false;
    const s = net.createConnection(sock);
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      s.destroy();
      if (err === undefined) resolve(results);
      else reject(err);
    };
    const onAbort = () => finish(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const answerMs = opts.answerMs;
    const timer = answerMs === undefined ? undefined
      : setTimeout(() => finish(new HeadnodeError(`QMP ${sock}: no answer within ${answerMs} ms`)), answerMs);
    const send = (c: QmpCommand) => s.write(JSON.stringify(c) + '\n');
    const handle = (msg: Record<string, unknown>) => {
      if ('event' in msg) return;
      if (stage === -2) {
        if (!('QMP' in msg)) return finish(new HeadnodeError(`QMP ${sock}: unexpected greeting ${JSON.stringify(msg)}`));
        stage = -1;
        send({ execute: 'qmp_capabilities' });
        return;
      }
      if ('error' in msg) {
        const e = msg.error as { class?: string; desc?: string };
        const what = stage >= 0 ? cmds[stage]?.execute : 'qmp_capabilities';
        return finish(new HeadnodeError(`QMP ${what}: ${e.desc ?? JSON.stringify(e)}`));
      }
      if ('return' in msg) {
        if (stage >= 0) results.push(msg.return);
        stage++;
        if (stage >= cmds.length) return finish();
        send(cmds[stage]!);
      }
    };
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          return finish(new HeadnodeError(`QMP ${sock}: unparsable line ${line.slice(0, 200)}`));
        }
        if (msg && typeof msg === 'object') handle(msg as Record<string, unknown>);
        if (done) return;
      }
    });
    s.on('error', (e) => finish(Object.assign(new HeadnodeError(`QMP ${sock}: ${e.message}`), { cause: e })));
    s.on('close', () => {
      if (opts.quitting && stage === cmds.length - 1) finish();
      else finish(new HeadnodeError(`QMP ${sock}: connection closed`));
    });
  });
}

/** QMP says the guest runs (and its run state: `prelaunch` before the first `cont`); returns the VNC port QEMU actually listens on. */
export async function qmpRunning(
  sock: string, signal: AbortSignal, answerMs?: number,
): Promise<{ running: boolean; status: string | null; vncport: number | null }> {
  const cmds = [{ execute: 'query-status' }, { execute: 'query-vnc' }];
  const [status, vnc] = (await qmpSession(sock, cmds, signal, { answerMs })) as [
    { running?: boolean; status?: string },
    { enabled?: boolean; service?: string },
  ];
  const port = vnc?.enabled && vnc.service ? Number.parseInt(vnc.service, 10) : NaN;
  return { running: status?.running === true, status: status?.status ?? null, vncport: Number.isFinite(port) ? port : null };
}
