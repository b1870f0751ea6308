/**
 * The port actor's hardware calls, outside its mailbox (docs/actors.md, rule 4): a change goes to
 * the switch's session (one session per switch; operations queued meanwhile share it), and only
 * once the switch applied it does the port's configuration change. A failed or timed-out change
 * may have altered the port all the same, so the port is then set back to the configuration the
 * service holds: a port never keeps a VLAN the service does not know about, which could
 * otherwise leak a reused VLAN into another tenant's network.
 *
 * The port's record of a change is written beside the nic's record of the operation's outcome,
 * not before it: every operation would otherwise wait for one more commit. Until it is written,
 * the change is held here (with the wiring it was made for): the next change of the port, a
 * set-back and a force-detach all start from it, and one writer per port always writes the
 * newest. A crash between the two records is repaired at the next start
 * (World.repairPortRecords): the nic records DONE only after the switch applied the change.
 */
import type { SwitchInfo, SwitchSession } from '../../drivers/switch/types';
import type { PortWork } from '../switch/sessions';
import { HiltError } from '../errors';
import { portId } from '../ids';
import { configAfter, sameConfig } from './config';
import type { PortChange, PortConfig, PortState, Wire } from './protocol';

/** What the hardware path needs: the switches' sessions, a switch's driver settings, and a way to record a port's configuration. */
export interface PortHardwareDeps {
  sessions: { submit(sw: SwitchInfo, work: PortWork): Promise<void> };
  switchInfo(name: string): SwitchInfo | undefined;
  /** One attempt at committing the port's configuration for `wire` (the port actor's `port.configured`). */
  record(id: string, config: PortConfig, wire: Wire | null): Promise<void>;
  /** The service is stopping: give up writing (the next start repairs the record). */
  stopping(): boolean;
}

interface Unrecorded { config: PortConfig; wire: Wire | null }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sameWire = (a: Wire | null, b: Wire | null) => a === b || (!!a && !!b && a.node === b.node && a.nic === b.nic);

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
  private readonly unrecorded = new Map<string, Unrecorded>();
  /** ports whose record is being written */
  private readonly writing = new Set<string>();

  constructor(private readonly deps: PortHardwareDeps) {}

  /** The configuration the service holds for the port: its record, or a newer change not yet written. */
  current(port: PortState): PortConfig {
    const held = this.unrecorded.get(portId(port.switch, port.name));
    return held && sameWire(held.wire, port.wire) ? held.config : port.config;
  }

  /** Carry out `change` on the port: null when done, else why it failed. */
  async apply(port: PortState, change: PortChange): Promise<string | null> {
    const sw = this.deps.switchInfo(port.switch);
    if (!sw) return `switch ${port.switch} no longer exists`;
    const current = this.current(port);
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
    if (!sameConfig(current, next)) this.hold(port, next);
    return null;
  }

  /**
   * The port actor records `config` itself now (a force-detach): a change not yet written is
   * replaced by it, so the writer never puts back what was just taken away.
   */
  supersede(port: PortState, config: PortConfig): void {
    const id = portId(port.switch, port.name);
    const held = this.unrecorded.get(id);
    if (held && sameWire(held.wire, port.wire)) this.unrecorded.set(id, { config, wire: port.wire });
  }

  /** Hold the port's new configuration and have it written (see the header). */
  private hold(port: PortState, config: PortConfig): void {
    const id = portId(port.switch, port.name);
    this.unrecorded.set(id, { config, wire: port.wire });
    if (!this.writing.has(id)) void this.write(id);
  }

  /** One writer per port: each attempt writes the newest configuration held, until none is left. */
  private async write(id: string): Promise<void> {
    this.writing.add(id);
    try {
      for (let attempt = 0; ; ) {
        const held = this.unrecorded.get(id);
        if (!held || this.deps.stopping()) return;
        try {
          await this.deps.record(id, held.config, held.wire);
          if (this.unrecorded.get(id) === held) this.unrecorded.delete(id);
          attempt = 0;
        } catch (err) {
          // A port deleted meanwhile has nothing left to record.
          if (err instanceof HiltError && err.type === 'NotFoundError') {
            this.unrecorded.delete(id);
            return;
          }
          await sleep(Math.min(5_000, 50 * 2 ** attempt++));
        }
      }
    } finally {
      this.writing.delete(id);
    }
  }
}
