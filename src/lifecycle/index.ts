/**
 * The tenant lifecycle (docs/lifecycle.md): what happens to a node between two tenants. The
 * facts are the actors' (a node's lease, its release power-off and its maintenance notice; a
 * project's quota); the runners here act on them outside every mailbox, each watching node
 * commits through the world: the release power-off and release hooks (release.ts), the
 * maintenance pool's notices (maintenance.ts) and the expiry of leases (leases.ts). One
 * activation makes one Lifecycle; its start resumes what storage holds as pending.
 */
import type { World } from '../../actors/world';
import type { Config } from '../config';
import type { PowerControl } from '../../hardware/power';
import { ReleaseRunner } from './release';
import { MaintenanceDeliveries } from './maintenance';
import { LeaseExpiry } from './leases';
import { LifecycleLog, LifecycleTelemetry, NO_LIFECYCLE_TELEMETRY, NO_LOG } from './common';

export { SYSTEM_USER } from './common';
export type { LifecycleTelemetry } from './common';
export type { ReleaseHook } from './release';

/** One reason a node needs an operator (GET /admin/nodes/attention). */
export interface Attention {
  /** null: a port in doubt (or owing a set-back) wired to no nic now (its nic was deleted: the doubt stays with the port) */
  node: string | null;
  /**
   * release_power_off: the release's power-off failed; maintenance_notice: POSTs to the
   * maintenance service fail; lease_expiry: an expiry is held up; port_in_doubt: the switch port
   * of one of its nics may carry VLANs beyond its configuration (hardware/port-hardware.ts);
   * port_set_back_owed: an admin cleared that doubt by hand, the port's set-back not confirmed yet
   */
  problem: 'release_power_off' | 'maintenance_notice' | 'lease_expiry' | 'port_in_doubt' | 'port_set_back_owed';
  /** since when (ISO 8601) */
  since: string;
  detail: string;
  /** port_in_doubt, port_set_back_owed: the port */
  switch?: string;
  port?: string;
}

export interface LifecycleOptions {
  config: Pick<Config, 'maintenanceProject' | 'maintenanceUrl' | 'maintenanceSecret' | 'maintenanceTimeoutMs'>;
  power: PowerControl;
  telemetry?: LifecycleTelemetry;
  log?: LifecycleLog;
  /** false once this process may no longer act (a standby pair's lease) */
  mayAct?: () => boolean;
}

export class Lifecycle {
  readonly release: ReleaseRunner;
  /** none without a maintenance pool */
  readonly maintenance?: MaintenanceDeliveries;
  readonly leases: LeaseExpiry;
  /** where the runners log (the service's logger, once the app has one) */
  log: LifecycleLog;

  constructor(private readonly world: World, opts: LifecycleOptions) {
    const telemetry = opts.telemetry ?? NO_LIFECYCLE_TELEMETRY;
    this.log = opts.log ?? NO_LOG;
    const log: LifecycleLog = { info: (o, m) => this.log.info(o, m), warn: (o, m) => this.log.warn(o, m) };
    const { rm, nodes, projects } = world;
    this.release = new ReleaseRunner({ rm, nodes, power: opts.power, telemetry, log });
    const c = opts.config;
    if (c.maintenanceProject !== undefined && c.maintenanceUrl !== undefined) {
      this.maintenance = new MaintenanceDeliveries(
        { project: c.maintenanceProject, url: c.maintenanceUrl, secret: c.maintenanceSecret, timeoutMs: c.maintenanceTimeoutMs },
        { rm, nodes, telemetry, log, mayAct: opts.mayAct },
      );
    }
    this.leases = new LeaseExpiry({ rm, nodes, projects, telemetry, log });
  }

  /**
   * After the read models are rebuilt: the maintenance pool's project must exist (the start stops
   * otherwise), then what storage holds as pending is resumed and the runners watch every commit.
   */
  start(maintenanceProject?: string): void {
    if (maintenanceProject !== undefined && !this.world.rm.projects.has(maintenanceProject)) {
      throw new Error(`HILT_MAINTENANCE_PROJECT names the project "${maintenanceProject}", which does not exist: create it (hilt project create ${maintenanceProject}) with the maintenance pool unset, then start again`);
    }
    this.world.nodeWatchers.push(this.release.watch, this.leases.watchNode);
    if (this.maintenance) this.world.nodeWatchers.push(this.maintenance.watch);
    this.world.nicWatchers.push(this.leases.watchNic);
    this.release.resumeAll();
    this.maintenance?.resumeAll();
    this.leases.start();
  }

  close(): void {
    this.release.close();
    this.maintenance?.close();
    this.leases.close();
  }

  /**
   * A power-off of the node succeeded (POST /node/<node>/power_off): a failed release power-off
   * is off the list. That one only: a release that came meanwhile has a power-off of its own to
   * carry out (pending), which this one must not end.
   */
  async poweredOff(node: string, by: string): Promise<void> {
    const due = this.world.rm.releasePowerOffs.get(node);
    if (due?.status !== 'failed') return;
    await this.world.nodes.ask(node, { type: 'node.powerOffEnded', by, since: due.since, error: null });
  }

  /** Every node that needs an operator, and why (oldest first). */
  attention(): Attention[] {
    const rm = this.world.rm;
    const out: Attention[] = [];
    const iso = (ms: number) => new Date(ms).toISOString();
    for (const [node, p] of rm.releasePowerOffs) {
      if (p.status === 'failed') out.push({ node, problem: 'release_power_off', since: iso(p.since), detail: `the power-off after its release failed: ${p.error ?? 'unknown'}` });
    }
    for (const [node, n] of rm.maintenanceNotices) {
      if (n.deliveredAt === undefined && n.attempts > 0) {
        out.push({ node, problem: 'maintenance_notice', since: iso(n.since), detail: `${n.attempts} POST${n.attempts === 1 ? '' : 's'} to the maintenance service failed, the last: ${n.lastError ?? 'unknown'}` });
      }
    }
    for (const id of rm.portsInDoubt) {
      const p = rm.ports.get(id);
      if (!p?.doubt) continue;
      const vlans = p.doubt.vlans.length ? `VLAN${p.doubt.vlans.length === 1 ? '' : 's'} ${p.doubt.vlans.join(', ')}` : 'a configuration';
      const where = { problem: 'port_in_doubt' as const, since: iso(p.doubt.since), switch: p.switch, port: p.name };
      // Its nic deleted, the doubt stays with the port: no node to name, but an operator must still see it.
      out.push(p.wire
        ? { node: p.wire.node, ...where, detail: `port ${p.name} of switch ${p.switch} (nic ${p.wire.nic}) may carry ${vlans} beyond what the service holds: a change failed after it may have reached the port; it is being set back (its node cannot be released, nor a network of those VLANs deleted, until then; an admin can re-apply it: POST /admin/node/${p.wire.node}/nic/${p.wire.nic}/reapply)` }
        : { node: null, ...where, detail: `port ${p.name} of switch ${p.switch} (wired to no nic) may carry ${vlans} beyond what the service holds: a change failed after it may have reached the port; it is being set back to nothing (the port cannot be deleted, nor a network of those VLANs, until then)` });
    }
    for (const id of rm.portsOwingSetBack) {
      const p = rm.ports.get(id);
      if (!p?.setBackOwed) continue;
      const vlans = `VLAN${p.setBackOwed.vlans.length === 1 ? '' : 's'} ${p.setBackOwed.vlans.join(', ')}`;
      // Nothing is held for it: shown so that an operator knows a switch may still be asked to change.
      out.push({
        node: p.wire?.node ?? null, problem: 'port_set_back_owed', since: iso(p.setBackOwed.since), switch: p.switch, port: p.name,
        detail: `port ${p.name} of switch ${p.switch}${p.wire ? ` (nic ${p.wire.nic})` : ' (wired to no nic)'}: an admin cleared its doubt of ${vlans} by hand; it is still set back to what the service holds, with backoff, until the switch confirms it (nothing is held meanwhile; a switch gone for good: delete the port)`,
      });
    }
    for (const [node, e] of this.leases.expiring) {
      if (e.problem) out.push({ node, problem: 'lease_expiry', since: iso(e.lease.expiresAt), detail: `its lease passed and its release is held up: ${e.problem}` });
    }
    return out.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0));
  }
}
