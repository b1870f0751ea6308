/**
 * Restarts under kill -9 (issue 27, item 5): a small world whose service is killed with SIGKILL
 * again and again while clients keep network operations going, then left running until every
 * operation has ended. It shows that no accepted operation is lost, that none stays PENDING
 * longer than its own switch's queue explains, and how long each restart takes.
 *
 * The service is the real process (dist/src/server.js) on LMDB in a temp folder, a direct child
 * killed by PID. Each client cycles connect/detach on its own node, one operation at a time,
 * and keeps every status id it was given (or, when the connection died before the answer, that
 * the service's list shows it accepted). At the end the service's own timestamps of each
 * operation (accepted_at, finished_at) are read back, and:
 *
 * - restart: from spawning the process to its first correct answer (`GET /node/<last node>`,
 *   the cold start of issue 27), p50 and max;
 * - explained PENDING time of an operation: (the operations of its switch accepted before it and
 *   not yet ended when it was accepted + itself + one per kill during it, whose interrupted
 *   change is redone) × one operation's switch time, plus the downtime during it. One
 *   operation's switch time is two mock changes (the port's VLAN and, under the default
 *   HILT_INACTIVE_PORTS=shutdown, its administrative state), each HILT_MOCK_SWITCH_DELAY_MS;
 * - lost: an accepted operation not DONE or ERROR at the end; and every switch port must carry
 *   what its node's nic holds.
 *
 * - quiet restarts: once everything settled, the same kill and start a few times with no client
 *   running, the restart time of the folder alone.
 *
 *   npm run bench:kill -- --kills 50 --nodes 16 --switches 1 --delay 200 --quiet-restarts 5
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../lib/time';
import { freePort } from '../test/helpers/ports';

const SERVER = join(__dirname, '..', 'src', 'server.js');
const M = 'http://schema.massopencloud.org/haas/v0/';
const ADMIN = { user: 'admin', password: 'kill-loop-admin' };
const AUTH = 'Basic ' + Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64');

export interface KillLoopOptions {
  nodes: number;
  switches: number;
  kills: number;
  /** HILT_MOCK_SWITCH_DELAY_MS: each mock switch change */
  delayMs: number;
  /** a kill comes this long after the restart answered correctly: uniformly in [minUpMs, maxUpMs] */
  minUpMs: number;
  maxUpMs: number;
  /** seed of the kill times */
  seed: number;
  /** bound on the final settling, after the last restart */
  settleMs: number;
  /** restarts measured at the end, once settled, with no client running (kill -9, then start) */
  quietRestarts: number;
  /** where progress and figures are written */
  print: (line: string) => void;
}

export const DEFAULTS: KillLoopOptions = {
  nodes: 16, switches: 1, kills: 50, delayMs: 200, minUpMs: 1500, maxUpMs: 4000, seed: 27, settleMs: 300_000, quietRestarts: 5,
  print: (line) => console.log(line),
};

export interface Operation {
  id: string;
  node: string;
  switch: string;
  /** the service's own times (ms since the epoch), read back at the end */
  acceptedAt?: number;
  finishedAt?: number;
  status?: string;
  /** PENDING time over what its switch's queue explains */
  ratio?: number;
  explainedMs?: number;
}

export interface KillLoopResult {
  restartsMs: number[];
  /** the restarts with no client running */
  quietMs: number[];
  operations: Operation[];
  done: number;
  errors: number;
  /** accepted operations not DONE or ERROR at the end (or no longer listed) */
  lost: Operation[];
  /** ports whose switch configuration is not their nic's networks */
  mismatched: string[];
  worst?: Operation;
  lines: string[];
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Res { status: number; body: any }

/** One request; rejects on a connection error (the service is down). */
function call(base: string, method: string, path: string, body?: unknown): Promise<Res> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(base + path, {
      method, agent, timeout: 10_000,
      headers: { authorization: AUTH, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
        } catch (err) {
          reject(err as Error);
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(payload);
  });
}


/** A small deterministic generator (the kill times of a run can be repeated with its seed). */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >> 17;
    x ^= x << 5; x >>>= 0;
    return x / 2 ** 32;
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] : NaN;
};

/** The service process, restarted on one data folder. */
class Service {
  child?: ChildProcess;
  base = '';
  private exited?: Promise<void>;
  private output = '';

  constructor(private readonly dir: string, private readonly delayMs: number) {}

  /** Spawn it and wait for its first correct answer about `probe`; returns the ms that took. */
  async start(probe: string): Promise<number> {
    const port = await freePort();
    const started = Date.now();
    this.output = '';
    const child = spawn(process.execPath, [SERVER], {
      env: {
        ...process.env, HILT_DATA_DIR: this.dir, HILT_HOST: '127.0.0.1', HILT_PORT: String(port), HILT_LOG_LEVEL: 'warn',
        HILT_STORAGE: 'lmdb', HILT_ADMIN_USER: ADMIN.user, HILT_ADMIN_PASSWORD: ADMIN.password, HILT_LOGIN_MAX_FAILURES: '1000000',
        HILT_MOCK_SWITCH_DELAY_MS: String(this.delayMs),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const keep = (d: Buffer) => (this.output = (this.output + d.toString('utf8')).slice(-20_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((r) => child.once('close', () => r()));
    const base = `http://127.0.0.1:${port}`;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited while starting:\n${this.output}`);
      if (Date.now() - started > 120_000) throw new Error(`the service did not answer within 120 s:\n${this.output}`);
      const r = await call(base, 'GET', probe).catch(() => undefined);
      // A correct answer: the node as it was registered (any 200 before the world exists).
      if (r?.status === 200 && (!probe.startsWith('/node/') || r.body?.nics?.[0]?.label === 'eth0')) break;
      await sleep(5);
    }
    const ms = Date.now() - started;
    this.base = base;
    return ms;
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.child?.kill(signal);
    await this.exited;
    this.child = undefined;
  }
}

async function must(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const r = await call(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function killLoop(options: Partial<KillLoopOptions> = {}): Promise<KillLoopResult> {
  const o = { ...DEFAULTS, ...options };
  const lines: string[] = [];
  const print = (line: string) => {
    lines.push(line);
    o.print(line);
  };
  const dir = mkdtempSync(join(tmpdir(), 'hilt-kill-loop-'));
  const svc = new Service(dir, o.delayMs);
  const nodes = Array.from({ length: o.nodes }, (_, i) => `kn${i}`);
  const switchOf = (i: number) => `ks${i % o.switches}`;
  const portOf = (i: number) => `gi1/0/${i}`;
  const probe = `/node/${nodes[nodes.length - 1]}`;
  const operations: Operation[] = [];
  const restartsMs: number[] = [];
  /** [went down, answered again] */
  const down: [number, number][] = [];
  const kills: number[] = [];
  let up = false;
  let stop = false;
  /** the run is over: clients still waiting give up */
  let over = false;
  try {
    await svc.start('/nodes/free');
    up = true;
    const b = () => svc.base;
    await must(b(), 'PUT', '/project/kp');
    await must(b(), 'PUT', '/network/kw', { owner: 'kp', access: 'kp', net_id: '' });
    const vlan = Number((await must(b(), 'GET', '/networks')).kw.network_id);
    for (let s = 0; s < o.switches; s++) await must(b(), 'PUT', `/switch/ks${s}`, { type: `${M}switches/mock`, hostname: 'localhost', username: 'kl', password: 'kill-loop-switch' });
    for (const [i, n] of nodes.entries()) {
      await must(b(), 'PUT', `/node/${n}`, { obm: { type: `${M}obm/mock`, host: 'localhost', user: 'kl', password: 'kill-loop-bmc' } });
      await must(b(), 'PUT', `/node/${n}/nic/eth0`, { macaddr: `52:54:00:00:00:${i.toString(16).padStart(2, '0')}` });
      await must(b(), 'PUT', `/switch/${switchOf(i)}/port/${portOf(i)}`);
      await must(b(), 'POST', `/switch/${switchOf(i)}/port/${portOf(i)}/connect_nic`, { node: n, nic: 'eth0' });
      await must(b(), 'POST', '/project/kp/connect_node', { node: n });
    }

    /** Retry a request until the service answers (it is down between a kill and the restart). */
    const answer = async (method: string, path: string, body?: unknown): Promise<Res> => {
      for (;;) {
        if (over) throw new Error('the run is over');
        if (up) {
          const r = await call(svc.base, method, path, body).catch(() => undefined);
          if (r && r.status !== 503) return r;
        }
        await sleep(50);
      }
    };
    const known = new Set<string>();
    const client = async (i: number) => {
      const node = nodes[i];
      let connected = false;
      while (!stop) {
        const path = `/node/${node}/nic/eth0/${connected ? 'detach_network' : 'connect_network'}`;
        let id: string | undefined;
        const r = up ? await call(svc.base, 'POST', path, { network: 'kw' }).catch(() => undefined) : undefined;
        if (r?.status === 202) {
          id = r.body.status_id as string;
        } else if (!r || r.status >= 500) {
          // The answer was lost (or never came): the service's list says whether it was accepted.
          const listed = await answer('GET', `/node/${node}/networking_actions`);
          const fresh = (listed.body as { status_id: string }[]).find((a) => !known.has(a.status_id));
          if (fresh) id = fresh.status_id;
          else {
            await sleep(50);
            continue;
          }
        } else {
          // Refused (e.g. already connected after an answer that was lost): follow the service.
          const shown = await answer('GET', `/node/${node}`);
          connected = Object.keys(shown.body.nics?.[0]?.networks ?? {}).length > 0;
          await sleep(50);
          continue;
        }
        known.add(id);
        operations.push({ id, node, switch: switchOf(i) });
        for (;;) {
          const s = await answer('GET', `/networking_action/${id}`);
          if (s.status !== 200) throw new Error(`operation ${id} of ${node}: ${s.status} ${JSON.stringify(s.body)}`);
          if (s.body.status === 'PENDING') {
            await sleep(50);
            continue;
          }
          if (s.body.status === 'DONE') connected = s.body.new_network !== null;
          break;
        }
      }
    };
    let failed: Error | undefined;
    const running = nodes.map((_, i) => client(i).catch((err: Error) => {
      if (!over) failed ??= err;
    }));

    const rnd = random(o.seed);
    for (let k = 0; k < o.kills; k++) {
      await sleep(o.minUpMs + rnd() * (o.maxUpMs - o.minUpMs));
      up = false;
      await svc.kill();
      const at = Date.now();
      kills.push(at);
      const ms = await svc.start(probe);
      restartsMs.push(ms);
      down.push([at, Date.now()]);
      up = true;
    }
    const settleFrom = Date.now();
    stop = true;
    await Promise.race([Promise.all(running), sleep(o.settleMs)]);
    if (failed) throw failed;

    // The service's own record of every operation, and the ports against the nics.
    const record = new Map<string, { status: string; accepted_at: string; finished_at: string | null }>();
    for (const n of nodes) for (const a of await must(svc.base, 'GET', `/node/${n}/networking_actions`)) record.set(a.status_id, a);
    for (const op of operations) {
      const r = record.get(op.id);
      if (!r) continue;
      op.status = r.status;
      op.acceptedAt = Date.parse(r.accepted_at);
      if (r.finished_at) op.finishedAt = Date.parse(r.finished_at);
    }
    const lost = operations.filter((op) => op.status !== 'DONE' && op.status !== 'ERROR');
    const mismatched: string[] = [];
    for (let s = 0; s < o.switches; s++) {
      const ports = (await must(svc.base, 'GET', `/admin/actors/switch/ks${s}`)).mockPorts as Record<string, { native: number | null; tagged: number[] }>;
      for (const [i, n] of nodes.entries()) {
        if (switchOf(i) !== `ks${s}`) continue;
        const networks = (await must(svc.base, 'GET', `/node/${n}`)).nics[0].networks as Record<string, string>;
        const want = networks['vlan/native'] === 'kw' ? { native: vlan, tagged: [] } : { native: null, tagged: [] };
        const have = ports[portOf(i)] ?? { native: null, tagged: [] };
        if (have.native !== want.native || have.tagged.length !== want.tagged.length) mismatched.push(`${n} (${portOf(i)}): nic ${JSON.stringify(networks)}, port ${JSON.stringify(have)}`);
      }
    }

    // What each operation's PENDING time is explained by (see the header).
    const unitMs = 2 * o.delayMs;
    const ended = operations.filter((op) => op.acceptedAt !== undefined && op.finishedAt !== undefined);
    for (const op of ended) {
      const [from, to] = [op.acceptedAt!, op.finishedAt!];
      const ahead = ended.filter((y) => y !== op && y.switch === op.switch && y.acceptedAt! < from && y.finishedAt! > from).length;
      const killed = kills.filter((t) => t > from && t < to).length;
      const downMs = down.reduce((sum, [a, z]) => sum + Math.max(0, Math.min(z, to) - Math.max(a, from)), 0);
      op.explainedMs = (ahead + 1 + killed) * unitMs + downMs;
      op.ratio = (to - from) / op.explainedMs;
    }
    // The same start with nobody else asking anything: the folder's own restart time.
    const quietMs: number[] = [];
    for (let k = 0; k < o.quietRestarts; k++) {
      up = false;
      await svc.kill();
      quietMs.push(await svc.start(probe));
      up = true;
    }

    const worst = ended.reduce<Operation | undefined>((w, op) => (!w || op.ratio! > w.ratio! ? op : w), undefined);
    const pending = ended.map((op) => op.finishedAt! - op.acceptedAt!);
    const ratios = ended.map((op) => op.ratio!);
    const done = operations.filter((op) => op.status === 'DONE').length;
    const errors = operations.filter((op) => op.status === 'ERROR').length;

    print(`kill loop: ${o.nodes} nodes (one client each) on ${o.switches} mock switch(es), ${o.delayMs} ms per switch change, ${o.kills} kills ${o.minUpMs}-${o.maxUpMs} ms after each restart answered (seed ${o.seed})`);
    print(`restarts (spawn to a correct GET ${probe}): ${restartsMs.length}, p50 ${pct(restartsMs, 50)} ms, max ${Math.max(...restartsMs)} ms`);
    if (quietMs.length) print(`restarts with no client running, once settled: ${quietMs.length}, p50 ${pct(quietMs, 50)} ms, max ${Math.max(...quietMs)} ms`);
    print(`operations accepted: ${operations.length}, DONE ${done}, ERROR ${errors}, lost ${lost.length}; settled ${((Date.now() - settleFrom) / 1000).toFixed(1)} s after the last restart`);
    print(`PENDING time (accepted_at to finished_at): p50 ${pct(pending, 50)} ms, p99 ${pct(pending, 99)} ms, max ${Math.max(...pending)} ms`);
    print(`PENDING time / what its switch's queue explains: p50 ${pct(ratios, 50).toFixed(2)}, p99 ${pct(ratios, 99).toFixed(2)}, worst ${worst?.ratio?.toFixed(2)} (${worst?.node}: ${worst ? worst.finishedAt! - worst.acceptedAt! : 0} ms against ${worst?.explainedMs} ms explained)`);
    print(`switch ports not matching their nic: ${mismatched.length}${mismatched.length ? ` (${mismatched.slice(0, 3).join('; ')})` : ''}`);
    return { restartsMs, quietMs, operations, done, errors, lost, mismatched, worst, lines };
  } finally {
    stop = true;
    over = true;
    up = false;
    await svc.kill('SIGTERM').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `--name value` pairs for the numeric options. */
function parse(argv: string[]): Partial<KillLoopOptions> {
  const out: Record<string, number> = {};
  const names: Record<string, keyof KillLoopOptions> = {
    '--nodes': 'nodes', '--switches': 'switches', '--kills': 'kills', '--delay': 'delayMs', '--min-up': 'minUpMs', '--max-up': 'maxUpMs', '--seed': 'seed', '--quiet-restarts': 'quietRestarts',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    const value = Number(argv[i + 1]);
    if (!key || !Number.isFinite(value)) throw new Error(`unknown option or value: ${argv[i]} ${argv[i + 1] ?? ''} (options: ${Object.keys(names).join(' ')})`);
    out[key] = value;
  }
  return out as Partial<KillLoopOptions>;
}

if (require.main === module) {
  killLoop(parse(process.argv.slice(2))).then((r) => {
    if (r.lost.length || r.mismatched.length) {
      console.error('an accepted operation was lost, or a port does not match its nic');
      process.exit(1);
    }
    process.exit(0);
  }, (err) => {
    console.error(err);
    process.exit(1);
  });
}
