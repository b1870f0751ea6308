/**
 * The wiring check (issue 24), part of `npm run bench:switch`: how long `GET
 * /admin/switch/<s>/wiring` takes on one switch of BENCH_WIRING_PORTS ports, and `GET
 * /admin/wiring` on BENCH_WIRING_SWITCHES switches, and how many sessions each opens (the
 * simulators count their logins: exactly one per switch checked, or the bench fails).
 *
 * The service is the whole of hilt (bench/target.ts, LMDB) with simulated Nexus switches over
 * real SSH (bench/switch-sims.ts, in their own process), every port registered and wired to a
 * nic whose MAC the switch learned on that port, with an LLDP neighbour naming it: each check
 * must find every port `ok`, or the bench fails. One data folder is set up once; the service
 * is then started on it once per HILT_WIRING_CONCURRENCY of BENCH_WIRING_CONCURRENCY. Each
 * start first checks every switch once unmeasured (the first login records each host key).
 *
 * The baseline is one switch checked alone (the switches in turn, each after the previous
 * check's logout), measured on the same service between the checks of every switch; the ratio
 * is the time per switch of the check of every switch over it: about 1 with
 * HILT_WIRING_CONCURRENCY=1 (one switch after the other), lower as switches are read in
 * parallel. The CPU time the service and the simulators spent in each check of every switch
 * (/proc) tells whether the machine's cores, rather than the setting, set the figure.
 *
 *   BENCH_SWITCH_PARTS=wiring npm run bench:switch   (BENCH_WIRING_SWITCHES, BENCH_WIRING_PORTS,
 *   BENCH_WIRING_RUNS, BENCH_WIRING_CONCURRENCY: a list, BENCH_SWITCH_COMMAND_MS)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startTarget } from './inventory';
import { ok } from './network';
import { benchMac, startSims } from './switch-sims';
import { sleep } from '../lib/time';

const SWITCHES = Number(process.env.BENCH_WIRING_SWITCHES ?? 100);
const PORTS = Number(process.env.BENCH_WIRING_PORTS ?? 48);
const RUNS = Number(process.env.BENCH_WIRING_RUNS ?? 5);
const CONCURRENCY = (process.env.BENCH_WIRING_CONCURRENCY ?? '1,8,32').split(',').map(Number);
const COMMAND_MS = Number(process.env.BENCH_SWITCH_COMMAND_MS ?? 2);
/** a pause before each measured check, long enough for the sessions of the previous one to log out */
const IDLE_MS = 300;
/** checks of one switch before each check of every switch */
const ONE_PER_RUN = 4;
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times */
const CLOCK_TICKS = 100;
const M = 'http://schema.massopencloud.org/haas/v0/';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Run `work` on every item, `limit` at a time. */
async function inPool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    for (let i = next++; i < items.length; i = next++) await work(items[i]!);
  }));
}

interface Row {
  concurrency: number;
  /** seconds of each check of one switch, and of every switch */
  one: number[];
  all: number[];
  /** CPU seconds of one check of every switch (mean), in the service and in the simulators */
  cpuService: number;
  cpuSims: number;
}

export async function wiringBench(): Promise<void> {
  const sims = await startSims(SWITCHES, { BENCH_SWITCH_COMMAND_MS: String(COMMAND_MS), BENCH_SWITCH_LEARN: '1', BENCH_SWITCH_FABRICS: '0' });
  const dataDir = mkdtempSync(join(tmpdir(), 'hilt-bench-wiring-'));
  const ports = sims.sims[0]!.ports.slice(0, PORTS);
  const names = sims.sims.map((_, i) => `ws${i}`);
  const rows: Row[] = [];
  let setupS = 0;
  try {
    if (ports.length < PORTS) throw new Error(`the simulator has ${ports.length} ports, BENCH_WIRING_PORTS is ${PORTS}`);
    const t0 = performance.now();
    const setup = await startTarget({ BENCH_DATA_DIR: dataDir });
    try {
      const h = setup.hilt;
      await inPool(sims.sims.map((s, i) => ({ s, i })), 8, ({ s, i }) => ok(h, 'PUT', `/switch/${names[i]}`, {
        type: `${M}switches/nexus`, hostname: s.address, username: s.username, password: s.password, dummy_vlan: 3999,
      }));
      const wires = names.flatMap((sw, i) => ports.map((port, p) => ({ sw, port, node: `wn${i}-${p}`, mac: benchMac(i, p) })));
      await inPool(wires, 64, async ({ sw, port, node, mac }) => {
        await ok(h, 'PUT', `/node/${node}`, { obm: { type: `${M}obm/mock`, host: 'h', user: 'u', password: 'p' } });
        await ok(h, 'PUT', `/node/${node}/nic/eth0`, { macaddr: mac });
        await ok(h, 'PUT', `/switch/${sw}/port/${port}`);
        await ok(h, 'POST', `/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' });
      });
    } finally {
      await setup.stop();
    }
    setupS = (performance.now() - t0) / 1000;

    /** One timed call; the sessions it opened, per switch. */
    const timed = async (h: string, path: string): Promise<{ s: number; sessions: number[]; body: any }> => {
      const before = await sims.logins();
      const t0 = performance.now();
      const body = await ok(h, 'GET', path);
      const s = (performance.now() - t0) / 1000;
      const after = await sims.logins();
      return { s, sessions: after.map((n, i) => n - before[i]!), body };
    };
    const expectOk = (what: string, summary: Record<string, number>, switches: number) => {
      if (summary.ok !== PORTS * switches || summary.mismatch || summary.unseen || summary.unwired) {
        throw new Error(`${what}: expected ${PORTS * switches} ports ok, got ${JSON.stringify(summary)}`);
      }
    };

    for (const concurrency of CONCURRENCY) {
      const t = await startTarget({ BENCH_DATA_DIR: dataDir, HILT_WIRING_CONCURRENCY: String(concurrency) });
      try {
        // Unmeasured: the first logins (host keys recorded), the JIT.
        expectOk('warm-up', (await timed(t.hilt, '/admin/wiring')).body.summary, SWITCHES);
        const row: Row = { concurrency, one: [], all: [], cpuService: 0, cpuSims: 0 };
        // The baseline's checks between those of every switch, so that both meet the same load.
        for (let r = 0, i = 0; r < RUNS; r++) {
          for (let k = 0; k < ONE_PER_RUN; k++, i = (i + 1) % SWITCHES) {
            await sleep(IDLE_MS);
            const x = await timed(t.hilt, `/admin/switch/${names[i]}/wiring`);
            expectOk('one switch', x.body.summary, 1);
            if (x.sessions[i] !== 1 || x.sessions.reduce((a, b) => a + b, 0) !== 1) throw new Error(`one switch: sessions opened ${JSON.stringify(x.sessions)}, expected 1 on ${names[i]}`);
            row.one.push(x.s);
          }
          await sleep(IDLE_MS);
          const cpu0 = [cpuSeconds(t.pid), cpuSeconds(sims.pid)];
          const x = await timed(t.hilt, '/admin/wiring');
          row.cpuService += (cpuSeconds(t.pid) - cpu0[0]!) / RUNS;
          row.cpuSims += (cpuSeconds(sims.pid) - cpu0[1]!) / RUNS;
          expectOk('every switch', x.body.summary, SWITCHES);
          if (x.body.summary.switches !== SWITCHES) throw new Error(`every switch: ${JSON.stringify(x.body.summary)}`);
          if (x.sessions.some((n) => n !== 1)) throw new Error(`every switch: sessions opened per switch ${JSON.stringify(x.sessions)}, expected 1 each`);
          row.all.push(x.s);
        }
        rows.push(row);
      } finally {
        await t.stop();
      }
    }
  } finally {
    sims.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }

  process.stdout.write(`\nWiring check: ${SWITCHES} simulated Nexus switches over SSH on 127.0.0.1 (${COMMAND_MS} ms per command), ${PORTS} ports each, `
    + `every port wired to a nic whose MAC it learned (all ok); medians of ${RUNS * ONE_PER_RUN} checks of one switch and ${RUNS} of every switch, `
    + `taking turns (set up in ${setupS.toFixed(0)} s)\n\n`);
  const head = ['HILT_WIRING_CONCURRENCY', 'one switch s', 'sessions', `${SWITCHES} switches s`, 'sessions', 's/switch', 'ratio', 'cpu s/switch: service', 'simulators'];
  const widths = [24, 13, 9, 16, 9, 9, 7, 23, 11];
  const line = (cells: string[]) => process.stdout.write(`${cells.map((c, k) => (k ? c.padStart(widths[k]!) : c.padEnd(widths[k]!))).join('')}\n`);
  line(head);
  for (const r of rows) {
    const perSwitch = median(r.all) / SWITCHES;
    line([String(r.concurrency), median(r.one).toFixed(3), '1', median(r.all).toFixed(2), String(SWITCHES), perSwitch.toFixed(3),
      (perSwitch / median(r.one)).toFixed(2), (r.cpuService / SWITCHES).toFixed(3), (r.cpuSims / SWITCHES).toFixed(3)]);
  }
  process.stdout.write('ratio: time per switch checking every switch / one switch checked alone (the baseline, same service, same run); '
    + 'sessions: opened per check (the simulators\' logins; the bench fails unless one per switch)\n');
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
