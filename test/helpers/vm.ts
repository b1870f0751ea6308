/** Looking at real VMs from outside the service: processes, VNC, QMP (tests only). */
import * as fs from 'node:fs';
import * as net from 'node:net';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const state = (statFile: string) => {
  const stat = fs.readFileSync(statFile, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
};

/** Any thread of the process still alive? (A zombie leader may still have exiting threads.) */
export function alive(pid: number): boolean {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).some((tid) => {
      try {
        return !['Z', 'X'].includes(state(`/proc/${pid}/task/${tid}/stat`));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

export async function waitGone(pid: number, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`pid ${pid} still alive after ${ms} ms`);
    await sleep(20);
  }
}

/** Live QEMU processes whose command line mentions `marker` (our temp folder). */
export function qemuProcesses(marker: string): number[] {
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes('qemu-system') && cmd.includes(marker) && alive(Number(d))) pids.push(Number(d));
    } catch {
      /* exited */
    }
  }
  return pids;
}

/** Connect to 127.0.0.1:port and read the VNC server's protocol banner. */
export function vncBanner(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ host: '127.0.0.1', port });
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`no VNC banner on ${port}`));
    }, 5000);
    s.once('data', (d) => {
      clearTimeout(t);
      s.destroy();
      resolve(d.toString('latin1'));
    });
    s.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

/** A minimal independent QMP client (not the driver's) for one command. */
export function qmp(sock: string, execute: string, args?: Record<string, unknown>): Promise<any> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(sock);
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`QMP ${execute} timed out`));
    }, 5000);
    let buf = '';
    let step = 0;
    s.on('data', (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const msg = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (msg.event) continue;
        if (step === 0) s.write('{"execute":"qmp_capabilities"}\n');
        else if (step === 1) s.write(JSON.stringify(args ? { execute, arguments: args } : { execute }) + '\n');
        else {
          clearTimeout(t);
          s.destroy();
          return msg.error ? reject(new Error(msg.error.desc)) : resolve(msg.return);
        }
        step++;
      }
    });
    s.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}
