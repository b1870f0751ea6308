/**
 * A QMP client: one short-lived connection per exchange, since QEMU serves one QMP client at a
 * time and a connection left open would lock out the next operation.
 */
import * as net from 'node:net';

import { HeadnodeError } from '../types';

export type QmpCommand = { execute: string; arguments?: Record<string, unknown> };

/**
 * One QMP session: greeting, qmp_capabilities, then `cmds` in order. Resolves with each command's
 * `return`. With `quitting`, the connection closing after the last command was sent counts as success.
 */
export function qmpSession(sock: string, cmds: QmpCommand[], timeoutMs: number, quitting = false): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const results: unknown[] = [];
    let buf = '';
    let stage = -2; // -2: greeting, -1: capabilities, i >= 0: waiting for cmds[i]
    let done = false;
    const s = net.createConnection(sock);
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      if (err) reject(err);
      else resolve(results);
    };
    const timer = setTimeout(() => finish(new HeadnodeError(`QMP ${sock}: no answer within ${timeoutMs} ms`)), timeoutMs);
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
      if (quitting && stage === cmds.length - 1) finish();
      else finish(new HeadnodeError(`QMP ${sock}: connection closed`));
    });
  });
}

/** QMP says the guest runs; returns the VNC port QEMU actually listens on. */
export async function qmpRunning(sock: string, timeoutMs: number): Promise<{ running: boolean; vncport: number | null }> {
  const [status, vnc] = (await qmpSession(sock, [{ execute: 'query-status' }, { execute: 'query-vnc' }], timeoutMs)) as [
    { running?: boolean; status?: string },
    { enabled?: boolean; service?: string },
  ];
  const port = vnc?.enabled && vnc.service ? Number.parseInt(vnc.service, 10) : NaN;
  return { running: status?.running === true, vncport: Number.isFinite(port) ? port : null };
}
