/**
 * The port actor's hardware calls, outside its mailbox (docs/actors.md, rule 4): a change goes to the
 * switch's session (one session per switch; operations queued meanwhile share it), and only
 * once the switch applied it is the port's new configuration recorded. A failed or timed-out
 * change may have altered the port all the same, so the port is then set back to the
 * configuration the service holds: a port never keeps a VLAN the service does not know about,
 * which could otherwise leak a reused VLAN into another tenant's network.
 */
import type { SwitchInfo, SwitchSession } from '../../drivers/switch/types';
import type { PortWork } from '../switch/sessions';
import { EMPTY_CONFIG, PortChange, PortConfig, PortState } from './protocol';

/** What the hardware path needs: the switches' sessions, a switch's driver settings, and a way to record the new configuration. */
export interface PortHardwareDeps {
  sessions: { submit(sw: SwitchInfo, work: PortWork): Promise<void> };
  switchInfo(name: string): SwitchInfo | undefined;
  /** Commit the port's configuration (the port actor's `port.configured`); resolves once durable. */
  record(port: PortState, config: PortConfig): Promise<void>;
}

/** Reset the port, then set exactly `config`: repairs drift (e.g. a rebooted switch). */
async function setConfig(s: SwitchSession, port: string, config: PortConfig): Promise<void> {
  await s.resetPort(port);
  if (config.native !== null) await s.setNative(port, config.native);
  for (const v of config.tagged) await s.addTagged(port, v);
}

/** The configuration after `change`. */
export function configAfter(config: PortConfig, change: PortChange): PortConfig {
  switch (change.kind) {
    case 'attach':
      return change.native
        ? { ...config, native: change.vlan }
        : { ...config, tagged: [...new Set([...config.tagged, change.vlan])].sort((a, b) => a - b) };
    case 'detach':
      return change.native ? { ...config, native: null } : { ...config, tagged: config.tagged.filter((v) => v !== change.vlan) };
    case 'revert':
      return EMPTY_CONFIG;
    case 'reapply':
      return config;
  }
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

export const sameConfig = (a: PortConfig, b: PortConfig) =>
  a.native === b.native && a.tagged.length === b.tagged.length && a.tagged.every((v, i) => v === b.tagged[i]);

export class PortHardware {
  constructor(private readonly deps: PortHardwareDeps) {}

  /** Carry out `change` on the port: null when done, else why it failed. */
  async apply(port: PortState, change: PortChange): Promise<string | null> {
    const sw = this.deps.switchInfo(port.switch);
    if (!sw) return `switch ${port.switch} no longer exists`;
    const current = port.config;
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
    // Recorded before the nic hears of it: the nic's DONE then never runs ahead of the port.
    if (!sameConfig(current, next)) await this.deps.record(port, next);
    return null;
  }
}
