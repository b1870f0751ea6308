/**
 * A node's serial line for tests: a TCP server on 127.0.0.1 (an ephemeral port) that ipmi_sim's
 * SOL connects to (`sol "tcp:127.0.0.1:PORT" 115200`, test/helpers/ipmisim.ts). What the test
 * writes is what the node prints; what arrives is what was typed on the console. Also: the
 * ipmitool processes that are children of this test process, read from /proc, for the checks
 * that none is left behind and that no password is on a command line.
 */
import { createServer, Server, Socket } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { until } from './wait';

export interface SerialLine {
  port: number;
  /** everything the node's serial input received (typed on the console) */
  received(): string;
  /** prints on the node's serial output (once the BMC is connected) */
  write(text: string): Promise<void>;
  connected(): boolean;
  close(): Promise<void>;
}

export async function startSerialLine(): Promise<SerialLine> {
  let socket: Socket | undefined;
  let got = '';
  const server: Server = createServer((s) => {
    socket?.destroy();
    socket = s;
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    received: () => got,
    connected: () => !!socket && !socket.destroyed,
    async write(text) {
      await until('the BMC connected to the serial line', () => !!socket && !socket.destroyed, 10_000);
      await new Promise<void>((resolve, reject) => socket!.write(text, (err) => (err ? reject(err) : resolve())));
    },
    async close() {
      socket?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface ChildProc { pid: number; comm: string; argv: string[] }

/** Living processes whose parent is `ppid` (default: this process), from /proc. */
export function childProcesses(ppid = process.pid): ChildProc[] {
  const out: ChildProc[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const [state, parent] = stat.slice(close + 2).split(' ');
      if (Number(parent) !== ppid || state === 'Z') continue;
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').filter(Boolean);
      out.push({ pid: Number(d), comm, argv });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** This process's living ipmitool children running `sol activate`. */
export const solChildren = (ppid = process.pid): ChildProc[] =>
  childProcesses(ppid).filter((p) => p.comm === 'ipmitool' && p.argv.includes('sol') && p.argv.includes('activate'));
