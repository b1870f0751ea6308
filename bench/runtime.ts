/**
 * hilt's actor runtime beside nact's, on the same workload and the same storage engine (issue 19,
 * item 6: the design card names nact; docs/design.md says why hilt runs its own runtime).
 *
 * The workload is a network operation's path through the actors: a client asks the node actor,
 * which asks its nic actor (the nic commits), then commits itself and answers; the client then
 * asks the port actor (it commits) and the nic again (it commits): four actors per operation,
 * four durable commits on one LmdbPersistenceEngine (actors/persistence/lmdb.ts: a commit is
 * answered once flushed to disk). nact reaches that engine through its own persistence-engine
 * interface (NactEngine below), hilt through its own contract. Both snapshot every 16 events.
 * Measured with 1 and 64 concurrent clients, each runtime on a fresh store of its own: the two
 * take turns in short slices (the order alternating), so both meet the same disk and the same
 * load from other processes; the figure is the ratio of operations per second, over all slices
 * and as the median of each pair of slices. The same again on the memory engine shows the
 * runtimes' own cost without the disk (a reference: the service's commits are LMDB's).
 *
 * Then three probes of the semantic differences that matter to hilt (printed, and asserted by
 * test/bench/runtime.test.ts): how many writes a decision of two events costs, how many reads an
 * actor's recovery costs, and when the asks waiting on an actor that faults are answered.
 *
 *   npm run bench:runtime   (BENCH_SECONDS per runtime and setting, default 6; BENCH_SLICE_MS,
 *                            default 500; BENCH_RUNTIME_NODES, default 256)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as nact from 'nact';
import { ActorRuntime, Behavior, Command, Event, below } from '../actors/runtime';
import { LmdbPersistenceEngine } from '../actors/persistence/lmdb';
import { MemoryPersistenceEngine } from '../actors/persistence/memory';
import type { PersistedEvent, PersistedSnapshot, PersistenceEngine } from '../actors/persistence/engine';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const SLICE_MS = Number(process.env.BENCH_SLICE_MS ?? 500);
const NODES = Number(process.env.BENCH_RUNTIME_NODES ?? 256);
/** what both runtimes give an ask (hilt's default askTimeoutMs) */
const ASK_TIMEOUT_MS = 30_000;
const SNAPSHOT_EVERY = 16;

/** The engine's calls, counted (the probes read them). */
export class CountingEngine {
  persists = 0;
  reads = 0;
  constructor(readonly inner: PersistenceEngine) {}
}

/**
 * nact's persistence-engine interface over hilt's LMDB engine: one event per persist() (nact
 * persists each event on its own), the latest snapshot, and the events after an offset as the
 * reducible stream nact's recovery folds.
 */
export class NactEngine implements nact.PersistenceEngine {
  constructor(private readonly count: CountingEngine) {}

  events(key: string, offset = 0): nact.EventStream {
    this.count.reads++;
    const all = (async () => {
      const out: nact.PersistedEvent[] = [];
      for await (const e of this.count.inner.events(key, offset)) out.push({ ...e, isDeleted: !!e.isDeleted });
      return out;
    })();
    // nact folds the stream with reduce() (its typings also promise then(), which it never calls)
    const reduce = async <U>(f: (acc: U, e: nact.PersistedEvent, i: number) => U, init: U) => (await all).reduce(f, init);
    return { reduce } as unknown as nact.EventStream;
  }

  async latestSnapshot(key: string): Promise<nact.PersistedSnapshot> {
    this.count.reads++;
    return (await this.count.inner.latestSnapshot(key)) as nact.PersistedSnapshot;
  }

  takeSnapshot(snapshot: nact.PersistedSnapshot): Promise<void> {
    return this.count.inner.takeSnapshot(snapshot as PersistedSnapshot);
  }

  persist(event: nact.PersistedEvent): Promise<void> {
    this.count.persists++;
    return this.count.inner.persist([event as PersistedEvent]);
  }
}

/** hilt's contract over the same engine, counting the same calls. */
export function countedForHilt(count: CountingEngine): PersistenceEngine {
  const inner = count.inner;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'persist') return (events: PersistedEvent[]) => (count.persists++, inner.persist(events));
      if (prop === 'recover') return (key: string) => (count.reads++, inner.recover(key));
      if (prop === 'latestSnapshot' || prop === 'events') count.reads++;
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** One runtime under test: an operation on node i, and the way out. */
export interface Workload {
  name: string;
  op(i: number): Promise<void>;
  close(): Promise<void>;
}

export const LABELS = { hilt: 'hilt (actors/runtime.ts)', nact: 'nact 7.6 (spawnPersistent)' };

// ---- hilt: three behaviours on ActorRuntime (each message is one decision of one event) ----

type Step = Event & { type: 'Stepped' };
type NodeCmd = Command & { type: 'connect' };
type NicCmd = (Command & { type: 'queue' }) | (Command & { type: 'finish' });
type PortCmd = Command & { type: 'apply' };
const count = (s: number | null) => (s ?? 0) + 1;

export function hiltWorkload(engine: PersistenceEngine): Workload {
  const rt = new ActorRuntime(engine, { askTimeoutMs: ASK_TIMEOUT_MS, snapshotEvery: SNAPSHOT_EVERY });
  const step = () => ({ events: [{ type: 'Stepped' } as Step], value: true });
  type NicReplies = { queue: boolean; finish: boolean };
  const nicBehavior: Behavior<number, NicCmd, Step, NicReplies> = { kind: 'nic', apply: count, decide: { queue: step, finish: step } };
  const portBehavior: Behavior<number, PortCmd, Step, { apply: boolean }> = { kind: 'port', apply: count, decide: { apply: step } };
  const nics = rt.register(nicBehavior, () => undefined);
  const ports = rt.register(portBehavior, () => undefined);
  const nicsBelow = below(nics);
  const nodeBehavior: Behavior<number, NodeCmd, Step, { connect: boolean }> = {
    kind: 'node',
    apply: count,
    decide: {
      connect: async (_s, cmd, id) => {
        await nicsBelow.ask(`${id}/eth0`, { type: 'queue', by: cmd.by });
        return step();
      },
    },
  };
  const nodes = rt.register(nodeBehavior, () => undefined);
  return {
    name: LABELS.hilt,
    async op(i) {
      await nodes.ask(`n${i}`, { type: 'connect', by: 'bench' });
      await ports.ask(`sw/${i}`, { type: 'apply', by: 'bench' });
      await nics.ask(`n${i}/eth0`, { type: 'finish', by: 'bench' });
    },
    close: () => rt.close(),
  };
}

// ---- nact: the same three kinds as persistent actors (commands in, events persisted) ----

type NactMsg = { type: 'connect' | 'queue' | 'finish' | 'apply' | 'boom'; sender: nact.Ref<boolean> } | Step;
/** What nact gives a persistent actor's function (its typings leave `persist` and `recovering` out). */
type NactCtx = { persist(e: Step): Promise<void>; recovering?: boolean; self: nact.Ref<NactMsg> };

/** A nact system whose persistent actors each commit one event per message and answer `true`. */
export function nactActors(engine: NactEngine) {
  const system = nact.start(nact.configurePersistence(engine));
  const spawned = new Map<string, nact.Ref<NactMsg>>();
  // nact's default supervision also stops a faulted actor, after logging the error to the console
  const silent = { onCrash: (_m: unknown, _e: unknown, ctx: { stop: symbol }) => ctx.stop };
  const ask = (ref: nact.Ref<NactMsg>, type: 'connect' | 'queue' | 'finish' | 'apply' | 'boom', timeout = ASK_TIMEOUT_MS) =>
    nact.query(ref, (sender: nact.Ref<boolean>) => ({ type, sender }), timeout);
  /** The actor of `key`, spawned on first use; `before` runs before its commit (an ask below). */
  const actor = (key: string, before?: () => Promise<unknown>) => {
    let ref = spawned.get(key);
    if (!ref) {
      const f = async (state: number | undefined, msg: NactMsg, ctx: NactCtx) => {
        if (ctx.recovering) return count(state ?? null);
        if (msg.type === 'boom') throw new Error('a bug in the behaviour');
        if (before) await before();
        await ctx.persist({ type: 'Stepped' });
        nact.dispatch((msg as { sender: nact.Ref<boolean> }).sender, true);
        return count(state ?? null);
      };
      ref = nact.spawnPersistent(system, f as never, key, key.replace(/\W/g, '_'), { snapshotEvery: SNAPSHOT_EVERY, ...silent } as never) as nact.Ref<NactMsg>;
      spawned.set(key, ref);
    }
    return ref;
  };
  return { actor, ask, close: () => nact.stop(system) };
}

export function nactWorkload(engine: NactEngine): Workload {
  const { actor, ask, close } = nactActors(engine);
  const node = (i: number) => actor(`node:n${i}`, () => ask(actor(`nic:n${i}/eth0`), 'queue'));
  return {
    name: LABELS.nact,
    async op(i) {
      await ask(node(i), 'connect');
      await ask(actor(`port:sw/${i}`), 'apply');
      await ask(actor(`nic:n${i}/eth0`), 'finish');
    },
    close: async () => close(),
  };
}

// ---- measurement ----

interface Slice { ops: number; seconds: number; latencies: number[] }

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;

/** Every actor awake (recovered) before the clock starts, for both runtimes alike. */
async function warm(w: Workload, clients: number): Promise<void> {
  for (let i = 0; i < NODES; i += clients) await Promise.all(Array.from({ length: Math.min(clients, NODES - i) }, (_, c) => w.op(i + c)));
}

/** `clients` clients in closed loops for `ms`; client c drives nodes c, c + clients, … (never another's). */
async function slice(w: Workload, clients: number, ms: number, from: number): Promise<Slice> {
  const latencies: number[] = [];
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let k = from; performance.now() < end; k++) {
      const s = performance.now();
      await w.op((c + k * clients) % NODES);
      latencies.push(performance.now() - s);
    }
  }));
  return { ops: latencies.length, seconds: (performance.now() - t0) / 1000, latencies };
}

/** A fresh store (LMDB in a temp folder, or memory), removed by the returned cleanup. */
export function freshStore(kind: 'lmdb' | 'memory' = 'lmdb'): { engine: PersistenceEngine; count: CountingEngine; done: () => Promise<void> } {
  if (kind === 'memory') {
    const engine = new MemoryPersistenceEngine();
    return { engine, count: new CountingEngine(engine), done: () => engine.close() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'hilt-bench-runtime-'));
  const engine = new LmdbPersistenceEngine(join(dir, 'data'));
  return { engine, count: new CountingEngine(engine), done: async () => { await engine.close(); rmSync(dir, { recursive: true, force: true }); } };
}

export const RUNTIMES: Record<string, (count: CountingEngine) => Workload> = {
  hilt: (c) => hiltWorkload(countedForHilt(c)),
  nact: (c) => nactWorkload(new NactEngine(c)),
};

// ---- the probes ----

/** Engine writes for one decision that yields two events. */
export async function writesPerTwoEventDecision(runtime: 'hilt' | 'nact'): Promise<number> {
  const store = freshStore();
  try {
    if (runtime === 'hilt') {
      const rt = new ActorRuntime(countedForHilt(store.count), {});
      type Two = Command & { type: 'two' };
      const b: Behavior<number, Two, Step, { two: boolean }> = { kind: 'k', apply: count, decide: { two: () => ({ events: [{ type: 'Stepped' }, { type: 'Stepped' }] as Step[], value: true }) } };
      const reg = rt.register(b, () => undefined);
      await reg.ask('a', { type: 'two', by: 'probe' });
      await rt.close();
    } else {
      const system = nact.start(nact.configurePersistence(new NactEngine(store.count)));
      const f = async (state: number | undefined, msg: NactMsg, ctx: NactCtx) => {
        if (ctx.recovering) return count(state ?? null);
        // nact's way to record two events: persist twice (each call is its own write).
        await ctx.persist({ type: 'Stepped' });
        await ctx.persist({ type: 'Stepped' });
        nact.dispatch((msg as { sender: nact.Ref<boolean> }).sender, true);
        return count(count(state ?? null));
      };
      const ref = nact.spawnPersistent(system, f as never, 'k:a', 'a') as nact.Ref<NactMsg>;
      await nact.query(ref, (sender: nact.Ref<boolean>) => ({ type: 'apply', sender }), ASK_TIMEOUT_MS);
      nact.stop(system);
    }
    return store.count.persists;
  } finally {
    await store.done();
  }
}

/** Engine reads for one actor waking on a store that holds its snapshot and later events. */
export async function readsPerRecovery(runtime: 'hilt' | 'nact'): Promise<number> {
  const store = freshStore();
  try {
    const events = Array.from({ length: 20 }, (_, i) => ({ key: 'k:a', sequenceNumber: i + 1, data: { type: 'Stepped' }, tags: [], createdAt: Date.now() }));
    await store.engine.persist(events);
    await store.engine.takeSnapshot({ key: 'k:a', sequenceNumber: 16, data: 16, createdAt: Date.now() });
    store.count.reads = 0;
    if (runtime === 'hilt') {
      const rt = new ActorRuntime(countedForHilt(store.count), {});
      type Get = Command & { type: 'get' };
      const b: Behavior<number, Get, Step, { get: number | null }> = { kind: 'k', apply: count, decide: { get: (s) => ({ events: [], value: s }) } };
      const reg = rt.register(b, () => undefined);
      const state = await reg.ask('a', { type: 'get', by: 'probe' });
      if (state !== 20) throw new Error(`hilt recovered ${state}, not 20`);
      await rt.close();
    } else {
      const n = nactActors(new NactEngine(store.count));
      await n.ask(n.actor('k:a'), 'apply');
      n.close();
    }
    return store.count.reads;
  } finally {
    await store.done();
  }
}

/**
 * An actor whose behaviour throws (a bug) while three more asks wait in its mailbox, each ask
 * bounded by `timeoutMs`: how long until every one of the four callers has an answer.
 */
export async function msUntilWaitingAsksAnswered(runtime: 'hilt' | 'nact', timeoutMs: number): Promise<{ ms: number; answered: number }> {
  const store = freshStore();
  try {
    const t0 = performance.now();
    let settled: PromiseSettledResult<unknown>[];
    if (runtime === 'hilt') {
      const rt = new ActorRuntime(countedForHilt(store.count), { askTimeoutMs: timeoutMs });
      type Cmd = (Command & { type: 'boom' }) | (Command & { type: 'get' });
      const b: Behavior<number, Cmd, Step, { boom: null; get: number | null }> = {
        kind: 'k',
        apply: count,
        decide: {
          boom: () => {
            throw new Error('a bug in the behaviour');
          },
          get: (s) => ({ events: [], value: s }),
        },
      };
      const reg = rt.register(b, () => undefined);
      rt.onFault = () => undefined;
      settled = await Promise.allSettled([reg.ask('a', { type: 'boom', by: 'probe' }), ...[1, 2, 3].map(() => reg.ask('a', { type: 'get', by: 'probe' }))]);
      await rt.close();
    } else {
      const n = nactActors(new NactEngine(store.count));
      const ref = n.actor('k:a');
      settled = await Promise.allSettled([n.ask(ref, 'boom', timeoutMs), ...[1, 2, 3].map(() => n.ask(ref, 'apply', timeoutMs))]);
      n.close();
    }
    const ms = performance.now() - t0;
    // An answer is the actor's: a refusal or a value, not the caller's own timeout.
    const answered = settled.filter((s) => s.status === 'fulfilled' || !/Query Timeout|did not answer in time/.test(String((s.reason as Error)?.message))).length;
    return { ms, answered };
  } finally {
    await store.done();
  }
}

async function compare(kind: 'lmdb' | 'memory', clients: number): Promise<string> {
  const order: ('hilt' | 'nact')[] = ['hilt', 'nact'];
  const stores = { hilt: freshStore(kind), nact: freshStore(kind) };
  const w = { hilt: RUNTIMES.hilt(stores.hilt.count), nact: RUNTIMES.nact(stores.nact.count) };
  const slices: Record<'hilt' | 'nact', Slice[]> = { hilt: [], nact: [] };
  for (const name of order) await warm(w[name], clients);
  const n = Math.max(1, Math.round((SECONDS * 1000) / SLICE_MS));
  for (let s = 0; s < n; s++) {
    for (const name of s % 2 ? [...order].reverse() : order) slices[name].push(await slice(w[name], clients, SLICE_MS, s * 1000));
  }
  for (const name of order) {
    await w[name].close();
    await stores[name].done();
  }
  const rate = (xs: Slice[]) => xs.reduce((a, x) => a + x.ops, 0) / xs.reduce((a, x) => a + x.seconds, 0);
  const pairs = slices.hilt.map((h, i) => h.ops / h.seconds / (slices.nact[i].ops / slices.nact[i].seconds)).sort((a, b) => a - b);
  for (const name of order) {
    const lat = slices[name].flatMap((x) => x.latencies).sort((a, b) => a - b);
    console.log(`${kind.padEnd(7)}${String(clients).padStart(7)}  ${LABELS[name].padEnd(28)} ${rate(slices[name]).toFixed(0).padStart(6)}  ${pct(lat, 50).toFixed(2).padStart(6)}  ${pct(lat, 99).toFixed(2).padStart(6)}`);
  }
  const ratio = rate(slices.hilt) / rate(slices.nact);
  return `${kind}, ${clients} client${clients > 1 ? 's' : ''}: ${ratio.toFixed(2)} (pairs of slices: median ${pct(pairs, 50).toFixed(2)}, ${pct(pairs, 10).toFixed(2)}–${pct(pairs, 90).toFixed(2)})`;
}

async function main() {
  console.log(`runtime bench: ${NODES} nodes (node, nic, port actors each); per setting ${SECONDS} s per runtime in ${SLICE_MS} ms slices, taking turns`);
  console.log('engine  clients  runtime                       ops/s   p50 ms  p99 ms');
  const ratios: string[] = [];
  for (const kind of ['lmdb', 'memory'] as const) for (const clients of [1, 64]) ratios.push(await compare(kind, clients));
  console.log('\nhilt / nact, operations per second (10th–90th percentile of the pairs):');
  for (const r of ratios) console.log(`  ${r}`);

  console.log('\nsemantics (LMDB, calls counted at the engine):');
  for (const name of ['hilt', 'nact'] as const) {
    const writes = await writesPerTwoEventDecision(name);
    const reads = await readsPerRecovery(name);
    const fault = await msUntilWaitingAsksAnswered(name, 1000);
    console.log(`  ${name}: a decision of 2 events = ${writes} write(s); a recovery = ${reads} read(s); a fault with 3 asks waiting: ${fault.answered} of 4 answered by the actor, all settled after ${fault.ms.toFixed(0)} ms (ask timeout 1000 ms)`);
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
