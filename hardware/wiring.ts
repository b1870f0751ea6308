/**
 * Wiring validation: is the cable plugged into each port the nic the service wires to it? The
 * switch's own tables say what is there: the MAC addresses it learned on each port and its LLDP
 * neighbours, read in one switch call (`readWiring`, one session) and compared with the wiring
 * the service holds and each nic's `macaddr` (informational, as HIL defines it: only read here).
 *
 * Verdicts, per registered port:
 * - `ok`: the wired nic's MAC was learned on the port, or an LLDP neighbour there names it (its
 *   port id; its chassis id only where no port id names another interface and no other nic's MAC
 *   was learned there); other MACs beside it are normal (a node running VMs);
 * - `mismatch`: another MAC was learned there, the nic's MAC was learned on another port, or an
 *   LLDP neighbour's port id is another nic's MAC (each named), while the nic was not seen here;
 * - `unseen`: nothing learned yet (a port shut while it carries nothing learns nothing);
 * - `unwired`: something was learned on a port that the service wires to no nic.
 * LLDP contradicts only through a port id: a chassis id is often another interface's MAC of the same host.
 *
 * Not an actor and owns no fact: it reads the committed view and calls the switch's sessions
 * (one read-only call per switch, queued like any other, so it shares an open session and
 * changes no port). `proposals` answers the wiring the tables imply for unwired ports; nothing
 * is ever applied by itself.
 */
import { HiltError } from '../actors/errors';
import { nicId } from '../actors/ids';
import type { PortRef, ReadModel } from '../actors/readmodel';
import type { LldpNeighbor, PortWiring, SwitchInfo } from '../drivers/switch/types';
import { normalizeMac } from '../drivers/switch/wiring';
import type { SwitchSessions } from './switch-sessions';
import { wantedState, type InactivePorts } from './port-hardware';

export const VERDICTS = ['ok', 'mismatch', 'unseen', 'unwired'] as const;
export type WiringVerdict = (typeof VERDICTS)[number];

/** A nic as the report names it. */
export interface NicRef { node: string; nic: string; macaddr: string }

export interface WiringPortReport {
  port: string;
  /** the nic the service wires to the port, or null */
  nic: NicRef | null;
  /** MACs the switch learned on the port, `aa:bb:cc:dd:ee:ff`, ascending */
  macs: string[];
  lldp: LldpNeighbor[];
  verdict: WiringVerdict;
  /** what was seen where, in words (mismatch, unwired), or why nothing could be (unseen) */
  details?: string[];
}

export interface WiringReport {
  switch: string;
  ports: WiringPortReport[];
  /** how many ports have each verdict (zeros included) */
  summary: Record<WiringVerdict, number>;
}

/** One switch in the check of every switch. */
export interface SwitchWiring {
  switch: string;
  /** `checked`; `unsupported` (its driver cannot read these tables); `failed` (unreachable…: `error`) */
  status: 'checked' | 'unsupported' | 'failed';
  summary?: Record<WiringVerdict, number>;
  /** its ports whose verdict is mismatch or unwired */
  problems?: WiringPortReport[];
  error?: string;
}

export interface AllWiring {
  /** verdicts over every switch checked, and how many switches were not */
  summary: Record<WiringVerdict, number> & { switches: number; unsupported: number; failed: number };
  switches: SwitchWiring[];
}

/** A wiring the tables imply for an unwired port. */
export interface Proposal {
  port: string;
  node: string;
  nic: string;
  macaddr: string;
  /** how it was seen: `mac` (learned on the port), `lldp` (an LLDP neighbour's id) */
  evidence: Array<'mac' | 'lldp'>;
  /** where the service wires that nic now (it must be detached there first), or null */
  nic_wired_to: PortRef | null;
  /** the call that applies it */
  apply: string;
}

export interface Proposals {
  switch: string;
  proposals: Proposal[];
  /** unwired ports whose MACs belong to no nic */
  unknown: Array<{ port: string; macs: string[] }>;
  /** unwired ports whose MACs belong to several nics (a port facing another switch, a hypervisor…) */
  ambiguous: Array<{ port: string; nics: NicRef[] }>;
}

export interface WiringDeps {
  rm: ReadModel;
  sessions: Pick<SwitchSessions, 'submit'>;
  switchInfo(name: string): SwitchInfo | undefined;
  inactivePorts?: InactivePorts;
  /** switches read at once by checkAll (HILT_WIRING_CONCURRENCY) */
  concurrency?: number;
}

/** The switch's driver has no readWiring. */
class Unsupported extends HiltError {}

/** Why a port without networks may have learned nothing. */
export const SHUT_NOTE = 'the port carries no network: the service wants it shut (HILT_INACTIVE_PORTS=shutdown), and a shut port learns nothing';

const zero = (): Record<WiringVerdict, number> => ({ ok: 0, mismatch: 0, unseen: 0, unwired: 0 });

/** MACs of an LLDP neighbour (its chassis and port ids, where they are MACs). */
function lldpMacs(lldp: LldpNeighbor[]): string[] {
  return lldp.flatMap((n) => [normalizeMac(n.chassisId), normalizeMac(n.portId)]).filter((m): m is string => m !== null);
}

export class WiringCheck {
  /** each switch's verdict counts at its last check (metrics) */
  readonly last = new Map<string, Record<WiringVerdict, number>>();

  constructor(private readonly deps: WiringDeps) {}

  /** Every nic by its MAC (normalized; a macaddr that is no MAC is left out). */
  private nicsByMac(): Map<string, NicRef[]> {
    const out = new Map<string, NicRef[]>();
    for (const n of this.deps.rm.nics.values()) {
      const mac = normalizeMac(n.macaddr);
      if (!mac) continue;
      const list = out.get(mac) ?? [];
      list.push({ node: n.node, nic: n.name, macaddr: n.macaddr });
      out.set(mac, list);
    }
    return out;
  }

  /** The switch's tables for its registered ports, in one switch call. */
  private async tables(name: string): Promise<{ sw: SwitchInfo; tables: Map<string, PortWiring> }> {
    const sw = this.deps.switchInfo(name);
    if (!sw) throw new HiltError('NotFoundError', `switch ${name} does not exist`);
    const ports = this.deps.rm.portsOf(name).map((p) => p.name);
    let tables: Map<string, PortWiring> | undefined;
    try {
      await this.deps.sessions.submit(sw, async (s) => {
        if (s.readWiring) tables = await s.readWiring(ports);
      }, { what: 'reading its MAC table and LLDP neighbours' });
    } catch (err) {
      const why = (err as Error).message;
      const own = `switch ${name}: `;
      throw new HiltError('SwitchError', `switch ${name} cannot be read: ${why.startsWith(own) ? why.slice(own.length) : why}`);
    }
    if (!tables) throw new Unsupported('IllegalStateError', `switch ${name}: its driver (${sw.type}) cannot read the switch's learned MACs and LLDP neighbours`);
    return { sw, tables };
  }

  /** `GET /admin/switch/<s>/wiring`: the verdict of every registered port. */
  async check(name: string): Promise<WiringReport> {
    const { tables } = await this.tables(name);
    const report = this.report(name, tables);
    this.last.set(name, report.summary);
    return report;
  }

  /** The verdicts from the switch's tables (see the header). */
  report(name: string, tables: Map<string, PortWiring>): WiringReport {
    const { rm } = this.deps;
    const byMac = this.nicsByMac();
    // Where each MAC was learned on this switch, registered or not.
    const seenOn = new Map<string, string[]>();
    for (const [port, w] of tables) for (const m of w.macs) seenOn.set(m, [...(seenOn.get(m) ?? []), port]);
    const whose = (mac: string) => {
      const nics = byMac.get(mac) ?? [];
      return nics.length ? nics.map((n) => `nic ${n.nic} of node ${n.node}`).join(' or ') : 'no nic the service knows';
    };
    const ports: WiringPortReport[] = [];
    for (const p of rm.portsOf(name)) {
      const w = tables.get(p.name) ?? { macs: [], lldp: [] };
      const state = p.wire && rm.nic(p.wire.node, p.wire.nic);
      const nic: NicRef | null = p.wire ? { node: p.wire.node, nic: p.wire.nic, macaddr: state ? state.macaddr : '' } : null;
      const line: WiringPortReport = { port: p.name, nic, macs: [...w.macs], lldp: w.lldp, verdict: 'unseen' };
      const details: string[] = [];
      const traffic = w.macs.length > 0 || w.lldp.length > 0;
      if (nic) {
        const mac = normalizeMac(nic.macaddr);
        if (!mac) details.push(`the nic's macaddr "${nic.macaddr}" is not a MAC address: it cannot be looked for`);
        // An LLDP port id that is a MAC names the interface in the port; a chassis id only the
        // host (often another of its interfaces' MAC): it confirms the nic only where no port id
        // names another interface and no other nic's MAC was learned here.
        const portIds = w.lldp.map((n) => normalizeMac(n.portId)).filter((m): m is string => m !== null);
        const byChassis = !!mac && w.lldp.some((n) => normalizeMac(n.portId) === null && normalizeMac(n.chassisId) === mac)
          && !w.macs.some((m) => m !== mac && byMac.has(m));
        if (mac && (w.macs.includes(mac) || portIds.includes(mac) || byChassis)) line.verdict = 'ok';
        else {
          const elsewhere = mac ? (seenOn.get(mac) ?? []).filter((q) => q !== p.name) : [];
          for (const q of elsewhere) details.push(`the nic's MAC ${mac} was learned on port ${q}`);
          for (const m of w.macs) details.push(`MAC ${m} learned here belongs to ${whose(m)}`);
          const foreign = portIds.filter((m) => m !== mac && byMac.has(m));
          for (const m of foreign) details.push(`the LLDP neighbour here has port id ${m}, the MAC of ${whose(m)}`);
          if (w.macs.length || elsewhere.length || foreign.length) line.verdict = 'mismatch';
        }
      } else if (traffic) {
        line.verdict = 'unwired';
        for (const m of w.macs) details.push(`MAC ${m} learned here belongs to ${whose(m)}`);
      }
      if (line.verdict === 'unseen' && !traffic && wantedState(p.config, this.deps.inactivePorts ?? 'shutdown') === false) {
        details.push(SHUT_NOTE);
      }
      if (details.length) line.details = details;
      ports.push(line);
    }
    const summary = zero();
    for (const l of ports) summary[l.verdict]++;
    return { switch: name, ports, summary };
  }

  /** `GET /admin/wiring`: every switch, at most `concurrency` at once; each a session of its own. */
  async checkAll(): Promise<AllWiring> {
    const names = [...this.deps.rm.switches.keys()].sort();
    const slots: (SwitchWiring | undefined)[] = new Array(names.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < names.length; i = next++) slots[i] = await this.one(names[i]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.deps.concurrency ?? 8, names.length) }, worker));
    // A switch deleted while the others were read has no entry: it is left out of the sums too.
    const results = slots.filter((r): r is SwitchWiring => r !== undefined);
    const summary = { ...zero(), switches: 0, unsupported: 0, failed: 0 };
    for (const r of results) {
      if (r.status !== 'checked') summary[r.status]++;
      else {
        summary.switches++;
        for (const v of VERDICTS) summary[v] += r.summary![v];
      }
    }
    return { summary, switches: results };
  }

  /** One switch's line of `checkAll`; undefined for a switch deleted meanwhile. */
  private async one(name: string): Promise<SwitchWiring | undefined> {
    try {
      const r = await this.check(name);
      return { switch: name, status: 'checked', summary: r.summary, problems: r.ports.filter((p) => p.verdict === 'mismatch' || p.verdict === 'unwired') };
    } catch (err) {
      if (err instanceof Unsupported) return { switch: name, status: 'unsupported', error: err.message };
      // A switch deleted meanwhile is left out.
      if (err instanceof HiltError && err.type === 'NotFoundError') return undefined;
      return { switch: name, status: 'failed', error: (err as Error).message };
    }
  }

  /** `POST /admin/switch/<s>/wiring/propose`: the wiring the tables imply for the switch's unwired ports. */
  async propose(name: string): Promise<Proposals> {
    const { tables } = await this.tables(name);
    const report = this.report(name, tables);
    this.last.set(name, report.summary);
    const byMac = this.nicsByMac();
    const out: Proposals = { switch: name, proposals: [], unknown: [], ambiguous: [] };
    for (const line of report.ports) {
      if (line.verdict !== 'unwired') continue;
      const evidence = new Map<string, { nic: NicRef; how: Set<'mac' | 'lldp'> }>();
      const add = (mac: string, how: 'mac' | 'lldp') => {
        for (const nic of byMac.get(mac) ?? []) {
          const k = nicId(nic.node, nic.nic);
          const e = evidence.get(k) ?? { nic, how: new Set<'mac' | 'lldp'>() };
          e.how.add(how);
          evidence.set(k, e);
        }
      };
      for (const m of line.macs) add(m, 'mac');
      for (const m of lldpMacs(line.lldp)) add(m, 'lldp');
      const found = [...evidence.values()];
      if (found.length === 0) out.unknown.push({ port: line.port, macs: line.macs });
      else if (found.length > 1) out.ambiguous.push({ port: line.port, nics: found.map((f) => f.nic) });
      else {
        const { nic, how } = found[0]!;
        out.proposals.push({
          port: line.port, node: nic.node, nic: nic.nic, macaddr: nic.macaddr,
          evidence: (['mac', 'lldp'] as const).filter((h) => how.has(h)),
          nic_wired_to: this.deps.rm.wiring.get(nic.node, nic.nic) ?? null,
          apply: `POST /switch/${encodeURIComponent(name)}/port/${line.port}/connect_nic {"node": ${JSON.stringify(nic.node)}, "nic": ${JSON.stringify(nic.nic)}}`,
        });
      }
    }
    return out;
  }
}
