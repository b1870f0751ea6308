/**
 * Seeds a data folder with a large wired inventory (issue 27), through the actors: the world the
 * service composes (startService on the chosen engine, mock drivers), sent the commands the API's
 * routes send, many in flight at once but bounded. Network attachments go through the network
 * operations runner to DONE on mock switches (no delay). No storage record is written by hand.
 *
 *   npm run bench:seed -- --nodes 100000 --folder DIR [--storage lmdb|postgres] [--pg-url URL]
 *
 * Defaults (the issue's large site): 4 nics per node, every nic wired, ports = nics (200 per
 * switch), 1,000 projects holding half the nodes, 3,000 networks (3 per project, pooled VLANs),
 * 50,000 nics attached (nic 0 of each reserved node). Smaller --nodes scale every default down
 * in proportion. `seed.json` in the folder records the counts and the VLAN pool the service must
 * start with (bench/scale.ts reads it).
 */
import { Command } from 'commander';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig, type Config } from '../src/config';
import type { VlanRange } from '../actors/network/pool';
import { startService, type Service } from '../src/service';
import { SCHEMA_BASE } from '../drivers/schema';

export interface SeedCounts {
  nodes: number;
  nicsPerNode: number;
  switches: number;
  portsPerSwitch: number;
  projects: number;
  /** share of the nodes that belong to a project */
  reserved: number;
  networks: number;
  attachments: number;
}

export interface SeedManifest extends SeedCounts {
  storage: 'lmdb' | 'postgres';
  vlanPool: VlanRange[];
  /** the name of the node registered last (what a cold start is checked against) */
  lastNode: string;
  seconds: number;
  phases: Record<string, number>;
  bytes?: number;
}

export const MANIFEST = 'seed.json';
export const ADMIN = { user: 'admin', password: 'bench' };
const BY = ADMIN.user;

/** The issue's counts for `nodes` nodes (the defaults are those of 100,000). */
export function defaultCounts(nodes: number): SeedCounts {
  const nicsPerNode = 4;
  const portsPerSwitch = 200;
  const projects = Math.max(1, Math.round(nodes / 100));
  return {
    nodes, nicsPerNode, portsPerSwitch,
    switches: Math.ceil((nodes * nicsPerNode) / portsPerSwitch),
    projects, reserved: 0.5,
    networks: projects * 3,
    attachments: Math.round(nodes / 2),
  };
}

export const nodeName = (i: number) => `n${i}`;
export const nicName = (k: number) => `eth${k}`;
export const switchName = (s: number) => `s${s}`;
export const portName = (p: number) => `gi1/0/${p + 1}`;
export const projectName = (p: number) => `p${p}`;
export const networkName = (w: number) => `w${w}`;
/** the nodes a project holds: node i belongs to project i % projects, for i < reserved nodes */
export const reservedNodes = (c: SeedCounts) => Math.floor(c.nodes * c.reserved);

/** Runs `fn(0) … fn(count - 1)` with at most `limit` in flight; the first failure stops it. */
export async function bounded(count: number, limit: number, fn: (i: number) => Promise<unknown>, progress?: (done: number) => void): Promise<void> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await fn(i);
      done++;
      if (progress && done % 10_000 === 0) progress(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** bytes under a folder */
export function folderBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? folderBytes(p) : statSync(p).size;
  }
  return total;
}

export interface SeedOptions {
  folder: string;
  counts: SeedCounts;
  storage?: 'lmdb' | 'postgres';
  pgUrl?: string;
  /** asks in flight at once */
  concurrency?: number;
  log?: (line: string) => void;
}

/** The configuration the seed and the service started on its folder share. */
export function seedConfig(folder: string, m: Pick<SeedManifest, 'storage' | 'vlanPool'>, pgUrl?: string): Config {
  return {
    ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir: folder, storage: m.storage, vlanPool: m.vlanPool,
    ...(m.storage === 'postgres' ? { databaseUrl: pgUrl } : {}),
    adminUser: ADMIN.user, adminPassword: ADMIN.password, logLevel: 'silent',
  };
}

export async function seed(opts: SeedOptions): Promise<SeedManifest> {
  const c = opts.counts;
  const log = opts.log ?? ((l: string) => console.log(l));
  const storage = opts.storage ?? 'lmdb';
  if (c.switches * c.portsPerSwitch < c.nodes * c.nicsPerNode) throw new Error('not enough ports for every nic: raise --switches or --ports-per-switch');
  const reserved = reservedNodes(c);
  if (c.attachments > reserved) throw new Error('at most one attachment per reserved node (nic 0): lower --attachments');
  if (reserved && c.projects > reserved) throw new Error('more projects than reserved nodes');
  if (c.networks && !c.projects) throw new Error('networks belong to projects: --projects must be > 0');
  // Project networks take pooled VLANs: the pool is sized for them (VLAN ids 2 … 4094).
  if (c.networks > 4093) throw new Error('at most 4,093 pooled networks (VLAN ids 2-4094)');
  const vlanPool: VlanRange[] = [[2, Math.max(2 + c.networks - 1, 2)]];
  if (existsSync(join(opts.folder, MANIFEST))) throw new Error(`${opts.folder} is seeded already`);
  mkdirSync(opts.folder, { recursive: true, mode: 0o700 });
  const config = { ...seedConfig(opts.folder, { storage, vlanPool }, opts.pgUrl), actorIdleMs: 2_000 };
  const limit = opts.concurrency ?? 256;
  const t0 = performance.now();
  const phases: Record<string, number> = {};
  const svc: Service = await startService(config);
  const world = svc.world;
  const mark = (name: string, started: number, n: number) => {
    const s = (performance.now() - started) / 1000;
    phases[name] = Math.round(s * 10) / 10;
    log(`${name.padEnd(12)} ${String(n).padStart(8)} in ${s.toFixed(1)} s (${Math.round(n / Math.max(s, 0.001))}/s), rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`);
  };
  const phase = async (name: string, n: number, fn: (i: number) => Promise<unknown>) => {
    const started = performance.now();
    await bounded(n, limit, fn, (d) => log(`  ${name}: ${d}/${n}`));
    mark(name, started, n);
  };
  try {
    // The same bodies the API validates, through the same registries.
    const sw = svc.drivers.switches.registry.validate({ type: `${SCHEMA_BASE}/v0/switches/mock`, hostname: 'localhost', username: 'u', password: 'p' });
    const obm = svc.drivers.obm.registry.validate({ type: `${SCHEMA_BASE}/v0/obm/mock`, host: 'localhost', user: 'u', password: 'p' });
    if (typeof sw === 'string' || typeof obm === 'string') throw new Error(`the mock drivers refused the seed's fields: ${sw} ${obm}`);
    const nics = c.nodes * c.nicsPerNode;
    // Spread over the actors that serialize them: consecutive asks go to different switches, projects, nodes.
    const portOf = (j: number) => ({ s: j % c.switches, p: Math.floor(j / c.switches) });
    await phase('switches', c.switches, (s) => world.switches.ask(switchName(s), { type: 'switch.register', by: BY, switchType: sw.type, fields: sw.fields }));
    await phase('ports', c.switches * c.portsPerSwitch, (j) => {
      const { s, p } = portOf(j);
      return world.switches.ask(switchName(s), { type: 'switch.registerPort', by: BY, port: portName(p) });
    });
    await phase('projects', c.projects, (p) => world.projects.ask(projectName(p), { type: 'project.create', by: BY }));
    await phase('networks', c.networks, (w) => {
      const owner = projectName(w % c.projects);
      return world.projects.ask(owner, { type: 'project.createNetwork', by: BY, network: networkName(w), spec: { owner, access: [owner], vlan: null } });
    });
    await phase('nodes', c.nodes, (i) => world.nodes.ask(nodeName(i), { type: 'node.register', by: BY, obm }));
    const mac = (j: number) => (0x020000000000 + j).toString(16).padStart(12, '0').replace(/(..)(?!$)/g, '$1:');
    // Nic k of node i is nic j = k * nodes + i: consecutive asks go to different nodes.
    await phase('nics', nics, (j) => world.nodes.ask(nodeName(j % c.nodes), { type: 'node.registerNic', by: BY, nic: nicName(Math.floor(j / c.nodes)), macaddr: mac(j) }));
    await phase('wiring', nics, (j) => {
      const { s, p } = portOf(j);
      return world.nodes.ask(nodeName(j % c.nodes), { type: 'node.wireNic', by: BY, nic: nicName(Math.floor(j / c.nodes)), switch: switchName(s), port: portName(p) });
    });
    await phase('reserve', reserved, (i) => world.projects.ask(projectName(i % c.projects), { type: 'project.connectNode', by: BY, node: nodeName(i) }));
    // Node i's project is i % projects; its networks are w with w % projects equal to it.
    const perProject = Math.max(1, Math.floor(c.networks / c.projects));
    const started = performance.now();
    await bounded(c.attachments, limit, (i) => {
      const project = i % c.projects;
      const network = networkName(project + c.projects * (Math.floor(i / c.projects) % perProject));
      return world.nodes.ask(nodeName(i), { type: 'node.connectNetwork', by: BY, project: null, nic: nicName(0), network, channel: 'vlan/native' });
    }, (d) => log(`  attach: ${d}/${c.attachments} accepted`));
    // Every operation to DONE (the runner goes on in the background; its outcomes commit in the nics).
    for (;;) {
      const pending = [...world.rm.pendingByNode.keys()].length;
      if (!pending) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    let attached = 0;
    for (const m of world.rm.attachmentsByNetwork.values()) attached += m.size;
    if (attached !== c.attachments) throw new Error(`${attached} attachments ended DONE, ${c.attachments} expected`);
    mark('attach', started, c.attachments);
  } finally {
    await svc.close();
  }
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  const manifest: SeedManifest = { ...c, storage, vlanPool, lastNode: nodeName(c.nodes - 1), seconds, phases };
  if (storage === 'lmdb') manifest.bytes = folderBytes(opts.folder);
  writeFileSync(join(opts.folder, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
  log(`seeded in ${seconds} s${manifest.bytes !== undefined ? `; folder ${(manifest.bytes / 2 ** 20).toFixed(0)} MiB` : ''}`);
  return manifest;
}

export function readManifest(folder: string): SeedManifest | undefined {
  const f = join(folder, MANIFEST);
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as SeedManifest) : undefined;
}

async function main(): Promise<void> {
  const int = (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${v} is not a count`);
    return n;
  };
  const p = new Command('bench:seed')
    .requiredOption('--folder <dir>', 'the data folder to seed (must not be seeded yet)')
    .option('--nodes <n>', 'nodes', int, 100_000)
    .option('--nics-per-node <n>', 'nics per node (default 4)', int)
    .option('--switches <n>', 'mock switches (default: enough for every nic)', int)
    .option('--ports-per-switch <n>', 'ports per switch (default 200)', int)
    .option('--projects <n>', 'projects (default nodes / 100)', int)
    .option('--reserved <share>', 'share of the nodes in projects (default 0.5)', Number)
    .option('--networks <n>', 'networks, owned by the projects (default 3 per project)', int)
    .option('--attachments <n>', 'nics attached to a network (default half the nodes)', int)
    .option('--storage <engine>', 'lmdb or postgres', 'lmdb')
    .option('--pg-url <url>', 'PostgreSQL database (with --storage postgres)')
    .option('--concurrency <n>', 'asks in flight at once', int, 256)
    .parse();
  const o = p.opts();
  const d = defaultCounts(o.nodes);
  const counts: SeedCounts = {
    nodes: o.nodes, nicsPerNode: o.nicsPerNode ?? d.nicsPerNode, portsPerSwitch: o.portsPerSwitch ?? d.portsPerSwitch,
    switches: 0, projects: o.projects ?? d.projects, reserved: o.reserved ?? d.reserved, networks: 0, attachments: 0,
  };
  counts.switches = o.switches ?? Math.ceil((counts.nodes * counts.nicsPerNode) / counts.portsPerSwitch);
  counts.networks = o.networks ?? counts.projects * 3;
  counts.attachments = o.attachments ?? Math.min(d.attachments, reservedNodes(counts));
  if (o.storage !== 'lmdb' && o.storage !== 'postgres') throw new Error('--storage is lmdb or postgres');
  if (o.storage === 'postgres' && !o.pgUrl) throw new Error('--storage postgres needs --pg-url (bench/scale.ts starts a server of its own)');
  await seed({ folder: o.folder, counts, storage: o.storage, pgUrl: o.pgUrl, concurrency: o.concurrency });
}

if (require.main === module) {
  main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
