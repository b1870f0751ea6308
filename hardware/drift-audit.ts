/**
 * The drift audit of a switch (`GET /admin/switch/<s>/drift`) and its repair (`POST …/repair`):
 * every registered port of the switch is read back and compared with the configuration the
 * service holds for it (a rebooted switch that lost its unsaved configuration, a change made by
 * hand); the repair sets each drifted port back to that configuration.
 *
 * Not an actor (it owns no fact), a runner like NetworkOperations: it asks each port actor
 * (`port.check`), since the port actor is the only caller of hardware for its port
 * (hardware/port-hardware.ts reads and repairs it in one switch call, and leaves alone a port
 * whose configuration is about to change). All the calls belong to one batch of the switch's
 * sessions (SwitchSessions.batch): one login for the whole audit, shared with any operation
 * queued meanwhile. The batch logs in first, so that a switch that cannot be reached is one
 * answer (a 502 SwitchError with the reason) rather than one per port; a switch lost half-way
 * leaves its remaining ports `unreadable` (or `failed`) with the reason, without a login each.
 * Each switch call (the login, each port's read-back or repair) is bounded by
 * HILT_SWITCH_TIMEOUT_MS. Under HILT_INACTIVE_PORTS=shutdown each port's administrative state is
 * compared too (where its driver reads one): a port up while it carries nothing is drifted, and
 * a repair shuts it.
 */
import type { SwitchInfo } from '../drivers/switch/types';
import { formatVlanList } from '../drivers/switch/vlans';
import { HiltError } from '../actors/errors';
import { portId } from '../actors/ids';
import type { ReadModel } from '../actors/readmodel';
import type { Asker } from '../actors/runtime';
import type { PortCheck, PortCommand, PortExpected, PortFound, PortReplies, Wire } from '../actors/port/protocol';
import type { SwitchSessions } from './switch-sessions';

export interface SwitchAuditDeps {
  rm: ReadModel;
  ports: Asker<PortCommand, PortReplies>;
  sessions: Pick<SwitchSessions, 'batch' | 'endBatch' | 'submit'>;
  switchInfo(name: string): SwitchInfo | undefined;
}

/** One port's line in the report. */
export interface PortReport extends PortCheck {
  port: string;
  /** the nic wired to the port, or null */
  nic: Wire | null;
  /** what differs, in words, whenever both sides are known and differ */
  differences?: string[];
}

export interface DriftReport {
  switch: string;
  ports: PortReport[];
  /** how many ports have each status (every status of the call, zeros included) */
  summary: Record<string, number>;
}

const AUDIT_STATUSES = ['in_sync', 'drifted', 'pending', 'unreadable'] as const;
const REPAIR_STATUSES = ['in_sync', 'repaired', 'pending', 'failed'] as const;

/** What differs between the configuration held and the switch's, in words (VLAN lists as ranges); empty when nothing does. */
export function differences(expected: PortExpected, actual: PortFound): string[] {
  const out: string[] = [];
  if (expected.native !== actual.native) {
    out.push(`native VLAN: the service holds ${expected.native ?? 'none'}, the switch has ${actual.native ?? 'none'}`);
  }
  const missing = expected.tagged.filter((v) => !actual.tagged.includes(v));
  const extra = actual.tagged.filter((v) => !expected.tagged.includes(v));
  if (missing.length) out.push(`tagged VLANs the switch lacks: ${formatVlanList(missing)}`);
  if (extra.length) out.push(`tagged VLANs the service does not hold: ${formatVlanList(extra)}`);
  for (const o of actual.other ?? []) out.push(`the switch has: ${o}`);
  if (expected.enabled !== undefined && actual.enabled !== undefined && expected.enabled !== actual.enabled) {
    out.push(expected.enabled
      ? 'the port is shut down, while it carries networks of the service'
      : 'the port is up while it carries none of the service\'s networks (HILT_INACTIVE_PORTS=shutdown: a repair shuts it)');
  }
  return out;
}

export class SwitchAudit {
  constructor(private readonly deps: SwitchAuditDeps) {}

  /** Audit (or, with `repair`, repair) every registered port of switch `name`. */
  async run(name: string, opts: { repair: boolean; by: string }): Promise<DriftReport> {
    const { rm, sessions } = this.deps;
    const sw = this.deps.switchInfo(name);
    if (!sw) throw new HiltError('NotFoundError', `switch ${name} does not exist`);
    const statuses = opts.repair ? REPAIR_STATUSES : AUDIT_STATUSES;
    const ports = rm.portsOf(name);
    const reports: PortReport[] = [];
    if (ports.length) {
      const batch = sessions.batch(name);
      try {
        try {
          await sessions.submit(sw, async () => undefined, { batch: batch.id, what: 'logging in' });
        } catch (err) {
          const why = (err as Error).message;
          const own = `switch ${name}: `;
          throw new HiltError('SwitchError', `switch ${name} cannot be reached: ${why.startsWith(own) ? why.slice(own.length) : why}`);
        }
        const unread = opts.repair ? 'failed' : 'unreadable';
        const checks = await Promise.all(ports.map((p) => this.deps.ports.ask(
          portId(name, p.name),
          { type: 'port.check', by: opts.by, repair: opts.repair, batch: batch.id },
          { hardware: true },
        ).then(
          (check): PortReport => ({ port: p.name, nic: p.wire, ...check }),
          // A port deleted meanwhile is left out; any other refusal is that port's answer.
          (err: Error): PortReport | null => (err instanceof HiltError && err.type === 'NotFoundError' ? null
            : { port: p.name, nic: p.wire, status: unread, expected: p.config, actual: null, error: err.message }),
        )));
        for (const r of checks) if (r) reports.push(r);
      } finally {
        sessions.endBatch(batch);
      }
    }
    for (const r of reports) {
      if (r.actual && r.status !== 'in_sync') {
        const d = differences(r.expected, r.actual);
        if (d.length) r.differences = d;
      }
    }
    const summary: Record<string, number> = Object.fromEntries(statuses.map((s) => [s, 0]));
    for (const r of reports) summary[r.status] = (summary[r.status] ?? 0) + 1;
    return { switch: name, ports: reports, summary };
  }
}
