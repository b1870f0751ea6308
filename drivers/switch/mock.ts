/**
 * Mock switch driver, for labs and demos: each port's VLAN configuration is kept in its own
 * LMDB environment (like a real switch, it survives the service's restarts and is not the
 * service's own state). Options: a delay per operation (HILT_MOCK_SWITCH_DELAY_MS), per
 * session login (HILT_MOCK_SWITCH_SESSION_DELAY_MS) and failure injection for chosen ports
 * (HILT_MOCK_SWITCH_FAIL_PORTS="switch/port,...").
 *
 * A port's administrative state is kept beside its VLANs (a port is up until shut, as on a real
 * switch). What the switch learned on its ports (MACs, LLDP neighbours) is held in memory, as a
 * real switch's tables are, set by tests and demos (`learn`); a shut port reports nothing.
 */
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { open, RootDatabase } from 'lmdb';
import { requiredStrings, SCHEMA_BASE } from '../schema';
import { PortVlans, PortWiring, SwitchDriver, SwitchDriverEntry, SwitchError, SwitchInfo, SwitchSession } from './types';
import { normalizeMac } from './wiring';
import { sleep } from '../../lib/time';

export interface MockSwitchOptions {
  /** LMDB folder for the mock switches' port configuration */
  path: string;
  delayMs?: number;
  /** delay of opening a session (a real switch's SSH login costs about 100 ms) */
  sessionDelayMs?: number;
  /** `switch/port` entries whose every operation fails */
  failPorts?: string[];
}

const EMPTY: PortVlans = { native: null, tagged: [] };

export class MockSwitchDriver implements SwitchDriver {
  private readonly db: RootDatabase<PortVlans, [string, string]>;
  private readonly fail: Set<string>;
  /** sessions opened so far, per switch (lets tests observe batching) */
  readonly sessionsOpened = new Map<string, number>();

  constructor(private readonly opts: MockSwitchOptions) {
    try {
      this.db = open({ path: opts.path, noSubdir: false, noSync: true });
    } catch (err) {
      // Every start opens it: LMDB's own words would name neither the folder nor the usual cause (another user's files).
      throw new Error(`cannot open the mock switches' store in ${opts.path}: ${(err as Error).message}; its data.mdb and lock.mdb must be files this process's user may read and write`);
    }
    this.fail = new Set(opts.failPorts ?? []);
  }

  /** what each switch learned on its ports: switch → port → its tables */
  private readonly learned = new Map<string, Map<string, PortWiring>>();

  /** Current configuration of a port, as the switch itself holds it. */
  port(sw: string, port: string): PortVlans {
    return this.db.get([sw, port]) ?? EMPTY;
  }

  /** The key of a shut port's mark, beside its VLANs. */
  private static downKey(sw: string, port: string): [string, string] {
    return [sw, port, 'down'] as unknown as [string, string];
  }

  /** Is the port administratively up? */
  enabled(sw: string, port: string): boolean {
    return this.db.get(MockSwitchDriver.downKey(sw, port)) === undefined;
  }

  /**
   * What the switch learned on a port (tests, demos): its MACs (any spelling) and LLDP
   * neighbours; `null` forgets the port.
   */
  learn(sw: string, port: string, wiring: { macs?: string[]; lldp?: PortWiring['lldp'] } | null): void {
    const ports = this.learned.get(sw) ?? new Map<string, PortWiring>();
    this.learned.set(sw, ports);
    if (!wiring) {
      ports.delete(port);
      return;
    }
    const macs = (wiring.macs ?? []).map((m) => normalizeMac(m) ?? m);
    ports.set(port, { macs: [...new Set(macs)].sort(), lldp: [...(wiring.lldp ?? [])] });
  }

  /** The tables of the ports asked (empty when unknown) and of every other port that learned something, shut ports reporting nothing. */
  private wiring(sw: string, ports: string[]): Map<string, PortWiring> {
    const out = new Map<string, PortWiring>();
    for (const p of ports) out.set(p, { macs: [], lldp: [] });
    for (const [p, w] of this.learned.get(sw) ?? []) {
      if (this.enabled(sw, p)) out.set(p, { macs: [...w.macs], lldp: w.lldp.map((n) => ({ ...n })) });
    }
    return out;
  }

  /** Every configured port of a switch. */
  ports(sw: string): Record<string, PortVlans> {
    const out: Record<string, PortVlans> = {};
    // Every port of the switch: keys [sw, port] sort before [sw + U+0001] (names have no control characters).
    for (const { key, value } of this.db.getRange({ start: [sw], end: [`${sw}\u0001`] })) if (key[0] === sw && key.length === 2) out[key[1]] = value;
    return out;
  }

  async open(sw: SwitchInfo, signal: AbortSignal): Promise<SwitchSession> {
    this.sessionsOpened.set(sw.name, (this.sessionsOpened.get(sw.name) ?? 0) + 1);
    if (this.opts.sessionDelayMs) await pause(this.opts.sessionDelayMs, undefined, { signal });
    // An injected failure refuses before the change, and a session closed at a call's deadline
    // changes nothing more: neither counts in the contract's changesSent.
    let changesSent = 0;
    let closed = false;
    const refuse = async (port: string) => {
      if (this.opts.delayMs) await sleep(this.opts.delayMs);
      if (closed) throw new SwitchError(`mock switch ${sw.name}: session closed`);
      if (this.fail.has(`${sw.name}/${port}`)) throw new SwitchError(`mock switch ${sw.name}: port ${port} refused the change (failure injected)`);
    };
    const change = async (port: string, f: (v: PortVlans) => PortVlans) => {
      await refuse(port);
      changesSent++;
      const next = f(this.port(sw.name, port));
      // A synchronous commit without fsync: this stands in for the switch's own configuration,
      // which a kill -9 of the service does not touch (committed pages survive it in the OS
      // cache). Waiting for the write thread, or a disk flush, per port change would bill the
      // service for a cost no real switch puts on it.
      this.db.putSync([sw.name, port], next);
    };
    return {
      setNative: (port, vlan) => change(port, (v) => ({ ...v, native: vlan })),
      removeNative: (port) => change(port, (v) => ({ ...v, native: null })),
      addTagged: (port, vlan) => change(port, (v) => ({ ...v, tagged: [...new Set([...v.tagged, vlan])].sort((a, b) => a - b) })),
      removeTagged: (port, vlan) => change(port, (v) => ({ ...v, tagged: v.tagged.filter((t) => t !== vlan) })),
      resetPort: (port) => change(port, () => EMPTY),
      getPortVlans: async (port) => ({ ...this.port(sw.name, port), enabled: this.enabled(sw.name, port) }),
      setEnabled: async (port, enabled) => {
        await refuse(port);
        if (this.enabled(sw.name, port) === enabled) return;
        changesSent++;
        const key = MockSwitchDriver.downKey(sw.name, port);
        if (enabled) this.db.removeSync(key);
        else this.db.putSync(key, { native: null, tagged: [] });
      },
      readWiring: async (ports) => {
        if (closed) throw new SwitchError(`mock switch ${sw.name}: session closed`);
        return this.wiring(sw.name, ports);
      },
      close: async () => {
        closed = true;
      },
      get changesSent() {
        return changesSent;
      },
    };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

export const mock: SwitchDriverEntry<MockSwitchDriver> = {
  type: `${SCHEMA_BASE}/v0/switches/mock`,
  extension: 'hilt.switches.mock',
  fields: requiredStrings('hostname', 'username', 'password'),
  portName: /^(gi|te)\d+\/\d+(\/\d+)?$/,
  portFormat: 'gi1/0/11, te1/0/12, gi1/12 or te1/3',
  // The mock switches keep their ports in their own LMDB folder, as hardware would.
  create: ({ settings: config }) => new MockSwitchDriver({
    path: join(config.dataDir, 'mock-switches'),
    delayMs: config.mockSwitchDelayMs,
    sessionDelayMs: config.mockSwitchSessionDelayMs,
    failPorts: config.mockSwitchFailPorts,
  }),
  // The port VLANs as the "hardware" holds them, and its shut ports.
  inspect: (driver, { id }) => {
    const mockPorts = driver.ports(id);
    return { mockPorts, mockPortsShut: Object.keys(mockPorts).filter((p) => !driver.enabled(id, p)) };
  },
  close: (driver) => driver.close(),
};
