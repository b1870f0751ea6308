/**
 * An actor world on the in-memory engine, with a switch driver that records what it is told:
 * for tests of actor protocols without HTTP.
 */
import { World } from '../../actors/world';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import type { VlanRange } from '../../actors/network/pool';
import type { ReleasePolicy } from '../../actors/project/protocol';
import type { PortVlans, SwitchDriver, SwitchInfo, SwitchSession } from '../../drivers/switch/types';
import { SwitchError } from '../../drivers/switch/types';

export const FAKE_SWITCH = 'fake-switch';

/** Keeps each port's VLANs like a switch; `failing` ports refuse every change, `failNext` fails that many changes, `failLogin` that many logins; hold() holds changes until release(). */
export class RecordingSwitch implements SwitchDriver {
  readonly ports = new Map<string, PortVlans>();
  readonly log: string[] = [];
  readonly failing = new Set<string>();
  /** ports whose read-back fails (a change that failed on one leaves it in doubt) */
  readonly unreadable = new Set<string>();
  failNext = 0;
  /** this many logins are refused */
  failLogin = 0;
  private gate: Promise<void> | null = null;
  private open_: (() => void) | null = null;

  /** Hold every change until release(). */
  hold(): void {
    this.gate = new Promise((r) => (this.open_ = r));
  }

  release(): void {
    this.open_?.();
    this.gate = null;
  }

  port(sw: string, port: string): PortVlans {
    return this.ports.get(`${sw}/${port}`) ?? { native: null, tagged: [] };
  }

  async open(info: SwitchInfo): Promise<SwitchSession> {
    if (this.failLogin > 0 && this.failLogin--) throw new SwitchError('login refused');
    const change = async (port: string, what: string, f: (v: PortVlans) => PortVlans) => {
      if (this.gate) await this.gate;
      this.log.push(`${info.name} ${port} ${what}`);
      if (this.failing.has(port) || (this.failNext > 0 && this.failNext--)) throw new SwitchError(`port ${port} refused`);
      this.ports.set(`${info.name}/${port}`, f(this.port(info.name, port)));
    };
    return {
      setNative: (p, v) => change(p, `native ${v}`, (x) => ({ ...x, native: v })),
      removeNative: (p) => change(p, '-native', (x) => ({ ...x, native: null })),
      addTagged: (p, v) => change(p, `tag ${v}`, (x) => ({ ...x, tagged: [...new Set([...x.tagged, v])].sort((a, b) => a - b) })),
      removeTagged: (p, v) => change(p, `-tag ${v}`, (x) => ({ ...x, tagged: x.tagged.filter((t) => t !== v) })),
      resetPort: (p) => change(p, 'reset', () => ({ native: null, tagged: [] })),
      getPortVlans: async (p) => {
        if (this.unreadable.has(p)) throw new SwitchError(`port ${p} unreadable`);
        return this.port(info.name, p);
      },
      close: async () => undefined,
    };
  }
}

export interface TestWorld {
  world: World;
  engine: MemoryPersistenceEngine;
  driver: RecordingSwitch;
  /** holdWrites on this world's engine; close() releases what a test left held (and the driver), should it fail half-way */
  hold(prefix: string): HeldWrites;
  close(): Promise<void>;
}

export function testWorld(opts: { switchTimeoutMs?: number; vlanPool?: VlanRange[]; release?: ReleasePolicy; nativeFirst?: boolean; settleRetryMs?: number; mayAct?: () => boolean } = {}): TestWorld {
  const engine = new MemoryPersistenceEngine();
  const driver = new RecordingSwitch();
  const world = new World(engine, {
    vlanPool: opts.vlanPool ?? [[100, 199]], switchDriverFor: (t) => (t === FAKE_SWITCH ? driver : undefined), switchTimeoutMs: opts.switchTimeoutMs ?? 2000,
    release: opts.release,
    settleRetryMs: opts.settleRetryMs,
    mayAct: opts.mayAct,
    // the fake switch as a Brocade or OS9 one: a tagged VLAN only beside a native one
    switchNativeFirst: () => opts.nativeFirst ?? false,
  });
  const held: HeldWrites[] = [];
  const hold = (prefix: string) => {
    held.push(holdWrites(engine, prefix));
    return held[held.length - 1];
  };
  const close = () => {
    for (const h of held.splice(0).reverse()) h.release();
    driver.release();
    return world.close();
  };
  return { world, engine, driver, hold, close };
}

const by = 'admin';
const obm = { type: 'mock', fields: { host: 'h', user: 'u', password: 'p' } };

/**
 * Switch s1 with ports, node n1 with nics wired one to one (eth0 → gi1/0/1, eth1 → gi1/0/2, …),
 * project p holding n1, and networks w1 (VLAN 100), w2 (VLAN 101) of p's, from the pool.
 */
export async function wiredNode(world: World, nics = ['eth0', 'eth1']): Promise<void> {
  await world.switches.ask('s1', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
  await world.nodes.ask('n1', { type: 'node.register', by, obm });
  await world.projects.ask('p', { type: 'project.create', by });
  for (const [i, nic] of nics.entries()) {
    const port = `gi1/0/${i + 1}`;
    await world.switches.ask('s1', { type: 'switch.registerPort', by, port });
    await world.nodes.ask('n1', { type: 'node.registerNic', by, nic, macaddr: `m${i}` });
    await world.nodes.ask('n1', { type: 'node.wireNic', by, nic, switch: 's1', port });
  }
  await world.projects.ask('p', { type: 'project.connectNode', by, node: 'n1' });
  for (const w of ['w1', 'w2']) {
    await world.projects.ask('p', { type: 'project.createNetwork', by, network: w, spec: { owner: 'p', access: ['p'], vlan: null } });
  }
}

/** Resolves once nothing of the node is pending. */
export async function settled(world: World, node = 'n1', ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (world.rm.pendingByNode.has(node)) {
    if (Date.now() > deadline) throw new Error(`operations of ${node} still pending after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Holds the engine's writes of keys starting with `prefix` until release(): an actor stays in
 * the middle of its commit, so a test can send what races with it. `waiting` resolves once a
 * write is held; `held` counts them.
 */
export interface HeldWrites { waiting: Promise<void>; held: () => number; release(): void }

export function holdWrites(engine: PersistenceEngine, prefix: string): HeldWrites {
  const persist = engine.persist.bind(engine);
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let arrived!: () => void;
  const waiting = new Promise<void>((r) => (arrived = r));
  let held = 0;
  engine.persist = async (events) => {
    if (events.some((e) => e.key.startsWith(prefix))) {
      held++;
      arrived();
      await gate;
    }
    return persist(events);
  };
  return {
    waiting,
    held: () => held,
    release: () => {
      engine.persist = persist;
      open();
    },
  };
}
