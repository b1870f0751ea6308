/**
 * What the dashboard shows, from the read models (committed state only, docs/actors.md rule 5):
 * tables that are filtered, sorted and paged here, so that a page of 10,000 nodes costs the
 * browser one page of rows; a summary it polls; a node's detail. What a caller sees follows the
 * API's rules: an admin sees everything; a project member sees only its projects (their nodes,
 * the networks they may use with only their own attachments, their headnodes and operations),
 * and neither switches, wiring, the service's health nor the audit log.
 */
import type { Lifecycle } from '../lifecycle';
import type { RouteWorld } from '../../actors/world';
import type { Caller } from '../auth/basic';
import type { NetworkAction } from '../../actors/nic/protocol';
import type { NodeState } from '../../actors/node/protocol';
import { ownerProject } from '../../actors/network/protocol';
import { NATIVE } from '../../actors/nic/protocol';
import { portId } from '../../actors/ids';
import { operationType } from '../../hardware/network-operations';
import { driverName } from '../../actors/telemetry';
import { SWITCH_DRIVERS } from '../../drivers/switch';
import { encodeStatusId } from '../../actors/nic/status-ids';
import { pendingPerSwitch, type Metrics } from '../metrics';
import type { PowerControl } from '../../hardware/power';
import type { HeadnodeControl } from '../../hardware/headnode-control';
import { lastOperation, powerOf, switchHealth } from '../routes/lists';
import { errorFor, operationsOf, readsOperation } from '../routes/operation-access';

export type Cell = string | number | boolean | null;
export type Row = Record<string, Cell>;

export interface TableQuery {
  offset: number;
  limit: number;
  /** a column key */
  sort?: string;
  dir: 'asc' | 'desc';
  /** words that every row shown contains (in any column), case-insensitive */
  q?: string;
  /** column key → exact value */
  filters: Record<string, string>;
}

export interface TablePage {
  total: number;
  offset: number;
  rows: Row[];
}

export const TABLE_LIMIT_MAX = 200;

/** What a caller may see. */
class Scope {
  readonly all: boolean;
  private readonly projects: ReadonlySet<string>;
  constructor(caller: Caller) {
    this.all = caller.isAdmin;
    this.projects = new Set(caller.projects);
  }
  project(p: string | null | undefined): boolean {
    return this.all || (!!p && this.projects.has(p));
  }
  get visibleProjects(): string[] {
    return [...this.projects];
  }
}

const channelName = (c: string) => (c === NATIVE ? 'native' : c.replace(/^vlan\//, 'tagged '));
const compare = (a: Cell, b: Cell): number => {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), 'en', { numeric: true });
};

/** Filter, sort and page rows. */
export function page(rows: Row[], q: TableQuery): TablePage {
  const words = (q.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const filters = Object.entries(q.filters);
  let out = rows;
  if (words.length || filters.length) {
    out = rows.filter((r) => {
      for (const [k, v] of filters) if (String(r[k] ?? '') !== v) return false;
      if (!words.length) return true;
      const text = Object.values(r).map((v) => (v === null ? '' : String(v))).join('\u0000').toLowerCase();
      return words.every((w) => text.includes(w));
    });
  }
  if (q.sort) {
    const k = q.sort;
    const sign = q.dir === 'desc' ? -1 : 1;
    out = [...out].sort((a, b) => sign * compare(a[k], b[k]));
  }
  return { total: out.length, offset: q.offset, rows: out.slice(q.offset, q.offset + q.limit) };
}

export interface ViewDeps {
  world: RouteWorld;
  metrics: Metrics;
  power: PowerControl;
  headnodes: HeadnodeControl;
  startedAt: number;
  version: string;
  /** the tenant lifecycle (nodes that need attention); absent: none listed */
  lifecycle?: Lifecycle;
  /** how many VLAN ids the dynamic pool has (HILT_VLAN_POOL) */
  vlanPoolSize?: number;
}

export class Views {
  constructor(private readonly d: ViewDeps) {}

  private get rm() {
    return this.d.world.rm;
  }

  /** Commits per kind since the start: the dashboard refetches a table when its kinds moved. */
  versions(): Record<string, number> {
    const rt = this.d.world.runtime;
    return Object.fromEntries(rt.kindNames().map((k) => [k, rt.registry(k)!.commits]));
  }

  summary(caller: Caller) {
    const rm = this.rm;
    const s = new Scope(caller);
    let inUse = 0;
    const perProject: { project: string; nodes: number }[] = [];
    for (const p of rm.projects.keys()) {
      if (!s.project(p)) continue;
      const n = rm.nodesByProject.get(p).size;
      inUse += n;
      perProject.push({ project: p, nodes: n });
    }
    perProject.sort((a, b) => b.nodes - a.nodes || compare(a.project, b.project));
    let pending = 0;
    for (const node of rm.pendingByNode.keys()) if (s.project(rm.nodes.get(node)?.project)) pending += rm.pendingByNode.get(node).size;
    const dayAgo = Date.now() - 24 * 3600_000;
    // The failures the Operations view lists: none of a project that held the node before.
    const failures = rm.recentOperations.newest().filter((a) => {
      const node = rm.nodes.get(a.node);
      return a.status === 'ERROR' && (a.finishedAt ?? 0) >= dayAgo && !!node && s.project(node.project) && readsOperation(caller, node, a);
    }).length;
    return {
      user: caller.user,
      versions: this.versions(),
      // A member sees its projects' nodes and the free ones (show_node's rule), as its table lists them.
      inventory: { nodes: s.all ? rm.nodes.size : inUse + rm.freeNodes.size, free: rm.freeNodes.size, inUse, projects: perProject.length, perProject: perProject.slice(0, 50) },
      operations: { pending, failuresLastDay: failures },
      vlans: { used: rm.pooledVlans.size, size: this.d.vlanPoolSize ?? 0 },
      headnodes: [...rm.headnodes.values()].filter((h) => s.project(h.project)).length,
      networks: this.networkStates(s).length,
      ...(s.all ? { health: this.health() } : {}),
    };
  }

  /** The service's health (admins): live actors and mailboxes, pending operations, queues, request rates, storage. */
  health() {
    const { world, metrics, power, headnodes } = this.d;
    const rt = world.runtime;
    const actors = rt.kindNames().map((kind) => ({ kind, ...rt.registry(kind)!.load() }));
    const pending = [...pendingPerSwitch(world.rm)].filter(([, n]) => n > 0).map(([sw, n]) => ({ switch: sw, pending: n }));
    return {
      version: this.d.version,
      uptimeSeconds: Math.round((Date.now() - this.d.startedAt) / 1000),
      actors,
      pendingOperations: pending,
      deviceQueues: { switch: world.sessions.size(), obm: power.size(), headnode: headnodes.size() },
      requests: metrics.rates(),
      memoryBytes: process.memoryUsage().rss,
    };
  }

  private networkStates(s: Scope) {
    const rm = this.rm;
    return [...rm.networks.values()].filter((n) => s.all || n.access.length === 0 || s.project(ownerProject(n)) || n.access.some((p) => s.project(p)));
  }

  nodes(caller: Caller): Row[] {
    const rm = this.rm;
    const s = new Scope(caller);
    const rows: Row[] = [];
    // show_node's rule: a free node is anyone's to see (and to reserve), an assigned one its project's.
    const source = s.all ? rm.nodes.values() : [...s.visibleProjects.flatMap((p) => [...rm.nodesByProject.get(p)].map((n) => rm.nodes.get(n)!)), ...[...rm.freeNodes].map((n) => rm.nodes.get(n)!)];
    for (const node of source) {
      const nics = rm.nicsOf(node.name);
      const networks = new Set<string>();
      let pending = 0;
      for (const nic of nics) {
        for (const w of Object.values(nic.networks)) networks.add(w);
        if (nic.pending) pending++;
      }
      rows.push({
        name: node.name,
        project: node.project,
        state: node.project ? 'in use' : 'free',
        nics: nics.length,
        networks: [...networks].sort().join(', '),
        pending,
        ...this.nodeState(node, caller),
        ...(s.all ? { obm: driverName(node.obm.type) } : {}),
        metadata: node.metadata ? Object.entries(node.metadata).map(([k, v]) => `${k}=${String(v)}`).join(', ') : '',
        // The lease's end (ISO 8601; the page shows the time left), or `passed` while its node is released.
        lease: node.lease ? (node.lease.expired ? 'passed' : new Date(node.lease.expiresAt).toISOString()) : '',
      });
    }
    return rows;
  }

  /** What a node's row shows first (issue 26): its power as last seen and its last operation, a failure with its reason. */
  private nodeState(node: NodeState, caller: Caller): Row {
    const power = powerOf(this.d.power, node);
    const last = lastOperation(node, this.rm.nicsOf(node.name), caller);
    return {
      power: power.state, power_at: power.at, power_error: power.error ?? null,
      last_status: last?.status ?? null, last_op: last ? `${last.type === 'modify_port' ? (last.network ? 'connect' : 'detach') : last.type.replace('_port', '')} ${last.nic}${last.network ? ` ${last.network}` : ''}` : null,
      last_error: last?.error ?? null, last_at: last ? last.finished_at ?? last.accepted_at : null,
    };
  }

  /** A project's members (the project's own members see them too). */
  members(caller: Caller): Row[] {
    const s = new Scope(caller);
    const rows: Row[] = [];
    for (const p of this.rm.projects.keys()) {
      if (!s.project(p)) continue;
      for (const user of this.rm.membersByProject.get(p)) rows.push({ project: p, user, admin: !!this.rm.users.get(user)?.isAdmin });
    }
    return rows;
  }

  /** The maintenance pool (admins): every node in it and its notice (docs/lifecycle.md). */
  maintenance(): Row[] {
    const iso = (ms?: number) => (ms === undefined ? '' : new Date(ms).toISOString());
    return [...this.rm.maintenanceNotices].map(([node, n]) => ({
      node, from: n.from, since: iso(n.since), notice: n.deliveredAt !== undefined ? 'taken' : 'pending', attempts: n.attempts, error: n.lastError ?? '',
    }));
  }

  /** Nodes that need an operator (admins), one row per problem. */
  attention(): Row[] {
    return (this.d.lifecycle?.attention() ?? []).map((a) => ({ ...a }));
  }

  projects(caller: Caller): Row[] {
    const rm = this.rm;
    const s = new Scope(caller);
    return [...rm.projects.keys()].filter((p) => s.project(p)).map((p) => ({
      name: p,
      nodes: rm.nodesByProject.get(p).size,
      networks: [...new Set([...rm.networksByOwner.get(p), ...rm.networksByAccess.get(p)])].sort().join(', '),
      members: rm.membersByProject.get(p).size,
      headnodes: rm.headnodesByProject.get(p).size,
      pending: [...rm.nodesByProject.get(p)].reduce((n, node) => n + rm.pendingByNode.get(node).size, 0),
      // A failure of the project's own: not one of the project that held the node before.
      failures: [...rm.nodesByProject.get(p)].filter((node) => rm.nicsOf(node).some((x) => {
        const last = x.actions.at(-1);
        return last?.status === 'ERROR' && (last.project === undefined || last.project === p);
      })).length,
    }));
  }

  /** With `usableBy`: only the networks that project may use (owned, granted or public). */
  networks(caller: Caller, usableBy?: string): Row[] {
    const rm = this.rm;
    const s = new Scope(caller);
    const states = this.networkStates(s).filter((n) => usableBy === undefined || n.access.length === 0 || ownerProject(n) === usableBy || n.access.includes(usableBy));
    return states.map((n) => {
      const attached = rm.attachmentsOf(n.name).filter((a) => s.project(a.project));
      const shown = attached.slice(0, 20).map((a) => `${a.node}/${a.nic} (${channelName(a.channel)})`).sort();
      return {
        name: n.name,
        owner: n.owner,
        access: n.access.length ? n.access.join(', ') : 'public',
        vlan: n.vlan,
        allocation: n.dynamic ? 'pool' : 'chosen',
        attachments: attached.length + rm.hnicProjectsOn(n.name).filter((p) => s.project(p)).length,
        attached: shown.join(', ') + (attached.length > shown.length ? `, … ${attached.length - shown.length} more` : ''),
      };
    });
  }

  switches(): Row[] {
    const rm = this.rm;
    const pending = pendingPerSwitch(this.d.world.rm);
    return [...rm.switches.values()].map((sw) => {
      const ports = rm.portsOf(sw.name);
      return {
        name: sw.name,
        type: driverName(sw.type),
        family: SWITCH_DRIVERS.find((e) => e.type === sw.type)?.family ?? '',
        ports: ports.length,
        wired: ports.filter((p) => p.wire).length,
        pending: pending.get(sw.name) ?? 0,
        queued: this.d.world.sessions.depth(sw.name),
        ...(({ failingPorts: _ports, ...h }) => h)(switchHealth(rm, this.d.world.sessions.health, sw.name, ports)),
        tls: transport(sw.fields),
      };
    });
  }

  ports(): Row[] {
    const rm = this.rm;
    const rows: Row[] = [];
    for (const sw of rm.switches.keys()) {
      const ports = rm.portsOf(sw);
      const failing = switchHealth(rm, this.d.world.sessions.health, sw, ports).failingPorts;
      for (const p of ports) {
        rows.push({
          status: failing[p.name] ? 'failing' : p.wire ? 'ok' : 'free',
          problem: failing[p.name] ?? null,
          switch: sw,
          port: p.name,
          node: p.wire?.node ?? null,
          nic: p.wire?.nic ?? null,
          native: p.config.native,
          tagged: p.config.tagged.join(', '),
        });
      }
    }
    return rows;
  }

  /** `wiring`: the switch and port too (admins: wiring is for operators only, as in the API's statuses). */
  private operationRow(node: string, a: NetworkAction, wiring: boolean): Row {
    const rm = this.rm;
    const n = rm.nodes.get(node);
    const nic = rm.nic(node, a.nic);
    return {
      status: a.status,
      node,
      nic: a.nic,
      seq: a.seq,
      type: operationType(a),
      network: a.newNetwork ?? a.oldNetwork ?? null,
      channel: a.channel ? channelName(a.channel) : null,
      ...(wiring ? { switch: a.switch, port: a.port } : {}),
      accepted: new Date(a.acceptedAt).toISOString(),
      finished: a.finishedAt !== undefined ? new Date(a.finishedAt).toISOString() : null,
      error: errorFor({ isAdmin: wiring }, a.error) ?? null,
      status_id: n && nic ? encodeStatusId(n, { nic: a.nic, incarnation: nic.incarnation, seq: a.seq }, !!a.firstFormat) : null,
    };
  }

  /** Operations in flight, then the newest finished ones (outcomes and failures with their reasons). */
  operations(caller: Caller): Row[] {
    const rm = this.rm;
    const s = new Scope(caller);
    const rows: Row[] = [];
    for (const node of rm.pendingByNode.keys()) {
      if (!s.project(rm.nodes.get(node)?.project)) continue;
      for (const nic of rm.pendingByNode.get(node)) {
        const p = rm.nic(node, nic)?.pending;
        if (p && readsOperation(caller, rm.nodes.get(node)!, p)) rows.push(this.operationRow(node, p, s.all));
      }
    }
    rows.sort((a, b) => compare(b.accepted, a.accepted));
    for (const a of rm.recentOperations.newest()) {
      const node = rm.nodes.get(a.node);
      if (node && s.project(node.project) && readsOperation(caller, node, a)) rows.push(this.operationRow(a.node, a, s.all));
    }
    return rows;
  }

  headnodes(caller: Caller): Row[] {
    const s = new Scope(caller);
    return [...this.rm.headnodes.values()].filter((h) => s.project(h.project)).map((h) => ({
      name: h.name,
      project: h.project,
      status: h.status,
      vncport: h.vncport,
      image: h.baseImg,
      hnics: h.hnics.map((x) => `${x.name}: ${x.network ?? '—'}`).join(', '),
      error: h.error,
    }));
  }

  /** One node: its nics (wiring for admins), networks, pending and recent operations. Undefined: not there, or not the caller's. */
  node(caller: Caller, name: string) {
    const rm = this.rm;
    const s = new Scope(caller);
    const node = rm.nodes.get(name);
    if (!node || (!s.all && node.project !== null && !s.project(node.project))) return undefined;
    const nics = rm.nicsOf(name);
    const reads = operationsOf(caller, node);
    const operations = nics.flatMap((nic) => nic.actions).filter(reads).sort((a, b) => b.acceptedAt - a.acceptedAt || b.seq - a.seq).map((a) => this.operationRow(name, a, s.all));
    return {
      name,
      project: node.project,
      ...(s.all ? { obm: driverName(node.obm.type) } : {}),
      metadata: node.metadata ?? {},
      ...this.nodeState(node, caller),
      nics: nics.map((nic) => {
        const port = s.all ? rm.wiring.get(name, nic.name) : undefined;
        return {
          name: nic.name,
          macaddr: nic.macaddr,
          ...(s.all ? { switch: port?.switch ?? null, port: port?.port ?? null, portConfig: port ? rm.ports.get(portId(port.switch, port.port))?.config ?? null : null } : {}),
          // Whether a network can be connected at all: a member learns that it is wired, not where.
          wired: rm.wiring.has(name, nic.name),
          channels: Object.keys(nic.networks),
          networks: Object.entries(nic.networks).map(([channel, network]) => ({ channel: channelName(channel), network })),
          pending: nic.pending && reads(nic.pending) ? this.operationRow(name, nic.pending, s.all) : null,
          // The nic's state: its last finished operation, a failure with its reason.
          last: (() => {
            const a = [...nic.actions].reverse().find((x) => x.status !== 'PENDING' && reads(x));
            return a ? this.operationRow(name, a, s.all) : null;
          })(),
        };
      }),
      operations,
    };
  }
}

/**
 * How a switch reached over HTTP(S) (the REST families) is reached, for the dashboard: `verified`,
 * `verified (ca_cert)`, `not verified` (verify_tls false) or `none (http)`; '' for the others.
 * Read from the registration's hostname and TLS fields, never its credentials.
 */
export function transport(fields: Record<string, unknown>): string {
  const host = typeof fields.hostname === 'string' ? fields.hostname : '';
  if (/^http:\/\//i.test(host)) return 'none (http)';
  if (!/^https:\/\//i.test(host)) return '';
  if (fields.verify_tls === false) return 'not verified';
  return typeof fields.ca_cert === 'string' ? 'verified (ca_cert)' : 'verified';
}
