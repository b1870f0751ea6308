/**
 * The read model's views of nics and ports by id (rm.nics, rm.ports: ChildStates over NicsByNode
 * and PortsBySwitch, actors/readmodel-indexes.ts) answer what a Map keyed by the canonical id
 * (actors/ids.ts) would: get/has for any id (canonical or not), size, the set iterated, after
 * any sequence of commits, deletions, re-registrations and clears; and an iteration with
 * commits between its steps, read as the checkpoint's writer reads it (Checkpointer.encode),
 * gives every state present when it began exactly once.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { nicId, portId } from '../../actors/ids';
import { NicsByNode, ReadModel, PortsBySwitch } from '../../actors/readmodel';
import type { NicState } from '../../actors/nic/protocol';
import type { PortState } from '../../actors/port/protocol';
import { EMPTY_CONFIG } from '../../actors/port/protocol';
import type { NodeState } from '../../actors/node/protocol';
import type { SwitchState } from '../../actors/switch/protocol';
import type { World } from '../../actors/world';
import { readModelKinds } from '../../actors/readmodel-kinds';

/** Names that escape, that are prefixes of others, that an object's prototype holds. */
const NAMES = ['a', 'ab', 'a/b', 'a%2Fb', 'a%', '%25', '%2F', '/', '%', 'a/', '__proto__', 'constructor', 'toString', 'hasOwnProperty'];

/** Ids that a Map keyed by canonical ids may or may not hold: canonical, raw, mis-escaped, partial. */
function oddIds(): string[] {
  const ids = new Set<string>();
  for (const o of NAMES) {
    ids.add(o);
    ids.add(`${o}/`);
    ids.add(`/${o}`);
    for (const i of NAMES) {
      const id = nicId(o, i);
      ids.add(id);
      ids.add(`${o}/${i}`);
      ids.add(id.toLowerCase());
      ids.add(id.replace(/%2F/g, '%2f'));
      ids.add(id.replace(/%25/g, '%'));
      ids.add(`${id}/`);
      ids.add(`${id}%`);
    }
  }
  return [...ids];
}
const ODD_IDS = oddIds();

type Op =
  | { t: 'nic' | 'port'; op: 'put' | 'delete'; outer: string; inner: string; at: number }
  | { t: 'clear' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 40, arbitrary: fc.record({ t: fc.constantFrom('nic' as const, 'port' as const), op: fc.constantFrom('put' as const, 'delete' as const), outer: fc.constantFrom(...NAMES.slice(0, 6), '__proto__', 'constructor'), inner: fc.constantFrom(...NAMES), at: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'clear' as const }) },
);

const nicState = (node: string, name: string, at: number, seq: number): NicState => ({
  node, name, incarnation: `i${seq}`, nodeIncarnation: 'n', registeredAt: at, macaddr: 'm', networks: {}, pending: null, lastSeq: seq, actions: [],
});
const portState = (sw: string, name: string, at: number): PortState => ({ switch: sw, name, registeredAt: at, wire: null, config: EMPTY_CONFIG });

/** The read model and the Map models it must answer as. */
class Both {
  readonly rm = new ReadModel();
  readonly nics = new Map<string, NicState>();
  readonly ports = new Map<string, PortState>();
  private seq = 0;
  /** the change's id and what it held before (null: nothing), or undefined for a clear or nothing done */
  apply(op: Op): { t: 'nic' | 'port'; id: string; prev: unknown } | undefined {
    if (op.t === 'clear') {
      this.rm.clear();
      this.nics.clear();
      this.ports.clear();
      return undefined;
    }
    this.seq++;
    if (op.t === 'nic') {
      const id = nicId(op.outer, op.inner);
      const prev = this.nics.get(id) ?? null;
      // An update keeps the registration time; a registration takes a new one.
      const next = op.op === 'put' ? nicState(op.outer, op.inner, prev?.registeredAt ?? op.at, this.seq) : null;
      if (!prev && !next) return undefined;
      this.rm.commitNic(id, prev, next);
      if (next) this.nics.set(id, next);
      else this.nics.delete(id);
      return { t: 'nic', id, prev };
    }
    const id = portId(op.outer, op.inner);
    const prev = this.ports.get(id) ?? null;
    const next = op.op === 'put' ? portState(op.outer, op.inner, prev?.registeredAt ?? op.at) : null;
    if (!prev && !next) return undefined;
    this.rm.commitPort(id, prev, next);
    if (next) this.ports.set(id, next);
    else this.ports.delete(id);
    return { t: 'port', id, prev };
  }

  check(): void {
    for (const [view, model] of [[this.rm.nics, this.nics], [this.rm.ports, this.ports]] as [ReadonlyMap<string, unknown>, Map<string, unknown>][]) {
      expect(view.size).to.equal(model.size);
      const entries = [...view];
      expect(new Set(entries.map(([id]) => id)).size, 'an id iterated twice').to.equal(entries.length);
      expect(new Map(entries)).to.deep.equal(new Map(model));
      for (const [id, s] of entries) expect(model.get(id)).to.equal(s);
      expect([...view.keys()].sort()).to.deep.equal([...model.keys()].sort());
      expect([...view.values()].length).to.equal(model.size);
      let n = 0;
      view.forEach((s, id, m) => {
        expect(model.get(id)).to.equal(s);
        expect(m).to.equal(view);
        n++;
      });
      expect(n).to.equal(model.size);
      for (const id of ODD_IDS) {
        expect(view.get(id), id).to.equal(model.get(id));
        expect(view.has(id), id).to.equal(model.has(id));
      }
    }
    for (const [id, n] of this.nics) {
      expect(this.rm.nic(n.node, n.name)).to.equal(n);
      expect(this.rm.nics.get(id)).to.equal(n);
    }
    for (const p of this.ports.values()) expect(this.rm.port(p.switch, p.name)).to.equal(p);
    const order = (a: { registeredAt: number; name: string }, b: { registeredAt: number; name: string }) => a.registeredAt - b.registeredAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (const outer of NAMES) {
      expect(this.rm.nicsOf(outer)).to.deep.equal([...this.nics.values()].filter((n) => n.node === outer).sort(order));
      expect(this.rm.portsOf(outer)).to.deep.equal([...this.ports.values()].filter((p) => p.switch === outer).sort(order));
      expect([...this.rm.portsBySwitch.get(outer)].sort()).to.deep.equal([...this.ports.values()].filter((p) => p.switch === outer).map((p) => p.name).sort());
      expect(this.rm.portsBySwitch.has(outer)).to.equal([...this.ports.values()].some((p) => p.switch === outer));
    }
  }
}

describe('The read model\'s nics and ports by id (views over their nodes\' and switches\' indexes)', () => {
  it('answer get, has, size and iteration as a Map keyed by the canonical id, whatever the commits and names', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
      const both = new Both();
      for (const op of ops) {
        both.apply(op);
        both.check();
      }
    }), { numRuns: 100 });
  });

  it('iterated as the checkpoint writer does, with commits between its steps, give every state present when it began exactly once', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 40 }), fc.array(fc.array(opArb, { maxLength: 3 }), { maxLength: 60 }), (setup, between) => {
      const both = new Both();
      for (const op of setup) both.apply(op);
      for (const t of ['nic', 'port'] as const) {
        const view = t === 'nic' ? both.rm.nics : both.rm.ports;
        const captured = new Map<string, unknown>(t === 'nic' ? both.nics : both.ports);
        const size = view.size;
        // Checkpointer.encode: changed states as they were when the capture began (applied()).
        const before = new Map<string, unknown>();
        const seen = new Set<string>();
        const written: [string, unknown][] = [];
        let step = 0;
        for (const [id, current] of view) {
          for (const op of between[step++ % Math.max(1, between.length)] ?? []) {
            if (op.t === 'clear') continue;
            const change = both.apply(op);
            if (change && change.t === t && !before.has(change.id)) before.set(change.id, change.prev);
          }
          if (seen.has(id)) continue;
          seen.add(id);
          let s: unknown = current;
          if (before.has(id)) {
            s = before.get(id);
            if (s === null) continue;
          }
          written.push([id, s]);
          expect(step, 'the iteration ends').to.be.below(10_000);
        }
        for (const [id, s] of before) if (s !== null && !seen.has(id)) written.push([id, s]);
        expect(written.length).to.equal(size);
        expect(new Set(written.map(([id]) => id)).size).to.equal(written.length);
        expect(new Map(written)).to.deep.equal(captured);
        both.check();
      }
    }), { numRuns: 150 });
  });

  it('count each nic and port once: a set again, a delete of one not held, a clear', () => {
    const nics = new NicsByNode();
    const a = nicState('n', 'a', 1, 1);
    nics.set(a);
    nics.set({ ...a, lastSeq: 2 });
    expect(nics.size).to.equal(1);
    nics.delete(nicState('n', 'b', 1, 1));
    nics.delete(nicState('m', 'a', 1, 1));
    expect(nics.size).to.equal(1);
    nics.delete(a);
    nics.delete(a);
    expect(nics.size).to.equal(0);
    expect(nics.keys().next().done).to.equal(true);
    nics.set(a);
    nics.clear();
    expect(nics.size).to.equal(0);
    expect([...nics.all()]).to.deep.equal([]);

    const ports = new PortsBySwitch();
    ports.set(portState('s', '__proto__', 1));
    ports.set(portState('s', '__proto__', 1));
    ports.set(portState('__proto__', 'constructor', 1));
    expect(ports.size).to.equal(2);
    ports.delete('s', 'constructor');
    ports.delete('t', '__proto__');
    expect(ports.size).to.equal(2);
    ports.delete('s', '__proto__');
    expect(ports.size).to.equal(1);
    expect(ports.has('s')).to.equal(false);
    ports.clear();
    expect(ports.size).to.equal(0);
    expect([...ports.all()]).to.deep.equal([]);
  });
});

describe('A checkpoint\'s nics and ports written compactly (packing, then the start\'s sharing)', () => {
  /** A world as readModelKinds reads it: its read model and each kind's registry. */
  const worldOf = (rm: ReadModel) => {
    const reg = (kind: string) => ({ kind, behavior: { apply: () => null }, recoverAll: async () => undefined });
    return { rm, projects: reg('project'), nodes: reg('node'), nics: reg('nic'), switches: reg('switch'), ports: reg('port'), networks: reg('network'), users: reg('user'), headnodes: reg('headnode'), webhooks: reg('webhook') } as unknown as World;
  };
  const nicArb = fc.record({ node: fc.constantFrom(...NAMES), name: fc.constantFrom(...NAMES), networks: fc.constantFrom<Record<string, string>>({}, { 'vlan/native': 'w' }), actions: fc.boolean() });
  const portArb = fc.record({ sw: fc.constantFrom(...NAMES), name: fc.constantFrom(...NAMES), wire: fc.option(fc.record({ node: fc.constantFrom(...NAMES), nic: fc.constantFrom(...NAMES) })), config: fc.constantFrom<PortState['config']>({ native: null, tagged: [] }, { native: 5, tagged: [] }, { native: null, tagged: [7] }) });

  it('come back equal, in any order, whatever their names, with their node or switch held or not', () => {
    fc.assert(fc.property(fc.subarray(NAMES), fc.subarray(NAMES), fc.array(nicArb, { maxLength: 30 }), fc.array(portArb, { maxLength: 30 }), (nodes, switches, nics, ports) => {
      const rm = new ReadModel();
      for (const n of nodes) rm.nodes.set(n, { name: n, incarnation: `inc-${n}` } as NodeState);
      for (const s of switches) rm.switches.set(s, { name: s } as SwitchState);
      const kinds = new Map(readModelKinds(worldOf(rm)).map((k) => [k.kind, k]));
      const nic = kinds.get('nic')!;
      const port = kinds.get('port')!;
      const roundTrip = (k: typeof nic, id: string, s: unknown) => {
        const packed = structuredClone(k.pack!(id, s));
        expect(Array.isArray(packed), 'packed').to.equal(true);
        return k.share!(id, packed);
      };
      for (const [i, n] of nics.entries()) {
        const s: NicState = {
          ...nicState(n.node, n.name, i, i), nodeIncarnation: i % 2 ? `inc-${n.node}` : 'other', networks: n.networks,
          actions: n.actions ? [{ seq: 1, nic: n.name, type: 'modify_port', channel: 'vlan/native', newNetwork: 'w', switch: 's', port: 'p', status: 'DONE', acceptedAt: 1 }] : [],
        };
        const back = roundTrip(nic, nicId(n.node, n.name), s) as NicState;
        expect(back).to.deep.equal(s);
        if (rm.nodes.has(n.node)) expect(back.nodeIncarnation === s.nodeIncarnation).to.equal(true);
      }
      for (const [i, p] of ports.entries()) {
        const s: PortState = { switch: p.sw, name: p.name, registeredAt: i, wire: p.wire, config: p.config };
        expect(roundTrip(port, portId(p.sw, p.name), s)).to.deep.equal(s);
      }
    }), { numRuns: 300 });
  });
});
