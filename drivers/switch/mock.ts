/**
 * Mock switch driver, for labs and demos: each port's VLAN configuration is kept in its own
 * LMDB environment (like a real switch, it survives the service's restarts and is not the
 * service's own state). Options: a delay per operation (HILT_MOCK_SWITCH_DELAY_MS), per
 * session login (HILT_MOCK_SWITCH_SESSION_DELAY_MS) and failure injection for chosen ports
 * (HILT_MOCK_SWITCH_FAIL_PORTS="switch/port,...").
 */
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { open, RootDatabase } from 'lmdb';
import { requiredStrings, SCHEMA_BASE } from '../schema';
import { PortVlans, SwitchDriver, SwitchDriverEntry, SwitchError, SwitchInfo, SwitchSession } from './types';
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
    this.db = open({ path: opts.path, noSubdir: false, noSync: true });
    this.fail = new Set(opts.failPorts ?? []);
  }

  /** Current configuration of a port, as the switch itself holds it. */
  port(sw: string, port: string): PortVlans {
    return this.db.get([sw, port]) ?? EMPTY;
  }

  /** Every configured port of a switch. */
  ports(sw: string): Record<string, PortVlans> {
    const out: Record<string, PortVlans> = {};
    // Every port of the switch: keys [sw, port] sort before [sw + U+0001] (names have no control characters).
    for (const { key, value } of this.db.getRange({ start: [sw], end: [`${sw}\u0001`] })) if (key[0] === sw) out[key[1]] = value;
    return out;
  }

  async open(sw: SwitchInfo, signal: AbortSignal): Promise<SwitchSession> {
    this.sessionsOpened.set(sw.name, (this.sessionsOpened.get(sw.name) ?? 0) + 1);
    if (this.opts.sessionDelayMs) await pause(this.opts.sessionDelayMs, undefined, { signal });
    // An injected failure refuses before the change, and a session closed at a call's deadline
    // changes nothing more: neither counts in the contract's changesSent.
    let changesSent = 0;
    let closed = false;
    const change = async (port: string, f: (v: PortVlans) => PortVlans) => {
      if (this.opts.delayMs) await sleep(this.opts.delayMs);
      if (closed) throw new SwitchError(`mock switch ${sw.name}: session closed`);
      if (this.fail.has(`${sw.name}/${port}`)) throw new SwitchError(`mock switch ${sw.name}: port ${port} refused the change (failure injected)`);
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
      getPortVlans: async (port) => this.port(sw.name, port),
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
  // The port VLANs as the "hardware" holds them.
  inspect: (driver, { id }) => ({ mockPorts: driver.ports(id) }),
  close: (driver) => driver.close(),
};
