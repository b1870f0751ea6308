/**
 * A randomized concurrency test with an exact model (issue 11 item 9).
 *
 * From a printed seed, admins and members of several projects race conflicting operations in
 * rounds (all of a round's calls in flight at once): node reserve and release, port wiring,
 * network create, delete, grant and revoke, connect and detach (the mock switch delays each
 * change, and one port fails every change), nic and node delete and registration. The model is
 * the API's sequential specification (docs/api-conventions.md §4-§8): after each round it looks
 * for an order of the round's calls (and of the outcomes of the operations they queued) in which
 * every answer is the one the specification gives; each order found gives a state, and the
 * service's state, read through the API once every operation has ended, must be exactly one of
 * them. Then every invariant of docs/actors.md that the API shows is checked, and the mock
 * switches' port VLANs must equal the service's view. The tenant lifecycle is in it (issue 20):
 * leases set and removed (a release ends them), project quotas (a reservation or a network
 * beyond one is a 409), members powering their nodes on, and every release powering its node off
 * (once no release power-off is pending, every free node is off). Headnode creates and deletes
 * under a headnode quota; admins force-detaching a network, which leaves the nic's port in doubt
 * of it until its set-back (queued at once, an event of the round like an operation's outcome)
 * is confirmed: a delete of that network, a release of the node, a revoke racing it are refused
 * meanwhile, and clear_doubt is 200 only then (409 otherwise). Each round ends with no port in
 * doubt, the mock switch then holding exactly what the service holds.
 *
 * The second phase runs the same kind of workload with the process killed (SIGKILL) at random
 * moments of random rounds and restarted on the same folder: a call answered before the kill is
 * in the state; one that got no answer is either wholly there or wholly absent (nothing
 * half-applied); every operation accepted, answered or not, ends DONE or ERROR.
 *
 * CI: HILT_MODEL_OPS (default 1,500) calls, then HILT_MODEL_KILL_OPS (default 600) with
 * HILT_MODEL_KILLS (default 4) kills, about a minute. `npm run soak`: 20,000 and 5,000 with 40
 * kills. HILT_MODEL_SEED=<seed> makes the same random choices again (half the calls are aimed with
 * the model's state, so the same workload as long as the races give the same answers).
 *
 * Where the specification leaves a race open the model allows what docs/api-conventions.md §1
 * allows: a connect that meets a change of its network (and such a change meeting a connect)
 * may get the momentary 409 "being changed; try again"; a member's connect or detach racing a
 * reserve or release of the node may get 401 (the node actor checks the project the caller was
 * authorized through). Either changes nothing.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { startServerProcess, ServerProcess } from '../helpers/process';
import { basic, Creds, mockSwitch } from '../helpers/server';
import { addCredentials, record } from '../helpers/secrets';

const SOAK = process.env.HILT_SOAK === '1';
const OPS = Number(process.env.HILT_MODEL_OPS ?? (SOAK ? 20_000 : 1_500));
const KILL_OPS = Number(process.env.HILT_MODEL_KILL_OPS ?? (SOAK ? 5_000 : 600));
const KILLS = Number(process.env.HILT_MODEL_KILLS ?? (SOAK ? 40 : 4));
const SEED = Number(process.env.HILT_MODEL_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ROUND = 6;

const ADMIN: Creds = { user: 'modelroot', password: 'model-root-pw' };
const MEMBERS: Record<string, { creds: Creds; projects: string[] }> = {
  m1: { creds: { user: 'm1', password: 'm1-model-pw' }, projects: ['P1'] },
  m2: { creds: { user: 'm2', password: 'm2-model-pw' }, projects: ['P1', 'P2'] },
  m3: { creds: { user: 'm3', password: 'm3-model-pw' }, projects: ['P3'] },
};
const PROJECTS = ['P1', 'P2', 'P3'];
const NODES = ['N0', 'N1', 'N2', 'N3', 'N4'];
const NICS = ['eth0', 'eth1'];
const SW = 'msw';
const PORTS = ['gi1/0/0', 'gi1/0/1', 'gi1/0/2', 'gi1/0/3', 'gi1/0/4', 'gi1/0/5', 'gi1/0/6', 'gi1/0/7'];
/** every change of this port fails: its operations end ERROR */
const FAIL_PORT = 'gi1/0/7';
const NETS = ['W0', 'W1', 'W2', 'W3'];
const HEADNODES = ['H0', 'H1', 'H2', 'H3'];

/** mulberry32: small, fast, seeded */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)], int: (n: number) => Math.floor(next() * n) };
}

// ---- the model -------------------------------------------------------------------------------

interface Nic { port: string | null; net: string | null; pending: { kind: 'connect' | 'detach'; net: string; op: number } | null }
interface Node { project: string | null; nics: Record<string, Nic>; lease: boolean }
interface Net { owner: string; access: string[] }
/** a project's limits (null: none) */
interface Quota { nodes: number | null; networks: number | null; headnodes: number | null }
/**
 * `doubt`: the ports a force-detach left in doubt, each with the networks it may still carry and
 * the force-detach whose set-back ends it (the round's end waits for every set-back: on the mock
 * switch it is confirmed within ms). `headnodes`: name → project.
 */
interface State {
  nodes: Record<string, Node>; ports: Record<string, string | null>; nets: Record<string, Net>; quotas: Record<string, Quota>;
  doubt: Record<string, { net: string; op: number }[]>; headnodes: Record<string, string>;
}

type Op =
  | { t: 'reserve' | 'release'; p: string; n: string; as: string }
  | { t: 'wire'; port: string; n: string; nic: string }
  | { t: 'unwire'; port: string }
  | { t: 'netCreate'; w: string; owner: string; access: string; as: string }
  | { t: 'netDelete'; w: string }
  | { t: 'grant' | 'revoke'; w: string; p: string }
  | { t: 'connect' | 'detach'; n: string; nic: string; w: string; as: string }
  | { t: 'nicDelete' | 'nicAdd'; n: string; nic: string }
  | { t: 'nodeDelete' | 'nodeAdd'; n: string }
  | { t: 'leaseSet' | 'leaseDel'; n: string; as: string }
  | { t: 'quota'; p: string; nodes: number | null; networks: number | null; headnodes: number | null }
  | { t: 'forceDetach'; n: string; nic: string; w: string }
  | { t: 'clearDoubt'; port: string }
  | { t: 'hnCreate'; h: string; p: string; as: string }
  | { t: 'hnDelete'; h: string }
  | { t: 'powerOn'; n: string; as: string };

const clone = (s: State): State => JSON.parse(JSON.stringify(s));
export const canon = (s: State): string => JSON.stringify(s, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
const member = (as: string, p: string | null) => as === 'admin' || (p !== null && MEMBERS[as].projects.includes(p));
/** projects whose nodes are on the network or connecting to it */
function usersOf(s: State, w: string): string[] {
  const out: string[] = [];
  for (const n of Object.values(s.nodes)) {
    for (const x of Object.values(n.nics)) if (n.project && (x.net === w || (x.pending?.kind === 'connect' && x.pending.net === w))) out.push(n.project);
  }
  return out;
}

/** the port of node n's nic x, if it is in doubt (of any network) */
const inDoubt = (s: State, port: string | null) => !!port && !!s.doubt[port]?.length;
/** projects whose nodes' ports may still carry network w */
function doubtersOf(s: State, w: string): (string | null)[] {
  const out: (string | null)[] = [];
  for (const [port, d] of Object.entries(s.doubt)) {
    if (!d.some((x) => x.net === w)) continue;
    const wired = s.ports[port];
    out.push(wired ? s.nodes[wired.split('/')[0]].project : null);
  }
  return out;
}

/** The specification: the answer to `op` in state `s`, and the state after it. */
export function step(s0: State, op: Op, id: number): { status: number; s: State } {
  const s = clone(s0);
  const done = (status = 200) => ({ status, s });
  const no = (status: number) => ({ status, s: s0 });
  switch (op.t) {
    case 'reserve': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (n.project) return no(409);
      const limit = s.quotas[op.p].nodes;
      if (limit !== null && Object.values(s.nodes).filter((x) => x.project === op.p).length >= limit) return no(409);
      n.project = op.p;
      return done();
    }
    case 'release': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (n.project !== op.p) return no(409);
      if (Object.values(n.nics).some((x) => x.net || x.pending)) return no(409);
      if (Object.values(n.nics).some((x) => inDoubt(s, x.port))) return no(409);
      n.project = null;
      n.lease = false;
      return done();
    }
    case 'wire': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      const x = n.nics[op.nic];
      if (!x) return no(404);
      if (x.port) return no(409);
      if (s.ports[op.port]) return no(409);
      if (inDoubt(s, op.port)) return no(409);
      x.port = op.port;
      s.ports[op.port] = `${op.n}/${op.nic}`;
      return done();
    }
    case 'unwire': {
      const w = s.ports[op.port];
      if (!w) return no(404);
      const [node, nic] = w.split('/');
      if (s.nodes[node].project) return no(409);
      if (s.nodes[node].nics[nic].pending) return no(409);
      s.nodes[node].nics[nic].port = null;
      s.ports[op.port] = null;
      return done();
    }
    case 'netCreate': {
      if (s.nets[op.w]) return no(409);
      const limit = op.owner === 'admin' ? null : s.quotas[op.owner].networks;
      if (limit !== null && Object.values(s.nets).filter((w) => w.owner === op.owner).length >= limit) return no(409);
      s.nets[op.w] = { owner: op.owner, access: op.access ? [op.access] : [] };
      return done();
    }
    case 'netDelete':
      if (!s.nets[op.w]) return no(404);
      if (usersOf(s, op.w).length) return no(409);
      if (doubtersOf(s, op.w).length) return no(409);
      delete s.nets[op.w];
      return done();
    case 'grant': {
      const w = s.nets[op.w];
      if (!w) return no(404);
      if (w.access.includes(op.p)) return no(409);
      if (!w.access.length && usersOf(s, op.w).some((p) => p !== op.p)) return no(409);
      if (!w.access.length && doubtersOf(s, op.w).some((p) => p !== null && p !== op.p)) return no(409);
      w.access = [...w.access, op.p].sort();
      return done();
    }
    case 'revoke': {
      const w = s.nets[op.w];
      if (!w) return no(404);
      if (!w.access.includes(op.p)) return no(404);
      if (w.owner === op.p) return no(409);
      if (usersOf(s, op.w).includes(op.p)) return no(409);
      if (doubtersOf(s, op.w).includes(op.p)) return no(409);
      w.access = w.access.filter((p) => p !== op.p);
      return done();
    }
    case 'connect':
    case 'detach': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      const x = n.nics[op.nic];
      const w = s.nets[op.w];
      if (op.t === 'connect' ? !x || !w : !w || !x) return no(404);
      if (!n.project) return no(409);
      if (!member(op.as, n.project)) return no(401);
      if (op.t === 'connect') {
        if (!x.port) return no(404);
        if (x.pending) return no(409);
        if (w.access.length && !w.access.includes(n.project)) return no(409);
        if (x.net) return no(409); // on this nic already, or the native channel is in use
      } else {
        if (x.pending) return no(409);
        if (x.net !== op.w) return no(409);
      }
      x.pending = { kind: op.t, net: op.w, op: id };
      return done(202);
    }
    case 'nicDelete': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      const x = n.nics[op.nic];
      if (!x) return no(404);
      if (x.net || x.pending) return no(409);
      if (n.project && inDoubt(s, x.port)) return no(409);
      if (x.port) s.ports[x.port] = null;
      delete n.nics[op.nic];
      return done();
    }
    case 'nicAdd': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (n.nics[op.nic]) return no(409);
      n.nics[op.nic] = { port: null, net: null, pending: null };
      return done();
    }
    case 'nodeDelete': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (n.project) return no(409);
      if (Object.keys(n.nics).length) return no(409);
      delete s.nodes[op.n];
      return done();
    }
    case 'nodeAdd':
      if (s.nodes[op.n]) return no(409);
      s.nodes[op.n] = { project: null, nics: {}, lease: false };
      return done();
    case 'leaseSet': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (!n.project) return no(409);
      if (!member(op.as, n.project)) return no(401);
      n.lease = true;
      return done();
    }
    case 'leaseDel': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      // A free node's is an admin's change (docs/lifecycle.md): 401 before its lease's 404.
      if (n.project ? !member(op.as, n.project) : op.as !== 'admin') return no(401);
      if (!n.lease) return no(404);
      n.lease = false;
      return done();
    }
    case 'quota':
      s.quotas[op.p] = { nodes: op.nodes, networks: op.networks, headnodes: op.headnodes };
      return done();
    case 'forceDetach': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      const x = n.nics[op.nic];
      if (!x) return no(404);
      if (x.pending) return no(409);
      if (x.net !== op.w) return no(409);
      // Forgotten, not undone: the port may carry the VLAN until its set-back is confirmed.
      x.net = null;
      s.doubt[x.port!] = [...(s.doubt[x.port!] ?? []), { net: op.w, op: id }];
      return done(200);
    }
    case 'clearDoubt':
      if (!inDoubt(s, op.port)) return no(409);
      delete s.doubt[op.port];
      return done();
    case 'hnCreate': {
      if (s.headnodes[op.h]) return no(409);
      if (!member(op.as, op.p)) return no(401);
      const limit = s.quotas[op.p].headnodes;
      if (limit !== null && Object.values(s.headnodes).filter((p) => p === op.p).length >= limit) return no(409);
      s.headnodes[op.h] = op.p;
      return done();
    }
    case 'hnDelete':
      if (!s.headnodes[op.h]) return no(404);
      delete s.headnodes[op.h];
      return done();
    case 'powerOn': {
      const n = s.nodes[op.n];
      if (!n) return no(404);
      if (n.project ? !member(op.as, n.project) : op.as !== 'admin') return no(401);
      return no(200);
    }
  }
}

/** The outcome of operation `id`, queued in `s`: DONE applies it, ERROR (its port fails) leaves the nic as it was. */
function finish(s0: State, id: number, outcome: 'DONE' | 'ERROR'): State | null {
  for (const [nn, n] of Object.entries(s0.nodes)) {
    for (const [xn, x] of Object.entries(n.nics)) {
      if (x.pending?.op !== id) continue;
      // The failing port fails every change; every other port applies it.
      if ((outcome === 'ERROR') !== (x.port === FAIL_PORT)) return null;
      const s = clone(s0);
      const y = s.nodes[nn].nics[xn];
      if (outcome === 'DONE') y.net = y.pending!.kind === 'connect' ? y.pending!.net : null;
      y.pending = null;
      return s;
    }
  }
  return null;
}

/**
 * The set-back that force-detach `id` queued, confirmed (the failing port never carries a network
 * to forget, so it always is): the port's doubt of that network ends, if an admin did not clear it first.
 */
function setBack(s0: State, id: number): State {
  const s = clone(s0);
  for (const [port, d] of Object.entries(s.doubt)) {
    const left = d.filter((x) => x.op !== id);
    if (left.length) s.doubt[port] = left;
    else delete s.doubt[port];
  }
  return s;
}

/** A call of the round and what became of it. */
interface Call {
  op: Op;
  /** the answer; undefined: none came (the process was killed) */
  status?: number;
  statusId?: string;
  /** how its operation ended (202 only) */
  outcome?: 'DONE' | 'ERROR';
}

/** Answers the specification allows beside its own, each changing nothing (see the file's comment). */
function alsoAllowed(call: Call, round: Call[]): boolean {
  const op = call.op;
  const others = round.filter((c) => c !== call).map((c) => c.op);
  if (call.status === 409 && op.t === 'connect') return others.some((o) => (o.t === 'netDelete' || o.t === 'grant' || o.t === 'revoke') && o.w === op.w);
  if (call.status === 409 && (op.t === 'netDelete' || op.t === 'grant' || op.t === 'revoke')) return others.some((o) => o.t === 'connect' && o.w === op.w);
  if (call.status === 401 && (op.t === 'connect' || op.t === 'detach' || op.t === 'leaseSet' || op.t === 'leaseDel' || op.t === 'powerOn') && op.as !== 'admin') {
    return others.some((o) => (o.t === 'reserve' || o.t === 'release') && o.n === op.n);
  }
  return false;
}

/**
 * Every state that some order of the round's calls (and of the outcomes of the operations they
 * queued) gives, in which each answered call gets its answer. A call without an answer may be
 * absent, or present with whatever the specification answers (its operation then ends as its
 * port decides).
 */
export function linearize(start: State, round: Call[], budget = 500_000): { states: Map<string, State>; steps: number } {
  const states = new Map<string, State>();
  const seen = new Set<string>();
  let steps = 0;
  const n = round.length;
  // events: i < n: call i; n + i: the outcome of call i's operation
  const go = (s: State, doneCalls: number, doneOutcomes: number, open: number) => {
    if (++steps > budget) throw new Error(`the model's search ran over ${budget} steps`);
    const key = `${doneCalls}/${doneOutcomes}/${open}/${canon(s)}`;
    if (seen.has(key)) return;
    seen.add(key);
    if (doneCalls === (1 << n) - 1 && (open & ~doneOutcomes) === 0) {
      states.set(canon(s), s);
      return;
    }
    for (let i = 0; i < n; i++) {
      const bit = 1 << i;
      const c = round[i];
      if (!(doneCalls & bit)) {
        if (c.status === undefined) go(s, doneCalls | bit, doneOutcomes, open); // never arrived
        const r = step(s, c.op, i);
        if (c.status === undefined || r.status === c.status) {
          const queued = r.status === 202 || (c.op.t === 'forceDetach' && r.status === 200);
          go(r.s, doneCalls | bit, doneOutcomes, queued ? open | bit : open);
        } else if (alsoAllowed(c, round)) {
          go(s, doneCalls | bit, doneOutcomes, open);
        }
      } else if (open & bit && !(doneOutcomes & bit)) {
        const outcomes: ('DONE' | 'ERROR')[] = c.outcome ? [c.outcome] : ['DONE', 'ERROR'];
        if (c.op.t === 'forceDetach') go(setBack(s, i), doneCalls, doneOutcomes | bit, open);
        else for (const o of outcomes) {
          const next = finish(s, i, o);
          if (next) go(next, doneCalls, doneOutcomes | bit, open);
        }
      }
    }
  };
  go(start, 0, 0, 0);
  return { states, steps };
}

// ---- the workload ------------------------------------------------------------------------------

/**
 * A call, half the time aimed with the model's state (a detach of a network a nic has, a connect
 * of a wired nic of a reserved node to a network its project may use, a release of a reserved
 * node), else with random names: the seed and the answers so far fix the workload.
 */
function randomOp(r: ReturnType<typeof rng>, s?: State): Op {
  if (s && r.next() < 0.5) {
    const nics = Object.entries(s.nodes).flatMap(([n, node]) => Object.entries(node.nics).map(([x, nic]) => ({ n, x, nic, node })));
    const y = r.next();
    const attached = nics.filter((c) => c.nic.net);
    if (y < 0.3 && attached.length) {
      const c = r.pick(attached);
      if (y < 0.04) return { t: 'forceDetach', n: c.n, nic: c.x, w: c.nic.net! };
      return { t: 'detach', n: c.n, nic: c.x, w: c.nic.net!, as: r.pick(['admin', ...Object.keys(MEMBERS).filter((m) => MEMBERS[m].projects.includes(c.node.project!))]) };
    }
    const ready = nics.filter((c) => c.node.project && c.nic.port && !c.nic.net);
    if (y < 0.8 && ready.length) {
      const c = r.pick(ready);
      const usable = Object.entries(s.nets).filter(([, w]) => !w.access.length || w.access.includes(c.node.project!)).map(([w]) => w);
      if (usable.length) return { t: 'connect', n: c.n, nic: c.x, w: r.pick(usable), as: r.pick(['admin', ...Object.keys(MEMBERS).filter((m) => MEMBERS[m].projects.includes(c.node.project!))]) };
    }
    // Now and then a nic or a node goes, and comes back, wired again.
    const idle = nics.filter((c) => !c.node.project && !c.nic.net && !c.nic.pending);
    if (y >= 0.8 && y < 0.82 && idle.length) {
      const c = r.pick(idle);
      return { t: 'nicDelete', n: c.n, nic: c.x };
    }
    const bare = Object.entries(s.nodes).filter(([, node]) => !node.project && !Object.keys(node.nics).length);
    if (y >= 0.8 && y < 0.84 && bare.length) return { t: 'nodeDelete', n: r.pick(bare)[0] };
    const missing = NODES.filter((n) => !s.nodes[n]);
    if (y >= 0.8 && y < 0.88 && missing.length) return { t: 'nodeAdd', n: r.pick(missing) };
    const lacking = Object.entries(s.nodes).flatMap(([n, node]) => NICS.filter((x) => !node.nics[x]).map((x) => ({ n, x })));
    if (y >= 0.8 && y < 0.92 && lacking.length) {
      const c = r.pick(lacking);
      return { t: 'nicAdd', n: c.n, nic: c.x };
    }
    const unwired = nics.filter((c) => !c.nic.port);
    const freePorts = PORTS.filter((p) => !s.ports[p]);
    if (y >= 0.8 && y < 0.96 && unwired.length && freePorts.length) {
      const c = r.pick(unwired);
      return { t: 'wire', port: r.pick(freePorts), n: c.n, nic: c.x };
    }
    const reserved = Object.entries(s.nodes).filter(([, node]) => node.project);
    if (reserved.length) {
      const [n, node] = r.pick(reserved);
      return { t: 'release', p: node.project!, n, as: 'admin' };
    }
  }
  const memberOf = (p: string) => r.pick(['admin', ...Object.keys(MEMBERS).filter((m) => MEMBERS[m].projects.includes(p))]);
  const anyCaller = () => r.pick(['admin', 'admin', 'admin', ...Object.keys(MEMBERS)]);
  const n0 = r.pick(NODES);
  // The tenant lifecycle: leases (never passing here: test/src/lifecycle/leases.test.ts times them),
  // quotas, and members powering their nodes on (every release powers its node off).
  const y = r.next();
  if (y < 0.05) {
    // Mostly aimed at a reserved node, by its project's member or an admin.
    const held = s ? Object.entries(s.nodes).filter(([, x]) => x.project) : [];
    const t = r.next() < 0.6 ? 'leaseSet' as const : 'leaseDel' as const;
    if (held.length && r.next() < 0.7) {
      const [n, x] = r.pick(held);
      return { t, n, as: memberOf(x.project!) };
    }
    return { t, n: n0, as: anyCaller() };
  }
  if (y < 0.08) return { t: 'quota', p: r.pick(PROJECTS), nodes: r.pick([null, null, 1, 2, 3]), networks: r.pick([null, null, 1, 2]), headnodes: r.pick([null, 0, 1, 2]) };
  if (y < 0.11) return { t: 'powerOn', n: n0, as: r.pick(Object.keys(MEMBERS)) };
  if (y < 0.14) {
    const p = r.pick(PROJECTS);
    if (r.next() < 0.65) return { t: 'hnCreate', h: r.pick(HEADNODES), p, as: memberOf(p) };
    // Mostly aimed at a headnode that exists: few are made (quotas of 0 refuse many), and a run
    // must delete some (the check at its end).
    const made = s ? Object.keys(s.headnodes) : [];
    return { t: 'hnDelete', h: made.length && r.next() < 0.7 ? r.pick(made) : r.pick(HEADNODES) };
  }
  if (y < 0.15) return { t: 'clearDoubt', port: r.pick(PORTS) };
  const x = r.next();
  const n = n0;
  const nic = r.pick(NICS);
  const w = r.pick(NETS);
  const p = r.pick(PROJECTS);
  // Weighted so that connects often find a node in a project, a wired nic and a usable network.
  if (x < 0.12) return { t: 'reserve', p, n, as: memberOf(p) };
  if (x < 0.18) return { t: 'release', p, n, as: memberOf(p) };
  if (x < 0.23) return { t: 'wire', port: r.pick(PORTS), n, nic };
  if (x < 0.26) return { t: 'unwire', port: r.pick(PORTS) };
  if (x < 0.35) {
    const owner = r.next() < 0.6 ? 'admin' : p;
    return { t: 'netCreate', w, owner, access: owner === 'admin' ? r.pick(['', '', p]) : p, as: owner === 'admin' ? 'admin' : memberOf(p) };
  }
  if (x < 0.39) return { t: 'netDelete', w };
  if (x < 0.43) return { t: 'grant', w, p };
  if (x < 0.47) return { t: 'revoke', w, p };
  if (x < 0.74) return { t: 'connect', n, nic, w, as: anyCaller() };
  if (x < 0.90) return { t: 'detach', n, nic, w, as: anyCaller() };
  if (x < 0.93) return { t: 'nicDelete', n, nic };
  if (x < 0.96) return { t: 'nicAdd', n, nic };
  if (x < 0.98) return { t: 'nodeDelete', n };
  return { t: 'nodeAdd', n };
}

/**
 * A round's calls; a force-detach is followed by a delete of the network it forgot, which the
 * port's doubt refuses until the set-back is confirmed. No clear_doubt of that port in the same
 * round: an admin's clear racing the set-back may leave the VLAN on a live switch, as documented
 * (the admin vouches that the port carries nothing), which the switch check would take for a
 * leak. A clear_doubt drawn for it goes to the failing port, which is never in doubt.
 */
function randomRound(r: ReturnType<typeof rng>, s: State, len: number): Op[] {
  const ops = Array.from({ length: len }, () => randomOp(r, s));
  const forced = new Set<string>();
  for (let k = 0; k < len; k++) {
    const op = ops[k];
    if (op.t !== 'forceDetach') continue;
    if (k + 1 < len) ops[k + 1] = { t: 'netDelete', w: op.w };
    const port = s.nodes[op.n]?.nics[op.nic]?.port;
    if (port) forced.add(port);
    k += 1;
  }
  return ops.map((op) => (op.t === 'clearDoubt' && forced.has(op.port) ? { t: 'clearDoubt', port: FAIL_PORT } : op));
}

interface Answer { status: number; body: any }

class Api {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 32 });
  constructor(readonly url: string) {}

  /** A kept-alive connection the server closed as idle just as it was reused: sent once more (see test/fuzz/routes.test.ts). */
  call(method: string, path: string, as: Creds = ADMIN, body?: unknown, retry = true): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { authorization: basic(as) };
      if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
      const req = request(this.url + path, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          record(text);
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      });
      req.setTimeout(20_000, () => req.destroy(new Error(`no answer to ${method} ${path} in 20 s`)));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) this.call(method, path, as, body, false).then(resolve, reject);
        else reject(err);
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

const enc = encodeURIComponent;
const callerOf = (as: string) => (as === 'admin' ? ADMIN : MEMBERS[as].creds);

function send(api: Api, op: Op): Promise<Answer> {
  switch (op.t) {
    case 'reserve': return api.call('POST', `/project/${op.p}/connect_node`, callerOf(op.as), { node: op.n });
    case 'release': return api.call('POST', `/project/${op.p}/detach_node`, callerOf(op.as), { node: op.n });
    case 'wire': return api.call('POST', `/switch/${SW}/port/${op.port}/connect_nic`, ADMIN, { node: op.n, nic: op.nic });
    case 'unwire': return api.call('POST', `/switch/${SW}/port/${op.port}/detach_nic`);
    case 'netCreate': return api.call('PUT', `/network/${op.w}`, callerOf(op.as), { owner: op.owner, access: op.access, net_id: '' });
    case 'netDelete': return api.call('DELETE', `/network/${op.w}`);
    case 'grant': return api.call('PUT', `/network/${op.w}/access/${op.p}`);
    case 'revoke': return api.call('DELETE', `/network/${op.w}/access/${op.p}`);
    case 'connect': return api.call('POST', `/node/${op.n}/nic/${op.nic}/connect_network`, callerOf(op.as), { network: op.w });
    case 'detach': return api.call('POST', `/node/${op.n}/nic/${op.nic}/detach_network`, callerOf(op.as), { network: op.w });
    case 'nicDelete': return api.call('DELETE', `/node/${op.n}/nic/${op.nic}`);
    case 'nicAdd': return api.call('PUT', `/node/${op.n}/nic/${op.nic}`, ADMIN, { macaddr: `mac-${op.n}-${op.nic}` });
    case 'nodeDelete': return api.call('DELETE', `/node/${op.n}`);
    case 'nodeAdd': return api.call('PUT', `/node/${op.n}`, ADMIN, { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: `bmc-${op.n}`, user: 'u', password: 'model-bmc-pw' } });
    case 'leaseSet': return api.call('PUT', `/node/${op.n}/lease`, callerOf(op.as), { expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString() });
    case 'leaseDel': return api.call('DELETE', `/node/${op.n}/lease`, callerOf(op.as));
    case 'quota': return api.call('PUT', `/project/${op.p}/quota`, ADMIN, { nodes: op.nodes, networks: op.networks, headnodes: op.headnodes });
    case 'forceDetach': return api.call('POST', `/admin/node/${op.n}/nic/${op.nic}/force_detach`, ADMIN, { network: op.w });
    case 'clearDoubt': return api.call('POST', `/admin/switch/${SW}/port/${enc(op.port)}/clear_doubt`);
    case 'hnCreate': return api.call('PUT', `/headnode/${op.h}`, callerOf(op.as), { project: op.p, base_img: 'base-headnode' });
    case 'hnDelete': return api.call('DELETE', `/headnode/${op.h}`);
    case 'powerOn': return api.call('POST', `/node/${op.n}/power_on`, callerOf(op.as));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until no node has a PENDING operation; answers each status id's outcome. */
async function settle(api: Api, ids: string[], ms = 30_000): Promise<Map<string, 'DONE' | 'ERROR'>> {
  const out = new Map<string, 'DONE' | 'ERROR'>();
  const deadline = Date.now() + ms;
  for (const id of ids) {
    for (;;) {
      const r = await api.call('GET', `/networking_action/${id}`);
      if (r.status === 200 && r.body.status !== 'PENDING') {
        out.set(id, r.body.status);
        break;
      }
      if (r.status !== 200) throw new Error(`GET /networking_action/${id}: ${r.status} ${JSON.stringify(r.body)}`);
      if (Date.now() > deadline) throw new Error(`operation ${id} still PENDING after ${ms} ms`);
      await sleep(5);
    }
  }
  // Operations whose 202 never came (killed) end too.
  for (;;) {
    const lists = await Promise.all(NODES.map((n) => api.call('GET', `/node/${n}/networking_actions`)));
    if (!lists.some((l) => l.status === 200 && Array.isArray(l.body) && l.body.some((a: { status: string }) => a.status === 'PENDING'))) break;
    if (Date.now() > deadline) throw new Error(`operations still PENDING after ${ms} ms`);
    await sleep(10);
  }
  return out;
}

/** The service's state as the model holds it, read through the API; and every invariant it shows. */
async function observe(api: Api): Promise<State> {
  // First, before anything is read: a force-detach's set-back is queued at once and confirmed
  // within ms on the mock switch. The round ends once no port is in doubt (the model holds none
  // then), so the switch check below also sees that no port keeps the VLAN of a network
  // forgotten (or deleted since).
  for (const end = Date.now() + 10_000; ; await sleep(10)) {
    const att = await api.call('GET', '/admin/nodes/attention');
    if (!(att.body as { problem: string }[]).some((a) => a.problem === 'port_in_doubt')) break;
    if (Date.now() > end) throw new Error(`invariant: a port still in doubt after 10 s: ${JSON.stringify(att.body)}`);
  }
  const get = (p: string) => api.call('GET', p);
  const [all, free, networks, sw, ...projectNodes] = await Promise.all([get('/nodes/all'), get('/nodes/free'), get('/networks'), get(`/admin/actors/switch/${SW}`), ...PROJECTS.map((p) => get(`/project/${p}/nodes`))]);
  const nodeNames: string[] = all.body;
  const fail = (what: string): never => {
    throw new Error(`invariant: ${what}`);
  };
  if (new Set(nodeNames).size !== nodeNames.length) fail('a node is listed twice');
  const shows = await Promise.all(NODES.map((n) => get(`/node/${n}`)));
  const ports = await Promise.all(PORTS.map((p) => get(`/switch/${SW}/port/${enc(p)}`)));
  const nets = await Promise.all(NETS.map((w) => get(`/network/${w}`)));
  const actions = await Promise.all(NODES.map((n) => get(`/node/${n}/networking_actions`)));
  const leases = await Promise.all(NODES.map((n) => get(`/node/${n}/lease`)));
  const quotas = await Promise.all(PROJECTS.map((p) => get(`/project/${p}/quota`)));
  const hnLists = await Promise.all(PROJECTS.map((p) => get(`/project/${p}/headnodes`)));
  const s: State = { nodes: {}, ports: {}, nets: {}, quotas: {}, doubt: {}, headnodes: {} };
  for (const [i, p] of PROJECTS.entries()) for (const h of hnLists[i].body as string[]) s.headnodes[h] = p;

  for (const [i, w] of NETS.entries()) {
    const listed = Object.hasOwn(networks.body, w);
    if (listed !== (nets[i].status === 200)) fail(`network ${w}: list_networks and show_network disagree`);
    if (!listed) continue;
    const access: string[] = nets[i].body.access ?? [];
    s.nets[w] = { owner: nets[i].body.owner, access: [...access].sort() };
    if (JSON.stringify(networks.body[w].projects ?? []) !== JSON.stringify(nets[i].body.access ?? [])) fail(`network ${w}: access lists disagree`);
    for (const p of [s.nets[w].owner, ...access]) if (p !== 'admin' && !PROJECTS.includes(p)) fail(`network ${w} refers to a project that does not exist`);
  }
  const ids = Object.values(networks.body as Record<string, { network_id: string }>).map((x) => x.network_id);
  if (new Set(ids).size !== ids.length) fail(`two networks share a VLAN id: ${JSON.stringify(networks.body)}`);
  const vlanOf = (w: string) => Number(networks.body[w].network_id);
  for (const [i, n] of NODES.entries()) {
    const listed = nodeNames.includes(n);
    if (listed !== (shows[i].status === 200)) fail(`node ${n}: list_nodes and show_node disagree`);
    if (!listed) continue;
    const b = shows[i].body;
    if (leases[i].status === 200 && leases[i].body.project !== b.project) fail(`node ${n}: a lease of project ${leases[i].body.project} on a node of ${b.project}`);
    if (leases[i].status !== 200 && leases[i].status !== 404) fail(`node ${n}: GET lease answered ${leases[i].status}`);
    const node: Node = { project: b.project, nics: {}, lease: leases[i].status === 200 };
    if ((b.project === null) !== free.body.includes(n)) fail(`node ${n}: free list disagrees`);
    for (const [j, p] of PROJECTS.entries()) if (projectNodes[j].body.includes(n) !== (b.project === p)) fail(`node ${n}: project lists disagree`);
    const pending: Record<string, number> = {};
    for (const a of actions[i].body as { nic: string; status: string }[]) if (a.status === 'PENDING') pending[a.nic] = (pending[a.nic] ?? 0) + 1;
    for (const x of b.nics) {
      if ((pending[x.label] ?? 0) > 1) fail(`nic ${n}/${x.label} has two pending operations`);
      const chans = Object.keys(x.networks);
      if (chans.some((c) => c !== 'vlan/native')) fail(`nic ${n}/${x.label} has a network on a channel nobody asked for`);
      const net = x.networks['vlan/native'] ?? null;
      if (net && !s.nets[net]) fail(`nic ${n}/${x.label} is on network ${net}, which does not exist`);
      if (net && s.nets[net].access.length && !s.nets[net].access.includes(b.project)) fail(`nic ${n}/${x.label} is on network ${net}, which its project may not use`);
      if (net && !b.project) fail(`free node ${n} has a network attached`);
      if ((x.port === null) !== (x.switch === null)) fail(`nic ${n}/${x.label}: port without switch`);
      node.nics[x.label] = { port: x.port, net, pending: null };
    }
    // Operations end in the order they were accepted (the list is newest first).
    const finished = (actions[i].body as { finished_at: string | null }[]).filter((a) => a.finished_at).map((a) => Date.parse(a.finished_at!)).reverse();
    for (let k = 1; k < finished.length; k++) if (finished[k] < finished[k - 1]) fail(`node ${n}: an operation ended before one accepted earlier`);
    s.nodes[n] = node;
  }
  const mock: Record<string, { native: number | null; tagged: number[] }> = sw.body.mockPorts ?? {};
  for (const [i, p] of PORTS.entries()) {
    const body = ports[i].body;
    s.ports[p] = body.node ? `${body.node}/${body.nic}` : null;
    const owner = body.node ? s.nodes[body.node]?.nics[body.nic] : undefined;
    if (body.node && owner?.port !== p) fail(`port ${p} and nic ${body.node}/${body.nic} disagree about their wiring`);
    const net = owner?.net ?? null;
    if (JSON.stringify(body.networks ?? {}) !== JSON.stringify(net ? { 'vlan/native': net } : {})) fail(`port ${p} records networks its nic does not have`);
    // The mock switch holds exactly what the service holds.
    const hw = mock[p] ?? { native: null, tagged: [] };
    const want = { native: net ? vlanOf(net) : null, tagged: [] };
    if (JSON.stringify({ native: hw.native, tagged: hw.tagged }) !== JSON.stringify(want)) fail(`switch port ${p} holds ${JSON.stringify(hw)}, the service ${JSON.stringify(want)}`);
  }
  for (const [n, node] of Object.entries(s.nodes)) {
    for (const [x, nic] of Object.entries(node.nics)) if (nic.port && s.ports[nic.port] !== `${n}/${x}`) fail(`nic ${n}/${x} and port ${nic.port} disagree about their wiring`);
  }
  for (const [i, p] of PROJECTS.entries()) {
    const q = quotas[i].body;
    s.quotas[p] = { nodes: q.nodes.limit, networks: q.networks.limit, headnodes: q.headnodes.limit };
    const held = Object.values(s.nodes).filter((x) => x.project === p).length;
    const owned = Object.values(s.nets).filter((w) => w.owner === p).length;
    const made = Object.values(s.headnodes).filter((x) => x === p).length;
    if (q.nodes.used !== held || q.networks.used !== owned || q.headnodes.used !== made) {
      fail(`project ${p}: its quota counts ${q.nodes.used} nodes, ${q.networks.used} networks and ${q.headnodes.used} headnodes, it has ${held}, ${owned} and ${made}`);
    }
  }
  // Every release powers its node off: once no release's power-off is pending, every free node is off
  // (members power on only their project's nodes; one that lost its node meanwhile is refused at the BMC's turn).
  let states: { status: number; body: any }[] = [];
  for (const end = Date.now() + 10_000; ; await sleep(10)) {
    states = await Promise.all(Object.keys(s.nodes).map((n) => get(`/admin/actors/node/${n}`)));
    if (!states.some((r) => r.body?.state?.releasePowerOff)) break;
    if (Date.now() > end) fail(`a release power-off still pending after 10 s: ${JSON.stringify(states.map((r) => r.body?.state?.releasePowerOff))}`);
  }
  for (const r of states) if (r.body.state.project === null && r.body.mockBmc.power !== 'off') fail(`free node ${r.body.id} is powered on`);
  return s;
}

interface Run { rounds: number; calls: number; kills: number; orders: number; statuses: Record<string, number> }

async function setup(api: Api): Promise<State> {
  const ok = async (p: Promise<Answer>) => {
    const r = await p;
    if (r.status !== 200) throw new Error(`setup: ${r.status} ${JSON.stringify(r.body)}`);
  };
  for (const p of PROJECTS) await ok(api.call('PUT', `/project/${p}`));
  for (const [m, { creds, projects }] of Object.entries(MEMBERS)) {
    await ok(api.call('PUT', `/auth/basic/user/${m}`, ADMIN, { password: creds.password }));
    for (const p of projects) await ok(api.call('POST', `/auth/basic/user/${m}/add_project`, ADMIN, { project: p }));
  }
  await ok(api.call('PUT', `/switch/${SW}`, ADMIN, { ...mockSwitch, password: 'model-switch-pw' }));
  for (const p of PORTS) await ok(api.call('PUT', `/switch/${SW}/port/${p}`));
  let s: State = { nodes: {}, ports: Object.fromEntries(PORTS.map((p) => [p, null])), nets: {}, quotas: Object.fromEntries(PROJECTS.map((p) => [p, { nodes: null, networks: null, headnodes: null }])), doubt: {}, headnodes: {} };
  const apply = async (op: Op) => {
    await ok(send(api, op));
    s = step(s, op, -1).s;
  };
  for (const n of NODES) {
    await apply({ t: 'nodeAdd', n });
    for (const x of NICS) await apply({ t: 'nicAdd', n, nic: x });
  }
  // Four nodes wired, one port each nic; the last nic on the port that fails.
  for (const [i, port] of PORTS.entries()) await apply({ t: 'wire', port, n: NODES[i >> 1], nic: NICS[i & 1] });
  return s;
}

/** One round: its calls at once (the process killed meanwhile when `kill` is given), then the model's check. */
async function round(ctx: { api: Api; model: State; run: Run }, ops: Op[], kill?: () => Promise<void>): Promise<void> {
  const calls: Call[] = ops.map((op) => ({ op }));
  const sent = Promise.all(calls.map(async (c) => {
    try {
      const a = await send(ctx.api, c.op);
      c.status = a.status;
      if (a.status >= 500) throw new Error(`${JSON.stringify(c.op)} → ${a.status} ${JSON.stringify(a.body)}`);
      if (a.status === 202) c.statusId = a.body.status_id;
    } catch (err) {
      if (!kill) throw err;
      // killed: no answer
    }
  }));
  if (kill) await kill();
  await sent;
  const answered = calls.filter((c) => c.statusId);
  const outcomes = kill ? new Map<string, 'DONE' | 'ERROR'>() : await settle(ctx.api, answered.map((c) => c.statusId!));
  return finishRound(ctx, calls, outcomes, !!kill);
}

async function finishRound(ctx: { api: Api; model: State; run: Run }, calls: Call[], outcomes: Map<string, 'DONE' | 'ERROR'>, killed: boolean): Promise<void> {
  if (killed) {
    // After the restart: every operation accepted before the kill ends, answered or not.
    const o = await settle(ctx.api, calls.filter((c) => c.statusId).map((c) => c.statusId!));
    for (const [k, v] of o) outcomes.set(k, v);
  }
  for (const c of calls) if (c.statusId) c.outcome = outcomes.get(c.statusId);
  const observed = await observe(ctx.api);
  const { states, steps } = linearize(ctx.model, calls);
  ctx.run.orders += steps;
  const match = states.get(canon(observed));
  if (!match) {
    throw new Error(`no order of the round's calls explains the answers and the state (seed ${SEED}, round ${ctx.run.rounds}${killed ? ', killed' : ''}):\n`
      + `calls: ${JSON.stringify(calls, null, 1)}\nmodel before: ${canon(ctx.model)}\nobserved: ${canon(observed)}\ncandidates (${states.size}): ${[...states.keys()].slice(0, 3).join('\n')}`);
  }
  ctx.model = match;
  ctx.run.rounds++;
  ctx.run.calls += calls.length;
  for (const c of calls) {
    const k = `${c.op.t} ${c.status ?? 'none'}${c.outcome ? ` ${c.outcome}` : ''}`;
    ctx.run.statuses[k] = (ctx.run.statuses[k] ?? 0) + 1;
  }
}

describe(`model: randomized concurrent calls against an exact model (seed ${SEED})`, function () {
  this.timeout(SOAK ? 0 : 240_000);
  let dir: string;
  let proc: ServerProcess;
  let ctx: { api: Api; model: State; run: Run };
  const env = () => ({
    HILT_DATA_DIR: dir, HILT_ADMIN_USER: ADMIN.user, HILT_ADMIN_PASSWORD: ADMIN.password,
    HILT_MOCK_SWITCH_DELAY_MS: '3', HILT_MOCK_SWITCH_FAIL_PORTS: `${SW}/${FAIL_PORT}`, HILT_VLAN_POOL: '1000-1099',
  });
  const start = () => startServerProcess(env(), { readyTimeoutMs: 30_000, maxOutput: 1_000_000 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hilt-model-'));
    for (const m of Object.values(MEMBERS)) addCredentials(m.creds.user, m.creds.password);
    proc = await start();
    const api = new Api(proc.url);
    const run: Run = { rounds: 0, calls: 0, kills: 0, orders: 0, statuses: {} };
    ctx = { api, model: await setup(api), run };
    console.log(`      model seed ${SEED} (HILT_MODEL_SEED=${SEED} to run this workload again)`);
  });

  after(async () => {
    ctx?.api.close();
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${OPS} calls in rounds of ${ROUND}: every answer and the state agree with one order of each round; the invariants hold; the switches match`, async () => {
    const r = rng(SEED);
    const t0 = Date.now();
    for (let i = 0; i < OPS; i += ROUND) await round(ctx, randomRound(r, ctx.model, Math.min(ROUND, OPS - i)));
    const { run } = ctx;
    console.log(`      ${run.calls} calls in ${run.rounds} rounds, ${((Date.now() - t0) / 1000).toFixed(1)} s, ${run.orders} search steps; 0 violations`);
    console.log(`      answers: ${JSON.stringify(Object.fromEntries(Object.entries(run.statuses).sort()))}`);
    // The workload must have done something of each kind.
    for (const k of ['reserve 200', 'release 200', 'wire 200', 'netCreate 200', 'connect 202 DONE', 'detach 202 DONE', 'connect 202 ERROR', 'leaseSet 200', 'leaseDel 200', 'quota 200',
      'forceDetach 200', 'clearDoubt 409', 'hnCreate 200', 'hnCreate 409', 'hnDelete 200']) {
      expect(run.statuses[k] ?? 0, k).to.be.above(0);
    }
  });

  it(`${KILL_OPS} more calls with ${KILLS} SIGKILLs at random moments and restarts on the same folder: acknowledged calls kept, nothing half-applied, every operation ends`, async () => {
    const r = rng(SEED ^ 0x5eed);
    const rounds = Math.ceil(KILL_OPS / ROUND);
    const killAt = new Set<number>();
    while (killAt.size < Math.min(KILLS, rounds)) killAt.add(1 + r.int(rounds - 1));
    const before = ctx.run.calls;
    for (let i = 0; i < rounds; i++) {
      const ops = randomRound(r, ctx.model, ROUND);
      if (!killAt.has(i)) {
        await round(ctx, ops);
        continue;
      }
      const delay = r.int(25);
      await round(ctx, ops, async () => {
        await sleep(delay);
        proc.child.kill('SIGKILL');
        await proc.exited;
        ctx.run.kills++;
        ctx.api.close();
        proc = await start();
        ctx.api = new Api(proc.url);
      });
    }
    console.log(`      ${ctx.run.calls - before} calls, ${ctx.run.kills} kills; 0 violations`);
    expect(ctx.run.kills).to.equal(Math.min(KILLS, rounds));
  });
});
