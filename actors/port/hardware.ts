/**
 * The port actor's hardware calls, outside its mailbox (docs/actors.md, rule 4): a change goes to the
 * switch's session (one session per switch; operations queued meanwhile share it), and only
 * once the switch applied it is the port's new configuration recorded. A failed or timed-out
 * change may have altered the port all the same, so the port is then set back to the
 * configuration the service holds: a port never keeps a VLAN the service does not know about,
 * which could otherwise leak a reused VLAN into another tenant's network.
 *
 * The port's record of a change is written beside the nic's record of the operation's outcome,
 * not before it: every operation would otherwise wait for one more commit. Until it is written,
 * the change is kept here, and the next change of the port starts from it. A crash between the
 * two records is repaired at the next start (World.repairPortRecords): the nic's DONE is only
 * ever written after the switch applied the change.
 */
import type { SwitchInfo, SwitchSession } from '../../drivers/switch/types';
import type { PortWork } from '../switch/sessions';
import { portId } from '../ids';
import { configAfter, sameConfig } from './config';
import type { PortChange, PortConfig, PortState } from './protocol';

/** What the hardware path needs: the switches' sessions, a switch's driver settings, and a way to record the new configuration. */
export interface PortHardwareDeps {
  sessions: { submit(sw: SwitchInfo, work: PortWork): Promise<void> };
  switchInfo(name: string): SwitchInfo | undefined;
  /** Commit the port's configuration (the port actor's `port.configured`), retried; rejects only when the service stops. */
  record(port: PortState, config: PortConfig): Promise<void>;
}

/** Reset the port, then set exactly `config`: repairs drift (e.g. a rebooted switch). */
async function setConfig(s: SwitchSession, port: string, config: PortConfig): Promise<void> {
  await s.resetPort(port);
  if (config.native !== null) await s.setNative(port, config.native);
  for (const v of config.tagged) await s.addTagged(port, v);
}

/** The driver calls that carry out `change` (each idempotent: after a crash it is applied again). */
function work(change: PortChange, port: string, config: PortConfig): PortWork {
  switch (change.kind) {
    case 'attach':
      return (s) => (change.native ? s.setNative(port, change.vlan) : s.addTagged(port, change.vlan));
    case 'detach':
      return (s) => (change.native ? s.removeNative(port) : s.removeTagged(port, change.vlan));
    case 'revert':
      return (s) => s.resetPort(port);
    case 'reapply':
      return (s) => setConfig(s, port, config);
  }
}

export class PortHardware {
  /** port id → the configuration its switch has, while the record of it is being written */
  private readonly unrecorded = new Map<string, PortConfig>();
  /** ports whose record is being written */
  private readonly writing = new Set<string>();

  constructor(private readonly deps: PortHardwareDeps) {}

  /** Carry out `change` on the port: null when done, else why it failed. */
  async apply(port: PortState, change: PortChange): Promise<string | null> {
    const sw = this.deps.switchInfo(port.switch);
    if (!sw) return `switch ${port.switch} no longer exists`;
    const id = portId(port.switch, port.name);
    const current = this.unrecorded.get(id) ?? port.config;
    try {
      await this.deps.sessions.submit(sw, work(change, port.name, current));
    } catch (err) {
      const restored = await this.deps.sessions.submit(sw, (s) => setConfig(s, port.name, current)).then(
        () => 'the port was set back to the configuration the service holds',
        (e: Error) => `setting the port back failed too (${e.message}); an admin can re-apply it (POST /admin/node/${port.wire?.node}/nic/${port.wire?.nic}/reapply)`,
      );
      return `${(err as Error).message}; ${restored}`;
    }
    const next = configAfter(current, change);
    if (!sameConfig(current, next)) this.writeBehind(id, port, next);
    return null;
  }

  /**
   * Record the port's configuration without holding up the answer (see the header). One writer
   * per port, always writing the newest configuration, so an older one never lands last.
   */
  private writeBehind(id: string, port: PortState, config: PortConfig): void {
    this.unrecorded.set(id, config);
    if (this.writing.has(id)) return;
    this.writing.add(id);
    void (async () => {
      try {
        for (let c = this.unrecorded.get(id); c !== undefined; c = this.unrecorded.get(id)) {
          await this.deps.record(port, c);
          if (this.unrecorded.get(id) === c) this.unrecorded.delete(id);
        }
      } catch {
        // Only when the service stops: the next start repairs the record from the nic.
      } finally {
        this.writing.delete(id);
      }
    })();
  }
}
