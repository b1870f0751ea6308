/**
 * Random operations on an actor world, for property tests (fast-check): a world set up with
 * something of every kind, an arbitrary of operations over a small universe of names (so that
 * they meet), and what each operation asks. Refusals are ordinary answers; the caller decides
 * what to check after each.
 */
import fc from 'fast-check';
import { World } from '../../actors/world';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import { FAKE_SWITCH, RecordingSwitch } from './world';
import { portId } from '../../actors/ids';

const by = 'admin';
const pick = <T>(...xs: T[]) => fc.constantFrom(...xs);
const KINDS = [
  'project.create', 'project.delete', 'node.register', 'node.delete', 'nic.register', 'nic.delete', 'port.register', 'port.delete',
  'wire', 'unwire', 'connectNode', 'detachNode', 'network.create', 'network.delete', 'grant', 'revoke', 'connect', 'detach', 'revert',
  'user.create', 'user.delete', 'setAdmin', 'join', 'leave', 'headnode.create', 'headnode.delete', 'hnic.create', 'hnic.delete',
  'hnic.connect', 'hnic.detach', 'lease', 'unlease', 'expire', 'powerOffEnded', 'noticeAttempted', 'hold', 'release', 'fail', 'sleep',
  'meta.set', 'meta.delete', 'console.start', 'console.stop', 'forceDetach', 'reapply', 'clearDoubt',
] as const;
/** The kinds of operation drawn, those that make the states worth checking more often than the others. */
const DRAWN = [...KINDS, 'connect', 'connect', 'detach', 'detachNode', 'connectNode', 'release', 'fail', 'forceDetach', 'clearDoubt'] as const;
/** The names operations draw from, per kind (the populated world's among them, so that they meet). */
export interface Names { n: string[]; e: string[]; port: string[]; w: string[]; u: string[]; h: string[] }
export const NAMES: Names = { n: ['n1', 'n2', 'n3'], e: ['e0', 'e1'], port: ['a', 'b', 'c'], w: ['w1', 'w2', 'w3'], u: ['u1', 'u2'], h: ['h1', 'h2'] };

/** Names of every form the name rule allows, the populated world's among them: `/`, `%`, unicode, `__proto__`, 255 bytes. */
export const ODD_NAMES: Names = {
  n: ['n1', 'n2', 'n/4%', '__proto__', 'nœud ☃', 'n'.repeat(255)], e: ['e0', 'e/1', '%2F', '__proto__', 'é'.repeat(127)],
  port: ['a', 'b', 'gi1/0/3', '50%', '__proto__', 'p'.repeat(255)], w: ['w1', 'w2', 'w/%', '__proto__', '网络'],
  u: ['u1', '__proto__'], h: ['h1', 'h/2%', '__proto__'],
};

/**
 * Operations over `names`; with `doubts`, ports that refuse their read-backs too, so that a change
 * failing on them leaves them in doubt (its set-back then goes on in the background, with backoff).
 */
export const opArbOver = (names: Names, { doubts = false } = {}) => fc.record({
  k: doubts ? pick<(typeof DRAWN)[number] | 'blind'>(...DRAWN, 'blind', 'blind') : pick(...DRAWN), p: pick('p', 'q', 'm'), n: pick(...names.n), e: pick(...names.e), port: pick(...names.port), w: pick(...names.w),
  u: pick(...names.u), h: pick(...names.h), owner: pick('p', 'q', 'admin'), vlan: pick(null, 101, 5), flag: fc.boolean(),
  /** a metadata label (keys msgpack would not give back as they are among them) */
  label: pick('rack', '__proto__', '\u0001x', 'a/b%'),
  /** a network operation that stays pending: the switch holds it (and what follows) until a release */
  slow: fc.boolean(),
});
export const opArb = opArbOver(NAMES);
export type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * A world with a switch, two nodes with wired nics, projects p, q and the maintenance pool's m;
 * n1 in p on p's network w1 (as headnode h1's e0), n2 in q, n3 free; a public network w2; user u1 a member of p.
 */
export async function populatedWorld(engine: PersistenceEngine, driver: RecordingSwitch): Promise<World> {
  const world = new World(engine, {
    vlanPool: [[100, 103]], switchDriverFor: (t) => (t === FAKE_SWITCH ? driver : undefined), switchTimeoutMs: 2000,
    // A port in doubt is set back again soon (a force-detach's, a failed change's): runs wait for it.
    settleRetryMs: 20,
    release: { maintenanceProject: 'm', powerOff: true },
  });
  await world.switches.ask('s1', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} });
  for (const p of ['p', 'q', 'm']) await world.projects.ask(p, { type: 'project.create', by });
  for (const [i, n] of ['n1', 'n2'].entries()) {
    await world.switches.ask('s1', { type: 'switch.registerPort', by, port: 'abc'[i] });
    await world.nodes.ask(n, { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
    await world.nodes.ask(n, { type: 'node.registerNic', by, nic: 'e0', macaddr: `m${i}` });
    await world.nodes.ask(n, { type: 'node.wireNic', by, nic: 'e0', switch: 's1', port: 'abc'[i] });
  }
  await world.projects.ask('p', { type: 'project.connectNode', by, node: 'n1' });
  await world.projects.ask('q', { type: 'project.connectNode', by, node: 'n2' });
  await world.nodes.ask('n3', { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
  await world.networks.ask('w2', { type: 'network.create', by, spec: { owner: 'admin', access: [], vlan: null } });
  await world.projects.ask('p', { type: 'project.createNetwork', by, network: 'w1', spec: { owner: 'p', access: ['p'], vlan: null } });
  await world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: null, nic: 'e0', network: 'w1', channel: 'vlan/native' });
  await world.projects.ask('p', { type: 'project.createHeadnode', by, headnode: 'h1', baseImg: 'img' });
  await world.headnodes.ask('h1', { type: 'headnode.createHnic', by, hnic: 'e0' });
  await world.headnodes.ask('h1', { type: 'headnode.connectNetwork', by, hnic: 'e0', network: 'w1' });
  await world.users.ask('u1', { type: 'user.create', by, passwordHash: 'x', isAdmin: false });
  await world.projects.ask('p', { type: 'project.addUser', by, user: 'u1' });
  return world;
}

/** One operation; a refusal is an answer like any other (anything else is a bug). */
export async function perform(world: World, driver: RecordingSwitch, o: Op): Promise<unknown> {
  const { p, n, e, port, w, u, h, flag } = o;
  const node = world.rm.nodes.get(n);
  if (o.slow && ['connect', 'detach', 'revert'].includes(o.k)) await perform(world, driver, { ...o, k: 'hold' });
  switch (o.k) {
    case 'project.create': return world.projects.ask(p, { type: 'project.create', by });
    case 'project.delete': return world.projects.ask(p, { type: 'project.delete', by });
    case 'node.register': return world.nodes.ask(n, { type: 'node.register', by, obm: { type: 'mock', fields: {} } });
    case 'node.delete': return world.nodes.ask(n, { type: 'node.delete', by });
    case 'nic.register': return world.nodes.ask(n, { type: 'node.registerNic', by, nic: e, macaddr: `${n}-${e}` });
    case 'nic.delete': return world.nodes.ask(n, { type: 'node.deleteNic', by, nic: e });
    case 'port.register': return world.switches.ask('s1', { type: 'switch.registerPort', by, port });
    case 'port.delete': return world.switches.ask('s1', { type: 'switch.deletePort', by, port });
    case 'wire': return world.nodes.ask(n, { type: 'node.wireNic', by, nic: e, switch: 's1', port });
    case 'unwire': return world.nodes.ask(n, { type: 'node.unwireNic', by, nic: e, switch: 's1', port });
    case 'connectNode': return world.projects.ask(p, { type: 'project.connectNode', by, node: n });
    case 'detachNode': return world.projects.ask(p, { type: 'project.detachNode', by, node: n });
    case 'network.create': {
      const spec = { owner: o.owner, access: flag ? [] : [o.owner === 'admin' ? 'q' : o.owner], vlan: o.vlan };
      return o.owner === 'admin'
        ? world.networks.ask(w, { type: 'network.create', by, spec })
        : world.projects.ask(o.owner, { type: 'project.createNetwork', by, network: w, spec });
    }
    case 'network.delete': return world.networks.ask(w, { type: 'network.delete', by });
    case 'grant': return world.projects.ask(p, { type: 'project.grantNetwork', by, network: w });
    case 'revoke': return world.networks.ask(w, { type: 'network.revoke', by, project: p });
    case 'connect': {
      const channel = flag ? `vlan/${world.rm.networks.get(w)?.vlan}` : 'vlan/native';
      return world.nodes.ask(n, { type: 'node.connectNetwork', by, project: null, nic: e, network: w, channel });
    }
    case 'detach': return world.nodes.ask(n, { type: 'node.detachNetwork', by, project: null, nic: e, network: w });
    case 'revert': return world.nodes.ask(n, { type: 'node.revertPort', by, nic: e });
    case 'user.create': return world.users.ask(u, { type: 'user.create', by, passwordHash: 'x', isAdmin: flag });
    case 'user.delete': return world.users.ask(u, { type: 'user.delete', by });
    case 'setAdmin': return world.users.ask(u, { type: 'user.setAdmin', by, isAdmin: flag });
    case 'join': return world.projects.ask(p, { type: 'project.addUser', by, user: u });
    case 'leave': return world.projects.ask(p, { type: 'project.removeUser', by, user: u });
    case 'headnode.create': return world.projects.ask(p, { type: 'project.createHeadnode', by, headnode: h, baseImg: 'img' });
    case 'headnode.delete': return world.headnodes.ask(h, { type: 'headnode.beginDelete', by })
      .then(() => world.headnodes.ask(h, { type: 'headnode.endDelete', by, error: null }));
    case 'hnic.create': return world.headnodes.ask(h, { type: 'headnode.createHnic', by, hnic: e });
    case 'hnic.delete': return world.headnodes.ask(h, { type: 'headnode.deleteHnic', by, hnic: e });
    case 'hnic.connect': return world.headnodes.ask(h, { type: 'headnode.connectNetwork', by, hnic: e, network: w });
    case 'hnic.detach': return world.headnodes.ask(h, { type: 'headnode.detachNetwork', by, hnic: e });
    case 'lease': return world.nodes.ask(n, { type: 'node.setLease', by, project: null, expiresAt: 4e12 + (flag ? 1 : 0) });
    case 'unlease': return world.nodes.ask(n, { type: 'node.deleteLease', by, project: null });
    case 'expire': return world.nodes.ask(n, { type: 'node.leaseExpired', by, expiresAt: node?.lease?.expiresAt ?? 0 });
    case 'powerOffEnded': return world.nodes.ask(n, { type: 'node.powerOffEnded', by, since: node?.releasePowerOff?.since ?? 0, error: flag ? null : 'BMC down' });
    case 'noticeAttempted': return world.nodes.ask(n, { type: 'node.noticeAttempted', by, since: node?.maintenance?.since ?? 0, error: flag ? null : 'refused' });
    // The switch holds every change (operations stay pending) until released; a port refuses changes; actors fall asleep.
    case 'hold':
      if (!held.has(driver)) driver.hold();
      return held.add(driver);
    case 'release': return letGo(driver);
    case 'fail': return driver.failing.has(port) ? driver.failing.delete(port) : driver.failing.add(port);
    // A port refusing changes and read-backs: a change that fails on it leaves it in doubt.
    case 'blind': return driver.unreadable.has(port) ? driver.unreadable.delete(port) : driver.unreadable.add(port) && driver.failing.add(port);
    case 'sleep': return world.runtime.sweep(Date.now() + 1e9, 0);
    case 'meta.set': return world.nodes.ask(n, { type: 'node.setMetadata', by, label: o.label, value: flag ? `v${o.vlan}` : Number(o.vlan) });
    case 'meta.delete': return world.nodes.ask(n, { type: 'node.deleteMetadata', by, label: o.label });
    case 'console.start': return world.nodes.ask(n, { type: 'node.startConsole', by, project: null });
    case 'console.stop': return world.nodes.ask(n, { type: 'node.stopConsole', by, project: null });
    case 'forceDetach': return world.nodes.ask(n, { type: 'node.forceDetach', by, nic: e, network: w });
    case 'reapply': return world.nodes.ask(n, { type: 'node.reapplyPort', by, nic: e });
    // An admin's clear of a port's doubt: its set-back is still owed, retried while the port
    // fails. Doubts are few: a failing port in none is first put in doubt by a change that failed
    // after it reached the port (a stray VLAN), and cleared by hand or not (`flag`).
    case 'clearDoubt': {
      if (!world.rm.port('s1', port)?.doubt && driver.failing.has(port) && world.rm.port('s1', port)) {
        driver.ports.set(`s1/${port}`, { native: 4000, tagged: [] });
        await world.ports.ask(portId('s1', port), { type: 'port.doubt', by: 'switch', vlans: [4000] });
        // Set back with backoff, as after any failed change.
        void world.portHardware.retry(portId('s1', port));
        if (!flag) return;
      }
      return world.switches.ask('s1', { type: 'switch.clearPortDoubt', by, port });
    }
  }
}
/** drivers holding their changes */
const held = new WeakSet<RecordingSwitch>();

/** Is the switch holding its changes (operations stay pending)? */
export const holding = (driver: RecordingSwitch) => held.has(driver);

/** Let the switch apply what it holds. */
export function letGo(driver: RecordingSwitch): void {
  held.delete(driver);
  driver.release();
}
